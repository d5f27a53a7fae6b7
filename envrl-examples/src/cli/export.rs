//! `envrl export`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use envrl_algos::export::{ExportFormat, ExportOptions, GgufType, WeightDtype};

use crate::device::DType;

/// Export a run's trained model (or a pretrained one) for transformers, PEFT, vLLM or llama.cpp.
#[derive(Args)]
pub struct ExportArgs {
    /// The run directory.
    #[arg(required_unless_present = "model")]
    run_dir: Option<PathBuf>,
    /// Export a pretrained model (a `.gguf` file or a Hugging Face directory) as envrl loads it
    /// — a GGUF dequantised — instead of a run's: the base model a vLLM or SGLang server must
    /// serve for a run that starts from it with `rollout.server`.
    #[arg(long, conflicts_with_all = ["run_dir", "checkpoint"])]
    model: Option<PathBuf>,
    /// hf: a Hugging Face model directory (LoRA merged); peft: a LoRA run's adapter on its base
    /// model; gguf: a GGUF file (`model.gguf` in the output directory) for llama.cpp.
    #[arg(long, value_parser = |s: &str| s.parse::<ExportFormat>())]
    format: ExportFormat,
    /// The output directory (must not exist, or be empty).
    #[arg(long)]
    output: PathBuf,
    /// A checkpoint of the run (`ckpt-000020`) [default: the latest good one].
    #[arg(long)]
    checkpoint: Option<String>,
    /// Float type of hf and peft weights (f32: exact) [default: f32].
    #[arg(long, value_enum)]
    dtype: Option<DType>,
    /// Storage of gguf matrices: f32 (exact), f16 or q8_0 [default: f32].
    #[arg(long, value_parser = |s: &str| s.parse::<GgufType>())]
    quant: Option<GgufType>,
    /// For hf: give a model whose output layer shares the token embedding an output layer of
    /// its own (the same function), as a vLLM server must serve for envrl to reload a full
    /// fine-tune into it.
    #[arg(long)]
    untie_embeddings: bool,
}

/// Which format-specific flags were given, and whether a pretrained model (`--model`) is
/// exported rather than a run.
#[derive(Debug, Clone, Copy, Default)]
struct FormatFlags {
    dtype: bool,
    quant: bool,
    untie: bool,
    pretrained: bool,
}

/// `--dtype` applies to hf and peft exports, `--quant` to gguf, `--untie-embeddings` to hf, and
/// a pretrained model has no adapter for peft: the others are refused rather than ignored.
fn check_flags(format: ExportFormat, flags: FormatFlags) -> Result<()> {
    let FormatFlags {
        dtype,
        quant,
        untie,
        pretrained,
    } = flags;
    if pretrained && format == ExportFormat::Peft {
        anyhow::bail!(
            "--model exports a pretrained model, which has no LoRA adapter: use --format hf \
             or gguf (a LoRA run's adapter is exported from its run directory)"
        );
    }
    if untie && format != ExportFormat::Hf {
        anyhow::bail!(
            "--untie-embeddings writes an hf directory with an output layer of its own; {} \
             exports keep the model's layout",
            if format == ExportFormat::Peft {
                "peft"
            } else {
                "gguf"
            }
        );
    }
    match format {
        ExportFormat::Gguf if dtype => anyhow::bail!(
            "--dtype sets the float type of hf and peft weights; a gguf export stores its \
             matrices as --quant says (f32, f16 or q8_0)"
        ),
        ExportFormat::Hf | ExportFormat::Peft if quant => anyhow::bail!(
            "--quant sets how a gguf export stores its matrices; {} exports take --dtype (f32, \
             bf16 or f16)",
            if format == ExportFormat::Hf {
                "hf"
            } else {
                "peft"
            }
        ),
        _ => Ok(()),
    }
}

impl ExportArgs {
    /// Exports, verifies and prints what was written.
    ///
    /// # Errors
    /// As [`crate::run::export_run`].
    pub fn run(self) -> Result<()> {
        let flags = FormatFlags {
            dtype: self.dtype.is_some(),
            quant: self.quant.is_some(),
            untie: self.untie_embeddings,
            pretrained: self.model.is_some(),
        };
        check_flags(self.format, flags)?;
        let options = ExportOptions {
            dtype: match self.dtype.unwrap_or(DType::F32) {
                DType::F32 => WeightDtype::F32,
                DType::Bf16 => WeightDtype::Bf16,
                DType::F16 => WeightDtype::F16,
            },
            gguf_type: self.quant.unwrap_or(GgufType::F32),
            untie_embeddings: self.untie_embeddings,
            ..ExportOptions::new(self.format)
        };
        let report = match (&self.model, &self.run_dir) {
            (Some(model), _) => crate::run::export_pretrained(model, &options, &self.output)?,
            (None, Some(run_dir)) => {
                crate::run::export_run(run_dir, self.checkpoint.as_deref(), &options, &self.output)?
            }
            (None, None) => {
                anyhow::bail!("give a run directory, or a pretrained model with --model")
            }
        };
        for file in &report.files {
            let size = std::fs::metadata(file).map_or(0, |m| m.len());
            println!("{:>12} {}", size, file.display());
        }
        let source = if self.model.is_some() {
            "model's as loaded"
        } else {
            "checkpoint's"
        };
        println!(
            "verified: loaded back, the logits at {} positions within {:.2e} of the {source} \
             (accepted {:.2e}), {} texts tokenized alike",
            report.positions_checked, report.max_logit_diff, report.tolerance, report.texts_checked
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_of_the_other_format_is_refused_not_ignored() {
        let flags = |dtype, quant, untie| FormatFlags {
            dtype,
            quant,
            untie,
            pretrained: false,
        };
        let err = check_flags(ExportFormat::Gguf, flags(true, false, false)).unwrap_err();
        assert!(err.to_string().contains("--quant"), "{err}");
        for format in [ExportFormat::Hf, ExportFormat::Peft] {
            let err = check_flags(format, flags(false, true, false)).unwrap_err();
            assert!(err.to_string().contains("--dtype"), "{err}");
            assert!(check_flags(format, flags(true, false, false)).is_ok());
        }
        assert!(check_flags(ExportFormat::Gguf, flags(false, true, false)).is_ok());
        assert!(check_flags(ExportFormat::Hf, flags(true, false, true)).is_ok());
        for format in [ExportFormat::Peft, ExportFormat::Gguf] {
            let err = check_flags(format, flags(false, false, true)).unwrap_err();
            assert!(err.to_string().contains("--untie-embeddings"), "{err}");
        }
        let pretrained = FormatFlags {
            pretrained: true,
            ..FormatFlags::default()
        };
        let err = check_flags(ExportFormat::Peft, pretrained).unwrap_err();
        assert!(err.to_string().contains("no LoRA adapter"), "{err}");
        for format in [ExportFormat::Hf, ExportFormat::Gguf] {
            assert!(check_flags(format, pretrained).is_ok());
        }
    }
}
