//! Expert demonstrations of ALFWorld in the verl-agent prompt format: each game's walkthrough
//! (the planner's, for generated games) replayed through the engine, for an SFT warm start.

use std::sync::Arc;

use envrl::{Demonstration, Observation, Tokenizer, record_demonstration};

use crate::alfworld::{AlfWorld, AlfworldPrompt, Game, MAX_STEPS};

/// The expert's response for `action`: a one-sentence rationale in `<think>` tags and the action
/// in `<action>` tags, the format the ALFWorld projection accepts as valid.
pub fn expert_response(observation: &Observation, action: &str) -> String {
    format!(
        "<think>My task is to {} The next step is to {action}.</think><action>{action}</action>",
        observation.task
    )
}

/// Plays the walkthrough of the game of each task (task `i` is game `i mod games`, as in
/// [`AlfWorld`]) and records it with `prompt` and `tokenizer`.
pub fn walkthrough_demonstrations(
    games: &Arc<Vec<Arc<Game>>>,
    tasks: impl IntoIterator<Item = u64>,
    prompt: &AlfworldPrompt,
    tokenizer: &dyn Tokenizer,
) -> Vec<Demonstration> {
    let mut env = AlfWorld::new(games.clone());
    tasks
        .into_iter()
        .filter(|_| !games.is_empty())
        .map(|task| {
            let game = &games[(task % games.len() as u64) as usize];
            let mut expert = |_: &Observation, t: usize| game.walkthrough.get(t).cloned();
            record_demonstration(
                &mut env,
                task,
                MAX_STEPS as usize,
                prompt,
                tokenizer,
                &mut expert,
                &expert_response,
            )
        })
        .collect()
}
