//! Shared test fixtures of the crate.

use envrl::{RolloutBatch, Step, Trajectory};

/// A batch from `(group, return, validity per step)` triples; the return is put on the last step.
pub(crate) fn batch(trajectories: &[(usize, f32, &[bool])]) -> RolloutBatch {
    let trajectories = trajectories
        .iter()
        .enumerate()
        .map(|(traj_id, &(group_id, ret, valid))| Trajectory {
            group_id,
            traj_id,
            task_id: group_id as u64,
            task: String::new(),
            steps: valid
                .iter()
                .enumerate()
                .map(|(t, &v)| Step {
                    t,
                    prompt_ids: vec![1],
                    response_ids: vec![1],
                    old_logprobs: vec![0.0],
                    observation: String::new(),
                    admissible: vec![],
                    next_observation: String::new(),
                    response: String::new(),
                    action: String::new(),
                    reward: if t + 1 == valid.len() { ret } else { 0.0 },
                    valid: v,
                    done: t + 1 == valid.len(),
                    won: ret > 0.0 && t + 1 == valid.len(),
                })
                .collect(),
            policy_version: 0,
        })
        .collect();
    RolloutBatch { trajectories }
}
