//! One entry point for pretrained models: a Hugging Face directory or a GGUF file.

use std::path::Path;

use burn::tensor::Device;

use crate::error::{Error, Result};
use crate::runtime::gguf::GgufFile;
use crate::runtime::lm::{CausalLm, LmConfig};
use crate::runtime::tokenizer::HfTokenizer;

/// A pretrained model with its tokenizer.
#[derive(Debug)]
pub struct Pretrained {
    /// The model, in f32 on the requested device.
    pub model: CausalLm,
    /// Its architecture.
    pub config: LmConfig,
    /// Its tokenizer and chat template.
    pub tokenizer: HfTokenizer,
}

impl Pretrained {
    /// Loads `path`: a `.gguf` file (model and tokenizer from the one file) or a Hugging Face
    /// directory (`config.json`, safetensors, `tokenizer.json`, `tokenizer_config.json`).
    ///
    /// # Errors
    /// [`Error::ModelFile`] or [`Error::Tokenizer`] naming the file and the problem.
    pub fn load(path: impl AsRef<Path>, device: &Device) -> Result<Self> {
        let path = path.as_ref();
        if path.is_dir() {
            let (model, config) = CausalLm::from_hf_dir(path, device)?;
            refuse_non_finite(&model, path)?;
            let tokenizer = HfTokenizer::from_dir(path)?;
            return Ok(Self {
                model,
                config,
                tokenizer,
            });
        }
        if !path.exists() {
            return Err(Error::ModelFile {
                path: path.to_path_buf(),
                reason: "no such file or directory (expected a .gguf file or a Hugging Face \
                         model directory)"
                    .into(),
            });
        }
        let file = GgufFile::open(path)?;
        let tokenizer = HfTokenizer::from_gguf(&file)?;
        let (model, config) = CausalLm::from_gguf_file(&file, device)?;
        refuse_non_finite(&model, path)?;
        Ok(Self {
            model,
            config,
            tokenizer,
        })
    }
}

/// A model whose weights hold NaN or an infinity is refused, naming the parameter: it would
/// play garbage and train to NaN.
fn refuse_non_finite(model: &CausalLm, path: &Path) -> Result<()> {
    match envrl::first_non_finite(model) {
        Some(which) => Err(Error::ModelFile {
            path: path.to_path_buf(),
            reason: format!("{which}; the weights are corrupt"),
        }),
        None => Ok(()),
    }
}
