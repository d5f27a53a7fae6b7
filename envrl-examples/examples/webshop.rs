//! The WebShop agent on the embedded default: a generated catalog (or `WEBSHOP_DATA`), a
//! from-scratch tiny LM warm-started on the scripted expert, then GRPO + EnvRL (state prediction
//! and inverse dynamics), with a progress bar, plots and a score and success table.
//!
//! ```text
//! cargo run --release -p envrl-examples --example webshop -- [seed]
//! ```
//! The same run, with every option: `envrl train webshop --help`.

use anyhow::{Context, Result};
use burn::tensor::Device;
use envrl_examples::run::{RunConfig, RunOptions, train};

fn main() -> Result<()> {
    let seed: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()
        .context("seed")?
        .unwrap_or(0);
    let config = RunConfig::cpu_tiny("webshop")?
        .with_algorithm(Some("grpo"), Some("state-prediction,inverse-dynamics"))?
        .with_overrides(&[format!("trainer.seed={seed}")])?;
    let options = RunOptions {
        output_dir: format!("runs/webshop__grpo-envrl__{seed}").into(),
        resume: false,
        force: true,
        device: Device::flex(),
        quiet: false,
        eval_only: false,
    };
    let summary = train(&config, &options)?;
    let after = summary.table.last().map_or(0.0, |r| r.success);
    println!(
        "held-out success: {:.3} -> {after:.3} in {:.0} s",
        summary.before.unwrap_or(f64::NAN),
        summary.wall_s
    );
    Ok(())
}
