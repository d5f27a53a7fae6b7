use burn::tensor::Tensor;
use rand_chacha::ChaCha8Rng;

use crate::policy::{ScoreRow, TokenScores, Tokenizer};
use crate::trainer::Schedule;
use crate::trajectory::RolloutBatch;

/// One supervised example: the loss applies to the target tokens of `row` only.
#[derive(Debug, Clone, PartialEq)]
pub struct AuxExample {
    /// Context (masked out of the loss) and target (trained) tokens.
    pub row: ScoreRow,
}

/// An auxiliary objective trained jointly with the RL objective, such as EnvRL's state
/// prediction or inverse dynamics.
///
/// The trainer asks it for examples once per iteration, spreads them over the iteration's
/// optimizer steps, scores them with the policy and adds `weight · loss` to the RL loss.
pub trait AuxObjective: Send {
    /// A short name, used as the metric `loss/aux/<name>`.
    fn name(&self) -> &str;

    /// The weight schedule λ(t).
    fn schedule(&self) -> &Schedule;

    /// Builds this iteration's examples from the rollout batch.
    fn examples(
        &self,
        batch: &RolloutBatch,
        tokenizer: &dyn Tokenizer,
        rng: &mut ChaCha8Rng,
    ) -> Vec<AuxExample>;

    /// The loss of scored examples. Defaults to the token-mean cross-entropy of the targets.
    fn loss(&self, scores: &TokenScores) -> Tensor<1> {
        token_mean_cross_entropy(scores)
    }
}

/// `Σ mask·(−log p) / (Σ mask + 1e-8)`: the token-mean cross-entropy of the targets.
pub fn token_mean_cross_entropy(scores: &TokenScores) -> Tensor<1> {
    let tokens = scores.mask.clone().sum();
    (scores.logprobs.clone().neg() * scores.mask.clone()).sum() / (tokens + 1e-8)
}
