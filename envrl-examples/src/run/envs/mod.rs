//! The environments `envrl train` knows, one module each: its settings (the `[env]` table of a
//! run's config), its set-up for a run (the [`World`]: tasks, prompt, projection, the facts it
//! states; expert demonstrations; evaluation labels) and what it changes in each preset. Adding
//! an environment to the programs is one new module here with a type that implements
//! [`ProgramEnv`], and one line in the `environments!` list below.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use envrl::{Demonstration, Tokenizer, World};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::run::presets::Preset;

/// Records expert demonstrations (`episodes` of them) with a tokenizer.
pub type Demonstrate = Box<dyn Fn(&dyn Tokenizer, usize) -> Vec<Demonstration>>;

/// Raw scores (0–1) of finished episodes by task id, filled by environments whose reward only
/// says whether the score was perfect (WebShop), for the evaluation table.
pub type TaskScores = Arc<Mutex<HashMap<u64, f64>>>;

/// How many tasks the run trains and evaluates on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TasksConfig {
    /// Training tasks (generated games, goals, worlds).
    pub train: usize,
    /// Held-out evaluation tasks.
    pub eval: usize,
}

impl Default for TasksConfig {
    fn default() -> Self {
        Self {
            train: 200,
            eval: 60,
        }
    }
}

/// What a world's set-up reads of the run besides its own settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunFacts {
    /// Task counts.
    pub tasks: TasksConfig,
    /// The run's seed (generated tasks, the expert's stream).
    pub seed: u64,
    /// Steps per episode.
    pub max_steps: usize,
}

/// An environment's side of a run: the world the trainer takes, the expert, and what the report
/// needs.
pub struct EnvSetup {
    /// The world: environments, prompt, parser, tasks and facts.
    pub world: World,
    /// Expert demonstrations in the prompt format.
    pub demonstrate: Demonstrate,
    /// What the report keeps.
    pub reporting: Reporting,
}

/// What the report needs of an environment.
pub struct Reporting {
    /// The evaluation-table row of a task (task type, product category).
    pub task_label: Box<dyn Fn(u64) -> String>,
    /// Raw episode scores, for environments that keep them.
    pub scores: Option<TaskScores>,
    /// Where the tasks come from, for the report.
    pub source: String,
}

/// An environment of the programs: its settings (the `[env]` table of a run's config, tagged by
/// the environment's name), its set-up and its changes to each preset.
pub trait ProgramEnv {
    /// The environment's own settings; `Default` gives every field's default.
    type Settings: Debug + Clone + PartialEq + Default + Serialize + DeserializeOwned;

    /// The environment's side of a run.
    ///
    /// # Errors
    /// When its data cannot be read or the settings name something it does not have.
    fn setup(settings: &Self::Settings, run: &RunFacts) -> Result<EnvSetup>;

    /// What the environment changes in `preset`: a TOML table laid over the preset's
    /// (`run/presets/<preset>.toml`; its own settings under `[env]`); empty for nothing.
    fn preset_delta(preset: Preset) -> &'static str;

    /// Refuses settings the environment cannot use (checked with the rest of the config before
    /// anything runs). Accepts everything by default.
    ///
    /// # Errors
    /// A message naming the setting and what the environment accepts.
    fn check(settings: &Self::Settings, run: &RunFacts) -> Result<()> {
        let _ = (settings, run);
        Ok(())
    }

    /// The settings evaluating on another held-out split (`envrl eval --split`). By default the
    /// environment has no other split.
    ///
    /// # Errors
    /// When the environment has no such split.
    fn with_eval_split(settings: Self::Settings, split: &str) -> Result<Self::Settings> {
        let _ = settings;
        anyhow::bail!("--split {split}: there is no other held-out split")
    }
}

