//! `envrl export`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use envrl_algos::export::{ExportFormat, ExportOptions, GgufType, WeightDtype};

use crate::device::DType;

/// Export a run's trained model for transformers, PEFT, vLLM or llama.cpp.
#[derive(Args)]
pub struct ExportArgs {
    /// The run directory.
    run_dir: PathBuf,
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
    /// Float type of hf and peft weights (f32: exact).
    #[arg(long, value_enum, default_value = "f32")]
    dtype: DType,
    /// Storage of gguf matrices: f32 (exact), f16 or q8_0.
    #[arg(long, default_value = "f32", value_parser = |s: &str| s.parse::<GgufType>())]
    quant: GgufType,
}

impl ExportArgs {
    /// Exports, verifies and prints what was written.
    ///
    /// # Errors
    /// As [`crate::run::export_run`].
    pub fn run(self) -> Result<()> {
        let options = ExportOptions {
            dtype: match self.dtype {
                DType::F32 => WeightDtype::F32,
                DType::Bf16 => WeightDtype::Bf16,
                DType::F16 => WeightDtype::F16,
            },
            gguf_type: self.quant,
            ..ExportOptions::new(self.format)
        };
        let report = crate::run::export_run(
            &self.run_dir,
            self.checkpoint.as_deref(),
            &options,
            &self.output,
        )?;
        for file in &report.files {
            let size = std::fs::metadata(file).map_or(0, |m| m.len());
            println!("{:>12} {}", size, file.display());
        }
        println!(
            "verified: loaded back, the logits at {} positions within {:.2e} of the checkpoint's (accepted {:.2e}), \
             {} texts tokenized alike",
            report.positions_checked, report.max_logit_diff, report.tolerance, report.texts_checked
        );
        Ok(())
    }
}
