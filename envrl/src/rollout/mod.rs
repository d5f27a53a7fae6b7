//! Acting: prompts, action parsing and the batched, lock-step rollout engine.

mod action_parser;
mod engine;
mod prompt;
pub use action_parser::*;
pub use engine::*;
pub use prompt::*;
