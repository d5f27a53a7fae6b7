//! Choosing the estimator, the actor loss and the auxiliary objectives by name in a config:
//! GRPO + state prediction + inverse dynamics is one line.
//!
//! ```
//! let config: envrl_algos::AlgorithmConfig = serde_json::from_str(
//!     r#"{"advantage": {"name": "grpo"}, "aux": [{"name": "state_prediction"}, {"name": "inverse_dynamics"}]}"#,
//! )?;
//! let parts = config.build();
//! assert_eq!(parts.advantage.name(), "grpo");
//! assert_eq!(parts.aux.len(), 2);
//! # Ok::<(), serde_json::Error>(())
//! ```

use envrl::{Advantage, AuxObjective, PolicyLoss, Schedule};
use serde::{Deserialize, Serialize};

pub use crate::algorithms::advantage::AdvantageConfig;
pub use crate::algorithms::auxiliary::AuxConfig;
use crate::algorithms::auxiliary::Targets;
use crate::algorithms::checks::check;
use crate::{ClippedPgConfig, ClippedPolicyGradient};

impl AuxConfig {
    /// The objective with default settings for a name of [`AuxConfig::NAMES`] (`-` is read
    /// as `_`, so `state-prediction` works too).
    pub fn from_name(name: &str) -> Option<Self> {
        let name = name.replace('-', "_");
        Self::all().into_iter().find(|c| c.name() == name)
    }

    /// The objective with its weight schedule, e.g. `state_prediction(cosine 0.2)` or
    /// `inverse_dynamics(placebo)`: two objectives with the same label are the same arm of an
    /// ablation.
    pub fn label(&self) -> String {
        let schedule = match *self.schedule() {
            Schedule::None => "placebo".to_string(),
            Schedule::Constant { start } => format!("constant {start}"),
            Schedule::Linear { start } => format!("linear {start}"),
            Schedule::Cosine { start } => format!("cosine {start}"),
        };
        let control = match self.targets().suffix() {
            Some(suffix) => format!(":{suffix}"),
            None => String::new(),
        };
        format!("{}{control}({schedule})", self.name())
    }

    /// The objective's shuffled-target control: the same loss, weight, prompts and budgets, with
    /// each example's target taken from another transition of the same iteration whose target
    /// differs from its own. `None` for objectives without one.
    pub fn shuffled(self) -> Option<Self> {
        self.with_targets(Targets::Shuffled)
    }

    /// The objective trained on `targets` ([`Targets`]); `None` for objectives without a
    /// control.
    pub fn with_targets(mut self, targets: Targets) -> Option<Self> {
        *self.targets_mut()? = targets;
        Some(self)
    }

    /// Sets λ0, keeping the schedule's shape; λ0 = 0 makes the objective a placebo
    /// ([`Schedule::None`]: examples built and measured, no gradient).
    pub fn with_lambda0(mut self, lambda0: f64) -> Self {
        let schedule = self.schedule_mut();
        *schedule = match (*schedule, lambda0) {
            (_, 0.0) => Schedule::None,
            (Schedule::Constant { .. }, start) => Schedule::Constant { start },
            (Schedule::Linear { .. }, start) => Schedule::Linear { start },
            (Schedule::Cosine { .. } | Schedule::None, start) => Schedule::Cosine { start },
        };
        self
    }
}

/// The learning algorithm of a run: estimator, actor loss and auxiliary objectives.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AlgorithmConfig {
    /// The advantage estimator. Default GRPO.
    pub advantage: AdvantageConfig,
    /// The clipped actor loss.
    pub loss: ClippedPgConfig,
    /// Auxiliary objectives. Default none (plain RL).
    pub aux: Vec<AuxConfig>,
}

/// The built parts of an [`AlgorithmConfig`], ready for [`envrl::TrainerParts`].
pub struct AlgorithmParts {
    /// The estimator.
    pub advantage: Box<dyn Advantage>,
    /// The actor loss.
    pub loss: Box<dyn PolicyLoss>,
    /// The auxiliary objectives.
    pub aux: Vec<Box<dyn AuxObjective>>,
}

impl AlgorithmConfig {
    /// Whether any auxiliary objective trains (a weight schedule other than a placebo's).
    pub fn trains_an_objective(&self) -> bool {
        self.aux
            .iter()
            .any(|aux| !matches!(aux.schedule(), Schedule::None))
    }

