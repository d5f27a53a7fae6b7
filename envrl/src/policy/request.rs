use serde::{Deserialize, Serialize};

/// How responses are sampled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SamplingParams {
    /// Softmax temperature; 0 means greedy. Default 1.0 (ENVRL.md §3.8).
    pub temperature: f32,
    /// Nucleus probability mass; 1.0 disables top-p. Default 1.0.
    pub top_p: f32,
    /// Sample among the `top_k` most likely tokens only (before top-p, as Hugging Face
    /// does); 0 disables top-k. Default 0.
    #[serde(default)]
    pub top_k: usize,
    /// The most tokens generated per response.
    pub max_new_tokens: usize,
}

impl Default for SamplingParams {
    fn default() -> Self {
        Self {
            temperature: 1.0,
            top_p: 1.0,
            top_k: 0,
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
