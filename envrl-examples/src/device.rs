//! The `--device` and `--dtype` flags, typed: one name per Burn backend and float type.

use std::fmt;
use std::str::FromStr;

use anyhow::{Result, bail};
use burn::tensor::{Device, FloatDType};
use clap::Args;
use serde::{Deserialize, Serialize};

/// The float type of a model's weights, activations, caches and gradients (`--dtype`, the
/// `dtype` config field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    /// 32-bit floats (the default).
    #[default]
    F32,
    /// bfloat16: f32's range, 8 bits of mantissa (for models trained in bf16).
    Bf16,
    /// IEEE half precision (overflows on activations of models trained in bf16).
    F16,
}

impl DType {
    /// The name in configs and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::Bf16 => "bf16",
            DType::F16 => "f16",
        }
    }

    /// Bytes per element.
    pub fn bytes(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::Bf16 | DType::F16 => 2,
        }
    }
}

/// A `--device` name, parsed: one per Burn backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeviceName {
    /// Burn flex on the CPU (always available).
    #[default]
    Cpu,
    /// libtorch on the CPU (`tch` feature).
    TchCpu,
    /// libtorch on CUDA device N (`tch` feature).
    TchCuda(usize),
    /// wgpu's default adapter (`wgpu` feature).
    Wgpu,
    /// Burn's CUDA backend on device N (`cuda` feature).
    Cuda(usize),
}

/// What `--device` accepts, for help texts and errors.
pub const DEVICE_HELP: &str = "cpu, tch-cpu, tch-cuda:N, wgpu or cuda:N";

impl FromStr for DeviceName {
    type Err = anyhow::Error;

    /// `{local_rank}` in an index stands for this process's rank on its node in an MPI job
    /// (`cuda:{local_rank}`: one GPU per rank), 0 outside one.
    fn from_str(name: &str) -> Result<Self> {
        let local = name.replace(
            "{local_rank}",
            &envrl::distributed::local_rank().to_string(),
        );
        let name = local.as_str();
        let index = |s: &str| -> Result<usize> {
            s.parse()
                .map_err(|_| anyhow::anyhow!("bad device index in `{name}`"))
        };
        Ok(match name {
            "cpu" | "flex" => DeviceName::Cpu,
            "tch-cpu" => DeviceName::TchCpu,
            "wgpu" => DeviceName::Wgpu,
            _ => {
                if let Some(i) = name.strip_prefix("tch-cuda:") {
                    DeviceName::TchCuda(index(i)?)
                } else if let Some(i) = name.strip_prefix("cuda:") {
                    DeviceName::Cuda(index(i)?)
                } else {
                    bail!("unknown device `{name}`: use {DEVICE_HELP}")
                }
            }
        })
    }
}

impl fmt::Display for DeviceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceName::Cpu => write!(f, "cpu"),
            DeviceName::TchCpu => write!(f, "tch-cpu"),
            DeviceName::TchCuda(i) => write!(f, "tch-cuda:{i}"),
            DeviceName::Wgpu => write!(f, "wgpu"),
            DeviceName::Cuda(i) => write!(f, "cuda:{i}"),
        }
    }
}

impl DeviceName {
    /// The device, with every tensor later created on it of float type `dtype`: the model's
    /// weights, activations, caches and gradients follow it.
    ///
    /// # Errors
    /// When the backend was not compiled in (the message names the feature), when it does not
    /// support the float type, or when tensors were already created on the device (Burn fixes
    /// a device's types at its first tensor).
    pub fn device(self, dtype: DType) -> Result<Device> {
        let mut device = match self {
            DeviceName::Cpu => Device::flex(),
            DeviceName::TchCpu => tch_cpu()?,
            DeviceName::TchCuda(i) => tch_cuda(i)?,
            DeviceName::Wgpu => wgpu()?,
            DeviceName::Cuda(i) => cuda(i)?,
        };
        let float = match dtype {
            DType::F32 => return Ok(device),
            DType::Bf16 => FloatDType::BF16,
            DType::F16 => FloatDType::F16,
        };
        device
            .configure(float)
            .map_err(|e| anyhow::anyhow!("device `{self}` cannot use {}: {e:?}", dtype.name()))?;
        Ok(device)
    }
}

