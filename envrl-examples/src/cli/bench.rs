//! `envrl bench`.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};

use super::DeviceArgs;
use crate::bench::{GenerateBench, TrainBench};
use crate::device::DType;

/// Measure speed and print a table next to the reference.
#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    what: BenchWhat,
}

#[derive(Subcommand)]
enum BenchWhat {
    /// WebShop engine: steps/s with the scripted expert, reset, search and click times, and
    /// scale on a generated catalog of the full WebShop's size.
    Webshop {
        /// The WEBSHOP_DATA directory.
        #[arg(long, env = "WEBSHOP_DATA")]
        data: PathBuf,
        /// Seconds of expert play.
        #[arg(long, default_value_t = 3.0)]
        seconds: f64,
        /// Products of the generated scale catalog (0 skips the scale test).
        #[arg(long, default_value_t = 1_200_000)]
        scale_products: usize,
    },
    /// Causal-LM prefill and KV-cache generation tokens/s of a GGUF model, next to PyTorch
    /// eager on the same weights with --python.
    Generate {
        /// A `.gguf` file, a Hugging Face directory, or a Hugging Face `config.json` (that
        /// architecture with random weights).
        #[arg(long)]
        model: PathBuf,
        /// Prompt tokens per row.
        #[arg(long, default_value_t = 128)]
        prompt_len: usize,
        /// New tokens per row.
        #[arg(long, default_value_t = 64)]
        new_tokens: usize,
        /// Batch sizes, comma-separated.
        #[arg(long, default_value = "1,16", value_delimiter = ',')]
        batches: Vec<usize>,
        /// Tokens of the single-row prefill measure.
        #[arg(long, default_value_t = 512)]
        prefill_len: usize,
        /// A Python with torch, transformers and gguf: adds the PyTorch column (f32 only).
        #[arg(long)]
        python: Option<PathBuf>,
        #[command(flatten)]
        device: DeviceArgs,
    },
    /// Causal-LM training tokens/s (forward, backward, AdamW), next to PyTorch eager on the same
    /// model and shapes with --python.
    Train {
        /// `tiny` (the examples' model), a `.gguf` file, a Hugging Face directory, or a Hugging
        /// Face `config.json` (that architecture with random weights).
        #[arg(long, default_value = "tiny")]
        model: String,
        /// Vocabulary of the tiny model.
        #[arg(long, default_value_t = 2048)]
        vocab: usize,
        /// Rows per step.
        #[arg(long, default_value_t = 8)]
        batch: usize,
        /// Tokens per row.
        #[arg(long, default_value_t = 256)]
        seq: usize,
        /// Timed steps.
        #[arg(long, default_value_t = 5)]
        steps: usize,
        /// A Python with torch and transformers: adds the PyTorch column (full fine-tuning only).
        #[arg(long)]
        python: Option<PathBuf>,
        /// Train LoRA adapters of this rank (alpha = 2 × rank) instead of every parameter.
        #[arg(long, default_value_t = 0)]
        lora_rank: usize,
        /// Recompute memory-bound activations in the backward pass.
        #[arg(long)]
        gradient_checkpointing: bool,
        #[command(flatten)]
        device: DeviceArgs,
    },
    /// ALFWorld engine: steps/s, reset and load times over valid_unseen.
    Alfworld {
        /// The ALFWORLD_DATA directory (holding json_2.1.1/).
        #[arg(long, env = "ALFWORLD_DATA")]
        data: PathBuf,
        /// Seconds per step-rate measurement.
        #[arg(long, default_value_t = 3.0)]
        seconds: f64,
    },
}

impl BenchArgs {
    /// Measures and prints the table.
    ///
    /// # Errors
    /// When the data or model cannot be read, or the reference cannot be run.
    pub fn run(self) -> Result<()> {
        match self.what {
            BenchWhat::Alfworld { data, seconds } => crate::bench::bench_alfworld(&data, seconds),
            BenchWhat::Webshop {
                data,
                seconds,
                scale_products,
            } => crate::bench::bench_webshop(&data, seconds, scale_products),
            BenchWhat::Generate {
                model,
                prompt_len,
                new_tokens,
                batches,
                prefill_len,
                python,
                device,
            } => crate::bench::bench_generate(&GenerateBench {
                model,
                prompt_len,
                new_tokens,
                batches,
                prefill_len,
                python,
                dtype: device.dtype_or(DType::F32),
                device: device.device,
            }),
            BenchWhat::Train {
                model,
                vocab,
                batch,
                seq,
                steps,
                python,
                lora_rank,
                gradient_checkpointing,
                device,
            } => crate::bench::bench_train(&TrainBench {
                model,
                vocab,
                batch,
                seq,
                steps,
                python,
                lora_rank,
                gradient_checkpointing,
                dtype: device.dtype_or(DType::F32),
                device: device.device,
            }),
        }
    }
}
