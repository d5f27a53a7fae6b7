//! # envrl-algos
//!
//! The algorithms of envrl: advantage estimators ([`Grpo`], [`Rloo`], [`Gigpo`], PPO's [`Gae`]
//! with its critic [`LmCritic`]), the clipped actor loss
//! ([`ClippedPolicyGradient`]), EnvRL's auxiliary objectives ([`StatePrediction`],
//! [`InverseDynamics`]), the causal-LM policy ([`CausalLm`], Qwen2 and Llama families,
//! with a KV cache and batched sampling) and tokenizers ([`WordTokenizer`]).
//!
//! # Three jobs, one way
//!
//! The crate holds three jobs in three top-level modules, each importing only those below it:
//!
//! - **serving** ([`serve`]): rollouts sampled by inference servers that follow the policy;
//! - **the LM runtime** (`runtime/`): the model and its kernels, Hugging Face and GGUF formats,
//!   tokenizers, [`export`], and the PPO critic built on the model ([`LmCritic`]);
//! - **the algorithms** (`algorithms/`): estimators, objectives, losses and [`AlgorithmConfig`],
//!   written against `envrl`'s traits alone.
//!
//! [`recipe`] assembles a trainer from all three. `scripts/import-cycles.py` checks the rule (and
//! that no file of a crate imports another that imports it back).
//!
//! # Example
//!
//! ```
//! use burn::tensor::Device;
//! use envrl::{Policy, SamplingParams, Tokenizer};
//! use envrl_algos::{LmConfig, WordTokenizer};
//!
//! let tokenizer = WordTokenizer::from_corpus(["go north", "go south"]);
//! let model = LmConfig::tiny(tokenizer.vocab_size()).init(&Device::flex(), 0)?;
//! let mut rngs = envrl::row_streams(0, [0]);
//! let params = SamplingParams { max_new_tokens: 4, ..Default::default() };
//! let out = model.generate(&[tokenizer.encode("go")], &[tokenizer.eos_id()], &params, &mut rngs);
//! assert!(out[0].tokens.len() <= 4);
//! # Ok::<(), envrl_algos::Error>(())
//! ```
#![deny(missing_docs)]

mod algorithms;
mod error;
pub mod recipe;
mod runtime;
pub mod serve;
#[cfg(test)]
mod test_support;

use algorithms::{advantage, algorithm, auxiliary, loss};
pub use runtime::export;
use runtime::{critic, gguf, lm, pretrained, tokenizer};

pub use advantage::{
    EstimatorConfig, Gae, GaeConfig, Gigpo, GigpoConfig, GigpoNorm, Grpo, GrpoConfig, GrpoStats,
    PpoConfig, Rloo, RlooConfig, gae_row, group_mean_std, row_scores, whiten,
};
pub use algorithm::{AdvantageConfig, AlgorithmConfig, AlgorithmParts, AuxConfig};
pub use auxiliary::{
    AuxSource, InSequenceConfig, InSequenceStatePrediction, InverseDynamics, InverseDynamicsConfig,
    ObjectiveConfig, StatePrediction, StatePredictionConfig, Targets, Transition, TransitionFilter,
    inverse_dynamics_prompt, retarget, state_prediction_prompt,
};
pub use critic::{LmCritic, ValueModel};
pub use error::{Error, Result};
pub use gguf::{GgufFile, GgufTensor, GgufValue, MetaValue, TensorInfo, write_gguf};
pub use lm::{
    Attention, CausalLm, DecoderLayer, HfParam, KvCache, LmConfig, Mlp, Qwen2Model, RmsNorm,
    TokenBatch, gguf_config, read_hf_config, sample_rows, sample_token,
};
pub use loss::{
    ClippedPgConfig, ClippedPolicyGradient, CriticConfig, clipped_value_loss, token_mean,
};
pub use pretrained::Pretrained;
pub use tokenizer::{EOS_TOKEN, HfTokenizer, PAD_TOKEN, UNK_TOKEN, WordTokenizer};
