//! `envrl lm`: inspect a model — full logits of token-id rows, the loss and gradients of a
//! next-token cross-entropy on them, or a generation.

use std::path::Path;

use anyhow::{Context, Result, bail};
use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor};
use envrl::{Policy, SamplingParams, ScoreRow, Tokenizer, token_mean_cross_entropy};
use envrl_algos::{CausalLm, HfParam, HfTokenizer, Pretrained};

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

/// Reads `input`, a JSON list of equal-length token-id lists within `lm`'s vocabulary.
fn read_rows(lm: &CausalLm, input: &Path) -> Result<Vec<Vec<u32>>> {
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
    Ok(rows)
}

fn to_vec<const D: usize>(tensor: Tensor<D>) -> Vec<f32> {
    tensor
        .into_data()
        .convert::<f32>()
        .try_to_vec::<f32>()
        .unwrap_or_default()
}

fn write_json(output: &Path, value: &serde_json::Value) -> Result<()> {
    std::fs::write(output, serde_json::to_string(value)?)
        .with_context(|| format!("writing {}", output.display()))
}

/// Writes `{"logits": [row][position][vocab]}` for the id rows (equal lengths) in `input`.
///
/// # Errors
/// When the model or input cannot be read, or the rows differ in length or hold ids outside the
/// vocabulary.
pub fn logits(model: &Path, input: &Path, output: &Path, device: &Device) -> Result<()> {
    let (lm, _) = load(model, device)?;
    let rows = read_rows(&lm, input)?;
    let logits = lm.forward(&rows);
    let [b, s, v] = logits.dims();
    let flat = to_vec(logits);
    let nested: Vec<Vec<&[f32]>> = (0..b)
        .map(|i| {
            (0..s)
                .map(|j| &flat[(i * s + j) * v..(i * s + j + 1) * v])
                .collect()
        })
        .collect();
    write_json(output, &serde_json::json!({ "logits": nested }))
}

/// Writes `{"loss": f, "grads": {name: [values]}}`: the mean next-token cross-entropy of the id
/// rows in `input` (every position predicts the next, no padding) and its gradient for every
/// parameter, by Hugging Face name and in Hugging Face layout (`[out, in]` for projections), so
/// that backends and PyTorch can be compared parameter by parameter.
///
/// # Errors
/// As [`logits`].
pub fn grad(model: &Path, input: &Path, output: &Path, device: &Device) -> Result<()> {
    let (lm, _) = load(model, &device.clone().autodiff())?;
    let rows = read_rows(&lm, input)?;
    if rows[0].len() < 2 {
        bail!("{}: rows need at least two tokens", input.display());
    }
    // Every token after the first is a target; rows of equal length, so the token mean over
    // the batch is the mean over all positions.
    let scored: Vec<ScoreRow> = rows
        .iter()
        .map(|r| ScoreRow {
            context: r[..1].to_vec(),
            target: r[1..].to_vec(),
        })
        .collect();
    let loss = token_mean_cross_entropy(&lm.score(&scored, false));
    let value = loss.clone().into_scalar::<f32>();
    let grads = GradientsParams::from_grads(loss.backward(), &lm);
    let mut named = serde_json::Map::new();
    for (name, param) in lm.hf_parameters() {
        let grad = match param {
            HfParam::Matrix(p, transposed) => grads.get::<2>(p.id).map(|g| {
                if transposed {
                    to_vec(g.transpose())
                } else {
                    to_vec(g)
                }
            }),
            HfParam::Vector(p) => grads.get::<1>(p.id).map(to_vec),
        };
        let grad = grad.with_context(|| format!("{}: no gradient for {name}", model.display()))?;
        named.insert(name, serde_json::json!(grad));
    }
    write_json(
        output,
        &serde_json::json!({ "loss": value, "grads": named }),
    )
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

/// Generates and prints the prompt's ids, then the new tokens' ids and text.
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
    println!(
        "prompt ids: {}",
        ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
    );
    let stop: Vec<u32> = tokenizer.as_ref().map(|t| t.stop_ids()).unwrap_or_default();
    let mut rngs = envrl::row_streams(seed, [0]);
    let generation = lm.generate(&[ids], &stop, params, &mut rngs).remove(0);
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
