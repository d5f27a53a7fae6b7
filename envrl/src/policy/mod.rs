//! The [`Policy`] trait and the [`Tokenizer`] seam it is used with.

mod base;
mod tokenizer;
pub use base::*;
pub use tokenizer::*;
