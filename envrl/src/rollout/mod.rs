//! Acting: prompts, action parsing and the batched, lock-step rollout engine.

mod action_parser;
#[cfg(feature = "burn")]
mod engine;
mod prompt;
pub use action_parser::*;
#[cfg(feature = "burn")]
pub use engine::*;
pub use prompt::*;
