//! The [`Policy`] trait, the data of policy calls, and the [`Tokenizer`] seam.

#[cfg(feature = "burn")]
mod base;
mod request;
mod tokenizer;
#[cfg(feature = "burn")]
pub use base::*;
pub use request::*;
pub use tokenizer::*;
