//! Hugging Face tokenizers (`tokenizer.json`, through the `tokenizers` crate) with the chat
//! template of `tokenizer_config.json` rendered by `minijinja`.

use std::path::{Path, PathBuf};

use envrl::Tokenizer;
use minijinja::{Environment, ErrorKind, context};
use serde::Deserialize;

use crate::error::{Error, Result};

/// The `tokenizer_config.json` keys this crate reads.
#[derive(Debug, Default, Deserialize)]
struct TokenizerConfig {
    chat_template: Option<String>,
    eos_token: Option<serde_json::Value>,
    pad_token: Option<serde_json::Value>,
    unk_token: Option<serde_json::Value>,
}

/// A token named in `tokenizer_config.json`: a string or `{"content": ...}`.
fn token_name(value: &Option<serde_json::Value>) -> Option<String> {
    match value.as_ref()? {
        serde_json::Value::String(s) => Some(s.clone()),
        other => other.get("content")?.as_str().map(str::to_string),
    }
}

/// A pretrained model's tokenizer and chat template.
pub struct HfTokenizer {
    inner: tokenizers::Tokenizer,
    /// The compiled chat template (compiled once: every prompt of a rollout renders it).
    chat: Option<Environment<'static>>,
    /// Its source, written again by an export.
    chat_template: Option<String>,
    eos: u32,
    pad: u32,
    unk: Option<u32>,
    path: PathBuf,
}

impl std::fmt::Debug for HfTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HfTokenizer")
            .field("path", &self.path)
            .field("eos", &self.eos)
            .field("chat_template", &self.chat.is_some())
            .finish_non_exhaustive()
    }
}

pub(crate) fn tokenizer_error(path: &Path, reason: impl Into<String>) -> Error {
    Error::Tokenizer {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

impl HfTokenizer {
    /// Reads `dir/tokenizer.json` and, when present, `dir/tokenizer_config.json` (chat
    /// template, EOS and pad tokens).
    ///
    /// # Errors
    /// [`Error::Tokenizer`] naming the file when one is missing or malformed, or when the EOS
    /// token is not in the vocabulary.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref();
        let path = dir.join("tokenizer.json");
        let inner = tokenizers::Tokenizer::from_file(&path)
            .map_err(|e| tokenizer_error(&path, e.to_string()))?;
        let config_path = dir.join("tokenizer_config.json");
        let config: TokenizerConfig = if config_path.exists() {
            let text = std::fs::read_to_string(&config_path)
                .map_err(|e| tokenizer_error(&config_path, e.to_string()))?;
            serde_json::from_str(&text).map_err(|e| tokenizer_error(&config_path, e.to_string()))?
        } else {
            TokenizerConfig::default()
        };
        let id = |name: &str| inner.token_to_id(name);
        let eos_name = token_name(&config.eos_token).unwrap_or_else(|| "<|im_end|>".into());
        let eos = id(&eos_name).ok_or_else(|| {
            tokenizer_error(
                &config_path,
                format!("eos token `{eos_name}` is not in the vocabulary"),
            )
        })?;
        let pad = token_name(&config.pad_token)
            .and_then(|p| id(&p))
            .unwrap_or(eos);
        let unk = token_name(&config.unk_token).and_then(|u| id(&u));
        Ok(Self::new(
            inner,
            config.chat_template.as_deref(),
            eos,
            pad,
            &config_path,
        )?
        .with_unk(unk))
    }

    /// Wraps a built tokenizer; `path` names the file the chat template came from in errors.
    pub(crate) fn new(
        inner: tokenizers::Tokenizer,
        chat_template: Option<&str>,
        eos: u32,
        pad: u32,
        path: &Path,
    ) -> Result<Self> {
        let chat = chat_template
            .map(Self::environment)
            .transpose()
            .map_err(|e| tokenizer_error(path, format!("chat_template: {e}")))?;
        Ok(Self {
            inner,
            chat,
            chat_template: chat_template.map(str::to_string),
            eos,
            pad,
            unk: None,
            path: path.to_path_buf(),
        })
    }

    /// The same tokenizer with `unk` as its unknown-word token.
    pub(crate) fn with_unk(self, unk: Option<u32>) -> Self {
        Self { unk, ..self }
    }

    /// The wrapped `tokenizers` tokenizer (its `tokenizer.json`).
    pub fn inner(&self) -> &tokenizers::Tokenizer {
        &self.inner
    }

    /// The chat template's source, if the tokenizer has one.
    pub fn chat_template(&self) -> Option<&str> {
        self.chat_template.as_deref()
    }

    fn environment(source: &str) -> std::result::Result<Environment<'static>, minijinja::Error> {
        let mut env = Environment::new();
        env.add_function(
            "raise_exception",
            |message: String| -> std::result::Result<String, minijinja::Error> {
                Err(minijinja::Error::new(ErrorKind::InvalidOperation, message))
            },
        );
        env.add_template_owned("chat", source.to_string())?;
        Ok(env)
    }

    /// Renders the chat template for `(role, content)` messages; without a template, the
    /// contents joined by newlines.
    ///
    /// # Errors
    /// [`Error::Tokenizer`] when the template fails to render.
    pub fn apply_chat_template(
        &self,
        messages: &[(&str, &str)],
        add_generation_prompt: bool,
    ) -> Result<String> {
        let Some(env) = &self.chat else {
            return Ok(messages
                .iter()
                .map(|(_, c)| *c)
                .collect::<Vec<_>>()
                .join("\n"));
        };
        let messages: Vec<_> = messages
            .iter()
            .map(|(role, content)| context! { role => role, content => content })
            .collect();
        let template = env
            .get_template("chat")
            .map_err(|e| tokenizer_error(&self.path, e.to_string()))?;
        template
            .render(
                context! { messages => messages, add_generation_prompt => add_generation_prompt },
            )
            .map_err(|e| tokenizer_error(&self.path, format!("chat_template: {e}")))
    }

    /// Decodes ids keeping special tokens (`<|im_end|>` …).
    pub fn decode_with_special(&self, ids: &[u32]) -> String {
        self.inner.decode(ids, false).unwrap_or_default()
    }
}

impl Tokenizer for HfTokenizer {
    fn encode(&self, text: &str) -> Vec<u32> {
        self.inner
            .encode(text, false)
            .map(|e| e.get_ids().to_vec())
            .unwrap_or_default()
    }

    fn decode(&self, ids: &[u32]) -> String {
        self.inner.decode(ids, true).unwrap_or_default()
    }

    fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    fn eos_id(&self) -> u32 {
        self.eos
    }

    fn pad_id(&self) -> u32 {
        self.pad
    }

    fn unk_id(&self) -> Option<u32> {
        self.unk
    }

    /// The user message wrapped by the chat template with the generation prompt.
    fn encode_prompt(&self, user_message: &str) -> Vec<u32> {
        match self.apply_chat_template(&[("user", user_message)], true) {
            Ok(text) => self.encode(&text),
            Err(_) => self.encode(user_message),
        }
    }
}
