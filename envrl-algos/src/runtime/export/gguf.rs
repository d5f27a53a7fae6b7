//! Writing a GGUF file as llama.cpp's converter does: llama.cpp's tensor names, the q/k rows of
//! `llama` files permuted for its interleaved rotary embedding, matrices in F32, F16 or Q8_0
//! (quantized by candle's ggml kernels), norms and biases in F32, the architecture under
//! `{arch}.*` keys and the tokenizer under `tokenizer.*`.

use candle_core::quantized::{GgmlDType, QTensor};

use super::tensors::NamedTensor;
use super::{Export, GgufType};
use crate::error::{Error, Result};
use crate::runtime::gguf::{GgufFile, GgufTensor, MetaValue};
use crate::runtime::lm::gguf::{gguf_name, permute_rows};

const F32: u32 = 0;
const F16: u32 = 1;
const Q8_0: u32 = 8;

/// llama.cpp's `general.file_type` of a tensor type (`LLAMA_FTYPE_*`).
fn file_type(kind: GgufType) -> u32 {
    match kind {
        GgufType::F32 => 0,
        GgufType::F16 => 1,
        GgufType::Q8_0 => 7,
    }
}

/// Encodes one tensor: 1-D tensors stay F32; a Q8_0 matrix whose rows are not whole blocks of
/// 32 falls back to F16, as llama.cpp's converter does.
fn encode(tensor: &NamedTensor, kind: GgufType) -> Result<(u32, Vec<u8>)> {
    let f16 = |values: &[f32]| -> Vec<u8> {
        values
            .iter()
            .flat_map(|v| half::f16::from_f32(*v).to_le_bytes())
            .collect()
    };
    let cols = tensor.shape.last().copied().unwrap_or(0);
    Ok(match kind {
        _ if tensor.shape.len() < 2 => (F32, bytemuck::cast_slice(&tensor.values).to_vec()),
        GgufType::F32 => (F32, bytemuck::cast_slice(&tensor.values).to_vec()),
        GgufType::F16 => (F16, f16(&tensor.values)),
        GgufType::Q8_0 if !cols.is_multiple_of(32) => (F16, f16(&tensor.values)),
        GgufType::Q8_0 => {
            let fail = |e: candle_core::Error| Error::Export {
                path: Default::default(),
                reason: format!("quantizing `{}` to Q8_0: {e}", tensor.name),
            };
            let device = candle_core::Device::Cpu;
            let values =
                candle_core::Tensor::from_slice(&tensor.values, tensor.shape.as_slice(), &device)
                    .map_err(fail)?;
            let q = QTensor::quantize(&values, GgmlDType::Q8_0).map_err(fail)?;
            (Q8_0, q.data().map_err(fail)?.into_owned())
        }
    })
}

/// The GGUF tensors of a model's Hugging Face tensors.
pub(crate) fn gguf_tensors(
    export: &Export<'_>,
    tensors: &[NamedTensor],
    kind: GgufType,
) -> Result<Vec<GgufTensor>> {
    let llama = !export.config.attention_bias;
    let config = export.config;
    tensors
        .iter()
        .map(|t| {
            let name = gguf_name(&t.name);
            let heads = if !llama || t.shape.len() != 2 {
                None
            } else if name.ends_with(".attn_q.weight") {
                Some(config.num_attention_heads)
            } else if name.ends_with(".attn_k.weight") {
                Some(config.num_key_value_heads)
            } else {
                None
            };
            let permuted;
            let tensor = match heads {
                Some(heads) => {
                    permuted = NamedTensor {
                        values: permute_rows(&t.values, heads, t.shape[1]),
                        ..t.clone()
                    };
                    &permuted
                }
                None => t,
            };
            let (ggml_type, data) = encode(tensor, kind)?;
            Ok(GgufTensor {
                name,
                shape: t.shape.clone(),
                ggml_type,
                data,
            })
        })
        .collect()
}

/// The metadata: `general.*`, the architecture's `{arch}.*` keys, then the tokenizer's.
pub(crate) fn gguf_metadata(
    export: &Export<'_>,
    kind: GgufType,
    context: usize,
    source: Option<&GgufFile>,
) -> Result<Vec<(String, MetaValue)>> {
    let config = export.config;
    let arch = if config.attention_bias {
        "qwen2"
    } else {
        "llama"
    };
    let u32_of = |v: usize| MetaValue::U32(u32::try_from(v).unwrap_or(u32::MAX));
    let mut out = vec![
        (
            "general.architecture".to_string(),
            MetaValue::Str(arch.into()),
        ),
        ("general.name".into(), MetaValue::Str(export.name.into())),
        ("general.file_type".into(), MetaValue::U32(file_type(kind))),
        ("general.quantization_version".into(), MetaValue::U32(2)),
    ];
    let key = |k: &str| format!("{arch}.{k}");
    out.extend([
        (key("context_length"), u32_of(context)),
        (key("embedding_length"), u32_of(config.hidden_size)),
        (key("block_count"), u32_of(config.num_hidden_layers)),
        (key("feed_forward_length"), u32_of(config.intermediate_size)),
        (
            key("attention.head_count"),
            u32_of(config.num_attention_heads),
        ),
        (
            key("attention.head_count_kv"),
            u32_of(config.num_key_value_heads),
        ),
        (key("rope.dimension_count"), u32_of(config.head_dim())),
        (
            key("rope.freq_base"),
            MetaValue::F32(config.rope_theta as f32),
        ),
        (
            key("attention.layer_norm_rms_epsilon"),
            MetaValue::F32(config.rms_norm_eps as f32),
        ),
        (key("vocab_size"), u32_of(config.vocab_size)),
    ]);
    out.extend(export.tokenizer.gguf_metadata(source)?);
    Ok(out)
}
