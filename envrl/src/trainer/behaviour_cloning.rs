use burn::optim::GradientsParams;
use burn::tensor::{Tensor, TensorData};
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use crate::auxiliary::token_mean_cross_entropy;
use crate::policy::{Policy, ScoreRow};
use crate::trainer::{FusedAdamW, clip_global_grad_norm};

/// Settings of supervised behaviour cloning (a warm start before RL).
#[derive(Debug, Clone, PartialEq)]
pub struct BehaviourCloning {
    /// Optimizer steps.
    pub steps: usize,
    /// Examples per step.
    pub batch_size: usize,
    /// AdamW learning rate.
    pub learning_rate: f64,
    /// Global gradient-norm clip.
    pub max_grad_norm: f64,
    /// Weight of next-token prediction on the prompts (0 trains on the responses only). The
    /// loss is the token mean over responses plus this times the token mean over prompts: the
    /// prompts are the environment's own text, so predicting them teaches a small model the
    /// copying (names, numbers) its actions need, at no extra cost per step.
    pub context_weight: f32,
}

impl BehaviourCloning {
    /// Trains `policy` (on an autodiff device) to produce each example's target given its
    /// context, with token-mean cross-entropy, shuffling with `rng`. Returns the trained policy
    /// and the loss of each step.
    pub fn train<P: Policy>(
        &self,
        policy: P,
        examples: &[ScoreRow],
        rng: &mut ChaCha8Rng,
    ) -> (P, Vec<f32>) {
        self.train_with_callback(policy, examples, rng, &mut |_, _| {})
    }

    /// [`BehaviourCloning::train`], calling `on_step(step, loss)` after each step (for a
    /// progress bar).
    pub fn train_with_callback<P: Policy>(
        &self,
        mut policy: P,
        examples: &[ScoreRow],
        rng: &mut ChaCha8Rng,
        on_step: &mut dyn FnMut(usize, f32),
    ) -> (P, Vec<f32>) {
        let mut optimizer = FusedAdamW::new(1e-8, 0.01).init();
        let mut order: Vec<usize> = (0..examples.len()).collect();
        let mut cursor = order.len();
        let mut losses = Vec::with_capacity(self.steps);
        if examples.is_empty() {
            return (policy, losses);
        }
        for step in 0..self.steps {
            let mut rows = Vec::with_capacity(self.batch_size);
            while rows.len() < self.batch_size {
                if cursor == order.len() {
                    order.shuffle(rng);
                    cursor = 0;
                }
                rows.push(examples[order[cursor]].clone());
                cursor += 1;
            }
            let loss = if self.context_weight > 0.0 {
                context_weighted_cross_entropy(&policy, &rows, self.context_weight)
            } else {
                token_mean_cross_entropy(&policy.score(&rows, false))
            };
            let value = loss.clone().into_scalar::<f32>();
            losses.push(value);
            on_step(step, value);
            let mut grads = GradientsParams::from_grads(loss.backward(), &policy);
            if clip_global_grad_norm(&policy, &mut grads, self.max_grad_norm).is_some() {
                policy = optimizer.step(self.learning_rate, policy, grads);
            }
        }
        (policy, losses)
    }
}

/// Token-mean cross-entropy over the responses plus `weight` times the token-mean
/// cross-entropy over the prompts (after each prompt's first token), in one scoring pass.
fn context_weighted_cross_entropy<P: Policy>(
    policy: &P,
    rows: &[ScoreRow],
    weight: f32,
) -> Tensor<1> {
    let whole: Vec<ScoreRow> = rows
        .iter()
        .map(|row| match row.context.split_first() {
            Some((first, rest)) => ScoreRow {
                context: vec![*first],
                target: rest.iter().chain(&row.target).copied().collect(),
            },
            None => row.clone(),
        })
        .collect();
    let scores = policy.score(&whole, false);
    let [n, width] = scores.logprobs.dims();
    let prompt_len = |row: &ScoreRow| row.context.len().saturating_sub(1);
    let prompt_tokens: usize = rows.iter().map(prompt_len).sum();
    let response_tokens: usize = rows.iter().map(|r| r.target.len()).sum();
    let mut weights = vec![0.0f32; n * width];
    for (i, row) in rows.iter().enumerate() {
        let p = prompt_len(row);
        for k in 0..p {
            weights[i * width + k] = weight / prompt_tokens.max(1) as f32;
        }
        for k in p..(p + row.target.len()).min(width) {
            weights[i * width + k] = 1.0 / response_tokens.max(1) as f32;
        }
    }
    let weights = Tensor::<2>::from_data(
        TensorData::new(weights, [n, width]),
        &scores.logprobs.device(),
    );
    (scores.logprobs.neg() * weights).sum()
}
