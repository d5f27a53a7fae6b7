//! The `envrl` command.

use std::io::Write;
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
    /// WebShop tools.
    Webshop {
        #[command(subcommand)]
        what: WebshopWhat,
    },
    /// Measure speed and print a table next to the reference.
    Bench {
        #[command(subcommand)]
        what: BenchWhat,
    },
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
enum WebshopWhat {
    /// Print the goal table of an environment seed as JSON lines (idx, asin, instruction_text,
    /// attributes, goal_options, price_upper, weight, …); idx < 500 is the test split.
    Goals {
        /// The WEBSHOP_DATA directory (items_shuffle_1000.json, items_ins_v2_1000.json,
        /// title_nouns.json).
        #[arg(long, env = "WEBSHOP_DATA")]
        data: PathBuf,
        /// The environment seed.
        #[arg(long, default_value_t = 1000)]
        seed: i64,
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
    /// WebShop: each input line is {"goal_idx": N, "actions": [...]}.
    Webshop {
        /// The WEBSHOP_DATA directory (items_shuffle_1000.json, items_ins_v2_1000.json,
        /// title_nouns.json).
        #[arg(long, env = "WEBSHOP_DATA")]
        data: PathBuf,
        /// The environment seed (goal order, prices).
        #[arg(long, default_value_t = 1000)]
        seed: i64,
        /// How pages are rendered.
        #[arg(long, value_enum, default_value = "text")]
        observation_mode: ObservationModeArg,
        /// Input JSONL.
        #[arg(long)]
        input: PathBuf,
        /// Output JSONL (the golden episodes' schema).
        #[arg(long)]
        output: PathBuf,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum ObservationModeArg {
    #[value(name = "text")]
    Text,
    #[value(name = "text_rich")]
    TextRich,
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
        Command::Replay {
            env:
                ReplayEnv::Webshop {
                    data,
                    seed,
                    observation_mode,
                    input,
                    output,
                },
        } => {
            let mode = match observation_mode {
                ObservationModeArg::Text => envrl_envs::webshop::ObservationMode::Text,
                ObservationModeArg::TextRich => envrl_envs::webshop::ObservationMode::TextRich,
            };
            let start = std::time::Instant::now();
            let n = envrl_examples::replay::replay_webshop(&data, seed, mode, &input, &output)?;
            eprintln!(
                "replayed {n} episodes in {:.2}s -> {}",
                start.elapsed().as_secs_f64(),
                output.display()
            );
        }
        Command::Webshop {
            what: WebshopWhat::Goals { data, seed },
        } => {
            let catalog = envrl_envs::webshop::Catalog::open(&data)?;
            let goals = envrl_envs::webshop::GoalSet::new(&catalog, seed);
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            for (idx, goal) in goals.goals.iter().enumerate() {
                writeln!(out, "{}", goal.to_json(idx))?;
            }
            out.flush()?;
        }
        Command::Bench {
            what: BenchWhat::Alfworld { data, seconds },
        } => envrl_examples::bench::bench_alfworld(&data, seconds)?,
        Command::Bench {
            what:
                BenchWhat::Webshop {
                    data,
                    seconds,
                    scale_products,
                },
        } => envrl_examples::bench::bench_webshop(&data, seconds, scale_products)?,
    }
    Ok(())
}
