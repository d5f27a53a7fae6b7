//! Exporting a trained [`CausalLm`] for other tools: a Hugging Face model directory
//! (transformers, vLLM), a PEFT adapter (a LoRA run's adapters alone) or a GGUF file
//! (llama.cpp, ollama).
//!
//! Every export is written into a temporary directory beside the output, loaded back with
//! envrl's own loaders and checked — the logits of a few token rows against the model's, and
//! the tokenizer's encodings of sample texts against the original's — and only then renamed to
//! the output path; a failed export leaves nothing behind.
//!
//! ```
//! use burn::tensor::Device;
//! use envrl::Tokenizer;
//! use envrl_algos::export::{Export, ExportFormat, ExportOptions, ExportTokenizer};
//! use envrl_algos::{LmConfig, WordTokenizer};
//!
//! let tokenizer = WordTokenizer::from_corpus(["go to drawer 1", "take mug 2"]);
//! let config = LmConfig::tiny(tokenizer.vocab_size());
//! let model = config.init(&Device::flex(), 0)?;
//! let out = tempfile::tempdir().unwrap();
//! let export = Export {
//!     model: &model,
//!     config: &config,
//!     tokenizer: ExportTokenizer::Word(&tokenizer),
//!     base_model: None,
//!     name: "tiny",
//! };
//! let report = export.write(&ExportOptions::new(ExportFormat::Hf), &out.path().join("hf"))?;
//! assert_eq!(report.max_logit_diff, 0.0);
//! assert!(out.path().join("hf/model.safetensors").exists());
//! # Ok::<(), envrl_algos::Error>(())
//! ```

mod gguf;
mod hf;
mod tensors;
mod tokenizer;
mod verify;

use std::path::{Path, PathBuf};

pub use hf::hf_config_json;
pub use tokenizer::ExportTokenizer;

use crate::error::{Error, Result};
use crate::runtime::gguf::{GgufFile, write_gguf};
use crate::runtime::lm::{CausalLm, LmConfig};

/// What an export writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// A Hugging Face model directory; LoRA adapters merged into the weights.
    Hf,
    /// A PEFT adapter directory: a LoRA run's adapters alone, naming the base model.
    Peft,
    /// A GGUF file (`model.gguf` in the output directory) for llama.cpp.
    Gguf,
}

impl std::str::FromStr for ExportFormat {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "hf" => Ok(Self::Hf),
            "peft" => Ok(Self::Peft),
            "gguf" => Ok(Self::Gguf),
            other => Err(format!("unknown export format `{other}` (hf, peft, gguf)")),
        }
    }
}

/// The float type of Hugging Face and PEFT weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightDtype {
    /// 32-bit floats: the export is exact.
    F32,
    /// bfloat16.
    Bf16,
    /// IEEE half precision.
    F16,
}

impl WeightDtype {
    /// Bytes per value.
    pub fn bytes(self) -> usize {
        match self {
            Self::F32 => 4,
            Self::Bf16 | Self::F16 => 2,
        }
    }

    /// transformers' `torch_dtype` name.
    pub fn torch_name(self) -> &'static str {
        match self {
            Self::F32 => "float32",
            Self::Bf16 => "bfloat16",
            Self::F16 => "float16",
        }
    }
}

/// The storage of a GGUF file's matrices (norms and biases stay F32).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GgufType {
    /// 32-bit floats: the export is exact.
    F32,
    /// Half precision.
    F16,
    /// 8-bit blocks of 32 with an f16 scale (rows that are not whole blocks are stored F16).
    Q8_0,
}

impl std::str::FromStr for GgufType {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "f32" => Ok(Self::F32),
            "f16" => Ok(Self::F16),
            "q8_0" => Ok(Self::Q8_0),
            other => Err(format!("unknown GGUF type `{other}` (f32, f16, q8_0)")),
        }
    }
}

/// How to export.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportOptions {
    /// The format.
    pub format: ExportFormat,
    /// The float type of `hf` and `peft` weights.
    pub dtype: WeightDtype,
    /// The storage of `gguf` matrices.
    pub gguf_type: GgufType,
    /// Safetensors shards hold at most this many bytes (transformers' default, 5 GB).
    pub max_shard_bytes: u64,
    /// The context length written into the config; `None`: the base model's, else 2048.
    pub context_length: Option<usize>,
    /// For `hf`: write a model whose output layer shares the token embedding with an output
    /// layer of its own (`lm_head.weight`, a copy; `tie_word_embeddings: false`), the same
    /// function. vLLM 0.32's in-place weight reload updates the embedding but leaves a tied
    /// output layer on the old weights, so a served full fine-tune is exported this way.
    pub untie_embeddings: bool,
}

