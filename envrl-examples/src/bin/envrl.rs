//! The `envrl` command.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand, ValueEnum};
use envrl_envs::alfworld::Wording;

#[derive(Parser)]
#[command(
    name = "envrl",
    version,
    about = "Train and evaluate LLM agents with EnvRL"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Replay recorded action lists through an environment engine.
    Replay {
        #[command(subcommand)]
        env: ReplayEnv,
    },
    /// Measure speed and print a table next to the reference.
    Bench {
        #[command(subcommand)]
        what: BenchWhat,
    },
}

#[derive(Subcommand)]
enum BenchWhat {
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

#[derive(Subcommand)]
enum ReplayEnv {
    /// ALFWorld: each input line is {"game": "<path under DIR/json_2.1.1>", "actions": [...]}.
    Alfworld {
        /// The ALFWORLD_DATA directory (holding json_2.1.1/).
        #[arg(long, env = "ALFWORLD_DATA")]
        data: PathBuf,
        /// Input JSONL.
        #[arg(long)]
        input: PathBuf,
        /// Output JSONL (the golden transcripts' schema).
        #[arg(long)]
        output: PathBuf,
        /// Command wording of the release.
        #[arg(long, value_enum, default_value = "2.1.2")]
        wording: WordingArg,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum WordingArg {
    #[value(name = "2.1.2")]
    V212,
    #[value(name = "2.1.1")]
    V211,
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Replay {
            env:
                ReplayEnv::Alfworld {
                    data,
                    input,
                    output,
                    wording,
                },
        } => {
            let wording = match wording {
                WordingArg::V212 => Wording::V212,
                WordingArg::V211 => Wording::V211,
            };
            let start = std::time::Instant::now();
            let n = envrl_examples::replay::replay_alfworld(&data, &input, &output, wording)?;
            eprintln!(
                "replayed {n} episodes in {:.2}s -> {}",
                start.elapsed().as_secs_f64(),
                output.display()
            );
        }
        Command::Bench {
            what: BenchWhat::Alfworld { data, seconds },
        } => envrl_examples::bench::bench_alfworld(&data, seconds)?,
    }
    Ok(())
}
