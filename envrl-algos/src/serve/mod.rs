//! Rollouts sampled by inference servers: llama.cpp's server, vLLM and SGLang serve the
//! policy, envrl plays the environments and trains.
//!
//! [`ServerPool`] is a [`envrl::Sampler`]: each turn's prompts go to the servers as token ids
//! (many requests in flight, spread over the servers), and the sampled token ids with the
//! engine's log-probabilities come back, so the learner trains on exactly the sampled tokens.
//! Each engine is spoken in its own API: llama.cpp `/completion`, vLLM `/v1/completions`,
//! SGLang `/generate`; [`detect_engine`] finds which one answers. An engine is one file that
//! implements [`EngineApi`] and one line in [`ENGINES`].
//!
//! Every response is checked before it is used (JSON that parses, ids inside the vocabulary, as
//! many log-probabilities as tokens, no more tokens than asked for); a request that fails is
//! retried with backoff on the next server, and then fails the turn with an error naming the
//! server and the request.
//!
//! The served policy follows the learner: [`SpawnedLlamaCpp`] restarts llama.cpp on each
//! published version's GGUF; [`LiveServers`] loads each version into running vLLM or SGLang
//! servers — a LoRA version as an adapter under a new name, a full fine-tune's weights reloaded
//! in place; [`SpawnedVllm`] starts vLLM for it.

mod api;
mod child;
mod engine;
mod live;
mod llama_cpp;
mod pool;
mod sglang;
mod spawned;
mod spawned_vllm;
#[cfg(test)]
mod tests;
mod vllm;

pub use api::{
    EngineApi, MIN_SAMPLED_LOGPROB, SampleRequest, ServedTokens, finish, redact_credentials,
};
pub use engine::{ENGINES, Engine};
pub use live::{LiveServers, PolicyFiles, version_name};
pub use llama_cpp::LlamaCpp;
pub use pool::{DEFAULT_REQUEST_TIMEOUT, PoolConfig, ServerPool, detect_engine};
pub use sglang::Sglang;
pub use spawned::{SpawnConfig, SpawnedLlamaCpp};
pub use spawned_vllm::{SpawnedVllm, VllmSpawnConfig, vllm_max_lora_rank};
pub use vllm::Vllm;