impl ExportOptions {
    /// `format` in f32 (exact), shards of 5 GB.
    pub fn new(format: ExportFormat) -> Self {
        Self {
            format,
            dtype: WeightDtype::F32,
            gguf_type: GgufType::F32,
            max_shard_bytes: 5_000_000_000,
            context_length: None,
            untie_embeddings: false,
        }
    }
}

/// A trained model and what it came from.
#[derive(Debug, Clone, Copy)]
pub struct Export<'a> {
    /// The model (LoRA adapters, if any, are merged by `hf` and `gguf` and written alone by
    /// `peft`).
    pub model: &'a CausalLm,
    /// Its architecture.
    pub config: &'a LmConfig,
    /// Its tokenizer.
    pub tokenizer: ExportTokenizer<'a>,
    /// The pretrained model (Hugging Face directory or `.gguf` file) the run started from:
    /// PEFT's base, the source of a GGUF export's tokenizer keys and of the context length.
    /// `None` for a from-scratch model.
    pub base_model: Option<&'a Path>,
    /// The model's name (`general.name` of a GGUF file).
    pub name: &'a str,
}

/// What an export wrote and how it verified.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportReport {
    /// The output directory.
    pub output: PathBuf,
    /// The files in it.
    pub files: Vec<PathBuf>,
    /// The largest difference between a logit of the export (loaded back) and the model's.
    pub max_logit_diff: f32,
    /// The largest difference accepted for the format and float type.
    pub tolerance: f32,
    /// Token rows × positions whose logits were compared.
    pub positions_checked: usize,
    /// Sample texts whose encodings were compared with the original tokenizer's.
    pub texts_checked: usize,
}

