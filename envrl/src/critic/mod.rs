//! The [`Critic`] trait: a learned value function for PPO-style estimators.

use std::path::Path;

use crate::distributed::Collective;
use crate::error::Result;
use crate::policy::ScoreRow;

/// One optimizer step of a critic as one rank computes it: the rank's share of the step's rows
/// and the step's size over all ranks, which normalises the token-mean value loss so that the
/// shares' losses add up to the step's.
#[derive(Debug, Clone, Copy)]
pub struct ValueStep<'a> {
    /// This rank's rows of the step (all of them in one process; possibly none).
    pub rows: &'a [ScoreRow],
    /// [`Critic::values`] of those rows from before the update.
    pub old_values: &'a [Vec<f32>],
    /// The regression targets of those rows, shaped like their targets.
    pub returns: &'a [Vec<f32>],
    /// The target tokens of all of the step's rows, on every rank.
    pub step_tokens: usize,
}

/// What a critic step reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ValueUpdate {
    /// Named statistics of the whole step (for example `loss/value`), the same on every rank.
    pub stats: Vec<(String, f64)>,
    /// Bytes this rank sent to the others (0 in one process).
    pub exchanged_bytes: usize,
    /// Seconds spent in those exchanges.
    pub exchange_seconds: f64,
}

/// A learned value function with its own optimizer, trained by the [`crate::Trainer`] next to
/// the policy when the advantage estimator [needs values](crate::Advantage::needs_values).
///
/// Rows are the policy's step rows: the value of response token `k` is predicted from the
/// sequence up to the position before it (`context + target[..k]`).
pub trait Critic: Send {
    /// The value of every target token of every row (no gradient), `rows[i].target.len()` each.
    fn values(&self, rows: &[ScoreRow]) -> Vec<Vec<f32>>;

    /// One optimizer step on the clipped value loss of a mini-batch, computed together by the
    /// ranks of `sync` (each with its share of the rows, [`crate::distributed`]): the loss is
    /// each token's term over `step.step_tokens`, the ranks' gradients are summed
    /// ([`crate::distributed::sum_gradients`]) and every rank clips and steps identically. A
    /// non-finite loss or gradient skips the step on every rank.
    ///
    /// # Errors
    /// [`crate::Error::Distributed`] when the exchange with the other ranks fails.
    fn update(&mut self, step: ValueStep<'_>, sync: &dyn Collective) -> Result<ValueUpdate>;

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
