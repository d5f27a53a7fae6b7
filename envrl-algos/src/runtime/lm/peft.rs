//! Reading a PEFT LoRA adapter directory (`adapter_config.json`, `adapter_model.safetensors`)
//! onto a base model, merged into its projection weights.

use std::path::Path;

use burn::module::Param;
use burn::tensor::{Tensor, TensorData};
use safetensors::SafeTensors;
use serde::Deserialize;

use crate::error::{Error, Result};
use crate::runtime::lm::CausalLm;
use crate::runtime::lm::hf::view_f32;

/// The `adapter_config.json` keys this reader uses.
#[derive(Debug, Deserialize)]
struct AdapterConfig {
    peft_type: String,
    r: usize,
    lora_alpha: f64,
    #[serde(default)]
    use_rslora: bool,
    #[serde(default)]
    use_dora: bool,
}

fn adapter_error(path: &Path, reason: impl Into<String>) -> Error {
    Error::ModelFile {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

impl CausalLm {
    /// Merges the LoRA adapter in `dir` (PEFT's layout, as written by
    /// [`crate::runtime::export::Export`] or by PEFT itself) into this base model's projections:
    /// `W ← W + (α/r)·(A·B)` in Burn's `[in, out]` layout, computed as Burn's own LoRA adapter
    /// computes it, so a merged model gives the logits of the model the adapter was trained on.
    ///
    /// # Errors
    /// [`Error::ModelFile`] naming the file when the config or weights are missing or malformed,
    /// the adapter is not plain LoRA (DoRA), or a factor's shape does not fit its projection.
    pub fn merge_peft_adapter(mut self, dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref();
        let config_path = dir.join("adapter_config.json");
        let text = std::fs::read_to_string(&config_path)
            .map_err(|e| adapter_error(&config_path, e.to_string()))?;
        let config: AdapterConfig =
            serde_json::from_str(&text).map_err(|e| adapter_error(&config_path, e.to_string()))?;
        if config.peft_type != "LORA" || config.use_dora {
            return Err(adapter_error(
                &config_path,
                format!(
                    "peft_type {}{} is not supported (plain LORA)",
                    config.peft_type,
                    if config.use_dora { " with DoRA" } else { "" }
                ),
            ));
        }
        if config.r == 0 {
            return Err(adapter_error(&config_path, "r must be at least 1"));
        }
        let scale = if config.use_rslora {
            config.lora_alpha / (config.r as f64).sqrt()
        } else {
            config.lora_alpha / config.r as f64
        };
        let path = dir.join("adapter_model.safetensors");
        let bytes = std::fs::read(&path).map_err(|e| adapter_error(&path, e.to_string()))?;
        let file =
            SafeTensors::deserialize(&bytes).map_err(|e| adapter_error(&path, e.to_string()))?;
        let device = self.device();
        let mut merged = 0;
        for (name, linear) in self.projections_mut() {
            let peft = format!("base_model.model.{name}");
            let (Ok(a), Ok(b)) = (
                file.tensor(&format!("{peft}.lora_A.weight")),
                file.tensor(&format!("{peft}.lora_B.weight")),
            ) else {
                continue;
            };
            let [d_in, d_out] = linear.weight.lazy_shape().dims();
            let r = config.r;
            if a.shape() != [r, d_in] || b.shape() != [d_out, r] {
                return Err(adapter_error(
                    &path,
                    format!(
                        "`{peft}`: lora_A {:?} and lora_B {:?} do not fit a [{d_out}, {d_in}] \
                         projection at rank {r}",
                        a.shape(),
                        b.shape()
                    ),
                ));
            }
            // PEFT's lora_A is Burn's aᵀ, lora_B is bᵀ.
            let a_values =
                crate::runtime::lm::init::transpose(&view_f32(&a, &path, &peft)?, r, d_in);
            let b_values =
                crate::runtime::lm::init::transpose(&view_f32(&b, &path, &peft)?, d_out, r);
            let a = Tensor::<2>::from_data(TensorData::new(a_values, [d_in, r]), &device);
            let b = Tensor::<2>::from_data(TensorData::new(b_values, [r, d_out]), &device);
            let delta = a.matmul(b).mul_scalar(scale);
            linear.weight = Param::from_tensor((linear.weight.val() + delta).detach());
            merged += 1;
        }
        if merged == 0 {
            return Err(adapter_error(
                &path,
                "no lora_A/lora_B pair matches a projection of the base model",
            ));
        }
        Ok(self)
    }
}
