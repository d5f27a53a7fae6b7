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

/// How the copy of the policy that plays rollouts stores its weights ([`Policy::acting_copy`]).
/// Learning always runs on the policy's own weights; a lighter acting copy reads fewer bytes per
/// decoded token, and the trainer then recomputes the clipped loss's old log-probabilities with
/// the learner's weights (`TrainerConfig::recompute_old_logprobs`).
///
/// [`Policy::acting_copy`]: crate::Policy::acting_copy
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RolloutWeights {
    /// The policy's own weights (the default).
    #[default]
    F32,
    /// The matrices rounded to bf16, products accumulated in f32.
    Bf16,
    /// The matrices in 8-bit blocks with one f32 scale per 32 weights (llama.cpp's `Q8_0`).
    Int8,
}

impl RolloutWeights {
    /// Every format, in the order of [`RolloutWeights::name`].
    pub const ALL: [RolloutWeights; 3] = [
        RolloutWeights::F32,
        RolloutWeights::Bf16,
        RolloutWeights::Int8,
    ];

    /// The format's name in configs: `f32`, `bf16` or `int8`.
    pub fn name(self) -> &'static str {
        match self {
            RolloutWeights::F32 => "f32",
            RolloutWeights::Bf16 => "bf16",
            RolloutWeights::Int8 => "int8",
        }
    }
}

impl std::fmt::Display for RolloutWeights {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for RolloutWeights {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|w| w.name() == s)
            .ok_or_else(|| format!("unknown rollout weights `{s}` (f32, bf16 or int8)"))
    }
}
