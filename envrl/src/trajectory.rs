//! Trajectories: what the acting side hands to the learning side.

use serde::{Deserialize, Serialize};

/// One agent step: the unit of training data (ENVRL.md §1.7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// 0-based index of the step within its trajectory.
    pub t: usize,
    /// The tokenised prompt (chat-wrapped where the tokenizer has a template).
    pub prompt_ids: Vec<u32>,
    /// The generated tokens, including the stop token if one was produced.
    pub response_ids: Vec<u32>,
    /// Log-probabilities of `response_ids` under the policy that sampled them.
    pub old_logprobs: Vec<f32>,
    /// The raw observation text before the action (the GiGPO anchor).
    pub observation: String,
    /// The admissible actions before the action.
    pub admissible: Vec<String>,
    /// The raw observation text returned by the action.
    pub next_observation: String,
    /// The decoded response text.
    pub response: String,
    /// The action sent to the environment (the projection of `response`).
    pub action: String,
    /// Environment reward of this step.
    pub reward: f32,
    /// Format validity of the response (ENVRL.md §1.3).
    pub valid: bool,
    /// The environment reported `done` on this step.
    pub done: bool,
    /// The environment reported `won` on this step.
    pub won: bool,
}

/// One episode of one environment copy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trajectory {
    /// The group of rollouts that share the same task (GRPO's comparison set).
    pub group_id: usize,
    /// The index of this trajectory in the batch.
    pub traj_id: usize,
    /// The task the environment was reset to.
    pub task_id: u64,
    /// The task instruction.
    pub task: String,
    /// The active steps, in order.
    pub steps: Vec<Step>,
    /// The version of the policy that sampled it: the trainer's iteration whose policy played
    /// it (published to the rollout server at that iteration, when there is one); 0 outside a
    /// trainer.
    #[serde(default)]
    pub policy_version: usize,
}

impl Trajectory {
    /// The episode return `R(τ) = Σ_t r_t` over active steps.
    pub fn episode_return(&self) -> f32 {
        self.steps.iter().map(|s| s.reward).sum()
    }

    /// Whether the task was accomplished (`won` at the last active step).
    pub fn won(&self) -> bool {
        self.steps.last().is_some_and(|s| s.won)
    }
}

/// The trajectories of one rollout, grouped contiguously by `group_id`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RolloutBatch {
    /// All trajectories; those of one group are adjacent.
    pub trajectories: Vec<Trajectory>,
}

/// A reference to one step row of a [`RolloutBatch`] in row order.
#[derive(Debug, Clone, Copy)]
pub struct RowRef<'a> {
    /// The trajectory the row belongs to.
    pub trajectory: &'a Trajectory,
    /// The step.
    pub step: &'a Step,
}

impl RolloutBatch {
    /// Iterates over all step rows: trajectory by trajectory, step by step.
    pub fn rows(&self) -> impl Iterator<Item = RowRef<'_>> {
        self.trajectories.iter().flat_map(|trajectory| {
            trajectory
                .steps
                .iter()
                .map(move |step| RowRef { trajectory, step })
        })
    }

    /// The number of step rows.
    pub fn num_rows(&self) -> usize {
        self.trajectories.iter().map(|t| t.steps.len()).sum()
    }

    /// The fraction of trajectories that were won.
    pub fn success_rate(&self) -> f64 {
        if self.trajectories.is_empty() {
            return 0.0;
        }
        let won = self.trajectories.iter().filter(|t| t.won()).count();
        won as f64 / self.trajectories.len() as f64
    }

    /// The mean episode return.
    pub fn mean_return(&self) -> f64 {
        if self.trajectories.is_empty() {
            return 0.0;
        }
        let sum: f64 = self
            .trajectories
            .iter()
            .map(|t| t.episode_return() as f64)
            .sum();
        sum / self.trajectories.len() as f64
    }

    /// The fraction of step rows whose response was format-invalid.
    pub fn invalid_rate(&self) -> f64 {
        let rows = self.num_rows();
        if rows == 0 {
            return 0.0;
        }
        rows_where(self, |s| !s.valid) as f64 / rows as f64
    }

    /// The mean number of steps per trajectory.
    pub fn mean_length(&self) -> f64 {
        if self.trajectories.is_empty() {
            return 0.0;
        }
        self.num_rows() as f64 / self.trajectories.len() as f64
    }
}

fn rows_where(batch: &RolloutBatch, predicate: impl Fn(&Step) -> bool) -> usize {
    batch.rows().filter(|r| predicate(r.step)).count()
}
