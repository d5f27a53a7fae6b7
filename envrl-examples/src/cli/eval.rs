//! `envrl eval`.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::Args;

use super::DeviceArgs;
use crate::run::{EnvName, RunConfig, RunOptions};

/// Evaluate the latest checkpoint of a run directory on its held-out tasks.
#[derive(Args)]
pub struct EvalArgs {
    /// The environment (must match the run's config).
    #[arg(value_enum)]
    env: EnvName,
    /// The run directory.
    #[arg(long)]
    output_dir: PathBuf,
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
    pub fn run(self) -> Result<()> {
        let config = RunConfig::from_toml_file(&self.output_dir.join("config.toml"))?;
        if config.env != self.env {
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
            quiet: false,
            eval_only: true,
            eval_tag: None,
        };
        crate::run::evaluate(config, &options, self.split.as_deref())?;
        Ok(())
    }
}
