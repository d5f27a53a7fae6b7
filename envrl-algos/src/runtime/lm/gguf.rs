//! Building a [`CausalLm`] from a GGUF file: the architecture from its `{arch}.*` metadata, the
//! weights dequantized to f32 under their Hugging Face names, and llama.cpp's rotary permutation
//! of the `llama` q/k projections undone.

use std::path::Path;

use burn::module::Param;
use burn::nn::Linear;
use burn::tensor::{Device, Tensor};

use crate::error::Result;
use crate::runtime::gguf::{GgufFile, GgufValue};
use crate::runtime::lm::init::{param, transpose};
use crate::runtime::lm::qwen2::ParamSource;
use crate::runtime::lm::{CausalLm, LmConfig};

/// Reads the model architecture from a GGUF file's metadata (`llama` and `qwen2`).
///
/// # Errors
/// [`crate::Error::ModelFile`] naming the file and key when a key is missing, the architecture is
/// unsupported, or RoPE scaling is requested.
pub fn gguf_config(file: &GgufFile) -> Result<LmConfig> {
    let arch = file.string("general.architecture")?;
    if !matches!(arch, "llama" | "qwen2") {
        return Err(file.error(format!(
            "general.architecture `{arch}` is not supported (llama, qwen2)"
        )));
    }
    let key = |k: &str| format!("{arch}.{k}");
    let size = |k: &str| -> Result<usize> { Ok(file.uint(&key(k))? as usize) };
    if let Some(GgufValue::String(kind)) = file.metadata().get(&key("rope.scaling.type"))
        && kind != "none"
    {
        return Err(file.error(format!(
            "{}: RoPE scaling `{kind}` is not supported yet",
            key("rope.scaling.type")
        )));
    }
    let heads = size("attention.head_count")?;
    let kv_heads = file
        .optional(&key("attention.head_count_kv"), GgufFile::uint)?
        .map_or(heads, |v| v as usize);
    let hidden = size("embedding_length")?;
    let vocab = match file.tensors().get("token_embd.weight") {
        Some(info) if info.shape.len() == 2 => info.shape[0],
        _ => return Err(file.error("tensor `token_embd.weight` is missing or not a matrix")),
    };
    if let Some(GgufValue::Uint(rope_dims)) = file.metadata().get(&key("rope.dimension_count"))
        && heads > 0
        && *rope_dims as usize != hidden / heads
    {
        return Err(file.error(format!(
            "{}: partial rotary embeddings ({rope_dims} of {} dims) are not supported",
            key("rope.dimension_count"),
            hidden / heads
        )));
    }
    let rope_theta = file
        .optional(&key("rope.freq_base"), GgufFile::float)?
        .unwrap_or(10_000.0);
    let config = LmConfig::new(
        vocab,
        hidden,
        size("feed_forward_length")?,
        size("block_count")?,
        heads,
        kv_heads,
    )
    .with_rope_theta(rope_theta)
    .with_rms_norm_eps(file.float(&key("attention.layer_norm_rms_epsilon"))?)
    .with_attention_bias(file.tensors().contains_key("blk.0.attn_q.bias"))
    .with_tie_word_embeddings(!file.tensors().contains_key("output.weight"));
    config
        .validate()
        .map_err(|e| file.error(format!("the metadata describes an invalid model: {e}")))?;
    Ok(config)
}

/// The GGUF name of a Hugging Face parameter name (`model.layers.3.self_attn.q_proj` →
/// `blk.3.attn_q`).
pub(crate) fn gguf_name(hf: &str) -> String {
    let fixed = match hf {
        "model.embed_tokens.weight" => Some("token_embd.weight"),
        "model.norm.weight" => Some("output_norm.weight"),
        _ => None,
    };
    if let Some(name) = fixed {
        return name.to_string();
    }
    if let Some(suffix) = hf.strip_prefix("lm_head") {
        return format!("output{suffix}");
    }
    let Some(rest) = hf.strip_prefix("model.layers.") else {
        return hf.to_string();
    };
    let (layer, part) = rest.split_once('.').unwrap_or((rest, ""));
    let renamed = [
        ("self_attn.q_proj", "attn_q"),
        ("self_attn.k_proj", "attn_k"),
        ("self_attn.v_proj", "attn_v"),
        ("self_attn.o_proj", "attn_output"),
        ("mlp.gate_proj", "ffn_gate"),
        ("mlp.up_proj", "ffn_up"),
        ("mlp.down_proj", "ffn_down"),
        ("input_layernorm", "attn_norm"),
        ("post_attention_layernorm", "ffn_norm"),
    ]
    .iter()
    .find_map(|(from, to)| {
        part.strip_prefix(from)
            .map(|suffix| format!("{to}{suffix}"))
    })
    .unwrap_or_else(|| part.to_string());
    format!("blk.{layer}.{renamed}")
}

