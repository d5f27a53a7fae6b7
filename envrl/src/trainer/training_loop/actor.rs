//! The actor: it owns what rollouts are played with — the world's environments and the
//! inference server, when there is one — and plays rollouts of the policy version it is given,
//! inline or on another thread while the learner steps (`trainer.max_staleness = 1`).
//!
//! In a data-parallel run the groups are dealt to the ranks (a group is never split), each rank
//! plays its own, and the ranks gather the trajectories in group order, so every rank holds the
//! whole batch. Each trajectory samples from its own stream, keyed by its index in the batch,
//! so the episodes do not depend on the number of ranks.

use std::sync::Arc;
use std::time::Instant;

use crate::distributed::{Collective, gather, share_of};
use crate::env::{Environment, World};
use crate::error::Result;
use crate::policy::{Policy, RolloutWeights, SamplingParams, Tokenizer};
use crate::rollout::{
    PolicyServer, RolloutEngine, RolloutSlot, RolloutStats, RowChunks, grouped_slots,
};
use crate::trainer::TrainerConfig;
use crate::trajectory::RolloutBatch;

/// An inference server the actor can play with on another thread.
pub(super) type BoxedServer<P> = Box<dyn PolicyServer<P> + Send>;

/// One rollout to play: `group_size` copies of each task, trajectory `j` sampling from stream
/// `j` of `key`.
pub(super) struct Rollout {
    pub(super) tasks: Vec<u64>,
    pub(super) group_size: usize,
    pub(super) sampling: SamplingParams,
    pub(super) key: u64,
}

/// The policy version a rollout plays: held by the server, or a copy in this process.
pub(super) struct Version<P> {
    /// The iteration it was taken at (stamped on every trajectory).
    number: usize,
    /// The copy that plays in this process (`None`: the server's copy plays).
    local: Option<P>,
}

/// A played rollout (this rank's share) and the seconds its playing took.
pub(super) struct Played {
    pub(super) result: Result<(RolloutBatch, RolloutStats)>,
    pub(super) seconds: f64,
}

/// Plays the policy in the world.
pub(super) struct Actor<P: Policy> {
    world: World,
    tokenizer: Arc<dyn Tokenizer>,
    /// One environment per rollout slot, made as needed and kept.
    envs: Vec<Box<dyn Environment>>,
    /// The inference server that samples, when not this process.
    server: Option<BoxedServer<P>>,
    /// The policy version the server holds (the iteration it was published at).
    served: Option<usize>,
    /// Seconds spent publishing policies to the server since they were last taken.
    publish_secs: f64,
    rollout_weights: RolloutWeights,
    /// The most responses sampled in one call (0: all of a turn's).
    max_rows: usize,
    max_steps: usize,
}

impl<P: Policy> Actor<P> {
    /// An actor in `world`, with the config's acting settings.
    pub(super) fn new(world: World, tokenizer: Arc<dyn Tokenizer>, config: &TrainerConfig) -> Self {
        Self {
            world,
            tokenizer,
            envs: Vec::new(),
            server: None,
            served: None,
            publish_secs: 0.0,
            rollout_weights: config.rollout_weights,
            max_rows: config.max_generation_rows,
            max_steps: config.max_steps,
        }
    }

    /// The world it plays in.
    pub(super) fn world(&self) -> &World {
        &self.world
    }

    /// Samples on `server` from now on; it holds no version yet.
    pub(super) fn use_server(&mut self, server: BoxedServer<P>) {
        self.server = Some(server);
        self.served = None;
    }

    /// Whether an inference server samples.
    pub(super) fn has_server(&self) -> bool {
        self.server.is_some()
    }

    /// The seconds spent publishing since the last call.
    pub(super) fn take_publish_seconds(&mut self) -> f64 {
        std::mem::take(&mut self.publish_secs)
    }

