//! The `envrl` command: one module per subcommand, each a `clap` struct with a `run` method.
//! Flags are parsed once into typed values ([`EnvName`](crate::run::EnvName),
//! [`Preset`](crate::run::Preset), [`DeviceArgs`]) and nothing is turned back into text.

mod bench;
mod compare;
mod eval;
mod export;
mod lm;
mod replay;
mod serve;
mod train;
mod webshop;

pub(crate) use train::TrainArgs;

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::run::Ranks;

pub use crate::device::DeviceArgs;

/// Train and evaluate LLM agents with EnvRL.
#[derive(Parser)]
#[command(name = "envrl", version)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Train an agent: warm start on expert demonstrations, then RL (+ EnvRL objectives).
    Train(train::TrainArgs),
    /// Evaluate the latest checkpoint of a run directory on its held-out tasks.
    Eval(eval::EvalArgs),
    /// Export a run's trained model (or, with --model, a pretrained one): a Hugging Face
    /// directory, a PEFT adapter or a GGUF file, each loaded back and checked against the
    /// checkpoint (or the model) before it is put in place.
    Export(export::ExportArgs),
    /// Replay recorded action lists through an environment engine.
    Replay(replay::ReplayArgs),
    /// Inspect a model: logits of token rows, or a generation.
    Lm(lm::LmArgs),
    /// WebShop tools.
    Webshop(webshop::WebshopArgs),
    /// Compare finished runs arm by arm (runs grouped by their whole algorithm): held-out
    /// success with 95% bootstrap intervals, paired differences to a baseline arm, curve areas,
    /// sample efficiency, per task type, gradient diagnostics, and curves with bands
    /// (comparison.md and plots in --output).
    Compare(compare::CompareArgs),
    /// Measure speed and print a table next to the reference.
    Bench(bench::BenchArgs),
    /// Serve an environment in OpenEnv's protocol (HTTP and WebSocket sessions) for any
    /// trainer: `envrl serve alfworld` listens on 127.0.0.1:8000.
    Serve(serve::ServeArgs),
}

impl Cli {
    /// Runs the parsed command.
    ///
    /// # Errors
    /// As the command.
    pub fn run(self, ranks: &Ranks) -> Result<()> {
        match self.command {
            Command::Train(args) => args.run(ranks),
            Command::Eval(args) => args.run(ranks),
            Command::Export(args) => args.run(),
            Command::Replay(args) => args.run(),
            Command::Lm(args) => args.run(),
            Command::Webshop(args) => args.run(),
            Command::Compare(args) => args.run(),
            Command::Bench(args) => args.run(),
            Command::Serve(args) => args.run(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{DType, DeviceName};
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_model_command_takes_a_typed_device_and_dtype() {
        let cli = Cli::try_parse_from([
            "envrl", "lm", "generate", "--model", "m.gguf", "--prompt", "hi", "--device", "cuda:1",
            "--dtype", "bf16",
        ])
        .unwrap();
        let Command::Lm(lm) = cli.command else {
            panic!("not lm")
        };
        let device = lm.device_args();
        assert_eq!(
            (device.device, device.dtype),
            (DeviceName::Cuda(1), Some(DType::Bf16))
        );
        let err =
            Cli::try_parse_from(["envrl", "lm", "generate", "--model", "m", "--device", "tpu"])
                .err()
                .unwrap()
                .to_string();
        assert!(err.contains("unknown device `tpu`"), "{err}");
        let err = Cli::try_parse_from(["envrl", "train", "minecraft"])
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("alfworld, webshop, keydoor"), "{err}");
    }
}
