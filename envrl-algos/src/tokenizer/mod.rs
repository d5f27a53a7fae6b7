//! Tokenizers for [`envrl::Tokenizer`]: a word tokenizer for from-scratch models and Hugging Face
//! tokenizers with chat templates for pretrained ones.

pub(crate) mod gguf;
mod hf;
mod word;
pub use hf::*;
pub use word::*;
