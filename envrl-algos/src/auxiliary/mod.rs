//! EnvRL's auxiliary objectives ([`envrl::AuxObjective`] implementations), learned from the
//! agent's own rollouts: state prediction and inverse dynamics. One file each, registered in the
//! `objectives!` list below: adding a built-in objective is one file with an
//! [`ObjectiveConfig`] implementation and one line there.

use envrl::{AuxObjective, Schedule};
use serde::{Deserialize, Serialize};

mod transitions;
pub use transitions::*;

/// What [`AuxConfig`] needs of a built-in objective's settings.
pub trait ObjectiveConfig: Clone + Default + PartialEq + std::fmt::Debug {
    /// The name in configs (`name = "…"`), on the command line (`--aux`), in the metrics
    /// (`loss/aux/<name>`) and in run labels; the built objective's
    /// [`AuxObjective::name`] is the same.
    const NAME: &'static str;

    /// Builds the objective.
    fn build(&self) -> Box<dyn AuxObjective>;

    /// The weight schedule λ(t).
    fn schedule(&self) -> &Schedule;

    /// The weight schedule λ(t), to change it.
    fn schedule_mut(&mut self) -> &mut Schedule;

    /// Sets the examples' token budgets: the prompt (context) and the target.
    fn set_token_budgets(&mut self, prompt: usize, target: usize);

    /// Names the world in the objective's prompts ([`envrl::Environment::description`]); a
    /// no-op for objectives whose prompts do not name it.
    fn set_environment(&mut self, _description: &str) {}

    /// The transition filter, for objectives that have one (the world's no-op observations are
    /// added to it).
    fn transitions_mut(&mut self) -> Option<&mut TransitionFilter> {
        None
    }
}

macro_rules! objectives {
    ($($module:ident: $variant:ident($config:ty),)+) => {
        $(mod $module; pub use $module::*;)+

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

            /// Sets the examples' token budgets: the prompt (context) and the target. ENVRL.md
            /// §4 uses 1024 / 256 for ALFWorld (the defaults) and 2048 / 768 for WebShop
            /// ([`AuxConfig::WEBSHOP_BUDGETS`]).
            pub fn with_token_budgets(mut self, (prompt, target): (usize, usize)) -> Self {
                match &mut self {
                    $(AuxConfig::$variant(c) => c.set_token_budgets(prompt, target),)+
                }
                self
            }

            /// Names the world in the objective's prompts ([`envrl::Environment::description`]).
            pub fn with_environment(mut self, description: &str) -> Self {
                match &mut self {
                    $(AuxConfig::$variant(c) => c.set_environment(description),)+
                }
                self
            }

            /// Sets the objective up for a world: its description in the prompts, and its
            /// no-op observations ([`envrl::Environment::noop_observations`]) added to the
            /// configured ones.
            pub fn for_world<E: envrl::Environment + ?Sized>(self, world: &E) -> Self {
                let mut aux = self.with_environment(world.description());
                let transitions = match &mut aux {
                    $(AuxConfig::$variant(c) => c.transitions_mut(),)+
                };
                if let Some(filter) = transitions {
                    for noop in world.noop_observations() {
                        if !filter.noop_observations.contains(&noop) {
                            filter.noop_observations.push(noop);
                        }
                    }
                }
                aux
            }
        }
    };
}

objectives! {
    state_prediction: StatePrediction(StatePredictionConfig),
    inverse_dynamics: InverseDynamics(InverseDynamicsConfig),
    in_sequence: StatePredictionInSequence(InSequenceConfig),
}
