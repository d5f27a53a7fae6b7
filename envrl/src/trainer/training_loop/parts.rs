//! What a [`Trainer`](super::Trainer) is built from, and what an evaluation returns.

use std::sync::Arc;

use crate::advantage::Advantage;
use crate::auxiliary::AuxObjective;
use crate::critic::Critic;
use crate::env::World;
use crate::error::{Error, Result};
use crate::policy::Tokenizer;
use crate::policy::{Policy, RolloutWeights};
use crate::trainer::{PolicyLoss, TrainerConfig};
use crate::trajectory::RolloutBatch;

/// The parts a [`Trainer`](super::Trainer) composes, all behind the crate's traits.
pub struct TrainerParts {
    /// The world: its environments, prompt, parser, tasks and facts.
    pub world: World,
    /// The policy's tokenizer.
    pub tokenizer: Arc<dyn Tokenizer>,
    /// The advantage estimator (GRPO, …).
    pub advantage: Box<dyn Advantage>,
    /// The actor loss (clipped surrogate, KL, entropy).
    pub loss: Box<dyn PolicyLoss>,
    /// The value function, for estimators that [need one](Advantage::needs_values) (PPO).
    pub critic: Option<Box<dyn Critic>>,
    /// Auxiliary objectives (state prediction, inverse dynamics, yours).
    pub aux: Vec<Box<dyn AuxObjective>>,
}

impl TrainerParts {
    /// Checks that these parts, `config` and `policy` make a trainer: a valid config with
    /// enough training tasks, evaluation tasks when evaluation is on, a critic for an estimator
    /// that needs one, and a policy on an autodiff device that can make its acting copy.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming what is missing.
    pub(crate) fn check<P: Policy>(&self, config: &TrainerConfig, policy: &P) -> Result<()> {
        config.validate()?;
        config.validate_against_tasks(self.world.train_tasks.len())?;
        if config.eval_every > 0 && self.world.eval_tasks.is_empty() {
            return Err(Error::config(
                "eval_every",
                "evaluation is on but there are no eval tasks",
            ));
        }
        if self.advantage.needs_values() && self.critic.is_none() {
            return Err(Error::config(
                "critic",
                format!(
                    "the `{}` estimator needs a critic (TrainerParts::critic)",
                    self.advantage.name()
                ),
            ));
        }
        let device = policy
            .devices()
            .first()
            .cloned()
            .ok_or_else(|| Error::config("policy", "the policy has no parameters"))?;
        if !device.is_autodiff() {
            return Err(Error::config(
                "policy",
                "the policy must live on an autodiff device",
            ));
        }
        if let Some(warning) = group_size_warning(config.group_size, self.advantage.as_ref()) {
            log::warn!("{warning}");
        }
        if config.rollout_weights != RolloutWeights::F32 {
            // Refused here, not at the first rollout.
            policy.acting_copy(config.rollout_weights)?;
        }
        Ok(())
    }
}

/// The outcome of an evaluation.
#[derive(Debug, Clone)]
pub struct EvalReport {
    /// Fraction of episodes won.
    pub success_rate: f64,
    /// Mean episode return.
    pub mean_return: f64,
    /// The played episodes, for per-task breakdowns.
    pub batch: RolloutBatch,
}

/// The warning for groups of one under an estimator that compares a group's trajectories: legal,
/// and useless for the policy gradient.
pub(crate) fn group_size_warning(group_size: usize, advantage: &dyn Advantage) -> Option<String> {
    (group_size == 1 && advantage.group_relative()).then(|| {
        format!(
            "trainer.group_size = 1 with the group-relative estimator `{}`: every advantage is \
             0, so the policy gradient is zero and only auxiliary objectives train (use \
             group_size ≥ 2, or ppo)",
            advantage.name()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct GroupMean(bool);

    impl Advantage for GroupMean {
        fn name(&self) -> &str {
            "group_mean"
        }

        fn compute(&self, _batch: &RolloutBatch) -> Vec<f32> {
            Vec::new()
        }

        fn group_relative(&self) -> bool {
            self.0
        }
    }

    #[test]
    fn groups_of_one_under_a_group_relative_estimator_are_warned_about() {
        let warning = group_size_warning(1, &GroupMean(true)).expect("a warning");
        assert!(warning.contains("group_size = 1") && warning.contains("group_mean"));
        assert_eq!(group_size_warning(2, &GroupMean(true)), None);
        assert_eq!(group_size_warning(1, &GroupMean(false)), None);
    }
}
