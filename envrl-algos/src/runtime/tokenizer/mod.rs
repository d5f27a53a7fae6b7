//! Tokenizers for [`envrl::Tokenizer`]: a word tokenizer for from-scratch models and Hugging Face
//! tokenizers with chat templates for pretrained ones.

pub(crate) mod gguf;
mod hf;
mod word;
pub use hf::HfTokenizer;
pub(crate) use word::SPECIALS;
pub use word::{EOS_TOKEN, PAD_TOKEN, UNK_TOKEN, WordTokenizer};
