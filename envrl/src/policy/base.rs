use burn::module::Module;
use burn::tensor::Tensor;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// How responses are sampled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SamplingParams {
    /// Softmax temperature; 0 means greedy. Default 1.0 (ENVRL.md §3.8).
    pub temperature: f32,
    /// Nucleus probability mass; 1.0 disables top-p. Default 1.0.
    pub top_p: f32,
    /// The most tokens generated per response.
    pub max_new_tokens: usize,
}

impl Default for SamplingParams {
    fn default() -> Self {
        Self {
            temperature: 1.0,
            top_p: 1.0,
            max_new_tokens: 512,
        }
    }
}

/// One generated response.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// The sampled tokens, including the stop token when one was sampled.
    pub tokens: Vec<u32>,
    /// The log-probability of each sampled token under the sampling distribution.
    pub logprobs: Vec<f32>,
    /// Whether a stop token ended the response (false: `max_new_tokens` was reached).
    pub stopped: bool,
}

/// A sequence to score: a context followed by the target tokens whose log-probs are wanted.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ScoreRow {
    /// The conditioning tokens (prompt).
    pub context: Vec<u32>,
    /// The scored tokens (response or auxiliary target).
    pub target: Vec<u32>,
}

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
    /// Samples one response for each prompt, in one batched call.
    fn generate(
        &self,
        prompts: &[Vec<u32>],
        stop_ids: &[u32],
        params: &SamplingParams,
        rng: &mut ChaCha8Rng,
    ) -> Vec<Generation>;

    /// Scores the target tokens of each row given its context.
    fn score(&self, rows: &[ScoreRow], with_entropy: bool) -> TokenScores;
}
