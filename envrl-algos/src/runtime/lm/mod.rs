//! The causal-LM policy: a decoder-only transformer of the Qwen2 family, its KV cache,
//! sampling and batched generation.

mod acting;
mod config;
pub(crate) mod generate;
pub(crate) mod gguf;
mod hf;
pub(crate) mod init;
pub(crate) mod kernels;
mod kv_cache;
mod lora;
mod mask;
mod memory;
mod peft;
mod policy;
mod qwen2;
mod rope;
mod sampling;
pub use config::LmConfig;
pub use gguf::gguf_config;
pub use hf::read_hf_config;
pub use kv_cache::KvCache;
pub use lora::HfParam;

pub use qwen2::{Attention, CausalLm, DecoderLayer, Mlp, Qwen2Model, RmsNorm, TokenBatch};
pub use sampling::{sample_rows, sample_token};
