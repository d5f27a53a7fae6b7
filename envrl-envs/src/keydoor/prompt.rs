use envrl::{HistoryEntry, Observation, PromptBuilder};

/// The key-and-door prompt: task, observation and admissible actions, with no history
/// (everything the agent needs is in the observation).
///
/// `task : {task} . {observation} actions : {a1} | {a2} | … . action :`
#[derive(Debug, Clone, Copy, Default)]
pub struct KeyDoorPrompt;

impl PromptBuilder for KeyDoorPrompt {
    fn build(&self, observation: &Observation, _history: &[HistoryEntry], _t: usize) -> String {
        format!(
            "task : {} . {} actions : {} . action :",
            observation.task,
            observation.text,
            observation.admissible.join(" | ")
        )
    }
}
