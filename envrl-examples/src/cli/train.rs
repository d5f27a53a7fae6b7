//! `envrl train`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::DeviceArgs;
use crate::run::{
    EnvName, ModelSource, Preset, Ranks, RunConfig, RunMode, RunOptions, default_run_dir, unix_time,
};

/// Train an agent: warm start on expert demonstrations, then RL (+ EnvRL objectives).
#[derive(Args)]
pub struct TrainArgs {
    /// The environment.
    #[arg(value_enum)]
    env: EnvName,
    #[command(flatten)]
    run: RunArgs,
}

/// What a run is: its config (preset, file, overrides, typed shortcuts) and where it goes.
#[derive(Args)]
pub struct RunArgs {
    /// Starting point: cpu-tiny (a from-scratch tiny LM sized for 2 CPU cores, the default),
    /// smollm2-135m (SmolLM2-135M-Instruct GGUF at CPU scale) or paper-1.5b (the paper's
    /// setting, for a GPU).
    #[arg(long, value_enum)]
    preset: Option<Preset>,
    /// A TOML config (a run's config.toml works), over the preset it names (or --preset):
    /// fields it leaves out come from that preset.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Override any config field, e.g. --set trainer.learning_rate=1e-4 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
    /// Advantage estimator: grpo, ppo, rloo or gigpo.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(envrl_algos::AdvantageConfig::NAMES))]
    algo: Option<String>,
    /// Auxiliary objectives, comma-separated: state_prediction, inverse_dynamics,
    /// state_prediction_in_sequence (`-` for `_` works too), or none; NAME=L sets λ0 to L
    /// (NAME=0: a placebo, built and measured but not trained).
    #[arg(long)]
    aux: Option<String>,
    /// Seed of the run (tasks, model, sampling).
    #[arg(long)]
    seed: Option<u64>,
    /// Training iterations.
    #[arg(long)]
    iterations: Option<usize>,
    /// The model: `tiny` (from scratch), a `.gguf` file or a Hugging Face model directory.
    #[arg(long)]
    model: Option<ModelSource>,
    #[command(flatten)]
    device: DeviceArgs,
    /// Run directory (default runs/<env>__<estimator>__<seed>__<time>).
    #[arg(long)]
    output_dir: Option<PathBuf>,
    /// Continue from the run directory's latest checkpoint.
    #[arg(long)]
    resume: bool,
    /// Overwrite a run directory that holds another run's checkpoints.
    #[arg(long)]
    force: bool,
    /// With --resume: accept settings that change the run (model, shapes, algorithm, seeds,
    /// learning rate, ...); they are listed in config-changes.txt. Without it such a resume is
    /// refused with the list of differences.
    #[arg(long)]
    allow_config_change: bool,
    /// No progress bars or summaries.
    #[arg(long)]
    quiet: bool,
    /// Train only the warm start, save it as warm-start.bpk and stop (other runs load it with
    /// --set warmup.from=DIR).
    #[arg(long)]
    warm_start_only: bool,
}

impl RunArgs {
    /// The run's config: the preset or file, `--algo`/`--aux`, the `--set` overrides, then the
    /// typed flags, validated once.
    ///
    /// # Errors
    /// When the file cannot be read, a name is unknown or a value impossible.
    pub fn config(&self, env: EnvName) -> Result<RunConfig> {
        let mut config = RunConfig::from_flags(self.config.as_deref(), self.preset, env)?
            .with_algorithm(self.algo.as_deref(), self.aux.as_deref())?
            .overridden(&self.overrides)?;
        // Validated once the flags are in (a server setting needs `--model`'s model).
        if let Some(seed) = self.seed {
            config.trainer.seed = seed;
        }
        if let Some(iterations) = self.iterations {
            config.trainer.iterations = iterations;
        }
        if let Some(model) = &self.model {
            config.model = model.clone();
        }
        config.dtype = self.device.dtype_or(config.dtype);
        config.validate()?;
        Ok(config)
    }
}

impl TrainArgs {
    /// `--iterations`, when given.
    pub(crate) fn iterations_flag(&self) -> Option<usize> {
        self.run.iterations
    }

    /// The run's config and options; `default_dir` names the run directory when
    /// `--output-dir` does not.
    ///
    /// # Errors
    /// As [`RunArgs::config`], or when the device is not available.
    pub(crate) fn into_run(
        self,
        ranks: &Ranks,
        default_dir: impl FnOnce(&RunConfig) -> PathBuf,
    ) -> Result<(RunConfig, RunOptions)> {
        let args = self.run;
        let config = args.config(self.env)?;
        let output_dir = args
            .output_dir
            .clone()
            .unwrap_or_else(|| default_dir(&config));
        let options = RunOptions {
            output_dir,
            resume: args.resume,
            force: args.force,
            allow_config_change: args.allow_config_change,
            device: args.device.device.device(config.dtype)?,
            quiet: args.quiet,
            mode: if args.warm_start_only {
                RunMode::WarmStartOnly
            } else {
                RunMode::Train
            },
            eval_tag: None,
            ranks: ranks.clone(),
        };
        Ok((config, options))
    }

    /// Trains.
    ///
    /// # Errors
    /// As [`crate::run::train`].
    pub fn run(self, ranks: &Ranks) -> Result<()> {
        let (config, options) =
            self.into_run(ranks, |config| default_run_dir(config, unix_time()))?;
        let summary = crate::run::train(&config, &options)?;
        if !options.quiet {
            println!("done in {:.0} s", summary.wall_s);
        }
        Ok(())
    }
}
