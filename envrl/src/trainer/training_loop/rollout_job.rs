//! One rollout as a value that owns what it plays with — the environments, the sampler, the
//! world's prompt and parser — so that it can play inline (the synchronous default) or on
//! another thread while the learner trains (`trainer.max_staleness = 1`).

use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::env::Environment;
use crate::error::Result;
use crate::policy::{Policy, SamplingParams, Tokenizer};
use crate::rollout::{
    ActionParser, PolicyServer, PromptBuilder, RolloutEngine, RolloutSlot, RolloutStats, RowChunks,
};
use crate::trajectory::RolloutBatch;

/// An inference server a trainer can hand to the thread that plays ahead.
pub(super) type BoxedServer<P> = Box<dyn PolicyServer<P> + Send>;

/// What samples a rollout job's responses.
pub(super) enum Acting<P: Policy> {
    /// The trainer's inference server, holding the job's policy version.
    Server(BoxedServer<P>),
    /// A copy of the policy in this process.
    Local(P),
}

/// Everything one rollout needs, owned.
pub(super) struct RolloutJob<P: Policy> {
    pub(super) tokenizer: Arc<dyn Tokenizer>,
    pub(super) prompt: Arc<dyn PromptBuilder>,
    pub(super) parser: Arc<dyn ActionParser>,
    pub(super) sampling: SamplingParams,
    /// The most responses sampled in one call (0: all of a turn's).
    pub(super) max_rows: usize,
    pub(super) max_steps: usize,
    pub(super) slots: Vec<RolloutSlot>,
    /// Keys the per-trajectory random streams.
    pub(super) key: u64,
    /// The policy version that plays (stamped on every trajectory).
    pub(super) version: usize,
    /// At least one environment per slot.
    pub(super) envs: Vec<Box<dyn Environment>>,
    pub(super) acting: Acting<P>,
}

/// A finished job: its rollout (this rank's share) and what it borrowed, to be given back.
pub(super) struct PlayedJob<P: Policy> {
    pub(super) result: Result<(RolloutBatch, RolloutStats)>,
    pub(super) seconds: f64,
    pub(super) envs: Vec<Box<dyn Environment>>,
    /// The server, when the job sampled on one.
    pub(super) server: Option<BoxedServer<P>>,
}

impl<P: Policy> RolloutJob<P> {
    /// Plays every slot to the end and stamps each trajectory with the job's version.
    pub(super) fn play(mut self) -> PlayedJob<P> {
        let start = Instant::now();
        let engine = RolloutEngine {
            tokenizer: self.tokenizer.as_ref(),
            prompt: self.prompt.as_ref(),
            parser: self.parser.as_ref(),
            sampling: &self.sampling,
            max_steps: self.max_steps,
        };
        let envs = &mut self.envs[..self.slots.len()];
        let result = match &self.acting {
            Acting::Server(server) => {
                let sampler = RowChunks::new(server.as_ref(), self.max_rows);
                engine.run(&sampler, envs, &self.slots, self.key)
            }
            Acting::Local(policy) => {
                let sampler = RowChunks::new(policy, self.max_rows);
                engine.run(&sampler, envs, &self.slots, self.key)
            }
        };
        let result = result.map(|(mut batch, stats)| {
            for trajectory in &mut batch.trajectories {
                trajectory.policy_version = self.version;
            }
            (batch, stats)
        });
        PlayedJob {
            result,
            seconds: start.elapsed().as_secs_f64(),
            envs: self.envs,
            server: match self.acting {
                Acting::Server(server) => Some(server),
                Acting::Local(_) => None,
            },
        }
    }
}

/// The next iteration's rollout, played ahead while the learner trained (every rank's, gathered),
/// and the seconds it took. A checkpoint keeps it, so a resumed run trains on the same one.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PendingRollout {
    pub(crate) batch: RolloutBatch,
    pub(crate) stats: RolloutStats,
    pub(crate) seconds: f64,
}

/// How many updates lie between the versions that played a rollout's trajectories and the
/// learner that trains on it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Staleness {
    pub(super) mean: f64,
    pub(super) max: usize,
}

/// How stale each trajectory's policy is when trained at `iteration`.
pub(super) fn staleness(batch: &RolloutBatch, iteration: usize) -> Staleness {
    let lags: Vec<usize> = batch
        .trajectories
        .iter()
        .map(|t| iteration.saturating_sub(t.policy_version))
        .collect();
    let max = lags.iter().copied().max().unwrap_or(0);
    let mean = lags.iter().sum::<usize>() as f64 / lags.len().max(1) as f64;
    Staleness { mean, max }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trajectory::Trajectory;

    fn played_by(versions: &[usize]) -> RolloutBatch {
        RolloutBatch {
            trajectories: versions
                .iter()
                .map(|&v| Trajectory {
                    group_id: 0,
                    traj_id: 0,
                    task_id: 0,
                    task: String::new(),
                    steps: Vec::new(),
                    policy_version: v,
                })
                .collect(),
        }
    }

    #[test]
    fn staleness_counts_the_updates_since_the_playing_version() {
        let stale = |mean, max| Staleness { mean, max };
        assert_eq!(staleness(&played_by(&[4, 4, 3, 4]), 5), stale(1.25, 2));
        assert_eq!(staleness(&played_by(&[5, 5]), 5), stale(0.0, 0));
        assert_eq!(staleness(&played_by(&[]), 5), stale(0.0, 0));
    }
}