    /// `policy` as the version that plays, numbered `number`: published to the server (once per
    /// number), or copied in the config's `rollout_weights`.
    ///
    /// # Errors
    /// [`crate::Error::RolloutServer`] when the server refuses the policy.
    pub(super) fn take_version(&mut self, policy: &P, number: usize) -> Result<Version<P>> {
        let Some(server) = self.server.as_mut() else {
            let local = Some(acting_copy(policy, self.rollout_weights));
            return Ok(Version { number, local });
        };
        if self.served != Some(number) {
            let start = Instant::now();
            server.publish(policy, number)?;
            self.publish_secs += start.elapsed().as_secs_f64();
            self.served = Some(number);
        }
        Ok(Version {
            number,
            local: None,
        })
    }

    /// Plays this rank's share (`rank` of `size`) of the rollout's groups to the end with
    /// `version`, stamping its number on every trajectory.
    pub(super) fn play(
        &mut self,
        version: Version<P>,
        rollout: &Rollout,
        (rank, size): (usize, usize),
    ) -> Played {
        let start = Instant::now();
        let groups = share_of(&(0..rollout.tasks.len()), rank, size);
        let slots: Vec<RolloutSlot> = grouped_slots(&rollout.tasks, rollout.group_size)
            .into_iter()
            .filter(|slot| groups.contains(&slot.group_id))
            .collect();
        while self.envs.len() < slots.len() {
            self.envs.push(self.world.new_env());
        }
        let engine = RolloutEngine {
            tokenizer: self.tokenizer.as_ref(),
            prompt: self.world.prompt.as_ref(),
            parser: self.world.parser.as_ref(),
            sampling: &rollout.sampling,
            max_steps: self.max_steps,
        };
        let envs = &mut self.envs[..slots.len()];
        let result = match (&version.local, &self.server) {
            (Some(policy), _) => {
                let sampler = RowChunks::new(policy, self.max_rows);
                engine.run(&sampler, envs, &slots, rollout.key)
            }
            (None, Some(server)) => {
                let sampler = RowChunks::new(server.as_ref(), self.max_rows);
                engine.run(&sampler, envs, &slots, rollout.key)
            }
            (None, None) => Err(crate::Error::config(
                "rollout",
                "a version without a local copy needs a server to play it",
            )),
        };
        let number = version.number;
        let result = result.map(|(mut batch, stats)| {
            for trajectory in &mut batch.trajectories {
                trajectory.policy_version = number;
            }
            (batch, stats)
        });
        Played {
            result,
            seconds: start.elapsed().as_secs_f64(),
        }
    }

    /// Plays `rollout` with `version` on another thread while `work` runs on this one (the
    /// learner's update, when the next rollout may be one version stale); also returns the
    /// seconds `work`'s end waited for the rollout.
    pub(super) fn play_during<T>(
        &mut self,
        version: Version<P>,
        rollout: &Rollout,
        shard: (usize, usize),
        work: impl FnOnce() -> T,
    ) -> (T, Played, f64) {
        std::thread::scope(|scope| {
            let playing = scope.spawn(|| self.play(version, rollout, shard));
            let done = work();
            let waiting = Instant::now();
            let played = playing
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (done, played, waiting.elapsed().as_secs_f64())
        })
    }
}

/// The copy of the policy that plays rollouts, in `weights`. `Trainer::new` made one already, so
/// this cannot be refused; should a policy still refuse, the rollout plays its own weights
/// rather than stop the run.
fn acting_copy<P: Policy>(policy: &P, weights: RolloutWeights) -> P {
    policy.acting_copy(weights).unwrap_or_else(|e| {
        log::error!("{e}; this rollout plays the policy's own weights");
        policy.valid()
    })
}

/// Every rank's trajectories and rollout statistics, in rank order (which is group order, as
/// [`share_of`] deals contiguous groups): steps and tokens summed, policy calls the most any
/// rank made (the turns of the longest episode, as in one process).
pub(super) fn gather_rollouts(
    sync: &dyn Collective,
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
