use crate::trajectory::RolloutBatch;

/// Turns a batch of grouped trajectories into one advantage per step row.
///
/// The advantage of a row is broadcast to every response token of the row by the loss.
/// Implementations (GRPO, RLOO, GiGPO, …) live in `envrl-algos`.
pub trait Advantage: Send {
    /// A short name for metrics and configs, e.g. `grpo`.
    fn name(&self) -> &str;

    /// One advantage per step row, in [`RolloutBatch::rows`] order.
    fn compute(&self, batch: &RolloutBatch) -> Vec<f32>;
}
