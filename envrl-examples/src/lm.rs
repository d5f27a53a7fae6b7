//! `envrl lm`: inspect a model — full logits of token-id rows, or a generation.

use std::path::Path;

use anyhow::{Context, Result, bail};
use burn::tensor::Device;
use envrl::{Policy, SamplingParams, Tokenizer};
use envrl_algos::{CausalLm, HfTokenizer, Pretrained};
use rand::SeedableRng;

/// The model at `path` (a `.gguf` file or a Hugging Face directory) and its tokenizer, where the
/// directory has one.
fn load(path: &Path, device: &Device) -> Result<(CausalLm, Option<HfTokenizer>)> {
    if path.is_dir() {
        let (model, _) = CausalLm::from_hf_dir(path, device)?;
        return Ok((model, HfTokenizer::from_dir(path).ok()));
    }
    let pretrained = Pretrained::load(path, device)?;
    Ok((pretrained.model, Some(pretrained.tokenizer)))
}

/// Writes `{"logits": [row][position][vocab]}` for the id rows (equal lengths) in `input`.
///
/// # Errors
/// When the model or input cannot be read, or the rows differ in length or hold ids outside the
/// vocabulary.
pub fn logits(model: &Path, input: &Path, output: &Path, device: &Device) -> Result<()> {
    let (lm, _) = load(model, device)?;
    let text =
        std::fs::read_to_string(input).with_context(|| format!("reading {}", input.display()))?;
    let rows: Vec<Vec<u32>> = serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: expected a JSON list of token-id lists",
            input.display()
        )
    })?;
    let width = rows.first().map_or(0, Vec::len);
    if rows.is_empty() || width == 0 || rows.iter().any(|r| r.len() != width) {
        bail!(
            "{}: rows must be non-empty and of equal length",
            input.display()
        );
    }
    if let Some(bad) = rows
        .iter()
        .flatten()
        .find(|&&id| id as usize >= lm.vocab_size())
    {
        bail!(
            "{}: id {bad} is outside the vocabulary ({})",
            input.display(),
            lm.vocab_size()
        );
    }
    let logits = lm.forward(&rows);
    let [b, s, v] = logits.dims();
    let flat: Vec<f32> = logits
        .into_data()
        .convert::<f32>()
        .try_to_vec::<f32>()
        .unwrap_or_default();
    let nested: Vec<Vec<&[f32]>> = (0..b)
        .map(|i| {
            (0..s)
                .map(|j| &flat[(i * s + j) * v..(i * s + j + 1) * v])
                .collect()
        })
        .collect();
    std::fs::write(
        output,
        serde_json::to_string(&serde_json::json!({ "logits": nested }))?,
    )
    .with_context(|| format!("writing {}", output.display()))
}

/// What `envrl lm generate` starts from.
#[derive(Debug, Clone)]
pub enum GenerateInput {
    /// Text, optionally wrapped in the chat template.
    Prompt {
        /// The text.
        text: String,
        /// Wrap it as a user message with the generation prompt.
        chat: bool,
    },
    /// Token ids.
    Ids(Vec<u32>),
}

/// Generates and prints the new tokens' ids and text.
///
/// # Errors
/// When the model or its tokenizer cannot be read.
pub fn generate(
    model: &Path,
    input: GenerateInput,
    params: &SamplingParams,
    seed: u64,
    device: &Device,
) -> Result<()> {
    let (lm, tokenizer) = load(model, device)?;
    let ids = match input {
        GenerateInput::Ids(ids) => ids,
        GenerateInput::Prompt { text, chat } => {
            let tokenizer = tokenizer
                .as_ref()
                .with_context(|| format!("{}: --prompt needs tokenizer.json", model.display()))?;
            if chat {
                tokenizer.encode_prompt(&text)
            } else {
                tokenizer.encode(&text)
            }
        }
    };
    let stop: Vec<u32> = tokenizer.as_ref().map(|t| t.stop_ids()).unwrap_or_default();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let generation = lm.generate(&[ids], &stop, params, &mut rng).remove(0);
    println!(
        "ids: {}",
        generation
            .tokens
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",")
    );
    if let Some(t) = &tokenizer {
        println!("text: {}", t.decode_with_special(&generation.tokens));
    }
    Ok(())
}
