//! The tokenizer of an export: `tokenizer.json` and `tokenizer_config.json` for Hugging Face
//! directories, `tokenizer.*` metadata for GGUF files.
//!
//! A word tokenizer becomes a `WordLevel` model whose normalizer and pre-tokenizer reproduce its
//! rules: whitespace runs become one `▁` (a trailing run none), a `▁` starts the text, and the
//! pieces are letter-and-digit runs, markup tags (`<action>`, `</think>`) and single other
//! characters, each with the `▁` before it. (One difference remains: the literal strings
//! `<pad>`, `<eos>` and `<unk>` in a text encode as those special tokens, where the word
//! tokenizer reads them as a tag.)

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::error::Result;
use crate::runtime::gguf::{GgufFile, GgufValue, MetaValue};
use crate::runtime::tokenizer::gguf::{
    TOKEN_CONTROL, TOKEN_NORMAL, TOKEN_USER_DEFINED, pre_tokenizer,
};
use crate::runtime::tokenizer::{
    EOS_TOKEN, HfTokenizer, PAD_TOKEN, SPECIALS, UNK_TOKEN, WordTokenizer,
};

/// The tokenizer an export writes.
#[derive(Debug, Clone, Copy)]
pub enum ExportTokenizer<'a> {
    /// A from-scratch model's word tokenizer.
    Word(&'a WordTokenizer),
    /// A pretrained model's tokenizer (from its Hugging Face directory or GGUF file).
    Hf(&'a HfTokenizer),
}

impl<'a> ExportTokenizer<'a> {
    /// As an [`envrl::Tokenizer`], for checking the export's encodings.
    pub(crate) fn as_dyn(&self) -> &'a dyn envrl::Tokenizer {
        match *self {
            ExportTokenizer::Word(t) => t,
            ExportTokenizer::Hf(t) => t,
        }
    }

    /// The Hugging Face `tokenizer.json`.
    pub(crate) fn tokenizer_json(&self) -> Result<Value> {
        match self {
            ExportTokenizer::Word(t) => Ok(word_level_json(t)),
            ExportTokenizer::Hf(t) => {
                let text = t
                    .inner()
                    .to_string(false)
                    .map_err(|e| crate::Error::Export {
                        path: "tokenizer.json".into(),
                        reason: e.to_string(),
                    })?;
                serde_json::from_str(&text).map_err(|e| crate::Error::Export {
                    path: "tokenizer.json".into(),
                    reason: e.to_string(),
                })
            }
        }
    }

    fn token(&self, id: u32) -> Option<String> {
        match self {
            ExportTokenizer::Word(t) => t.words().get(id as usize).cloned(),
            ExportTokenizer::Hf(t) => t.inner().id_to_token(id),
        }
    }

    /// `tokenizer_config.json`: the fast tokenizer class, the chat template and the special
    /// tokens by name.
    pub(crate) fn tokenizer_config(&self) -> Value {
        let tok = self.as_dyn();
        let mut config = json!({
            "tokenizer_class": "PreTrainedTokenizerFast",
            "clean_up_tokenization_spaces": false,
            "model_max_length": 1_000_000_000_000_000_000u64,
            "eos_token": self.token(tok.eos_id()),
            "pad_token": self.token(tok.pad_id()),
        });
        if let Some(unk) = tok.unk_id().and_then(|id| self.token(id)) {
            config["unk_token"] = json!(unk);
        }
        if let ExportTokenizer::Hf(t) = self
            && let Some(template) = t.chat_template()
        {
            config["chat_template"] = json!(template);
        }
        config
    }

    /// The `tokenizer.*` metadata of a GGUF file. `source`, the GGUF file the model came from,
    /// gives its keys unchanged; otherwise a byte-level BPE tokenizer is described with
    /// llama.cpp's keys (`gpt2`, its pre-tokenizer named when it is one envrl knows), and any
    /// other tokenizer (a word tokenizer, an unrecognised pre-tokenizer) is written whole as
    /// `tokenizer.huggingface.json` beside its token list.
    pub(crate) fn gguf_metadata(
        &self,
        source: Option<&GgufFile>,
    ) -> Result<Vec<(String, MetaValue)>> {
        if let Some(file) = source {
            return Ok(file
                .metadata()
                .iter()
                .filter(|(k, _)| k.starts_with("tokenizer."))
                .filter_map(|(k, v)| meta_value(v).map(|v| (k.clone(), v)))
                .collect());
        }
        let spec = self.tokenizer_json()?;
        let tok = self.as_dyn();
        let mut out = Vec::new();
        let (tokens, types) = token_list(&spec, tok.vocab_size());
        let bpe = spec["model"]["type"] == "BPE";
        let pre = if bpe {
            known_pre_tokenizer(&spec)
        } else {
            None
        };
        match pre {
            Some(pre) => {
                out.push(("tokenizer.ggml.model".into(), MetaValue::Str("gpt2".into())));
                out.push(("tokenizer.ggml.pre".into(), MetaValue::Str(pre.into())));
            }
            None => {
                out.push(("tokenizer.ggml.model".into(), MetaValue::Str("none".into())));
            }
        }
        out.push(("tokenizer.ggml.tokens".into(), MetaValue::StrArray(tokens)));
        out.push((
            "tokenizer.ggml.token_type".into(),
            MetaValue::I32Array(types),
        ));
        if pre.is_some() {
            out.push((
                "tokenizer.ggml.merges".into(),
                MetaValue::StrArray(merges(&spec)),
            ));
        } else {
            out.push((
                "tokenizer.huggingface.json".into(),
                MetaValue::Str(spec.to_string()),
            ));
        }
        out.push((
            "tokenizer.ggml.eos_token_id".into(),
            MetaValue::U32(tok.eos_id()),
        ));
        out.push((
            "tokenizer.ggml.padding_token_id".into(),
            MetaValue::U32(tok.pad_id()),
        ));
        if let Some(unk) = tok.unk_id() {
            out.push((
                "tokenizer.ggml.unknown_token_id".into(),
                MetaValue::U32(unk),
            ));
        }
        if let ExportTokenizer::Hf(t) = self
            && let Some(template) = t.chat_template()
        {
            out.push((
                "tokenizer.chat_template".into(),
                MetaValue::Str(template.into()),
            ));
        }
        Ok(out)
    }
}

