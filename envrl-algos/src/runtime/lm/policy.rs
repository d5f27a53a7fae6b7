//! [`envrl::Policy`] for [`CausalLm`]: batched sampling and differentiable scoring.

use burn::tensor::{Int, Tensor, TensorData};
use envrl::{Generation, Policy, RolloutWeights, SamplingParams, ScoreRow, TokenScores};
use rand_chacha::ChaCha8Rng;

use crate::runtime::lm::CausalLm;
use crate::runtime::lm::kernels::token_logprobs;
use crate::runtime::lm::qwen2::TokenBatch;

/// The pad id used for generation; its positions are masked, so any id works.
const PAD: u32 = 0;

impl Policy for CausalLm {
    fn generate(
        &self,
        prompts: &[Vec<u32>],
        stop_ids: &[u32],
        params: &SamplingParams,
        rngs: &mut [ChaCha8Rng],
    ) -> Vec<Generation> {
        self.generate_batch(prompts, stop_ids, PAD, params, rngs)
    }

    fn acting_copy(&self, weights: RolloutWeights) -> envrl::Result<Self> {
        CausalLm::acting_copy(self, weights)
    }

    fn prefill_tokens_saved(&self, prompts: &[Vec<u32>]) -> usize {
        crate::runtime::lm::generate::SharedPrompts::of(prompts).tokens_saved(prompts)
    }

    /// # Panics
    /// Panics if a row has an empty context: the first target token needs a position before it.
    fn score(&self, rows: &[ScoreRow], with_entropy: bool) -> TokenScores {
        let targeted = self.target_hidden(rows);
        let [n, width, _] = targeted.hidden.dims();
        let device = self.device();
        let logits = self.logits(targeted.hidden);
        let vocab = logits.dims()[2];
        let targets =
            Tensor::<1, Int>::from_data(TensorData::new(targeted.targets, [n * width]), &device);
        let (logprobs, entropy) = token_logprobs(logits.reshape([n * width, vocab]), targets);
        let logprobs = logprobs.reshape([n, width]);
        let entropy = with_entropy.then(|| entropy.reshape([n, width]));
        TokenScores {
            logprobs,
            entropy,
            mask: targeted.mask,
        }
    }
}

/// Hidden states at the positions that predict each target token.
pub(crate) struct TargetHidden {
    /// `[rows, max_target, d_model]`.
    pub hidden: Tensor<3>,
    /// The target ids, row-major `[rows, max_target]`, 0 at padding.
    pub targets: Vec<i64>,
    /// 1 for real target tokens, 0 for padding, `[rows, max_target]`.
    pub mask: Tensor<2>,
}

impl CausalLm {
    /// The final hidden state at each position that predicts a target token (the position
    /// before it), for right-padded rows of context + target.
    ///
    /// # Panics
    /// Panics if a row has an empty context: the first target token needs a position before it.
    pub(crate) fn target_hidden(&self, rows: &[ScoreRow]) -> TargetHidden {
        let device = self.device();
        let n = rows.len();
        let len = rows
            .iter()
            .map(|r| r.context.len() + r.target.len())
            .max()
            .unwrap_or(1)
            .max(1);
        let width = rows
            .iter()
            .map(|r| r.target.len())
            .max()
            .unwrap_or(0)
            .max(1);
        let mut ids = vec![PAD; n * len];
        let mut key_valid = Vec::with_capacity(n);
        let mut gather = vec![0i64; n * width];
        let mut targets = vec![0i64; n * width];
        let mut mask = vec![0.0f32; n * width];
        for (i, row) in rows.iter().enumerate() {
            assert!(
                !row.context.is_empty(),
                "a scored row needs a non-empty context"
            );
            let c = row.context.len();
            let seq = row.context.iter().chain(&row.target);
            for (j, &id) in seq.enumerate() {
                ids[i * len + j] = id;
            }
            key_valid.push(
                (0..len)
                    .map(|j| j < c + row.target.len())
                    .collect::<Vec<bool>>(),
            );
            for (k, &id) in row.target.iter().enumerate() {
                gather[i * width + k] = (c + k - 1) as i64;
                targets[i * width + k] = id as i64;
                mask[i * width + k] = 1.0;
            }
        }
        let positions: Vec<usize> = (0..n).flat_map(|_| 0..len).collect();
        let batch = TokenBatch {
            ids: &ids,
            batch: n,
            seq: len,
            positions: &positions,
            key_valid: &key_valid,
        };
        let hidden = self.forward_hidden(&batch, None);
        let d_model = hidden.dims()[2];
        // Keep only the positions that predict a target token before the output layer.
        let index = Tensor::<3, Int>::from_data(TensorData::new(gather, [n, width, 1]), &device)
            .expand([n, width, d_model]);
        TargetHidden {
            hidden: hidden.gather(1, index),
            targets,
            mask: Tensor::<2>::from_data(TensorData::new(mask, [n, width]), &device),
        }
    }
}
