//! How the trainer has its actor play: the training rollout of an iteration (its tasks and key
//! from the run's streams) and evaluations, each played with the policy as it is now and
//! gathered from every rank.

use rand::Rng;

use super::actor::{Rollout, gather_rollouts};
use super::{EVAL_SEED_OFFSET, EvalReport, Trainer};
use crate::error::Result;
use crate::policy::Policy;
use crate::rollout::RolloutStats;
use crate::trajectory::RolloutBatch;

impl<P: Policy> Trainer<P> {
    /// Plays `episodes` evaluation episodes (one per task, cycling over the eval tasks) with
    /// the evaluation sampling settings and fixed random streams, so every evaluation sees the
    /// same noise. In a data-parallel run the episodes are dealt to the ranks and gathered.
    ///
    /// # Errors
    /// [`crate::Error::Distributed`] when the exchange with the other ranks fails (never in one
    /// process), [`crate::Error::RolloutServer`] when the rollout server fails.
    pub fn evaluate(&mut self, episodes: usize) -> Result<EvalReport> {
        let tasks = self
            .world()
            .eval_tasks
            .iter()
            .copied()
            .cycle()
            .take(episodes);
        let rollout = Rollout {
            tasks: tasks.collect(),
            group_size: 1,
            sampling: self.config.eval_sampling.clone(),
            key: self.config.seed.wrapping_add(EVAL_SEED_OFFSET),
        };
        let (batch, _) = self.act(&rollout)?;
        Ok(EvalReport {
            success_rate: batch.success_rate(),
            mean_return: batch.mean_return(),
            batch,
        })
    }

    /// This iteration's training rollout: distinct training tasks for its groups from the
    /// task stream, and one draw of the rollout stream that keys its per-trajectory streams.
    pub(super) fn training_rollout(&mut self) -> Rollout {
        let train_tasks = &self.actor.world().train_tasks;
        let picks = rand::seq::index::sample(
            &mut self.streams.tasks,
            train_tasks.len(),
            self.config.groups,
        );
        let tasks = picks.iter().map(|i| train_tasks[i]).collect();
        Rollout {
            tasks,
            group_size: self.config.group_size,
            sampling: self.config.sampling.clone(),
            key: self.streams.rollout.random(),
        }
    }

    /// Plays `rollout` now with this iteration's policy: this rank's share of its groups, then
    /// gathered from every rank.
    pub(super) fn act(&mut self, rollout: &Rollout) -> Result<(RolloutBatch, RolloutStats)> {
        let version = self
            .actor
            .take_version(&self.learner.policy, self.iteration)?;
        let shard = (self.sync.rank(), self.sync.size());
        let played = self.actor.play(version, rollout, shard);
        gather_rollouts(self.sync.as_ref(), played.result?)
    }
}
