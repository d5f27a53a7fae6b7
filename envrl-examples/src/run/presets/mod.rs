//! The presets `--preset` knows, as data: one TOML table per preset (`<name>.toml` beside this
//! file, every field of a [`RunConfig`]), over which the environment's module lays its changes
//! ([`ProgramEnv::preset_delta`](crate::run::envs::ProgramEnv::preset_delta)).

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::run::config::{RunConfig, models_dir, overlay};
use crate::run::envs::EnvName;

/// A preset, by its name in configs and on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
pub enum Preset {
    /// A from-scratch tiny LM sized for 2 CPU cores (the default).
    #[serde(rename = "cpu-tiny")]
    #[value(name = "cpu-tiny")]
    CpuTiny,
    /// SmolLM2-135M-Instruct's GGUF at CPU scale.
    #[serde(rename = "smollm2-135m")]
    #[value(name = "smollm2-135m")]
    Smollm2_135m,
    /// The paper's setting, for a GPU.
    #[serde(rename = "paper-1.5b")]
    #[value(name = "paper-1.5b")]
    Paper1_5b,
}

impl Preset {
    /// Every preset.
    pub const ALL: [Preset; 3] = [Preset::CpuTiny, Preset::Smollm2_135m, Preset::Paper1_5b];

    /// The name in configs and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Preset::CpuTiny => "cpu-tiny",
            Preset::Smollm2_135m => "smollm2-135m",
            Preset::Paper1_5b => "paper-1.5b",
        }
    }

    /// The preset's table as written, `{models}` standing for [`models_dir`].
    pub fn table(self) -> &'static str {
        match self {
            Preset::CpuTiny => include_str!("cpu-tiny.toml"),
            Preset::Smollm2_135m => include_str!("smollm2-135m.toml"),
            Preset::Paper1_5b => include_str!("paper-1.5b.toml"),
        }
    }

    /// The preset's config for `env`: its table, then the environment's changes.
    ///
    /// # Errors
    /// When a table does not parse (a bug, caught by the tests).
    pub fn config(self, env: EnvName) -> Result<RunConfig> {
        let models = models_dir().display().to_string();
        let mut tree: toml::Value = toml::from_str(&self.table().replace("{models}", &models))
            .with_context(|| format!("the `{}` preset's table", self.name()))?;
        let delta: toml::Value = toml::from_str(env.preset_delta(self))
            .with_context(|| format!("{env}'s changes to the `{}` preset", self.name()))?;
        overlay(&mut tree, delta);
        let table = tree
            .as_table_mut()
            .context("a preset's table is a TOML table")?;
        table.insert("env".into(), toml::Value::try_from(env)?);
        table.insert("preset".into(), toml::Value::try_from(self)?);
        tree.try_into()
            .with_context(|| format!("the `{}` preset for {env}", self.name()))
    }
}

impl std::fmt::Display for Preset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_builds_for_every_environment_and_validates() {
        for preset in Preset::ALL {
            for &env in EnvName::ALL {
                let config = preset.config(env).unwrap();
                assert_eq!((config.env, config.preset), (env, Some(preset)));
                config.validate().unwrap();
            }
        }
    }
}