fn export_error(path: &Path, reason: impl Into<String>) -> Error {
    Error::Export {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

impl Export<'_> {
    /// Writes the export to the directory `output` (which must not exist, or be empty), after
    /// verifying it in a temporary directory beside it.
    ///
    /// # Errors
    /// [`Error::Export`] naming the path when `output` is a non-empty directory or cannot be
    /// written, a `peft` export of a model without adapters or base, or when the export does
    /// not load back with the model's logits (within [`ExportReport::tolerance`]) and
    /// tokenization; nothing is left at `output` then.
    pub fn write(&self, options: &ExportOptions, output: &Path) -> Result<ExportReport> {
        if output.exists()
            && std::fs::read_dir(output)
                .map(|mut d| d.next().is_some())
                .unwrap_or(true)
        {
            return Err(export_error(
                output,
                "already exists and is not an empty directory (remove it or choose another)",
            ));
        }
        self.ensure_possible(options, output)?;
        if let Some(which) = envrl::first_non_finite(self.model) {
            return Err(export_error(
                output,
                format!("{which}: refusing to export non-finite weights"),
            ));
        }
        let name = output
            .file_name()
            .ok_or_else(|| export_error(output, "has no directory name"))?;
        let parent = match output.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let partial = parent.join(format!(".{}.partial", name.to_string_lossy()));
        if partial.exists() {
            std::fs::remove_dir_all(&partial).map_err(|e| export_error(&partial, e.to_string()))?;
        }
        std::fs::create_dir_all(&partial).map_err(|e| export_error(&partial, e.to_string()))?;
        let written = self
            .write_into(options, &partial)
            .and_then(|files| verify::check(self, options, &partial).map(|check| (files, check)));
        let (files, check) = match written {
            Ok(done) => done,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&partial);
                return Err(e);
            }
        };
        // On disk before it is renamed in: a crash never leaves a complete-looking export with
        // files the page cache had not written.
        if let Err(e) = files
            .iter()
            .try_for_each(|f| sync(f))
            .and_then(|()| sync(&partial))
        {
            let _ = std::fs::remove_dir_all(&partial);
            return Err(e);
        }
        if output.exists() {
            std::fs::remove_dir(output).map_err(|e| export_error(output, e.to_string()))?;
        }
        if let Err(e) = std::fs::rename(&partial, output) {
            let _ = std::fs::remove_dir_all(&partial);
            return Err(export_error(output, e.to_string()));
        }
        // The rename itself, best effort (some filesystems cannot sync a directory).
        let _ = sync(&parent);
        Ok(ExportReport {
            output: output.to_path_buf(),
            files: files
                .iter()
                .filter_map(|f| f.file_name().map(|n| output.join(n)))
                .collect(),
            max_logit_diff: check.max_logit_diff,
            tolerance: check.tolerance,
            positions_checked: check.positions,
            texts_checked: check.texts,
        })
    }

    /// Refuses, naming `output`, an export that cannot be made: a PEFT adapter of a model
    /// without adapters or without a base model on disk.
    fn ensure_possible(&self, options: &ExportOptions, output: &Path) -> Result<()> {
        let peft_possible = self.model.adapter_parameters() > 0 && self.base_model.is_some();
        if options.format == ExportFormat::Peft && !peft_possible {
            return Err(self.peft_refusal(output));
        }
        Ok(())
    }

    fn peft_refusal(&self, output: &Path) -> Error {
        if self.model.adapter_parameters() == 0 {
            export_error(
                output,
                "the model has no LoRA adapters: a PEFT export needs a LoRA run (use --format \
                 hf for a full fine-tune)",
            )
        } else {
            export_error(
                output,
                "a PEFT adapter needs its base model on disk, and this model was trained from \
                 scratch (use --format hf)",
            )
        }
    }

    /// The context length: the option, else the base model's (`base_gguf` when it is a GGUF
    /// file), else 2048.
    fn context_length(&self, options: &ExportOptions, base_gguf: Option<&GgufFile>) -> usize {
        let base = || match (base_gguf, self.base_model) {
            (Some(file), _) => gguf_context_length(file),
            (None, Some(dir)) => hf_context_length(dir),
            (None, None) => None,
        };
        options.context_length.or_else(base).unwrap_or(2048)
    }

    /// The base model when it is a GGUF file (read once: its context length and, for a GGUF
    /// export, its tokenizer keys).
    fn base_gguf(&self) -> Result<Option<GgufFile>> {
        match self.base_model {
            Some(path) if path.is_file() => GgufFile::open(path).map(Some),
            _ => Ok(None),
        }
    }

    fn write_into(&self, options: &ExportOptions, dir: &Path) -> Result<Vec<PathBuf>> {
        let base_gguf = self.base_gguf()?;
        let context = self.context_length(options, base_gguf.as_ref());
        match options.format {
            ExportFormat::Hf => {
                let untie = options.untie_embeddings && self.config.tie_word_embeddings;
                let mut tensors = tensors::hf_tensors(self.model)?;
                if untie {
                    tensors::untie(&mut tensors);
                }
                let config = LmConfig {
                    tie_word_embeddings: self.config.tie_word_embeddings && !untie,
                    ..self.config.clone()
                };
                let export = Export {
                    config: &config,
                    ..*self
                };
                hf::write_model_dir(
                    dir,
                    &export,
                    &tensors,
                    options.dtype,
                    options.max_shard_bytes,
                    context,
                )
            }
            ExportFormat::Peft => {
                let (Some(adapters), Some(base)) =
                    (tensors::peft_adapters(self.model)?, self.base_model)
                else {
                    return Err(self.peft_refusal(dir));
                };
                let mut files = hf::write_adapter_dir(dir, &adapters, base, options.dtype)?;
                files.extend(hf::write_tokenizer_files(dir, &self.tokenizer)?);
                Ok(files)
            }
            ExportFormat::Gguf => {
                let tensors = tensors::hf_tensors(self.model)?;
                let metadata =
                    gguf::gguf_metadata(self, options.gguf_type, context, base_gguf.as_ref())?;
                let gguf_tensors = gguf::gguf_tensors(self, &tensors, options.gguf_type)?;
                let path = dir.join(GGUF_FILE);
                let file =
                    std::fs::File::create(&path).map_err(|e| export_error(&path, e.to_string()))?;
                let mut writer = std::io::BufWriter::new(file);
                write_gguf(&mut writer, &metadata, &gguf_tensors)
                    .and_then(|()| std::io::Write::flush(&mut writer))
                    .map_err(|e| export_error(&path, e.to_string()))?;
                Ok(vec![path])
            }
        }
    }
}

/// Flushes a file or directory to disk.
fn sync(path: &Path) -> Result<()> {
    std::fs::File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(|e| export_error(path, format!("syncing: {e}")))
}

/// The file name of a GGUF export inside its output directory.
pub const GGUF_FILE: &str = "model.gguf";

/// `max_position_embeddings` of a Hugging Face directory's `config.json`.
fn hf_context_length(dir: &Path) -> Option<usize> {
    let text = std::fs::read_to_string(dir.join("config.json")).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    value["max_position_embeddings"]
        .as_u64()
        .map(|v| v as usize)
}

/// `{arch}.context_length` of a GGUF file.
fn gguf_context_length(file: &GgufFile) -> Option<usize> {
    let arch = file.string("general.architecture").ok()?;
    file.uint(&format!("{arch}.context_length"))
        .ok()
        .map(|v| v as usize)
}

#[cfg(test)]
mod tests;
