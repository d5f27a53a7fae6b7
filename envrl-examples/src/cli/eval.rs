//! `envrl eval`.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::Args;

use super::DeviceArgs;
use crate::run::{EnvName, ModelSource, Preset, Ranks, RunConfig, RunMode, RunOptions};

/// Evaluate the latest checkpoint of a run directory on its held-out tasks, or with `--model`
/// a model file (a pretrained model, an `envrl export`) as it is.
#[derive(Args)]
pub struct EvalArgs {
    /// The environment (must match the run's config).
    #[arg(value_enum)]
    env: EnvName,
    /// The run directory; with --model, where the evaluation is written.
    #[arg(long)]
    output_dir: PathBuf,
    /// Evaluate this model (a `.gguf` file or a Hugging Face directory) instead of a run's
    /// checkpoint, on the held-out tasks of --config (a run's config.toml plays that run's
    /// evaluation) or --preset [default: cpu-tiny].
    #[arg(long)]
    model: Option<ModelSource>,
    /// With --model: the config whose tasks and evaluation settings to use.
    #[arg(long, requires = "model")]
    config: Option<PathBuf>,
    /// With --model and without --config: the preset.
    #[arg(long, value_enum, requires = "model")]
    preset: Option<Preset>,
    /// With --model: override a config field (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", requires = "model")]
    overrides: Vec<String>,
    /// No progress bars or summaries.
    #[arg(long)]
    quiet: bool,
    #[command(flatten)]
    device: DeviceArgs,
    /// ALFWorld on ALFWORLD_DATA: evaluate on valid_seen or valid_unseen instead of the
    /// run's split, into eval-<split>.md and .json.
    #[arg(long)]
    split: Option<String>,
}

impl EvalArgs {
    /// Evaluates.
    ///
    /// # Errors
    /// As [`crate::run::evaluate`], or when the run is of another environment.
    pub fn run(self, ranks: &Ranks) -> Result<()> {
        if let Some(model) = self.model.clone() {
            return self.evaluate_model(model, ranks);
        }
        let config = RunConfig::from_toml_file(&self.output_dir.join("config.toml"))?;
        if config.env.name() != self.env {
            bail!(
                "{} is a `{}` run, not `{}`",
                self.output_dir.display(),
                config.env,
                self.env
            );
        }
        let options = RunOptions {
            device: self
                .device
                .device
                .device(self.device.dtype_or(config.dtype))?,
            output_dir: self.output_dir,
            resume: true,
            force: false,
            allow_config_change: false,
            quiet: self.quiet,
            mode: RunMode::Evaluate,
            eval_tag: None,
            ranks: ranks.clone(),
        };
        crate::run::evaluate(config, &options, self.split.as_deref())?;
        Ok(())
    }

    /// `--model`: the config from --config or --preset, the model from --model.
    fn evaluate_model(self, model: ModelSource, ranks: &Ranks) -> Result<()> {
        // Validated once the model is in.
        let mut config = RunConfig::from_flags(self.config.as_deref(), self.preset, self.env)?
            .overridden(&self.overrides)?;
        if let Some(split) = &self.split {
            config.env = config.env.with_eval_split(split)?;
        }
        config.model = model;
        // The model is evaluated as it is: no adapters on top of it.
        config.lora.rank = 0;
        config.dtype = self.device.dtype_or(config.dtype);
        config.validate()?;
        let options = RunOptions {
            device: self.device.device.device(config.dtype)?,
            output_dir: self.output_dir,
            resume: false,
            force: false,
            allow_config_change: false,
            quiet: self.quiet,
            mode: RunMode::Evaluate,
            eval_tag: None,
            ranks: ranks.clone(),
        };
        let summary = crate::run::evaluate_model(&config, &options)?;
        if let Some(all) = summary.table.last() {
            println!("held-out success: {:.3}", all.success);
        }
        Ok(())
    }
}