macro_rules! environments {
    ($($variant:ident => $module:ident::$program:ident,)+) => {
        $(pub mod $module;)+

        /// An environment of `envrl train`, by its name in configs and on the command line.
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize,
            clap::ValueEnum,
        )]
        #[serde(rename_all = "lowercase")]
        #[value(rename_all = "lowercase")]
        pub enum EnvName {
            $(
                #[doc = concat!("`", stringify!($module), "`.")]
                $variant,
            )+
        }

        /// A run's environment with its settings: the `[env]` table, tagged by `name`.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "name", rename_all = "lowercase")]
        pub enum EnvConfig {
            $(
                #[doc = concat!("`", stringify!($module), "` and its settings.")]
                $variant(<$module::$program as ProgramEnv>::Settings),
            )+
        }

        impl EnvName {
            /// Every environment, in the order of the list.
            pub const ALL: &[EnvName] = &[$(EnvName::$variant),+];

            /// The name in configs, on the command line and in run directories.
            pub fn name(self) -> &'static str {
                match self {
                    $(EnvName::$variant => stringify!($module),)+
                }
            }

            /// The environment with every setting at its default.
            pub fn default_config(self) -> EnvConfig {
                match self {
                    $(EnvName::$variant => EnvConfig::$variant(Default::default()),)+
                }
            }

            /// What the environment changes in `preset` ([`ProgramEnv::preset_delta`]).
            pub fn preset_delta(self, preset: Preset) -> &'static str {
                match self {
                    $(EnvName::$variant => <$module::$program as ProgramEnv>::preset_delta(preset),)+
                }
            }
        }

        impl EnvConfig {
            /// Which environment this is.
            pub fn name(&self) -> EnvName {
                match self {
                    $(EnvConfig::$variant(_) => EnvName::$variant,)+
                }
            }

            /// Refuses settings the environment cannot use ([`ProgramEnv::check`]).
            ///
            /// # Errors
            /// As the environment's check.
            pub fn check(&self, run: &RunFacts) -> Result<()> {
                match self {
                    $(EnvConfig::$variant(s) => <$module::$program as ProgramEnv>::check(s, run),)+
                }
            }

            /// The settings evaluating on another held-out split
            /// ([`ProgramEnv::with_eval_split`]).
            ///
            /// # Errors
            /// When the environment has no such split.
            pub fn with_eval_split(self, split: &str) -> Result<EnvConfig> {
                let name = self.name();
                match self {
                    $(EnvConfig::$variant(s) => {
                        <$module::$program as ProgramEnv>::with_eval_split(s, split)
                            .map(EnvConfig::$variant)
                    })+
                }
                .with_context(|| format!("{name}"))
            }

            /// The environment's set-up ([`ProgramEnv::setup`]).
            ///
            /// # Errors
            /// When the set-up fails.
            pub fn setup(&self, run: &RunFacts) -> Result<EnvSetup> {
                match self {
                    $(EnvConfig::$variant(s) => <$module::$program as ProgramEnv>::setup(s, run),)+
                }
            }
        }
    };
}

environments! {
    Alfworld => alfworld::AlfworldProgram,
    Webshop => webshop::WebShopProgram,
    Keydoor => keydoor::KeyDoorProgram,
    Sokoban => sokoban::SokobanProgram,
}

impl std::fmt::Display for EnvName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::fmt::Display for EnvConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name().name())
    }
}

impl std::str::FromStr for EnvName {
    type Err = anyhow::Error;

    fn from_str(name: &str) -> Result<Self> {
        EnvName::ALL
            .iter()
            .copied()
            .find(|e| e.name() == name)
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "unknown environment `{name}`; expected one of: {}",
                    EnvName::ALL
                        .iter()
                        .map(|e| e.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
    }
}

#[cfg(test)]
mod example;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guides_environment_listing_compiles_and_builds_a_set_up() {
        let source = include_str!("example.rs");
        let listing = &source[source.find("use anyhow::").unwrap()..];
        let chapter = include_str!("../../../../docs/custom-environment.md");
        assert!(
            chapter.contains(listing),
            "docs/custom-environment.md no longer shows envs/example.rs"
        );
        let run = RunFacts {
            tasks: TasksConfig { train: 10, eval: 5 },
            seed: 0,
            max_steps: 6,
        };
        let settings: example::LampsSettings = toml::from_str("rooms = 4").unwrap();
        type Lamps = example::LampsProgram;
        let setup = <Lamps as ProgramEnv>::setup(&settings, &run).unwrap();
        assert_eq!(setup.world.train_tasks.len(), 10);
        assert_eq!(setup.world.info.description, "key-and-door");
        assert_eq!(setup.reporting.source, "4-room corridors");
        let err = <Lamps as ProgramEnv>::check(&example::LampsSettings { rooms: 9 }, &run);
        assert!(err.unwrap_err().to_string().contains("env.rooms = 9"));
        let err = toml::from_str::<example::LampsSettings>("lamps = 4").unwrap_err();
        assert!(err.to_string().contains("unknown field `lamps`"), "{err}");
        let delta: toml::Table =
            toml::from_str(example::LampsProgram::preset_delta(Preset::CpuTiny)).unwrap();
        assert!(delta.contains_key("warmup"));
    }

    #[test]
    fn names_round_trip_through_configs_and_the_command_line() {
        for &env in EnvName::ALL {
            assert_eq!(env.name().parse::<EnvName>().unwrap(), env);
            let toml = toml::Value::try_from(env).unwrap();
            assert_eq!(toml.as_str(), Some(env.name()));
            assert_eq!(
                <EnvName as clap::ValueEnum>::from_str(env.name(), false).unwrap(),
                env
            );
        }
        let err = "alfword".parse::<EnvName>().unwrap_err().to_string();
        assert!(err.contains("alfworld, webshop, keydoor, sokoban"), "{err}");
    }
}
