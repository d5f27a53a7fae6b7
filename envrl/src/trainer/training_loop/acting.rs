//! The trainer's acting side: the rollouts of training and evaluation, and the copy of the policy
//! that plays them.
//!
//! In a data-parallel run the groups are dealt to the ranks (a group is never split), each rank
//! plays its own, and the ranks gather the trajectories in group order, so every rank holds the
//! whole batch. Each trajectory samples from its own stream, keyed by its index in the batch,
//! so the episodes do not depend on the number of ranks.

use rand::Rng;

use super::rollout_job::{Acting, PlayedJob, RolloutJob};
use super::{EVAL_SEED_OFFSET, EvalReport, Trainer};
use crate::distributed::{GradientSync, gather, share_of};
use crate::error::Result;
use crate::policy::{Policy, SamplingParams};
use crate::rollout::{RolloutSlot, RolloutStats, grouped_slots};
use crate::trajectory::RolloutBatch;

impl<P: Policy> Trainer<P> {
    /// Plays `episodes` evaluation episodes (one per task, cycling over the eval tasks) with
    /// the evaluation sampling settings and fixed random streams, so every evaluation sees the
    /// same noise. In a data-parallel run the episodes are dealt to the ranks and gathered.
    ///
    /// # Errors
    /// [`crate::Error::Distributed`] when the exchange with the other ranks fails (never in one
    /// process).
    pub fn evaluate(&mut self, episodes: usize) -> Result<EvalReport> {
        let tasks: Vec<u64> = self
            .parts
            .world
            .eval_tasks
            .iter()
            .copied()
            .cycle()
            .take(episodes)
            .collect();
        let key = self.config.seed.wrapping_add(EVAL_SEED_OFFSET);
        let sampling = self.config.eval_sampling.clone();
        let (batch, _) = self.rollout(&tasks, 1, &sampling, key)?;
        Ok(EvalReport {
            success_rate: batch.success_rate(),
            mean_return: batch.mean_return(),
            batch,
        })
    }

    /// Plays `group_size` copies of each of `tasks`, trajectory `j` sampling from stream `j`
    /// of `key`: this rank's share of the groups, then gathered from every rank. A policy
    /// server samples them when there is one, holding this iteration's policy.
    pub(super) fn rollout(
        &mut self,
        tasks: &[u64],
        group_size: usize,
        sampling: &SamplingParams,
        key: u64,
    ) -> Result<(RolloutBatch, RolloutStats)> {
        let job = self.rollout_job(tasks, group_size, sampling, key)?;
        self.finish_rollout(job.play())
    }

    /// This iteration's training rollout as a job: its tasks and key drawn from the run's
    /// streams, played by this iteration's policy.
    pub(super) fn training_rollout_job(&mut self) -> Result<RolloutJob<P>> {
        let tasks = self.sample_tasks();
        let sampling = self.config.sampling.clone();
        // One draw of the rollout stream keys this iteration's per-trajectory streams.
        let key: u64 = self.streams.rollout.random();
        self.rollout_job(&tasks, self.config.group_size, &sampling, key)
    }

    /// A job that plays this rank's share of the groups of `tasks` with this iteration's
    /// policy (published to the server first, when there is one), holding the trainer's
    /// environments and server until [`Trainer::finish_rollout`] gives them back.
    fn rollout_job(
        &mut self,
        tasks: &[u64],
        group_size: usize,
        sampling: &SamplingParams,
        key: u64,
    ) -> Result<RolloutJob<P>> {
        let (rank, size) = (self.sync.rank(), self.sync.size());
        let groups = share_of(&(0..tasks.len()), rank, size);
        let slots: Vec<RolloutSlot> = grouped_slots(tasks, group_size)
            .into_iter()
            .filter(|slot| groups.contains(&slot.group_id))
            .collect();
        while self.envs.len() < slots.len() {
            self.envs.push(self.parts.world.new_env());
        }
        if let Some(server) = self.server.as_mut()
            && self.served != Some(self.iteration)
        {
            let start = std::time::Instant::now();
            server.publish(&self.policy, self.iteration)?;
            self.publish_secs += start.elapsed().as_secs_f64();
            self.served = Some(self.iteration);
        }
        let acting = match self.server.take() {
            Some(server) => Acting::Server(server),
            None => Acting::Local(self.acting_copy()),
        };
        Ok(RolloutJob {
            tokenizer: self.parts.tokenizer.clone(),
            prompt: self.parts.world.prompt.clone(),
            parser: self.parts.world.parser.clone(),
            sampling: sampling.clone(),
            max_rows: self.config.max_generation_rows,
            max_steps: self.config.max_steps,
            slots,
            key,
            version: self.iteration,
            envs: std::mem::take(&mut self.envs),
            acting,
        })
    }

