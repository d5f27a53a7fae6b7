use burn::tensor::Tensor;

use crate::policy::TokenScores;

/// What a policy loss sees for one micro-batch of step rows.
#[derive(Debug, Clone)]
pub struct PolicyLossInput<'a> {
    /// The current policy's scores of the response tokens (differentiable).
    pub scores: &'a TokenScores,
    /// Log-probs of the response tokens under the rollout policy, `[rows, max_target]`.
    pub old_logprobs: Tensor<2>,
    /// Log-probs under the frozen reference policy, when [`PolicyLoss::needs_reference`].
    pub ref_logprobs: Option<Tensor<2>>,
    /// One advantage per row, `[rows, 1]` (broadcast over tokens).
    pub advantages: Tensor<2>,
}

/// A loss value and its logged components.
#[derive(Debug, Clone)]
pub struct PolicyLossOutput {
    /// The scalar to minimise, `[1]`.
    pub loss: Tensor<1>,
    /// Named, detached components such as `loss/policy` or `policy/clip_frac`, each `[1]`.
    pub stats: Vec<(&'static str, Tensor<1>)>,
}

/// The RL loss of the actor (for example the clipped surrogate with KL and entropy terms).
pub trait PolicyLoss: Send {
    /// Whether reference log-probs must be computed (a KL term).
    fn needs_reference(&self) -> bool;

    /// Whether token entropies must be computed (an entropy term or metric).
    fn needs_entropy(&self) -> bool;

    /// The loss of one micro-batch.
    fn loss(&self, input: PolicyLossInput<'_>) -> PolicyLossOutput;
}