/// The word tokenizer as a Hugging Face `WordLevel` tokenizer with the same ids.
fn word_level_json(tokenizer: &WordTokenizer) -> Value {
    let vocab: serde_json::Map<String, Value> = tokenizer
        .words()
        .iter()
        .enumerate()
        .map(|(id, w)| (w.clone(), json!(id)))
        .collect();
    let added: Vec<Value> = [PAD_TOKEN, EOS_TOKEN, UNK_TOKEN]
        .iter()
        .map(|&id| {
            json!({"id": id, "content": SPECIALS[id as usize], "single_word": false,
                   "lstrip": false, "rstrip": false, "normalized": false, "special": true})
        })
        .collect();
    json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Replace", "pattern": {"Regex": r"\s+\z"}, "content": ""},
            {"type": "Replace", "pattern": {"Regex": r"\s+"}, "content": "\u{2581}"},
            {"type": "Prepend", "prepend": "\u{2581}"},
            {"type": "Replace", "pattern": {"String": "\u{2581}\u{2581}"}, "content": "\u{2581}"}
        ]},
        "pre_tokenizer": {"type": "Split",
            "pattern": {"Regex": "\u{2581}?(?:[\\p{Alphabetic}\\p{N}]+|</?[A-Za-z_]+>|[^\u{2581}])"},
            "behavior": "Isolated", "invert": false},
        "post_processor": null,
        "decoder": {"type": "Metaspace", "replacement": "\u{2581}", "prepend_scheme": "always",
                    "split": true},
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": SPECIALS[UNK_TOKEN as usize]}
    })
}

/// Every token by id (the model's vocabulary and the added tokens), with llama.cpp's type:
/// control for special added tokens, user-defined for the other added ones.
fn token_list(spec: &Value, vocab_size: usize) -> (Vec<String>, Vec<i32>) {
    let mut tokens: BTreeMap<usize, (String, i64)> = BTreeMap::new();
    if let Some(vocab) = spec["model"]["vocab"].as_object() {
        for (token, id) in vocab {
            if let Some(id) = id.as_u64() {
                tokens.insert(id as usize, (token.clone(), TOKEN_NORMAL));
            }
        }
    }
    for added in spec["added_tokens"].as_array().into_iter().flatten() {
        if let (Some(id), Some(content)) = (added["id"].as_u64(), added["content"].as_str()) {
            let kind = if added["special"] == true {
                TOKEN_CONTROL
            } else {
                TOKEN_USER_DEFINED
            };
            tokens.insert(id as usize, (content.to_string(), kind));
        }
    }
    let len = vocab_size.max(tokens.keys().next_back().map_or(0, |k| k + 1));
    (0..len)
        .map(|id| match tokens.get(&id) {
            Some((t, kind)) => (t.clone(), *kind as i32),
            // llama.cpp's type 5: an id no token uses.
            None => (format!("[UNUSED{id}]"), 5),
        })
        .unzip()
}

