//! The ALFWorld agent on the embedded default: generated games (or `ALFWORLD_DATA`), a
//! from-scratch tiny LM warm-started on planner walkthroughs, then GRPO + EnvRL (state prediction
//! and inverse dynamics), with a progress bar, plots and a per-task-type evaluation table.
//!
//! ```text
//! cargo run --release -p envrl-examples --example alfworld -- [seed]
//! ```
//! The same run, with every option: `envrl train alfworld --help`.

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
    let config = RunConfig::cpu_tiny("alfworld")?
        .with_algorithm(Some("grpo"), Some("state-prediction,inverse-dynamics"))?
        .with_overrides(&[format!("trainer.seed={seed}")])?;
    let options = RunOptions {
        output_dir: format!("runs/alfworld__grpo-envrl__{seed}").into(),
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
