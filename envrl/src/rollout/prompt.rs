use crate::env::Observation;

/// One remembered step: the observation that preceded an action, and the action.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HistoryEntry {
    /// The raw observation before the action.
    pub observation: String,
    /// The projected action that was sent.
    pub action: String,
}

/// Builds the user message of one agent step from the task, the memory and the observation.
///
/// Every step is an independent single-turn prompt (ENVRL.md §1.2); chat wrapping is the
/// tokenizer's job.
pub trait PromptBuilder: Send + Sync {
    /// The prompt text for step `t` (0-based). `history` holds all previous steps of the
    /// episode, oldest first; the builder shows as many as it wants.
    fn build(&self, observation: &Observation, history: &[HistoryEntry], t: usize) -> String;
}