#[cfg(feature = "tch")]
fn tch_cpu() -> Result<Device> {
    Ok(Device::libtorch())
}
#[cfg(not(feature = "tch"))]
fn tch_cpu() -> Result<Device> {
    bail!("device `tch-cpu` needs the `tch` feature: rebuild with `--features tch`")
}
#[cfg(feature = "tch")]
fn tch_cuda(i: usize) -> Result<Device> {
    Ok(Device::libtorch_cuda(i))
}
#[cfg(not(feature = "tch"))]
fn tch_cuda(_: usize) -> Result<Device> {
    bail!("device `tch-cuda:N` needs the `tch` feature: rebuild with `--features tch`")
}
#[cfg(feature = "wgpu")]
fn wgpu() -> Result<Device> {
    Ok(Device::wgpu(burn::tensor::DeviceKind::default()))
}
#[cfg(not(feature = "wgpu"))]
fn wgpu() -> Result<Device> {
    bail!("device `wgpu` needs the `wgpu` feature: rebuild with `--features wgpu`")
}
#[cfg(feature = "cuda")]
fn cuda(i: usize) -> Result<Device> {
    Ok(Device::cuda(i))
}
#[cfg(not(feature = "cuda"))]
fn cuda(_: usize) -> Result<Device> {
    bail!("device `cuda:N` needs the `cuda` feature: rebuild with `--features cuda`")
}

/// The device a command runs its model on, and the model's float type.
#[derive(Args, Debug, Clone, Copy)]
pub struct DeviceArgs {
    /// Device: cpu, tch-cpu, tch-cuda:N, wgpu or cuda:N (the last three need the Cargo
    /// feature of the same backend); N may be `{local_rank}`, the rank's index on its node
    /// in an MPI job.
    #[arg(long, default_value = "cpu", value_parser = parse_device)]
    pub device: DeviceName,
    /// Float type of the weights, activations and gradients [default: f32, or the run
    /// config's `dtype`].
    #[arg(long, value_enum)]
    pub dtype: Option<DType>,
}

fn parse_device(name: &str) -> Result<DeviceName, String> {
    name.parse::<DeviceName>()
        .map_err(|e| format!("{e} ({DEVICE_HELP})"))
}

impl DeviceArgs {
    /// The float type: `--dtype`, else `default`.
    pub fn dtype_or(self, default: DType) -> DType {
        self.dtype.unwrap_or(default)
    }

    /// The device, configured for `--dtype` (f32 without it).
    ///
    /// # Errors
    /// As [`DeviceName::device`].
    pub fn device(self) -> Result<Device> {
        self.device.device(self.dtype_or(DType::F32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_is_always_available_and_unknown_names_are_errors() {
        assert!(
            "cpu"
                .parse::<DeviceName>()
                .unwrap()
                .device(DType::F32)
                .is_ok()
        );
        let err = "tpu".parse::<DeviceName>().unwrap_err().to_string();
        assert!(err.contains("unknown device `tpu`"), "{err}");
        let err = "cuda:x".parse::<DeviceName>().unwrap_err().to_string();
        assert!(err.contains("bad device index"), "{err}");
        for name in ["cpu", "tch-cpu", "tch-cuda:1", "wgpu", "cuda:0"] {
            assert_eq!(name.parse::<DeviceName>().unwrap().to_string(), name);
        }
    }

    #[cfg(not(feature = "cuda"))]
    #[test]
    fn missing_backend_names_its_feature() {
        let err = DeviceName::Cuda(0)
            .device(DType::F32)
            .unwrap_err()
            .to_string();
        assert!(err.contains("`cuda` feature"), "{err}");
    }
}
