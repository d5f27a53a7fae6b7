//! Acting: prompts, action parsing, expert demonstrations and the batched, lock-step rollout
//! engine.

mod action_parser;
mod demonstration;
#[cfg(feature = "burn")]
mod engine;
mod prompt;
pub use action_parser::*;
pub use demonstration::*;
#[cfg(feature = "burn")]
pub use engine::*;
pub use prompt::*;
