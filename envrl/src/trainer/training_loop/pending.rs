//! A rollout played ahead — during the previous iteration's update (`trainer.max_staleness = 1`)
//! — and how stale its trajectories are when the learner trains on them.

use serde::{Deserialize, Serialize};

use crate::rollout::RolloutStats;
use crate::trajectory::RolloutBatch;

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