/// llama.cpp's `permute` of q/k rows for its interleaved RoPE (the inverse of
/// [`unpermute_rows`]): within each head, Hugging Face row `i·(d/2) + j` goes to GGUF row
/// `2j + i`. `values` is `[rows, cols]`.
pub(crate) fn permute_rows(values: &[f32], heads: usize, cols: usize) -> Vec<f32> {
    move_qk_rows(values, heads, cols, true)
}

/// Undoes llama.cpp's `permute` of q/k rows: within each head, GGUF row `2j + i` holds Hugging
/// Face row `i·(d/2) + j` (i ∈ {0, 1}, d = head width). `values` is `[rows, cols]`.
fn unpermute_rows(values: &[f32], heads: usize, cols: usize) -> Vec<f32> {
    move_qk_rows(values, heads, cols, false)
}

/// Moves each head's rows between the Hugging Face order and llama.cpp's (`to_gguf`) or back.
fn move_qk_rows(values: &[f32], heads: usize, cols: usize, to_gguf: bool) -> Vec<f32> {
    let rows = values.len() / cols.max(1);
    let head_dim = rows / heads.max(1);
    let half = head_dim / 2;
    let mut out = vec![0.0f32; values.len()];
    for h in 0..heads {
        for i in 0..2 {
            for j in 0..half {
                let hf_row = h * head_dim + i * half + j;
                let gguf_row = h * head_dim + 2 * j + i;
                let (to, from) = if to_gguf {
                    (gguf_row, hf_row)
                } else {
                    (hf_row, gguf_row)
                };
                out[to * cols..(to + 1) * cols]
                    .copy_from_slice(&values[from * cols..(from + 1) * cols]);
            }
        }
    }
    out
}

/// Parameters read from a GGUF file under Hugging Face names.
struct GgufWeights<'a> {
    file: &'a GgufFile,
    config: &'a LmConfig,
    /// `llama` files store q/k rows permuted for llama.cpp's interleaved RoPE.
    permuted_qk: bool,
    device: Device,
}

impl GgufWeights<'_> {
    /// Heads whose rows a projection's permutation groups, if it is a permuted q/k projection.
    fn permuted_heads(&self, gguf: &str) -> Option<usize> {
        if !self.permuted_qk {
            return None;
        }
        if gguf.contains(".attn_q.") {
            Some(self.config.num_attention_heads)
        } else if gguf.contains(".attn_k.") {
            Some(self.config.num_key_value_heads)
        } else {
            None
        }
    }

    /// `[rows, cols]` of the file, with the q/k permutation undone where it applies.
    fn read(&self, gguf: &str, rows: usize, cols: usize) -> Result<Vec<f32>> {
        let shape: Vec<usize> = if cols == 1 {
            vec![rows]
        } else {
            vec![rows, cols]
        };
        let values = self.file.tensor_f32(gguf, &shape)?;
        Ok(match self.permuted_heads(gguf) {
            Some(heads) => unpermute_rows(&values, heads, cols),
            None => values,
        })
    }
}

