//! The [`Critic`] trait: a learned value function for PPO-style estimators.

use std::path::Path;

use crate::error::Result;
use crate::policy::ScoreRow;

/// A learned value function with its own optimizer, trained by the [`crate::Trainer`] next to
/// the policy when the advantage estimator [needs values](crate::Advantage::needs_values).
///
/// Rows are the policy's step rows: the value of response token `k` is predicted from the
/// sequence up to the position before it (`context + target[..k]`).
pub trait Critic: Send {
    /// The value of every target token of every row (no gradient), `rows[i].target.len()` each.
    fn values(&self, rows: &[ScoreRow]) -> Vec<Vec<f32>>;

    /// One optimizer step on the clipped value loss of a mini-batch.
    ///
    /// `old_values` are [`Critic::values`] from before the update and `returns` the regression
    /// targets, both shaped like the rows' targets. Returns named statistics for the metrics
    /// (for example `loss/value`); a non-finite loss or gradient skips the step.
    fn update(
        &mut self,
        rows: &[ScoreRow],
        old_values: &[Vec<f32>],
        returns: &[Vec<f32>],
    ) -> Vec<(String, f64)>;

    /// Writes the critic's weights and optimizer state into checkpoint directory `dir`.
    ///
    /// # Errors
    /// [`crate::Error::Checkpoint`] or [`crate::Error::Io`] when a file cannot be written.
    fn save(&self, dir: &Path) -> Result<()>;

    /// Restores what [`Critic::save`] wrote into `dir`.
    ///
    /// # Errors
    /// [`crate::Error::Checkpoint`] when a file is missing, corrupt or does not fit.
    fn load(&mut self, dir: &Path) -> Result<()>;
}
