//! `envrl replay`.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};
use envrl_envs::alfworld::Wording;
use envrl_envs::webshop::ObservationMode;

/// Replay recorded action lists through an environment engine.
#[derive(Args)]
pub struct ReplayArgs {
    #[command(subcommand)]
    env: ReplayEnv,
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

impl From<ObservationModeArg> for ObservationMode {
    fn from(mode: ObservationModeArg) -> Self {
        match mode {
            ObservationModeArg::Text => ObservationMode::Text,
            ObservationModeArg::TextRich => ObservationMode::TextRich,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum WordingArg {
    #[value(name = "2.1.2")]
    V212,
    #[value(name = "2.1.1")]
    V211,
}

impl From<WordingArg> for Wording {
    fn from(wording: WordingArg) -> Self {
        match wording {
            WordingArg::V212 => Wording::V212,
            WordingArg::V211 => Wording::V211,
        }
    }
}

impl ReplayArgs {
    /// Replays and reports how many episodes, how fast.
    ///
    /// # Errors
    /// When the data or the input cannot be read, or the output written.
    pub fn run(self) -> Result<()> {
        let start = Instant::now();
        let (n, output) = match self.env {
            ReplayEnv::Alfworld {
                data,
                input,
                output,
                wording,
            } => (
                crate::replay::replay_alfworld(&data, &input, &output, wording.into())?,
                output,
            ),
            ReplayEnv::Webshop {
                data,
                seed,
                observation_mode,
                input,
                output,
            } => (
                crate::replay::replay_webshop(
                    &data,
                    seed,
                    observation_mode.into(),
                    &input,
                    &output,
                )?,
                output,
            ),
        };
        eprintln!(
            "replayed {n} episodes in {:.2}s -> {}",
            start.elapsed().as_secs_f64(),
            output.display()
        );
        Ok(())
    }
}
