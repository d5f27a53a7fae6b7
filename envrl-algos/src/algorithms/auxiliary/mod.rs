//! EnvRL's auxiliary objectives ([`envrl::AuxObjective`] implementations), learned from the
//! agent's own rollouts: state prediction and inverse dynamics. One file each, registered in the
//! `objectives!` list below: adding a built-in objective is one file with an
//! [`ObjectiveConfig`] implementation and one line there. The world's facts (its description,
//! no-op observations, action form and example budgets) reach them with the data
//! ([`envrl::WorldInfo`]), not through their settings.

use envrl::{AuxObjective, Schedule};
use serde::{Deserialize, Serialize};

mod transitions;
pub use transitions::{AuxSource, Targets, Transition, TransitionFilter, retarget};

/// What [`AuxConfig`] needs of a built-in objective's settings.
pub trait ObjectiveConfig: Clone + Default + PartialEq + std::fmt::Debug {
    /// The name in configs (`name = "…"`), on the command line (`--aux`), in the metrics
    /// (`loss/aux/<name>`) and in run labels; the built objective's
    /// [`AuxObjective::name`] is the same.
    const NAME: &'static str;

    /// Builds the objective.
    fn build(&self) -> Box<dyn AuxObjective>;

    /// Whose targets the objective trains on ([`Targets`]); objectives without a
    /// shuffled-target control always train on their own.
    fn targets(&self) -> Targets {
        Targets::Own
    }

    /// Whose targets the objective trains on, to change them; `None` for objectives without a
    /// shuffled-target control.
    fn targets_mut(&mut self) -> Option<&mut Targets> {
        None
    }

    /// The weight schedule λ(t).
    fn schedule(&self) -> &Schedule;

    /// The weight schedule λ(t), to change it.
    fn schedule_mut(&mut self) -> &mut Schedule;
}

macro_rules! objectives {
    ($($module:ident::{$($item:ident),+}: $variant:ident($config:ty),)+) => {
        $(mod $module; pub use $module::{$($item),+};)+

        /// An auxiliary objective and its settings, selected by `name`.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "name", rename_all = "snake_case")]
        pub enum AuxConfig {
            $(
                #[doc = concat!("[`", stringify!($config), "`].")]
                $variant($config),
            )+
        }

        impl AuxConfig {
            /// Every built-in objective's name: the same string in configs (`name = "…"`), on
            /// the command line (`--aux`), in the metrics (`loss/aux/<name>`) and in run labels.
            pub const NAMES: &'static [&'static str] = &[$(<$config as ObjectiveConfig>::NAME),+];

            /// Every built-in objective with its default settings, in [`AuxConfig::NAMES`] order.
            pub fn all() -> Vec<AuxConfig> {
                vec![$(AuxConfig::$variant(<$config>::default())),+]
            }

            /// The objective's name (one of [`AuxConfig::NAMES`]).
            pub fn name(&self) -> &'static str {
                match self {
                    $(AuxConfig::$variant(_) => <$config as ObjectiveConfig>::NAME,)+
                }
            }

            /// Builds the objective.
            pub fn build(&self) -> Box<dyn AuxObjective> {
                match self {
                    $(AuxConfig::$variant(c) => c.build(),)+
                }
            }

            /// Whose targets the objective trains on.
            pub fn targets(&self) -> Targets {
                match self {
                    $(AuxConfig::$variant(c) => c.targets(),)+
                }
            }

            /// Whose targets the objective trains on, to change them; `None` for objectives
            /// without a shuffled-target control.
            pub fn targets_mut(&mut self) -> Option<&mut Targets> {
                match self {
                    $(AuxConfig::$variant(c) => c.targets_mut(),)+
                }
            }

            /// The objective's weight schedule λ(t).
            pub fn schedule(&self) -> &Schedule {
                match self {
                    $(AuxConfig::$variant(c) => c.schedule(),)+
                }
            }

            /// The objective's weight schedule λ(t), to change it.
            pub fn schedule_mut(&mut self) -> &mut Schedule {
                match self {
                    $(AuxConfig::$variant(c) => c.schedule_mut(),)+
                }
            }
        }
    };
}

objectives! {
    state_prediction::{StatePrediction, StatePredictionConfig, state_prediction_prompt}: StatePrediction(StatePredictionConfig),
    inverse_dynamics::{InverseDynamics, InverseDynamicsConfig, inverse_dynamics_prompt}: InverseDynamics(InverseDynamicsConfig),
    in_sequence::{InSequenceConfig, InSequenceStatePrediction}: StatePredictionInSequence(InSequenceConfig),
}
