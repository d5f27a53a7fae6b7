//! The LM runtime: the Qwen2/Llama-family model and its kernels, Hugging Face and GGUF formats,
//! tokenizers, export, and the PPO critic built on the model. It may use the algorithms (the
//! critic's value loss), never serving.

pub(crate) mod critic;
pub mod export;
pub(crate) mod gguf;
pub(crate) mod lm;
pub(crate) mod pretrained;
pub(crate) mod tokenizer;
