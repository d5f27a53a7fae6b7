//! Tokenizers for [`envrl::Tokenizer`].

mod word;
pub use word::*;
