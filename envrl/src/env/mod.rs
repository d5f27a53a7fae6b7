//! The [`Environment`] trait: text environments an agent acts in.

mod base;
pub use base::*;