impl ParamSource for GgufWeights<'_> {
    type Error = crate::Error;

    fn matrix(&mut self, name: &str, rows: usize, cols: usize) -> Result<Param<Tensor<2>>> {
        let values = self.read(&gguf_name(name), rows, cols)?;
        Ok(param(values, [rows, cols], &self.device))
    }

    fn linear(
        &mut self,
        name: &str,
        d_input: usize,
        d_output: usize,
        bias: bool,
    ) -> Result<Linear> {
        let base = gguf_name(name);
        // GGUF stores `[out, in]` like Hugging Face; Burn's `Linear` holds `[in, out]`.
        let values = self.read(&format!("{base}.weight"), d_output, d_input)?;
        let weight = transpose(&values, d_output, d_input);
        let bias = if bias {
            let values = self.read(&format!("{base}.bias"), d_output, 1)?;
            Some(param(values, [d_output], &self.device))
        } else {
            None
        };
        Ok(Linear {
            weight: param(weight, [d_input, d_output], &self.device),
            bias,
        })
    }

    fn vector(&mut self, name: &str, len: usize) -> Result<Param<Tensor<1>>> {
        let values = self.read(&gguf_name(name), len, 1)?;
        Ok(param(values, [len], &self.device))
    }
}

impl CausalLm {
    /// Loads a GGUF file (`llama` or `qwen2` architecture; F32, F16, BF16, Q4_0, Q4_1, Q5_0,
    /// Q5_1, Q8_0 and the K-quants, dequantized to f32) onto `device`.
    ///
    /// # Errors
    /// [`crate::Error::ModelFile`] naming the file and the key or tensor when it is malformed,
    /// truncated, of an unsupported architecture or quant type, or a tensor is misshapen.
    pub fn from_gguf(path: impl AsRef<Path>, device: &Device) -> Result<(Self, LmConfig)> {
        let file = GgufFile::open(path)?;
        Self::from_gguf_file(&file, device)
    }

    /// [`CausalLm::from_gguf`] on a file already read (its tokenizer can come from the same
    /// read, see [`crate::HfTokenizer::from_gguf`]).
    ///
    /// # Errors
    /// As [`CausalLm::from_gguf`].
    pub fn from_gguf_file(file: &GgufFile, device: &Device) -> Result<(Self, LmConfig)> {
        let config = gguf_config(file)?;
        let mut weights = GgufWeights {
            file,
            config: &config,
            permuted_qk: file.string("general.architecture")? == "llama",
            device: device.clone(),
        };
        let model = CausalLm::build(&config, &mut weights)?;
        Ok((model, config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hugging_face_names_map_to_gguf_names() {
        assert_eq!(gguf_name("model.embed_tokens.weight"), "token_embd.weight");
        assert_eq!(
            gguf_name("model.layers.12.self_attn.q_proj"),
            "blk.12.attn_q"
        );
        assert_eq!(
            gguf_name("model.layers.0.post_attention_layernorm.weight"),
            "blk.0.ffn_norm.weight"
        );
        assert_eq!(gguf_name("model.layers.3.mlp.down_proj"), "blk.3.ffn_down");
        assert_eq!(gguf_name("lm_head"), "output");
        assert_eq!(gguf_name("lm_head.weight"), "output.weight");
    }

    /// llama.cpp's `permute`: reshape(heads, 2, d/2, cols) → swap axes 1 and 2 → reshape back.
    fn permute(values: &[f32], heads: usize, cols: usize) -> Vec<f32> {
        let head_dim = values.len() / cols / heads;
        let half = head_dim / 2;
        let mut out = vec![0.0; values.len()];
        for h in 0..heads {
            for i in 0..2 {
                for j in 0..half {
                    let src = h * head_dim + i * half + j;
                    let dst = h * head_dim + j * 2 + i;
                    out[dst * cols..(dst + 1) * cols]
                        .copy_from_slice(&values[src * cols..(src + 1) * cols]);
                }
            }
        }
        out
    }

    #[test]
    fn unpermuting_inverts_llama_cpp_permutation() {
        let (heads, head_dim, cols) = (3, 8, 5);
        let values: Vec<f32> = (0..heads * head_dim * cols).map(|v| v as f32).collect();
        let permuted = permute(&values, heads, cols);
        assert_ne!(permuted, values);
        assert_eq!(permute_rows(&values, heads, cols), permuted);
        assert_eq!(unpermute_rows(&permuted, heads, cols), values);
        // Row 1 of head 0 in GGUF order is Hugging Face row d/2 (the second rotary half).
        assert_eq!(permuted[cols], values[(head_dim / 2) * cols]);
    }
}
