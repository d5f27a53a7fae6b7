//! Checking an export where it was written: loaded back with envrl's loaders, it must give the
//! model's logits on a few token rows (exactly in f32, within a stated tolerance otherwise) and
//! the original tokenizer's encodings of sample texts, chat prompts included.

use std::path::Path;

use envrl::Tokenizer;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{Export, ExportFormat, ExportOptions, GGUF_FILE, GgufType, WeightDtype};
use crate::error::{Error, Result};
use crate::runtime::lm::CausalLm;
use crate::runtime::pretrained::Pretrained;
use crate::runtime::tokenizer::HfTokenizer;

/// Texts whose encodings must survive an export (with the decoded check rows); the first two
/// also give the rows whose logits are compared.
const SAMPLE_TEXTS: [&str; 4] = [
    "You are in the middle of a room. Looking quickly around you, you see a cabinet 1, a \
     drawer 2, and a countertop 1.\nYour task is to: put a clean mug in coffeemachine.",
    "<think>The mug may be in the drawer.</think><action>go to drawer 2</action>",
    "search[red running shoes under 40 dollars]\nclick[b07 xyz]  ",
    "Nothing happens.",
];

/// The outcome of a check.
pub(crate) struct Check {
    pub max_logit_diff: f32,
    pub tolerance: f32,
    pub positions: usize,
    pub texts: usize,
}

/// The largest accepted logit difference, relative to `max(1, max |logit|)`: f32 is exact up to
/// float noise; the others are the rounding of the weights (measured on the tiny references and
/// SmolLM2-135M: see the `export` tests and docs/export.md).
fn relative_tolerance(options: &ExportOptions) -> f32 {
    let kind = match options.format {
        ExportFormat::Gguf => match options.gguf_type {
            GgufType::F32 => WeightDtype::F32,
            GgufType::F16 => WeightDtype::F16,
            GgufType::Q8_0 => return 0.15,
        },
        _ => options.dtype,
    };
    match kind {
        WeightDtype::F32 => 1e-5,
        WeightDtype::F16 => 0.02,
        WeightDtype::Bf16 => 0.1,
    }
}

/// Loads what `dir` holds as the format says.
fn load_back(
    export: &Export<'_>,
    options: &ExportOptions,
    dir: &Path,
) -> Result<(CausalLm, HfTokenizer)> {
    let device = export.model.device();
    match options.format {
        ExportFormat::Hf => {
            let p = Pretrained::load(dir, &device)?;
            Ok((p.model, p.tokenizer))
        }
        ExportFormat::Gguf => {
            let p = Pretrained::load(dir.join(GGUF_FILE), &device)?;
            Ok((p.model, p.tokenizer))
        }
        ExportFormat::Peft => {
            let base = export.base_model.ok_or_else(|| export.peft_refusal(dir))?;
            let model = Pretrained::load(base, &device)?.model;
            Ok((model.merge_peft_adapter(dir)?, HfTokenizer::from_dir(dir)?))
        }
    }
}

fn mismatch(dir: &Path, reason: String) -> Error {
    Error::Export {
        path: dir.to_path_buf(),
        reason: format!("the export does not load back as the model: {reason}"),
    }
}

/// Token rows to compare logits on: text the model reads (the first 16 tokens of two sample
/// texts; a random token continues a shorter one), and a row of random tokens.
fn check_rows(tokenizer: &dyn Tokenizer, vocab: u32) -> Vec<Vec<u32>> {
    const LEN: usize = 16;
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let mut rows: Vec<Vec<u32>> = SAMPLE_TEXTS[..2]
        .iter()
        .map(|text| {
            let mut ids = tokenizer.encode(text);
            ids.retain(|&id| id < vocab);
            ids.truncate(LEN);
            ids
        })
        .collect();
    rows.push(Vec::new());
    for row in &mut rows {
        while row.len() < LEN {
            row.push(rng.random_range(0..vocab));
        }
    }
    rows
}

/// Loads the export in `dir` and compares it with `export`.
pub(crate) fn check(export: &Export<'_>, options: &ExportOptions, dir: &Path) -> Result<Check> {
    let (loaded, tokenizer) = load_back(export, options, dir)?;
    let original = export.tokenizer.as_dyn();
    let rows = check_rows(original, export.config.vocab_size as u32);
    let host = |model: &CausalLm| -> Result<Vec<f32>> {
        model
            .forward(&rows)
            .into_data()
            .try_into_vec_as::<f32>()
            .map_err(|e| mismatch(dir, format!("reading logits: {e:?}")))
    };
    let (want, got) = (host(export.model)?, host(&loaded)?);
    // A NaN compares as no difference at all: non-finite logits are a mismatch by themselves.
    for (side, logits) in [("the checkpoint's", &want), ("the export's", &got)] {
        if let Some(at) = logits.iter().position(|x| !x.is_finite()) {
            return Err(mismatch(
                dir,
                format!(
                    "{side} logits are not finite ({} at position {at})",
                    logits[at]
                ),
            ));
        }
    }
    if want.len() != got.len() {
        return Err(mismatch(
            dir,
            format!("{} logits, expected {}", got.len(), want.len()),
        ));
    }
    let max_logit_diff = want
        .iter()
        .zip(&got)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    let scale = want.iter().fold(1.0f32, |m, v| m.max(v.abs()));
    let tolerance = relative_tolerance(options) * scale;
    if max_logit_diff.is_nan() || max_logit_diff > tolerance {
        return Err(mismatch(
            dir,
            format!("logits differ by up to {max_logit_diff:e} (accepted: {tolerance:e})"),
        ));
    }

    let decoded: Vec<String> = rows.iter().map(|r| original.decode(r)).collect();
    let texts: Vec<&str> = SAMPLE_TEXTS
        .iter()
        .copied()
        .chain(decoded.iter().map(String::as_str))
        .collect();
    for text in &texts {
        let (a, b) = (original.encode(text), tokenizer.encode(text));
        if a != b {
            return Err(mismatch(
                dir,
                format!("the tokenizer encodes {text:?} as {b:?}, not {a:?}"),
            ));
        }
        let (a, b) = (original.encode_prompt(text), tokenizer.encode_prompt(text));
        if a != b {
            return Err(mismatch(
                dir,
                format!("the chat prompt of {text:?} encodes as {b:?}, not {a:?}"),
            ));
        }
    }
    let specials = |t: &dyn Tokenizer| (t.eos_id(), t.pad_id(), t.vocab_size());
    if specials(original) != specials(&tokenizer) {
        return Err(mismatch(
            dir,
            format!(
                "(eos, pad, vocabulary) is {:?}, not {:?}",
                specials(&tokenizer),
                specials(original)
            ),
        ));
    }
    Ok(Check {
        max_logit_diff,
        tolerance,
        positions: rows.len() * rows[0].len(),
        texts: texts.len(),
    })
}
