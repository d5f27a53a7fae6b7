//! The `--device` flag: one name per Burn backend.

use anyhow::{Result, bail};
use burn::tensor::{Device, FloatDType};

/// The names `--dtype` and the `dtype` config field accept.
pub const DTYPES: [&str; 3] = ["f32", "bf16", "f16"];

/// Parses `--device` and sets the float type of every tensor later created on it (`f32`, the
/// default; `bf16` or `f16`): the model's weights, activations, caches and gradients follow it.
///
/// # Errors
/// When the device name or the float type is unknown, when the backend does not support the
/// float type, or when tensors were already created on the device (Burn fixes a device's types
/// at its first tensor).
pub fn device_with_dtype(name: &str, dtype: &str) -> Result<Device> {
    let mut device = parse_device(name)?;
    let float = match dtype {
        "f32" => return Ok(device),
        "bf16" => FloatDType::BF16,
        "f16" => FloatDType::F16,
        other => bail!(
            "unknown float type `{other}`; expected one of: {}",
            DTYPES.join(", ")
        ),
    };
    device
        .configure(float)
        .map_err(|e| anyhow::anyhow!("device `{name}` cannot use {dtype}: {e:?}"))?;
    Ok(device)
}

/// Parses a device name: `cpu` (flex, always available); `tch-cpu`, `tch-cuda:N`, `wgpu` and
/// `cuda:N` need the Cargo feature of the same backend.
///
/// # Errors
/// When the name is unknown or its backend was not compiled in (the message names the feature).
pub fn parse_device(name: &str) -> Result<Device> {
    let index = |s: &str| -> Result<usize> {
        s.parse()
            .map_err(|_| anyhow::anyhow!("bad device index in `{name}`"))
    };
    match name {
        "cpu" | "flex" => Ok(Device::flex()),
        "tch-cpu" => tch_cpu(),
        "wgpu" => wgpu(),
        _ => {
            if let Some(i) = name.strip_prefix("tch-cuda:") {
                tch_cuda(index(i)?)
            } else if let Some(i) = name.strip_prefix("cuda:") {
                cuda(index(i)?)
            } else {
                bail!("unknown device `{name}`: use cpu, tch-cpu, tch-cuda:N, wgpu or cuda:N")
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_is_always_available_and_unknown_names_are_errors() {
        assert!(parse_device("cpu").is_ok());
        let err = parse_device("tpu").unwrap_err().to_string();
        assert!(err.contains("unknown device `tpu`"), "{err}");
    }

    #[cfg(not(feature = "cuda"))]
    #[test]
    fn missing_backend_names_its_feature() {
        let err = parse_device("cuda:0").unwrap_err().to_string();
        assert!(err.contains("`cuda` feature"), "{err}");
    }
}