/// BPE merges as llama.cpp's `"a b"` strings (tokenizer.json holds `["a", "b"]` or `"a b"`).
fn merges(spec: &Value) -> Vec<String> {
    spec["model"]["merges"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| match m {
            Value::String(s) => Some(s.clone()),
            Value::Array(pair) => Some(format!(
                "{} {}",
                pair.first()?.as_str()?,
                pair.get(1)?.as_str()?
            )),
            _ => None,
        })
        .collect()
}

/// The `tokenizer.ggml.pre` name whose normalizer and pre-tokenizer (as envrl's GGUF reader
/// rebuilds them) serialize exactly as `spec`'s do, so that reading the GGUF file gives the same
/// tokenizer back.
fn known_pre_tokenizer(spec: &Value) -> Option<&'static str> {
    let canonical = |normalizer: &Value, pre: &Value| -> Option<(Value, Value)> {
        let probe = json!({"version": "1.0", "truncation": null, "padding": null,
            "added_tokens": [], "normalizer": normalizer, "pre_tokenizer": pre,
            "post_processor": null, "decoder": null,
            "model": {"type": "WordLevel", "vocab": {"a": 0}, "unk_token": "a"}});
        let tok: tokenizers::Tokenizer = probe.to_string().parse().ok()?;
        let text = tok.to_string(false).ok()?;
        let back: Value = serde_json::from_str(&text).ok()?;
        Some((back["normalizer"].clone(), back["pre_tokenizer"].clone()))
    };
    let ours = canonical(&spec["normalizer"], &spec["pre_tokenizer"])?;
    ["smollm", "qwen2", "gpt-2"].into_iter().find(|name| {
        pre_tokenizer(name)
            .and_then(|(n, p)| canonical(&n, &p))
            .is_some_and(|theirs| theirs == ours)
    })
}

/// A read metadata value with the type llama.cpp reads it as (integers as 32-bit where they
/// fit, floats as f32, integer arrays as i32, float arrays as f32).
fn meta_value(value: &GgufValue) -> Option<MetaValue> {
    Some(match value {
        GgufValue::Uint(v) => match u32::try_from(*v) {
            Ok(v) => MetaValue::U32(v),
            Err(_) => MetaValue::U64(*v),
        },
        GgufValue::Int(v) => MetaValue::I32(i32::try_from(*v).ok()?),
        GgufValue::Float(v) => MetaValue::F32(*v as f32),
        GgufValue::Bool(v) => MetaValue::Bool(*v),
        GgufValue::String(s) => MetaValue::Str(s.clone()),
        GgufValue::Array(items) => match items.first() {
            None | Some(GgufValue::String(_)) => MetaValue::StrArray(
                items
                    .iter()
                    .map(|v| match v {
                        GgufValue::String(s) => Some(s.clone()),
                        _ => None,
                    })
                    .collect::<Option<_>>()?,
            ),
            Some(GgufValue::Int(_) | GgufValue::Uint(_)) => MetaValue::I32Array(
                items
                    .iter()
                    .map(|v| match v {
                        GgufValue::Int(x) => i32::try_from(*x).ok(),
                        GgufValue::Uint(x) => i32::try_from(*x).ok(),
                        _ => None,
                    })
                    .collect::<Option<_>>()?,
            ),
            Some(GgufValue::Float(_)) => MetaValue::F32Array(
                items
                    .iter()
                    .map(|v| match v {
                        GgufValue::Float(x) => Some(*x as f32),
                        _ => None,
                    })
                    .collect::<Option<_>>()?,
            ),
            _ => return None,
        },
    })
}

#[cfg(test)]
mod tests {
    use envrl::Tokenizer;

    use super::*;

    #[test]
    fn the_word_level_tokenizer_json_encodes_and_decodes_as_the_word_tokenizer() {
        let corpus = [
            "You are in the middle of a room. Looking quickly around you, you see a cabinet 1, \
             a drawer 12.\nYour task is to: put a clean mug in coffeemachine.",
            "<think>The mug is here.</think><action>take mug 2 from drawer 1</action>",
            "search[red shoes]  click[b0123]\t done",
        ];
        let word = WordTokenizer::from_corpus(corpus);
        let hf: tokenizers::Tokenizer = word_level_json(&word).to_string().parse().unwrap();
        let texts = corpus.iter().copied().chain([
            "",
            "   ",
            "go to drawer 1\n",
            "  leading",
            "unknown zebra 7!",
            "a<b>c </x>",
        ]);
        for text in texts {
            let ours = word.encode(text);
            let theirs = hf.encode(text, false).unwrap().get_ids().to_vec();
            assert_eq!(theirs, ours, "{text:?}");
            assert_eq!(
                hf.decode(&ours, true).unwrap(),
                word.decode(&ours),
                "{text:?}"
            );
        }
    }
}
