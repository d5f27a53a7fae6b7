//! Expert demonstrations recorded in the policy's own prompt format, for behaviour cloning.

use crate::env::{Environment, Observation};
use crate::policy::{ScoreRow, Tokenizer};
use crate::rollout::{HistoryEntry, PromptBuilder};

/// An expert episode as training rows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Demonstration {
    /// One row per expert step: the prompt the policy would have seen, and the expert's
    /// response (followed by EOS) as the target.
    pub rows: Vec<ScoreRow>,
    /// Whether the episode was won.
    pub won: bool,
}

/// Records an expert playing `task`: resets `env`, and at each step asks `expert` for an
/// action (stopping when it has none or the episode ends), builds the prompt exactly as the
/// rollout engine would (same prompt builder, same history) and wraps the action in the
/// benchmark's response format with `respond`.
pub fn record_demonstration<E: Environment>(
    env: &mut E,
    task: u64,
    max_steps: usize,
    prompt: &dyn PromptBuilder,
    tokenizer: &dyn Tokenizer,
    expert: &mut dyn FnMut(&Observation, usize) -> Option<String>,
    respond: &dyn Fn(&Observation, &str) -> String,
) -> Demonstration {
    let mut observation = env.reset(task);
    let mut history: Vec<HistoryEntry> = Vec::new();
    let mut demo = Demonstration::default();
    for t in 0..max_steps {
        let Some(action) = expert(&observation, t) else {
            break;
        };
        demo.rows.push(ScoreRow {
            context: tokenizer.encode_prompt(&prompt.build(&observation, &history, t)),
            target: tokenizer.encode_response(&respond(&observation, &action)),
        });
        let outcome = env.step(&action);
        demo.won = outcome.won;
        history.push(HistoryEntry {
            observation: std::mem::take(&mut observation.text),
            action,
        });
        observation = outcome.observation;
        if outcome.done {
            break;
        }
    }
    demo
}
