//! The environments `envrl train` knows, one module each: its set-up for a run (tasks,
//! prompt, projection, expert demonstrations, evaluation labels) and what it changes in each
//! preset. Adding an environment to the programs is one new module here with a type that
//! implements [`ProgramEnv`], and one line in the `environments!` list below.

use anyhow::Result;
use envrl::{ActionParser, Demonstration, Environment, PromptBuilder, Tokenizer};
use envrl_algos::AuxConfig;
use envrl_envs::webshop::ScoreLog;

use crate::run::config::RunConfig;
use crate::run::presets::Preset;

/// Records expert demonstrations (`episodes` of them) with a tokenizer.
pub type Demonstrate = Box<dyn Fn(&dyn Tokenizer, usize) -> Vec<Demonstration>>;

/// An environment's side of a run.
pub struct EnvSetup<E: Environment> {
    /// Builds each step's prompt.
    pub prompt: Box<dyn PromptBuilder>,
    /// Projects responses to actions.
    pub parser: Box<dyn ActionParser>,
    /// Makes one environment.
    pub make_env: Box<dyn Fn() -> E + Send>,
    /// Training task ids.
    pub train_tasks: Vec<u64>,
    /// Held-out evaluation task ids.
    pub eval_tasks: Vec<u64>,
    /// Expert demonstrations in the prompt format.
    pub demonstrate: Demonstrate,
    /// The evaluation-table row of a task (task type, product category).
    pub task_label: Box<dyn Fn(u64) -> String>,
    /// Raw scores of WebShop purchases, by task.
    pub scores: Option<ScoreLog>,
    /// Where the tasks come from, for the report.
    pub source: String,
}

/// An environment of the programs.
pub trait ProgramEnv {
    /// The environment type.
    type Env: Environment + 'static;

    /// The environment's side of a run configured by `config`.
    ///
    /// # Errors
    /// When its data cannot be read or the config names something it does not have.
    fn setup(config: &RunConfig) -> Result<EnvSetup<Self::Env>>;

    /// What the environment changes in `preset`: a TOML table laid over the preset's
    /// (`run/presets/<preset>.toml`); empty for nothing.
    fn preset_delta(preset: Preset) -> &'static str;

    /// A built-in objective as `--aux` selects it for this world: its token budgets, the form
    /// of its targets (ENVRL.md §4). Unchanged by default.
    fn adapt_objective(aux: AuxConfig) -> AuxConfig {
        aux
    }
}

/// Something done with an environment's set-up, whatever its type (see
/// [`EnvName::with_setup`]).
pub trait WithSetup {
    /// What it gives.
    type Output;

    /// Does it.
    ///
    /// # Errors
    /// As the caller's work.
    fn call<E: Environment + 'static>(self, setup: EnvSetup<E>) -> Result<Self::Output>;
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

        impl EnvName {
            /// Every environment, in the order of the list.
            pub const ALL: &[EnvName] = &[$(EnvName::$variant),+];

            /// The name in configs, on the command line and in run directories.
            pub fn name(self) -> &'static str {
                match self {
                    $(EnvName::$variant => stringify!($module),)+
                }
            }

            /// What the environment changes in `preset` ([`ProgramEnv::preset_delta`]).
            pub fn preset_delta(self, preset: Preset) -> &'static str {
                match self {
                    $(EnvName::$variant => <$module::$program as ProgramEnv>::preset_delta(preset),)+
                }
            }

            /// A built-in objective as this world wants it ([`ProgramEnv::adapt_objective`]).
            pub fn adapt_objective(self, aux: AuxConfig) -> AuxConfig {
                match self {
                    $(EnvName::$variant => <$module::$program as ProgramEnv>::adapt_objective(aux),)+
                }
            }

            /// Builds the environment's set-up for `config` and hands it to `work`.
            ///
            /// # Errors
            /// When the set-up fails, or as `work`.
            pub fn with_setup<W: WithSetup>(self, config: &RunConfig, work: W) -> Result<W::Output> {
                match self {
                    $(EnvName::$variant => work.call(<$module::$program as ProgramEnv>::setup(config)?),)+
                }
            }
        }
    };
}

environments! {
    Alfworld => alfworld::AlfworldProgram,
    Webshop => webshop::WebShopProgram,
    Keydoor => keydoor::KeyDoorProgram,
}

impl std::fmt::Display for EnvName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
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
        let listing = &source[source.find("use anyhow::Result;").unwrap()..];
        let chapter = include_str!("../../../../docs/custom-environment.md");
        assert!(
            chapter.contains(listing),
            "docs/custom-environment.md no longer shows envs/example.rs"
        );
        let config = Preset::CpuTiny.config(EnvName::Keydoor).unwrap();
        let setup = <example::LampsProgram as ProgramEnv>::setup(&config).unwrap();
        assert_eq!(setup.train_tasks.len(), config.tasks.train);
        assert_eq!((setup.make_env)().description(), "key-and-door");
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
        assert!(err.contains("alfworld, webshop, keydoor"), "{err}");
    }
}
