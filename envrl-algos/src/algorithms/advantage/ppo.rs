//! PPO: the [`Gae`] estimator with a critic ([`CriticConfig`]; the LM runtime builds it from the
//! policy, [`crate::LmCritic`]).

use envrl::Advantage;
use serde::{Deserialize, Serialize};

use super::{EstimatorConfig, Gae, GaeConfig};
use crate::algorithms::checks::check;
use crate::algorithms::loss::CriticConfig;

/// PPO's settings: the GAE estimator and the critic.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PpoConfig {
    /// γ, λ and the invalid-action penalty.
    pub gae: GaeConfig,
    /// The critic's optimizer and value clip.
    pub critic: CriticConfig,
}

impl EstimatorConfig for PpoConfig {
    const NAME: &'static str = "ppo";

    fn build(&self) -> Box<dyn Advantage> {
        Box::new(Gae {
            config: self.gae.clone(),
        })
    }

    fn critic(&self) -> Option<&CriticConfig> {
        Some(&self.critic)
    }

    fn validate(&self) -> envrl::Result<()> {
        let g = &self.gae;
        let unit = |v: f64| (0.0..=1.0).contains(&v);
        check(
            "algorithm.advantage.gae.invalid_penalty",
            g.invalid_penalty as f64,
            |v| v >= 0.0,
            "≥ 0",
        )?;
        check("algorithm.advantage.gae.gamma", g.gamma as f64, unit, "in [0, 1]")?;
        check("algorithm.advantage.gae.lambda", g.lambda as f64, unit, "in [0, 1]")
    }
}