    /// Checks every number: the actor loss (`0 < clip_low ≤ 1`, `clip_high > 0`, `dual_clip >
    /// 1`, `kl_coef ≥ 0`, `entropy_coef ≥ 0`) and the estimator (penalties ≥ 0, discounts in
    /// `[0, 1]`, `epsilon > 0`), all finite.
    ///
    /// # Errors
    /// [`envrl::Error::InvalidConfig`] naming the first field out of range.
    pub fn validate(&self) -> envrl::Result<()> {
        let l = &self.loss;
        let nonneg = |v: f64| v >= 0.0;
        check(
            "algorithm.loss.clip_low",
            l.clip_low as f64,
            |v| v > 0.0 && v <= 1.0,
            "in (0, 1]",
        )?;
        check(
            "algorithm.loss.clip_high",
            l.clip_high as f64,
            |v| v > 0.0,
            "> 0",
        )?;
        check(
            "algorithm.loss.dual_clip",
            l.dual_clip as f64,
            |v| v > 1.0,
            "> 1",
        )?;
        check("algorithm.loss.kl_coef", l.kl_coef as f64, nonneg, "≥ 0")?;
        check(
            "algorithm.loss.entropy_coef",
            l.entropy_coef as f64,
            nonneg,
            "≥ 0",
        )?;
        // Two objectives of one name would share a random stream and their metrics.
        let mut names: Vec<String> = self
            .aux
            .iter()
            .map(|a| a.build().name().to_string())
            .collect();
        names.sort();
        if let Some(pair) = names.windows(2).find(|p| p[0] == p[1]) {
            return Err(envrl::Error::config(
                "algorithm.aux",
                format!(
                    "two objectives named `{}`: give each objective once (a control is \
                     `NAME:shuffled`, a measured-only objective `NAME=0`)",
                    pair[0]
                ),
            ));
        }
        self.advantage.validate()
    }

    /// The whole algorithm in a line: the estimator and each objective with its schedule, e.g.
    /// `grpo + state_prediction(cosine 0.2)`; `envrl compare` groups runs by it.
    pub fn label(&self) -> String {
        std::iter::once(self.advantage.name())
            .map(str::to_string)
            .chain(self.aux.iter().map(AuxConfig::label))
            .collect::<Vec<_>>()
            .join(" + ")
    }

    /// Builds every part.
    pub fn build(&self) -> AlgorithmParts {
        AlgorithmParts {
            advantage: self.advantage.build(),
            loss: Box::new(ClippedPolicyGradient::new(self.loss.clone())),
            aux: self.aux.iter().map(AuxConfig::build).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_select_estimators_and_objectives() {
        for &name in AdvantageConfig::NAMES {
            // PPO is GAE with a critic: the estimator is named for what it computes.
            let estimator = if name == "ppo" { "gae" } else { name };
            assert_eq!(
                AdvantageConfig::from_name(name).unwrap().build().name(),
                estimator
            );
        }
        assert!(AdvantageConfig::from_name("ppo2").is_none());
        // One string everywhere: the config's, the built objective's (metrics) and the label's.
        for (config, &name) in AuxConfig::all().iter().zip(AuxConfig::NAMES) {
            assert_eq!(config.name(), name);
            assert_eq!(config.build().name(), name);
            let json = serde_json::to_value(config).unwrap();
            assert_eq!(json["name"], name);
            assert_eq!(AuxConfig::from_name(name).as_ref(), Some(config));
            assert_eq!(
                AuxConfig::from_name(&name.replace('_', "-")).as_ref(),
                Some(config)
            );
        }
        assert!(AuxConfig::from_name("state-predictions").is_none());
        for &name in AdvantageConfig::NAMES {
            assert_eq!(AdvantageConfig::from_name(name).unwrap().name(), name);
        }
        let config = AlgorithmConfig {
            aux: vec![AuxConfig::from_name("state-prediction").unwrap()],
            ..Default::default()
        };
        assert_eq!(config.label(), "grpo + state_prediction(cosine 0.2)");
        let placebo = AlgorithmConfig {
            aux: vec![
                AuxConfig::from_name("inverse-dynamics")
                    .unwrap()
                    .with_lambda0(0.0),
            ],
            ..Default::default()
        };
        assert_eq!(placebo.label(), "grpo + inverse_dynamics(placebo)");
    }

    #[test]
    fn the_group_relative_estimators_say_so() {
        for &name in AdvantageConfig::NAMES {
            let relative = AdvantageConfig::from_name(name)
                .unwrap()
                .build()
                .group_relative();
            assert_eq!(relative, name != "ppo", "{name}");
        }
    }

    #[test]
    fn settings_inside_a_named_entry_are_read_and_unknown_ones_rejected() {
        let config: AlgorithmConfig = serde_json::from_str(
            r#"{"advantage": {"name": "gigpo", "omega": 0.5}, "aux": [{"name": "state_prediction", "schedule": {"kind": "constant", "start": 0.1}}]}"#,
        )
        .unwrap();
        let AdvantageConfig::Gigpo(g) = &config.advantage else {
            panic!("{config:?}")
        };
        assert_eq!(g.omega, 0.5);
        assert_eq!(config.aux[0].build().schedule().value(9, 10), 0.1);
        let err = serde_json::from_str::<AlgorithmConfig>(
            r#"{"advantage": {"name": "grpo", "omgea": 1}}"#,
        )
        .unwrap_err();
        assert!(err.to_string().contains("omgea"), "{err}");
    }
}