    /// Takes back what a job held and gathers its rollout from every rank.
    pub(super) fn finish_rollout(
        &mut self,
        played: PlayedJob<P>,
    ) -> Result<(RolloutBatch, RolloutStats)> {
        self.envs = played.envs;
        if played.server.is_some() {
            self.server = played.server;
        }
        gather_rollouts(self.sync.as_ref(), played.result?)
    }

    /// The copy of the policy that plays rollouts, in the config's `rollout_weights`.
    fn acting_copy(&self) -> P {
        // `new` made one already, so this cannot be refused; should a policy still refuse,
        // the rollout plays its own weights rather than stop the run.
        self.policy
            .acting_copy(self.config.rollout_weights)
            .unwrap_or_else(|e| {
                log::error!("{e}; this rollout plays the policy's own weights");
                self.policy.valid()
            })
    }

    /// Distinct training tasks for this iteration's groups, from the task stream.
    pub(super) fn sample_tasks(&mut self) -> Vec<u64> {
        let picks = rand::seq::index::sample(
            &mut self.streams.tasks,
            self.parts.world.train_tasks.len(),
            self.config.groups,
        );
        picks
            .iter()
            .map(|i| self.parts.world.train_tasks[i])
            .collect()
    }
}

/// Every rank's trajectories and rollout statistics, in rank order (which is group order, as
/// [`share_of`] deals contiguous groups): steps and tokens summed, policy calls the most any
/// rank made (the turns of the longest episode, as in one process).
fn gather_rollouts(
    sync: &dyn GradientSync,
    (batch, stats): (RolloutBatch, RolloutStats),
) -> Result<(RolloutBatch, RolloutStats)> {
    if sync.size() == 1 {
        return Ok((batch, stats));
    }
    let (parts, _) = gather(sync, "rollout", &(batch.trajectories, stats))?;
    let mut all = RolloutBatch::default();
    let mut total = RolloutStats::default();
    for (trajectories, part) in parts {
        all.trajectories.extend(trajectories);
        total.merge(&part);
    }
    Ok((all, total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distributed::SingleProcess;
    use crate::trajectory::{Step, Trajectory};

    #[test]
    fn a_rollout_crosses_between_ranks_bit_for_bit() {
        let step = Step {
            t: 0,
            prompt_ids: vec![1, 2],
            response_ids: vec![3],
            old_logprobs: vec![f32::NEG_INFINITY, -0.1, f32::from_bits(0x3f80_0001)],
            observation: "o".into(),
            admissible: vec!["a".into()],
            next_observation: "p".into(),
            response: "r".into(),
            action: "a".into(),
            reward: f32::NAN,
            valid: true,
            done: true,
            won: false,
        };
        let trajectories = vec![Trajectory {
            group_id: 1,
            traj_id: 4,
            task_id: 9,
            task: "t".into(),
            steps: vec![step],
            policy_version: 3,
        }];
        let stats = RolloutStats {
            env_steps: 1,
            generated_tokens: 1,
            policy_calls: 1,
            prefill_tokens_saved: 0,
        };
        let (mut parts, _) =
            gather(&SingleProcess, "rollout", &(trajectories.clone(), stats)).unwrap();
        let (back, back_stats): (Vec<Trajectory>, RolloutStats) = parts.remove(0);
        let bits = |t: &[Trajectory]| -> Vec<u32> {
            let s = &t[0].steps[0];
            s.old_logprobs
                .iter()
                .chain([&s.reward])
                .map(|x| x.to_bits())
                .collect()
        };
        assert_eq!(bits(&back), bits(&trajectories));
        assert_eq!(back_stats, stats);
        assert_eq!(back[0].traj_id, 4);
        assert_eq!(back[0].policy_version, 3);
    }
}
