//! `envrl bench`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};

use crate::bench::{GenerateBench, TrainBench};

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
    Generate(GenerateBench),
    /// Causal-LM training tokens/s (forward, backward, AdamW), next to PyTorch eager on the same
    /// model and shapes with --python.
    Train(TrainBench),
    /// One training iteration of a run's config, broken down: rollout and update seconds,
    /// generated and trained tokens/s (the same flags as `envrl train`; 2 iterations unless
    /// --iterations; evaluation cut to 1 held-out episode and no checkpoints; the warm start runs
    /// unless `--set warmup.from=DIR` loads one or `--set warmup.steps=0` skips it).
    Iteration(super::TrainArgs),
    /// Sokoban engine: resets/s and steps/s on one core, next to verl-agent's SokobanEnv on
    /// gym-sokoban run in the same command.
    Sokoban {
        /// A verl-agent checkout (its Sokoban files run unchanged as the reference).
        #[arg(long)]
        verl_agent: PathBuf,
        /// The Python with gym-sokoban and numpy installed.
        #[arg(long, default_value = "python3")]
        python: PathBuf,
        /// Seconds per measure.
        #[arg(long, default_value_t = 3.0)]
        seconds: f64,
    },
    /// `envrl serve`: steps/s and p50/p99 step latency over WebSocket at 1, 100 and 1,000
    /// concurrent sessions, next to the in-process engine and (with --python) OpenEnv's own
    /// Python server running its echo environment, and memory per session.
    Serve(crate::bench::ServeBench),
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
            BenchWhat::Sokoban {
                verl_agent,
                python,
                seconds,
            } => crate::bench::bench_sokoban(&python, &verl_agent, seconds),
            BenchWhat::Generate(bench) => crate::bench::bench_generate(&bench),
            BenchWhat::Serve(bench) => crate::bench::bench_serve(&bench),
            BenchWhat::Train(bench) => crate::bench::bench_train(&bench),
            BenchWhat::Iteration(train) => {
                // A scratch run directory, removed afterwards unless `--output-dir` names one.
                let scratch = tempfile::Builder::new()
                    .prefix("envrl-bench-iteration-")
                    .tempdir()
                    .context("creating a scratch run directory")?;
                let iterations = train.iterations_flag().unwrap_or(2);
                let (config, options) =
                    train.into_run(&crate::run::Ranks::Single, |_| scratch.path().join("run"))?;
                crate::bench::bench_iteration(config, options, iterations)
            }
        }
    }
}
