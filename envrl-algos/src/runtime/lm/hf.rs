//! Loading a Hugging Face model directory: `config.json` (Qwen2 and Llama families) and the
//! weights in `model.safetensors` or shards listed by `model.safetensors.index.json`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use burn::module::Param;
use burn::nn::Linear;
use burn::tensor::Device;
use safetensors::tensor::TensorView;
use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;

use crate::error::{Error, Result};
use crate::runtime::lm::init::{param, transpose};
use crate::runtime::lm::qwen2::ParamSource;
use crate::runtime::lm::{CausalLm, LmConfig};

/// The `config.json` keys this loader reads.
#[derive(Debug, Deserialize)]
struct HfConfig {
    model_type: String,
    vocab_size: usize,
    hidden_size: usize,
    intermediate_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    num_key_value_heads: Option<usize>,
    head_dim: Option<usize>,
    rope_theta: Option<f64>,
    rms_norm_eps: Option<f64>,
    tie_word_embeddings: Option<bool>,
    attention_bias: Option<bool>,
    mlp_bias: Option<bool>,
    hidden_act: Option<String>,
    rope_scaling: Option<serde_json::Value>,
}

fn model_error(path: &Path, reason: impl Into<String>) -> Error {
    Error::ModelFile {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// Reads and checks `dir/config.json`.
///
/// # Errors
/// [`Error::ModelFile`] when it is missing, malformed, or describes an architecture other than
/// Qwen2/Llama (or a feature of them this crate does not run: RoPE scaling, MLP bias, an
/// activation other than SiLU, a head width other than `hidden_size / num_attention_heads`).
pub fn read_hf_config(dir: &Path) -> Result<LmConfig> {
    let path = dir.join("config.json");
    if !dir.is_dir() {
        return Err(model_error(dir, "not a directory"));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| model_error(&path, e.to_string()))?;
    let hf: HfConfig =
        serde_json::from_str(&text).map_err(|e| model_error(&path, e.to_string()))?;
    let bias = match hf.model_type.as_str() {
        "qwen2" => true,
        "llama" => hf.attention_bias.unwrap_or(false),
        other => {
            return Err(model_error(
                &path,
                format!("model_type `{other}` is not supported (qwen2, llama)"),
            ));
        }
    };
    if let Some(scaling) = hf.rope_scaling.as_ref().filter(|v| !v.is_null()) {
        return Err(model_error(
            &path,
            format!("rope_scaling {scaling} is not supported yet"),
        ));
    }
    if hf.mlp_bias == Some(true) {
        return Err(model_error(&path, "mlp_bias = true is not supported"));
    }
    if let Some(act) = hf.hidden_act.as_deref().filter(|a| *a != "silu") {
        return Err(model_error(
            &path,
            format!("hidden_act `{act}` is not supported (silu)"),
        ));
    }
    let heads = hf.num_attention_heads.max(1);
    if let Some(head_dim) = hf.head_dim.filter(|&h| h * heads != hf.hidden_size) {
        return Err(model_error(
            &path,
            format!(
                "head_dim {head_dim} × {heads} heads differs from hidden_size {}",
                hf.hidden_size
            ),
        ));
    }
    let config = LmConfig::new(
        hf.vocab_size,
        hf.hidden_size,
        hf.intermediate_size,
        hf.num_hidden_layers,
        hf.num_attention_heads,
        hf.num_key_value_heads.unwrap_or(hf.num_attention_heads),
    )
    .with_rope_theta(hf.rope_theta.unwrap_or(10_000.0))
    .with_rms_norm_eps(hf.rms_norm_eps.unwrap_or(1e-6))
    .with_attention_bias(bias)
    .with_tie_word_embeddings(hf.tie_word_embeddings.unwrap_or(false));
    config
        .validate()
        .map_err(|e| model_error(&path, e.to_string()))?;
    Ok(config)
}

/// The weight files of a directory: the shards of `model.safetensors.index.json`, or
/// `model.safetensors`.
fn weight_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let index = dir.join("model.safetensors.index.json");
    if index.exists() {
        #[derive(Deserialize)]
        struct Index {
            weight_map: HashMap<String, String>,
        }
        let text =
            std::fs::read_to_string(&index).map_err(|e| model_error(&index, e.to_string()))?;
        let parsed: Index =
            serde_json::from_str(&text).map_err(|e| model_error(&index, e.to_string()))?;
        // A shard is a plain file name inside the model directory, never a path out of it.
        if let Some(bad) = parsed.weight_map.values().find(|f| {
            let path = Path::new(f.as_str());
            path.components().count() != 1
                || !matches!(
                    path.components().next(),
                    Some(std::path::Component::Normal(_))
                )
        }) {
            return Err(model_error(
                &index,
                format!("shard `{bad}` is not a file name inside the model directory"),
            ));
        }
        let mut files: Vec<PathBuf> = parsed.weight_map.values().map(|f| dir.join(f)).collect();
        files.sort();
        files.dedup();
        return Ok(files);
    }
    let single = dir.join("model.safetensors");
    if single.exists() {
        Ok(vec![single])
    } else {
        Err(model_error(
            dir,
            "no model.safetensors or model.safetensors.index.json",
        ))
    }
}

/// A safetensors tensor's values as f32 (from f32, f16 or bf16); `path` and `name` name it in
/// errors.
pub(crate) fn view_f32(view: &TensorView<'_>, path: &Path, name: &str) -> Result<Vec<f32>> {
    let data = view.data();
    Ok(match view.dtype() {
        Dtype::F32 => data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
        Dtype::F16 => data
            .chunks_exact(2)
            .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        Dtype::BF16 => data
            .chunks_exact(2)
            .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        other => {
            return Err(model_error(
                path,
                format!("tensor `{name}` has dtype {other:?} (f32, f16, bf16 supported)"),
            ));
        }
    })
}

/// Tensors read from safetensors files, converted to f32 on demand.
struct HfWeights {
    files: Vec<(PathBuf, Vec<u8>)>,
    location: HashMap<String, usize>,
    device: Device,
}

impl HfWeights {
    fn open(dir: &Path, device: &Device) -> Result<Self> {
        let mut files = Vec::new();
        let mut location = HashMap::new();
        for path in weight_files(dir)? {
            let bytes = std::fs::read(&path).map_err(|e| model_error(&path, e.to_string()))?;
            let names: Vec<String> = SafeTensors::deserialize(&bytes)
                .map_err(|e| model_error(&path, e.to_string()))?
                .names()
                .into_iter()
                .map(str::to_string)
                .collect();
            for name in names {
                location.insert(name, files.len());
            }
            files.push((path, bytes));
        }
        Ok(Self {
            files,
            location,
            device: device.clone(),
        })
    }

    /// The tensor `name` as f32 values, checked against `shape` (the file's layout).
    fn read(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        let Some(&file) = self.location.get(name) else {
            let path = self.files.first().map(|f| f.0.clone()).unwrap_or_default();
            return Err(model_error(&path, format!("tensor `{name}` is missing")));
        };
        let (path, bytes) = &self.files[file];
        let tensors =
            SafeTensors::deserialize(bytes).map_err(|e| model_error(path, e.to_string()))?;
        let view = tensors
            .tensor(name)
            .map_err(|e| model_error(path, format!("tensor `{name}`: {e}")))?;
        if view.shape() != shape {
            return Err(model_error(
                path,
                format!(
                    "tensor `{name}` has shape {:?}, the config implies {shape:?}",
                    view.shape()
                ),
            ));
        }
        view_f32(&view, path, name)
    }

    /// `[rows, cols]` of the file, transposed to `[cols, rows]`.
    fn read_transposed(&self, name: &str, rows: usize, cols: usize) -> Result<Vec<f32>> {
        Ok(transpose(&self.read(name, &[rows, cols])?, rows, cols))
    }
}

impl ParamSource for HfWeights {
    type Error = Error;

    fn matrix(
        &mut self,
        name: &str,
        rows: usize,
        cols: usize,
    ) -> Result<Param<burn::tensor::Tensor<2>>> {
        Ok(param(
            self.read(name, &[rows, cols])?,
            [rows, cols],
            &self.device,
        ))
    }

    fn linear(
        &mut self,
        name: &str,
        d_input: usize,
        d_output: usize,
        bias: bool,
    ) -> Result<Linear> {
        // Hugging Face stores `[out, in]`; Burn's `Linear` holds `[in, out]`.
        let weight = self.read_transposed(&format!("{name}.weight"), d_output, d_input)?;
        let bias = if bias {
            Some(param(
                self.read(&format!("{name}.bias"), &[d_output])?,
                [d_output],
                &self.device,
            ))
        } else {
            None
        };
        Ok(Linear {
            weight: param(weight, [d_input, d_output], &self.device),
            bias,
        })
    }

    fn vector(&mut self, name: &str, len: usize) -> Result<Param<burn::tensor::Tensor<1>>> {
        Ok(param(self.read(name, &[len])?, [len], &self.device))
    }
}

impl CausalLm {
    /// Loads a Hugging Face model directory (Qwen2 or Llama family; f32, f16 or bf16 safetensors,
    /// single or sharded) onto `device`. Weights are converted to f32.
    ///
    /// # Errors
    /// [`Error::ModelFile`] naming the file and the tensor or key when the directory has no
    /// config or weights, the architecture is unsupported, or a tensor is missing or misshapen.
    pub fn from_hf_dir(dir: impl AsRef<Path>, device: &Device) -> Result<(Self, LmConfig)> {
        let dir = dir.as_ref();
        let config = read_hf_config(dir)?;
        let mut weights = HfWeights::open(dir, device)?;
        let model = CausalLm::build(&config, &mut weights)?;
        Ok((model, config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_paths_out_of_the_model_directory_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        for bad in ["../../etc/passwd", "/etc/passwd", "sub/model.safetensors"] {
            let index = format!(r#"{{"weight_map": {{"w": "{bad}"}}}}"#);
            std::fs::write(dir.path().join("model.safetensors.index.json"), index).unwrap();
            let err = weight_files(dir.path()).unwrap_err().to_string();
            assert!(err.contains("not a file name inside"), "{bad}: {err}");
        }
        let index = r#"{"weight_map": {"w": "model-00001.safetensors"}}"#;
        std::fs::write(dir.path().join("model.safetensors.index.json"), index).unwrap();
        assert_eq!(weight_files(dir.path()).unwrap().len(), 1);
    }
}
