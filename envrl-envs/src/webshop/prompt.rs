//! verl-agent's WebShop prompt, observation formatting and projection, byte for byte
//! (WEBSHOP.md §8.3–8.5): the templates keep their trailing spaces and U+2011 in "e‑commerce".

use envrl::{ActionParser, HistoryEntry, Observation, ParsedAction, PromptBuilder};

use crate::history::recent_history;
use crate::projection::think_action_projection;
use crate::webshop::engine::AvailableActions;

/// The first-step template.
pub const WEBSHOP_TEMPLATE_NO_HIS: &str = "\nYou are an expert autonomous agent operating in the WebShop e\u{2011}commerce environment. \nYour task is to: {task_description}.\nYour current observation is: {current_observation}.\nYour admissible actions of the current situation are: \n[\n{available_actions}\n].\n\nNow it's your turn to take one action for the current step.\nYou should first reason step-by-step about the current situation, then think carefully which admissible action best advances the shopping goal. This reasoning process MUST be enclosed within <think> </think> tags. \nOnce you've finished your reasoning, you should choose an admissible action for current step and present it within <action> </action> tags.\n";

/// The template of later steps.
pub const WEBSHOP_TEMPLATE: &str = "\nYou are an expert autonomous agent operating in the WebShop e\u{2011}commerce environment.\nYour task is to: {task_description}.\nPrior to this step, you have already taken {step_count} step(s). Below are the most recent {history_length} observations and the corresponding actions you took: {action_history}\nYou are now at step {current_step} and your current observation is: {current_observation}.\nYour admissible actions of the current situation are: \n[\n{available_actions}\n].\n\nNow it's your turn to take one action for the current step.\nYou should first reason step-by-step about the current situation, then think carefully which admissible action best advances the shopping goal. This reasoning process MUST be enclosed within <think> </think> tags. \nOnce you've finished your reasoning, you should choose an admissible action for current step and present it within <action> </action> tags.\n";

/// History prompts longer than this many characters fall back to the first-step template.
pub const MAX_HISTORY_PROMPT_CHARS: usize = 13_000;

/// The page as the prompt shows it: the parts after the instruction, each in single quotes,
/// joined by ` [SEP] `; the raw page when the instruction is not on it (the done page).
pub fn format_observation(page: &str, instruction: &str) -> String {
    let parts: Vec<&str> = page.split(" [SEP] ").collect();
    match parts.iter().position(|p| *p == instruction) {
        Some(i) => parts[i + 1..]
            .iter()
            .map(|p| format!("'{p}'"))
            .collect::<Vec<_>>()
            .join(" [SEP] "),
        None => page.to_string(),
    }
}

/// The admissible actions as the prompt lists them: `search[<your query>]` when there is a search
/// bar, then `click[…]` per clickable.
pub fn admissible_actions(available: &AvailableActions) -> Vec<String> {
    let search = available
        .has_search_bar
        .then(|| "search[<your query>]".to_string());
    search
        .into_iter()
        .chain(available.clickables.iter().map(|c| format!("click[{c}]")))
        .collect()
}

/// Builds the verl-agent WebShop prompt with a memory of the last `history_length` steps. The
/// observation's `text` is the formatted page and `admissible` the action strings.
#[derive(Debug, Clone, Copy)]
pub struct WebShopPrompt {
    /// Remembered steps shown. Default 2.
    pub history_length: usize,
}

impl Default for WebShopPrompt {
    fn default() -> Self {
        Self { history_length: 2 }
    }
}

impl PromptBuilder for WebShopPrompt {
    fn build(&self, observation: &Observation, history: &[HistoryEntry], t: usize) -> String {
        let actions = observation
            .admissible
            .iter()
            .map(|a| format!("'{a}',"))
            .collect::<Vec<_>>()
            .join("\n");
        let first = || {
            WEBSHOP_TEMPLATE_NO_HIS
                .replace("{task_description}", &observation.task)
                .replace("{current_observation}", &observation.text)
                .replace("{available_actions}", &actions)
        };
        if t == 0 || self.history_length == 0 || history.is_empty() {
            return first();
        }
        let (lines, shown) = recent_history(history, self.history_length);
        let prompt = WEBSHOP_TEMPLATE
            .replace("{task_description}", &observation.task)
            .replace("{step_count}", &history.len().to_string())
            .replace("{history_length}", &shown.to_string())
            .replace("{action_history}", &lines)
            .replace("{current_step}", &(history.len() + 1).to_string())
            .replace("{current_observation}", &observation.text)
            .replace("{available_actions}", &actions);
        if prompt.chars().count() > MAX_HISTORY_PROMPT_CHARS {
            first()
        } else {
            prompt
        }
    }
}

/// The WebShop projection: [`think_action_projection`] with a 20-character fallback.
#[derive(Debug, Clone, Copy, Default)]
pub struct WebShopProjection;

impl ActionParser for WebShopProjection {
    fn parse(&self, response: &str, _admissible: &[String]) -> ParsedAction {
        think_action_projection(response, 20)
    }
}
