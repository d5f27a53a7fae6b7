//! Acting: prompts, action parsing, expert demonstrations and the batched, lock-step rollout
//! engine.

mod action_parser;
mod demonstration;
#[cfg(feature = "burn")]
mod engine;
mod prompt;
mod sampler;
mod verbatim;
pub use action_parser::{ActionParser, ParsedAction};
pub use demonstration::{Demonstration, record_demonstration};
#[cfg(feature = "burn")]
pub use engine::{RolloutEngine, RolloutSlot, RolloutStats, grouped_slots, row_streams};
pub use prompt::{HistoryEntry, PromptBuilder};
#[cfg(feature = "burn")]
pub use sampler::PolicyServer;
pub use sampler::{RowChunks, Sampler};
pub use verbatim::{PlainPrompt, VerbatimParser};
