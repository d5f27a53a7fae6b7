//! `envrl lm`.

use std::path::PathBuf;

use anyhow::{Result, bail, ensure};
use clap::{Args, Subcommand};

use super::DeviceArgs;
use crate::lm::GenerateInput;

/// Inspect a model: logits of token rows, or a generation.
#[derive(Args)]
pub struct LmArgs {
    #[command(subcommand)]
    what: LmWhat,
}

/// A model, token-id rows to run it on, where to write the result, and the device.
#[derive(Args)]
struct RowsArgs {
    /// A `.gguf` file or a Hugging Face model directory.
    #[arg(long)]
    model: PathBuf,
    #[arg(long)]
    input: PathBuf,
    #[arg(long)]
    output: PathBuf,
    #[command(flatten)]
    device: DeviceArgs,
}

#[derive(Subcommand)]
enum LmWhat {
    /// Full logits: --input is a JSON list of equal-length token-id lists; --output gets
    /// {"logits": [row][position][vocab]}.
    Logits(RowsArgs),
    /// Loss and gradients: the mean next-token cross-entropy of --input's rows (a JSON list
    /// of equal-length token-id lists); --output gets {"loss": f, "grads": {hf_name: [values]}}
    /// in Hugging Face layout.
    Grad(RowsArgs),
    /// Generate from a prompt or token ids; prints the prompt's ids, the new ids and text.
    Generate(GenerateArgs),
}

#[derive(Args)]
struct GenerateArgs {
    /// A `.gguf` file or a Hugging Face model directory.
    #[arg(long)]
    model: PathBuf,
    /// Prompt text.
    #[arg(long, conflicts_with = "ids")]
    prompt: Option<String>,
    /// Comma-separated token ids.
    #[arg(long, value_delimiter = ',')]
    ids: Option<Vec<u32>>,
    #[arg(long, default_value_t = 32)]
    max_new_tokens: usize,
    /// 0 is greedy.
    #[arg(long, default_value_t = 0.0)]
    temperature: f32,
    /// Nucleus mass (1 disables top-p).
    #[arg(long, default_value_t = 1.0)]
    top_p: f32,
    /// Sample among the k most likely tokens (0 disables top-k).
    #[arg(long, default_value_t = 0)]
    top_k: usize,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Wrap the prompt in the chat template.
    #[arg(long)]
    chat: bool,
    #[command(flatten)]
    device: DeviceArgs,
}

impl LmArgs {
    /// The device flags of the subcommand.
    #[cfg(test)]
    pub(crate) fn device_args(&self) -> DeviceArgs {
        match &self.what {
            LmWhat::Logits(a) | LmWhat::Grad(a) => a.device,
            LmWhat::Generate(a) => a.device,
        }
    }

    /// Runs the subcommand.
    ///
    /// # Errors
    /// When the model or the input cannot be read, or the output written.
    pub fn run(self) -> Result<()> {
        match self.what {
            LmWhat::Logits(a) => {
                crate::lm::logits(&a.model, &a.input, &a.output, &a.device.device()?)
            }
            LmWhat::Grad(a) => crate::lm::grad(&a.model, &a.input, &a.output, &a.device.device()?),
            LmWhat::Generate(a) => {
                let input = match (a.prompt, a.ids) {
                    (Some(text), _) => GenerateInput::Prompt { text, chat: a.chat },
                    (None, Some(ids)) => GenerateInput::Ids(ids),
                    (None, None) => bail!("pass --prompt TEXT or --ids 1,2,3"),
                };
                ensure!(
                    a.top_p > 0.0 && a.top_p <= 1.0,
                    "--top-p must be in (0, 1], got {}",
                    a.top_p
                );
                let params = envrl::SamplingParams {
                    temperature: a.temperature,
                    top_p: a.top_p,
                    top_k: a.top_k,
                    max_new_tokens: a.max_new_tokens,
                };
                crate::lm::generate(&a.model, input, &params, a.seed, &a.device.device()?)
            }
        }
    }
}
