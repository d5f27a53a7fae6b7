//! Advantage estimators ([`envrl::Advantage`] implementations), one file each, registered in
//! the `estimators!` list below: adding an estimator is one file with an [`EstimatorConfig`]
//! implementation and one line there.

use envrl::Advantage;
use serde::{Deserialize, Serialize};

use crate::algorithms::loss::CriticConfig;

mod gae;
mod scores;
pub use gae::{Gae, GaeConfig, gae_row, whiten};
pub use scores::{group_mean_std, row_scores};

/// What [`AdvantageConfig`] needs of a built-in estimator's settings.
pub trait EstimatorConfig: Clone + Default + PartialEq + std::fmt::Debug {
    /// The name in configs (`name = "…"`), on the command line (`--algo`) and in run labels.
    const NAME: &'static str;

    /// Builds the estimator.
    fn build(&self) -> Box<dyn Advantage>;

    /// The settings of the critic the estimator needs; none by default.
    fn critic(&self) -> Option<&CriticConfig> {
        None
    }

    /// Checks the settings' numbers.
    ///
    /// # Errors
    /// [`envrl::Error::InvalidConfig`] naming the first field out of range.
    fn validate(&self) -> envrl::Result<()> {
        Ok(())
    }
}

macro_rules! estimators {
    ($($module:ident::{$($item:ident),+}: $variant:ident($config:ty),)+) => {
        $(mod $module; pub use $module::{$($item),+};)+

        /// An advantage estimator and its settings, selected by `name`.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "name", rename_all = "snake_case")]
        pub enum AdvantageConfig {
            $(
                #[doc = concat!("`", stringify!($module), "`: [`", stringify!($config), "`].")]
                $variant($config),
            )+
        }

        impl AdvantageConfig {
            /// Every built-in estimator's name, in the registry's order.
            pub const NAMES: &'static [&'static str] = &[$(<$config as EstimatorConfig>::NAME),+];

            /// Every built-in estimator with its default settings, in [`AdvantageConfig::NAMES`]
            /// order.
            pub fn all() -> Vec<AdvantageConfig> {
                vec![$(AdvantageConfig::$variant(<$config>::default())),+]
            }

            /// The estimator's name (one of [`AdvantageConfig::NAMES`]).
            pub fn name(&self) -> &'static str {
                match self {
                    $(AdvantageConfig::$variant(_) => <$config as EstimatorConfig>::NAME,)+
                }
            }

            /// Builds the estimator.
            pub fn build(&self) -> Box<dyn Advantage> {
                match self {
                    $(AdvantageConfig::$variant(c) => c.build(),)+
                }
            }

            /// The settings of the critic the estimator needs (PPO's); `None` otherwise.
            pub fn critic(&self) -> Option<&CriticConfig> {
                match self {
                    $(AdvantageConfig::$variant(c) => c.critic(),)+
                }
            }

            /// Checks the estimator's numbers.
            ///
            /// # Errors
            /// [`envrl::Error::InvalidConfig`] naming the first field out of range.
            pub fn validate(&self) -> envrl::Result<()> {
                match self {
                    $(AdvantageConfig::$variant(c) => c.validate(),)+
                }
            }
        }
    };
}

estimators! {
    grpo::{Grpo, GrpoConfig, GrpoStats}: Grpo(GrpoConfig),
    ppo::{PpoConfig}: Ppo(PpoConfig),
    rloo::{Rloo, RlooConfig}: Rloo(RlooConfig),
    gigpo::{Gigpo, GigpoConfig, GigpoNorm}: Gigpo(GigpoConfig),
}

impl Default for AdvantageConfig {
    fn default() -> Self {
        AdvantageConfig::Grpo(GrpoConfig::default())
    }
}

impl AdvantageConfig {
    /// The estimator with default settings for a name of [`AdvantageConfig::NAMES`].
    pub fn from_name(name: &str) -> Option<Self> {
        Self::all().into_iter().find(|c| c.name() == name)
    }
}
