use burn::optim::{AdamWConfig, GradientsParams};
use burn::tensor::{Tensor, TensorData};
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use crate::auxiliary::token_mean_cross_entropy;
use crate::policy::{Policy, ScoreRow};
use crate::trainer::clip_global_grad_norm;

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
    /// context, with token-mean cross-entropy, shuffling with `rng` into batches of rows of
    /// similar length (less padding). Returns the trained policy and the loss of each step.
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
        let mut optimizer = AdamWConfig::new()
            .with_weight_decay(0.01)
            .with_epsilon(1e-8)
            .init();
        let mut losses = Vec::with_capacity(self.steps);
        if examples.is_empty() {
            return (policy, losses);
        }
        let mut batches = LengthGroupedBatches::new(examples, self.batch_size);
        for step in 0..self.steps {
            let rows: Vec<ScoreRow> = batches
                .next(rng)
                .into_iter()
                .map(|i| examples[i].clone())
                .collect();
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

/// How many batches' worth of shuffled rows are sorted by length together.
const LENGTH_GROUP: usize = 32;

/// Batches of row indices in a seeded random order, grouped by length: every `LENGTH_GROUP`
/// batches' worth of shuffled rows (epochs reshuffled and continued as needed) is sorted by
/// length, cut into batches, and the batches are shuffled. Each row is seen once per epoch as
/// with plain shuffling, but a batch is padded to a similar length instead of to the longest
/// of random rows (as `group_by_length` in Hugging Face's trainer).
struct LengthGroupedBatches {
    lengths: Vec<usize>,
    batch_size: usize,
    order: Vec<usize>,
    cursor: usize,
    ready: Vec<Vec<usize>>,
}

impl LengthGroupedBatches {
    fn new(examples: &[ScoreRow], batch_size: usize) -> Self {
        let lengths: Vec<usize> = examples
            .iter()
            .map(|r| r.context.len() + r.target.len())
            .collect();
        Self {
            order: (0..lengths.len()).collect(),
            cursor: lengths.len(),
            lengths,
            batch_size: batch_size.max(1),
            ready: Vec::new(),
        }
    }

    fn next(&mut self, rng: &mut ChaCha8Rng) -> Vec<usize> {
        if self.ready.is_empty() {
            let mut group = Vec::with_capacity(self.batch_size * LENGTH_GROUP);
            while group.len() < self.batch_size * LENGTH_GROUP {
                if self.cursor == self.order.len() {
                    self.order.shuffle(rng);
                    self.cursor = 0;
                }
                group.push(self.order[self.cursor]);
                self.cursor += 1;
            }
            group.sort_by_key(|&i| self.lengths[i]);
            self.ready = group
                .chunks(self.batch_size)
                .map(<[usize]>::to_vec)
                .collect();
            self.ready.shuffle(rng);
        }
        self.ready.pop().unwrap_or_default()
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

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn length_grouped_batches_cover_each_row_once_per_epoch_with_little_padding() {
        let batch = 4;
        let n = batch * LENGTH_GROUP;
        // Lengths 1..=n in a scrambled order.
        let examples: Vec<ScoreRow> = (0..n)
            .map(|i| ScoreRow {
                context: vec![0; 1 + (i * 37) % n],
                target: Vec::new(),
            })
            .collect();
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut batches = LengthGroupedBatches::new(&examples, batch);
        let mut seen = vec![0; n];
        for _ in 0..LENGTH_GROUP {
            let rows = batches.next(&mut rng);
            assert_eq!(rows.len(), batch);
            let lens: Vec<usize> = rows.iter().map(|&i| examples[i].context.len()).collect();
            // Sorted neighbours: a batch spans `batch` consecutive lengths.
            assert_eq!(
                lens.iter().max().unwrap() - lens.iter().min().unwrap(),
                batch - 1
            );
            rows.iter().for_each(|&i| seen[i] += 1);
        }
        assert!(seen.iter().all(|&c| c == 1), "{seen:?}");
        // The same seed gives the same batches.
        let again =
            LengthGroupedBatches::new(&examples, batch).next(&mut ChaCha8Rng::seed_from_u64(3));
        assert_eq!(
            again,
            LengthGroupedBatches::new(&examples, batch).next(&mut ChaCha8Rng::seed_from_u64(3))
        );
    }
}
