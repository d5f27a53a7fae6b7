use burn::optim::{AdamWConfig, GradientsParams};
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
        let mut optimizer = AdamWConfig::new()
            .with_weight_decay(0.01)
            .with_epsilon(1e-8)
            .init();
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
            let loss = token_mean_cross_entropy(&policy.score(&rows, false));
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
