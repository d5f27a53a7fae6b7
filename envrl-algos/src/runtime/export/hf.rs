//! Writing a Hugging Face model directory (`config.json`, `generation_config.json`, sharded
//! safetensors, tokenizer files) and a PEFT adapter directory.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use safetensors::Dtype;
use safetensors::tensor::TensorView;
use serde_json::{Value, json};

use super::tensors::{Adapters, NamedTensor};
use super::{Export, ExportTokenizer, WeightDtype};
use crate::error::{Error, Result};
use crate::runtime::lm::LmConfig;

fn export_error(path: &Path, reason: impl ToString) -> Error {
    Error::Export {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

/// Writes `value` as pretty JSON to `path`.
pub(crate) fn write_json(path: &Path, value: &Value) -> Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(|e| export_error(path, e))?;
    std::fs::write(path, text + "\n").map_err(|e| export_error(path, e))
}

/// The values in `dtype`, little-endian.
fn encode(values: &[f32], dtype: WeightDtype) -> (Dtype, Vec<u8>) {
    match dtype {
        WeightDtype::F32 => (Dtype::F32, bytemuck::cast_slice(values).to_vec()),
        WeightDtype::Bf16 => (
            Dtype::BF16,
            values
                .iter()
                .flat_map(|v| half::bf16::from_f32(*v).to_le_bytes())
                .collect(),
        ),
        WeightDtype::F16 => (
            Dtype::F16,
            values
                .iter()
                .flat_map(|v| half::f16::from_f32(*v).to_le_bytes())
                .collect(),
        ),
    }
}

/// Writes `tensors` as one safetensors file (`metadata: {"format": "pt"}`, as transformers
/// expects).
fn write_safetensors(path: &Path, tensors: &[&NamedTensor], dtype: WeightDtype) -> Result<()> {
    let encoded: Vec<(&str, Dtype, &[usize], Vec<u8>)> = tensors
        .iter()
        .map(|t| {
            let (dt, bytes) = encode(&t.values, dtype);
            (t.name.as_str(), dt, t.shape.as_slice(), bytes)
        })
        .collect();
    let views = encoded
        .iter()
        .map(|(name, dt, shape, bytes)| {
            TensorView::new(*dt, shape.to_vec(), bytes)
                .map(|view| (*name, view))
                .map_err(|e| export_error(path, format!("tensor `{name}`: {e}")))
        })
        .collect::<Result<Vec<_>>>()?;
    let metadata = HashMap::from([("format".to_string(), "pt".to_string())]);
    safetensors::serialize_to_file(views, Some(metadata), path).map_err(|e| export_error(path, e))
}

/// Groups tensors into shards of at most `max_bytes` each (a larger tensor gets a shard alone),
/// keeping their order.
pub(crate) fn shards(
    tensors: &[NamedTensor],
    bytes_per_value: usize,
    max_bytes: u64,
) -> Vec<Vec<&NamedTensor>> {
    let mut out: Vec<Vec<&NamedTensor>> = Vec::new();
    let mut size = 0u64;
    for tensor in tensors {
        let bytes = (tensor.values.len() * bytes_per_value) as u64;
        if out.is_empty() || size + bytes > max_bytes && size > 0 {
            out.push(Vec::new());
            size = 0;
        }
        size += bytes;
        if let Some(last) = out.last_mut() {
            last.push(tensor);
        }
    }
    out
}

/// The Hugging Face `config.json` of `config` for a context of `context` positions: `qwen2`
/// when the q/k/v projections have biases, else `llama` (transformers builds the same model from
/// it; an export adds `torch_dtype` and the special tokens).
pub fn hf_config_json(config: &LmConfig, context: usize) -> Value {
    let qwen2 = config.attention_bias;
    let mut value = json!({
        "architectures": [if qwen2 { "Qwen2ForCausalLM" } else { "LlamaForCausalLM" }],
        "model_type": if qwen2 { "qwen2" } else { "llama" },
        "vocab_size": config.vocab_size,
        "hidden_size": config.hidden_size,
        "intermediate_size": config.intermediate_size,
        "num_hidden_layers": config.num_hidden_layers,
        "num_attention_heads": config.num_attention_heads,
        "num_key_value_heads": config.num_key_value_heads,
        "head_dim": config.head_dim(),
        "hidden_act": "silu",
        "max_position_embeddings": context,
        "rms_norm_eps": config.rms_norm_eps,
        "rope_theta": config.rope_theta,
        "rope_scaling": null,
        "tie_word_embeddings": config.tie_word_embeddings,
        "initializer_range": config.initializer_range,
        "attention_dropout": 0.0,
        "use_cache": true,
    });
    if qwen2 {
        value["use_sliding_window"] = json!(false);
        value["sliding_window"] = json!(null);
        value["max_window_layers"] = json!(config.num_hidden_layers);
    } else {
        value["attention_bias"] = json!(false);
        value["mlp_bias"] = json!(false);
        value["pretraining_tp"] = json!(1);
    }
    value
}

/// Writes `tokenizer.json` and `tokenizer_config.json` into `dir`; returns their paths.
pub(crate) fn write_tokenizer_files(
    dir: &Path,
    tokenizer: &ExportTokenizer<'_>,
) -> Result<Vec<PathBuf>> {
    let files = [
        ("tokenizer.json", tokenizer.tokenizer_json()?),
        ("tokenizer_config.json", tokenizer.tokenizer_config()),
    ];
    files
        .into_iter()
        .map(|(name, value)| {
            let path = dir.join(name);
            write_json(&path, &value).map(|()| path)
        })
        .collect()
}

/// Writes the whole model directory into `dir`; returns the files written.
pub(crate) fn write_model_dir(
    dir: &Path,
    export: &Export<'_>,
    tensors: &[NamedTensor],
    dtype: WeightDtype,
    max_shard_bytes: u64,
    context: usize,
) -> Result<Vec<PathBuf>> {
    let tok = export.tokenizer.as_dyn();
    let mut files = Vec::new();
    let mut json_file = |name: &str, value: &Value| -> Result<()> {
        let path = dir.join(name);
        write_json(&path, value)?;
        files.push(path);
        Ok(())
    };
    let mut config = hf_config_json(export.config, context);
    config["torch_dtype"] = json!(dtype.torch_name());
    config["eos_token_id"] = json!(tok.eos_id());
    config["pad_token_id"] = json!(tok.pad_id());
    json_file("config.json", &config)?;
    json_file(
        "generation_config.json",
        &json!({"eos_token_id": tok.stop_ids(), "pad_token_id": tok.pad_id()}),
    )?;
    files.extend(write_tokenizer_files(dir, &export.tokenizer)?);

    let groups = shards(tensors, dtype.bytes(), max_shard_bytes);
    if groups.len() == 1 {
        let path = dir.join("model.safetensors");
        write_safetensors(&path, &groups[0], dtype)?;
        files.push(path);
        return Ok(files);
    }
    let mut weight_map = serde_json::Map::new();
    let total: usize = tensors.iter().map(|t| t.values.len() * dtype.bytes()).sum();
    for (i, group) in groups.iter().enumerate() {
        let name = format!("model-{:05}-of-{:05}.safetensors", i + 1, groups.len());
        let path = dir.join(&name);
        write_safetensors(&path, group, dtype)?;
        files.push(path);
        for tensor in group {
            weight_map.insert(tensor.name.clone(), json!(name));
        }
    }
    let index = json!({"metadata": {"total_size": total}, "weight_map": weight_map});
    let path = dir.join("model.safetensors.index.json");
    write_json(&path, &index)?;
    files.push(path);
    Ok(files)
}

/// Writes a PEFT adapter directory (`adapter_config.json`, `adapter_model.safetensors`) naming
/// `base` as the model it adapts; returns the files written.
pub(crate) fn write_adapter_dir(
    dir: &Path,
    adapters: &Adapters,
    base: &Path,
    dtype: WeightDtype,
) -> Result<Vec<PathBuf>> {
    let config = json!({
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "base_model_name_or_path": base.display().to_string(),
        "r": adapters.rank,
        "lora_alpha": adapters.alpha,
        "lora_dropout": 0.0,
        "target_modules": adapters.targets,
        "bias": "none",
        "fan_in_fan_out": false,
        "use_rslora": false,
        "use_dora": false,
        "init_lora_weights": true,
        "inference_mode": true,
        "modules_to_save": null,
        "layers_to_transform": null,
        "layers_pattern": null,
        "rank_pattern": {},
        "alpha_pattern": {},
        "revision": null,
    });
    let config_path = dir.join("adapter_config.json");
    write_json(&config_path, &config)?;
    let weights_path = dir.join("adapter_model.safetensors");
    let tensors: Vec<&NamedTensor> = adapters.tensors.iter().collect();
    write_safetensors(&weights_path, &tensors, dtype)?;
    Ok(vec![config_path, weights_path])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(name: &str, n: usize) -> NamedTensor {
        NamedTensor {
            name: name.into(),
            shape: vec![n],
            values: vec![0.0; n],
        }
    }

    #[test]
    fn shards_keep_order_and_stay_under_the_limit_unless_a_tensor_is_larger() {
        let tensors = [
            tensor("a", 10),
            tensor("b", 10),
            tensor("c", 30),
            tensor("d", 5),
        ];
        let names = |groups: Vec<Vec<&NamedTensor>>| -> Vec<Vec<String>> {
            groups
                .into_iter()
                .map(|g| g.into_iter().map(|t| t.name.clone()).collect())
                .collect()
        };
        assert_eq!(
            names(shards(&tensors, 4, 1 << 30)),
            [["a", "b", "c", "d"].map(String::from).to_vec()]
        );
        assert_eq!(
            names(shards(&tensors, 4, 80)),
            vec![
                vec!["a".to_string(), "b".into()],
                vec!["c".into()],
                vec!["d".into()]
            ]
        );
    }
}
