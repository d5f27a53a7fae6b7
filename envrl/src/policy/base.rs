use burn::module::Module;
use burn::tensor::Tensor;
use rand_chacha::ChaCha8Rng;

use crate::error::{Error, Result};
use crate::policy::{Generation, RolloutWeights, SamplingParams, ScoreRow};

/// Per-token scores of a batch of [`ScoreRow`]s, padded to the longest target.
#[derive(Debug, Clone)]
pub struct TokenScores {
    /// `log π(target_k | context, target_<k)`, `[rows, max_target]`; differentiable when the
    /// policy lives on an autodiff device.
    pub logprobs: Tensor<2>,
    /// Full-vocabulary entropy of each target position, `[rows, max_target]`, when asked for.
    pub entropy: Option<Tensor<2>>,
    /// 1 for real target tokens, 0 for padding, `[rows, max_target]`.
    pub mask: Tensor<2>,
}

/// A policy over token sequences: it samples responses and scores given ones.
///
/// The policy is a Burn [`Module`], so the trainer can optimise it and checkpoint it. The same
/// type serves rollouts (on a device without autodiff, after [`Module::valid`]) and training.
pub trait Policy: Module + 'static {
    /// Samples one response for each prompt, in one batched call. Row `i` draws its random
    /// numbers from `rngs[i]` alone, so its tokens do not depend on which other rows share the
    /// batch ([`crate::rollout::row_streams`] makes the streams).
    ///
    /// # Panics
    /// May panic if `rngs` and `prompts` differ in length (a caller bug).
    fn generate(
        &self,
        prompts: &[Vec<u32>],
        stop_ids: &[u32],
        params: &SamplingParams,
        rngs: &mut [ChaCha8Rng],
    ) -> Vec<Generation>;

    /// Scores the target tokens of each row given its context.
    fn score(&self, rows: &[ScoreRow], with_entropy: bool) -> TokenScores;

    /// The prompt tokens that [`Policy::generate`] does not compute for these prompts because
    /// it shares another row's work (the causal LM prefills a prompt repeated in the batch — a
    /// group's copies of one task — once). Reported as `rollout/prefill_tokens_saved`.
    /// Defaults to 0.
    fn prefill_tokens_saved(&self, prompts: &[Vec<u32>]) -> usize {
        let _ = prompts;
        0
    }

    /// The copy of this policy that plays rollouts, off the autodiff graph, with its weights
    /// stored as `weights` says (see [`RolloutWeights`]). The default gives [`Module::valid`]
    /// for [`RolloutWeights::F32`] and refuses the lighter formats.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] (field `rollout_weights`) when the policy cannot store its
    /// weights that way.
    fn acting_copy(&self, weights: RolloutWeights) -> Result<Self>
    where
        Self: Sized,
    {
        match weights {
            RolloutWeights::F32 => Ok(self.valid()),
            other => Err(Error::config(
                "rollout_weights",
                format!("this policy has no `{other}` acting copy; use `f32`"),
            )),
        }
    }
}
