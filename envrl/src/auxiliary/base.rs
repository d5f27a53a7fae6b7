use burn::tensor::Tensor;
use rand_chacha::ChaCha8Rng;

use crate::env::WorldInfo;
use crate::policy::{ScoreRow, TokenScores, Tokenizer};
use crate::schedule::Schedule;
use crate::trajectory::RolloutBatch;

/// One supervised example: the loss applies to the target tokens of `row` only.
#[derive(Debug, Clone, PartialEq)]
pub struct AuxExample {
    /// Context (masked out of the loss) and target (trained) tokens.
    pub row: ScoreRow,
    /// Whether the target is the one this example's own transition gives: true for an
    /// objective's examples, and what a control that trains on other transitions' targets must
    /// avoid (the trainer logs the share as `aux/real_target_share/<name>`).
    pub real_target: bool,
}

impl AuxExample {
    /// An example trained on its own target.
    pub fn own(row: ScoreRow) -> Self {
        Self {
            row,
            real_target: true,
        }
    }
}

/// An auxiliary objective trained jointly with the RL objective, such as EnvRL's state
/// prediction or inverse dynamics.
///
/// The trainer asks it for examples once per iteration (drawing from the objective's own random
/// stream), spreads them over the iteration's optimizer steps, scores them with the policy and
/// adds `λ(t) ·` the token mean of their [token losses](AuxObjective::token_losses) over each
/// optimizer step's examples to that step's loss.
pub trait AuxObjective: Send {
    /// A short name, used in the metrics (`loss/aux/<name>`) and as the key of its random
    /// stream.
    fn name(&self) -> &str;

    /// The weight schedule λ(t).
    fn schedule(&self) -> &Schedule;

    /// Builds this iteration's examples from the rollout batch of `world` (whose facts, such
    /// as its description and no-op observations, come with the data).
    fn examples(
        &self,
        batch: &RolloutBatch,
        world: &WorldInfo,
        tokenizer: &dyn Tokenizer,
        rng: &mut ChaCha8Rng,
    ) -> Vec<AuxExample>;

    /// The loss of every target token of scored examples, `[rows, max_target]` (padding is
    /// masked out by the trainer). Defaults to the cross-entropy `−log p(target)`. The trainer
    /// takes its token mean over all of an optimizer step's examples of this objective, however
    /// they are cut into micro-batches.
    fn token_losses(&self, scores: &TokenScores) -> Tensor<2> {
        scores.logprobs.clone().neg()
    }

    /// The fixed texts of this objective's prompts and targets (its template's wording): a
    /// tokenizer built from an environment's own texts, which cannot learn new words, must
    /// also be built from these, or the objective's prompts read as unknown tokens. `world` is
    /// the world the objective will learn in (its prompts may name it). Defaults to none.
    fn prompt_words(&self, world: &WorldInfo) -> Vec<String> {
        let _ = world;
        Vec::new()
    }
}

/// `Σ mask·(−log p) / (Σ mask + 1e-8)`: the token-mean cross-entropy of the targets.
pub fn token_mean_cross_entropy(scores: &TokenScores) -> Tensor<1> {
    let tokens = scores.mask.clone().sum();
    (scores.logprobs.clone().neg() * scores.mask.clone()).sum() / (tokens + 1e-8)
}
