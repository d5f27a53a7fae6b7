//! The tokenizer of a GGUF file, rebuilt from its `tokenizer.ggml.*` metadata as the Hugging
//! Face `tokenizer.json` the file was converted from (byte-level BPE, the pre-tokenizer named by
//! `tokenizer.ggml.pre`, control tokens as special added tokens) and the chat template of
//! `tokenizer.chat_template`.

use serde_json::{Value, json};

use crate::error::Result;
use crate::runtime::gguf::{GgufFile, GgufValue};
use crate::runtime::tokenizer::HfTokenizer;
use crate::runtime::tokenizer::hf::tokenizer_error;

/// llama.cpp's token types.
pub(crate) const TOKEN_NORMAL: i64 = 1;
pub(crate) const TOKEN_CONTROL: i64 = 3;
pub(crate) const TOKEN_USER_DEFINED: i64 = 4;

/// The split pattern of Qwen2's pre-tokenizer.
const QWEN2_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

fn byte_level(use_regex: bool) -> Value {
    json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": use_regex})
}

/// The normalizer and pre-tokenizer of a `tokenizer.ggml.pre` name.
pub(crate) fn pre_tokenizer(pre: &str) -> Option<(Value, Value)> {
    Some(match pre {
        "smollm" => (
            Value::Null,
            json!({"type": "Sequence", "pretokenizers": [
                {"type": "Digits", "individual_digits": true},
                {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}
            ]}),
        ),
        "qwen2" => (
            json!({"type": "NFC"}),
            json!({"type": "Sequence", "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": QWEN2_PATTERN}, "behavior": "Isolated", "invert": false},
                byte_level(false)
            ]}),
        ),
        "gpt-2" | "default" => (Value::Null, byte_level(true)),
        _ => return None,
    })
}

fn strings<'a>(file: &GgufFile, items: &'a [GgufValue], key: &str) -> Result<Vec<&'a str>> {
    items
        .iter()
        .map(|v| match v {
            GgufValue::String(s) => Ok(s.as_str()),
            other => Err(file.error(format!("metadata `{key}` holds {other:?}, not a string"))),
        })
        .collect()
}

impl HfTokenizer {
    /// Builds the tokenizer stored in a GGUF file's metadata and its chat template: the
    /// `tokenizer.huggingface.json` key when present (envrl's exports of word-level and other
    /// tokenizers that llama.cpp's keys cannot describe), else `tokenizer.ggml.model = gpt2`
    /// (byte-level BPE with the `smollm`, `qwen2` or `gpt-2` pre-tokenizer).
    ///
    /// # Errors
    /// [`crate::Error::ModelFile`] / [`crate::Error::Tokenizer`] naming the file and key when the
    /// metadata is missing or malformed, or describes a tokenizer this crate cannot rebuild.
    pub fn from_gguf(file: &GgufFile) -> Result<Self> {
        let inner = match file.optional("tokenizer.huggingface.json", GgufFile::string)? {
            Some(json) => json.parse().map_err(|e| {
                tokenizer_error(file.path(), format!("tokenizer.huggingface.json: {e}"))
            })?,
            None => from_ggml_metadata(file)?,
        };
        let vocab = inner.get_vocab_size(true);
        let id = |key: &str| -> Result<Option<u32>> {
            match file.optional(key, GgufFile::uint)? {
                Some(id) if id as usize >= vocab => {
                    Err(file.error(format!("{key} {id} is outside the vocabulary")))
                }
                id => Ok(id.map(|id| id as u32)),
            }
        };
        let eos = id("tokenizer.ggml.eos_token_id")?
            .ok_or_else(|| file.error("metadata `tokenizer.ggml.eos_token_id` is missing"))?;
        let pad = id("tokenizer.ggml.padding_token_id")?.unwrap_or(eos);
        let unk = id("tokenizer.ggml.unknown_token_id")?;
        let template = file.optional("tokenizer.chat_template", GgufFile::string)?;
        Ok(HfTokenizer::new(inner, template, eos, pad, file.path())?.with_unk(unk))
    }
}

/// The byte-level BPE tokenizer described by `tokenizer.ggml.*` (model `gpt2`).
fn from_ggml_metadata(file: &GgufFile) -> Result<tokenizers::Tokenizer> {
    let model = file.string("tokenizer.ggml.model")?;
    if model != "gpt2" {
        return Err(file.error(format!(
            "tokenizer.ggml.model `{model}` is not supported (gpt2: byte-level BPE; other \
             tokenizers are read from tokenizer.huggingface.json)"
        )));
    }
    let pre = file
        .optional("tokenizer.ggml.pre", GgufFile::string)?
        .unwrap_or("default");
    let (normalizer, pre_tokenizer) = pre_tokenizer(pre).ok_or_else(|| {
        file.error(format!(
            "tokenizer.ggml.pre `{pre}` is not supported (smollm, qwen2, gpt-2, default)"
        ))
    })?;
    let tokens = strings(
        file,
        file.array("tokenizer.ggml.tokens")?,
        "tokenizer.ggml.tokens",
    )?;
    let merges: Vec<Value> = strings(
        file,
        file.array("tokenizer.ggml.merges")?,
        "tokenizer.ggml.merges",
    )?
    .into_iter()
    .map(|m| match m.split_once(' ') {
        Some((a, b)) => Ok(json!([a, b])),
        None => Err(file.error(format!("tokenizer.ggml.merges: `{m}` is not a pair"))),
    })
    .collect::<Result<_>>()?;
    let types: Vec<i64> = match file.metadata().get("tokenizer.ggml.token_type") {
        Some(GgufValue::Array(items)) => items
            .iter()
            .map(|v| match v {
                GgufValue::Int(t) => *t,
                GgufValue::Uint(t) => *t as i64,
                _ => TOKEN_NORMAL,
            })
            .collect(),
        _ => vec![TOKEN_NORMAL; tokens.len()],
    };
    let vocab: serde_json::Map<String, Value> = tokens
        .iter()
        .enumerate()
        .map(|(id, t)| (t.to_string(), json!(id)))
        .collect();
    let added: Vec<Value> = tokens
        .iter()
        .zip(&types)
        .enumerate()
        .filter(|(_, (_, t))| matches!(**t, TOKEN_CONTROL | TOKEN_USER_DEFINED))
        .map(|(id, (content, t))| {
            json!({"id": id, "content": content, "single_word": false, "lstrip": false,
                       "rstrip": false, "normalized": false, "special": *t == TOKEN_CONTROL})
        })
        .collect();
    let spec = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": byte_level(false),
        "decoder": byte_level(false),
        "model": {"type": "BPE", "dropout": null, "unk_token": null,
                  "continuing_subword_prefix": "", "end_of_word_suffix": "",
                  "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
                  "vocab": vocab, "merges": merges}
    });
    spec.to_string()
        .parse()
        .map_err(|e| tokenizer_error(file.path(), format!("tokenizer metadata: {e}")))
}
