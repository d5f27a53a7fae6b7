//! verl-agent's WebShop prompt and observation formatting, byte for byte
//! (WEBSHOP.md §8.3–8.5): the templates keep their trailing spaces and U+2011 in "e‑commerce".
//! A compact style for small from-scratch models carries the task, the recent actions, the page
//! and the admissible actions in lowercase without the instructions.

use envrl::{HistoryEntry, Observation, PromptBuilder};

use crate::history::recent_history;
use crate::prompt_style::PromptStyle;
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

/// Builds the WebShop prompt with a memory of the last `history_length` steps. The
/// observation's `text` is the formatted page and `admissible` the action strings.
#[derive(Debug, Clone, Copy)]
pub struct WebShopPrompt {
    /// Remembered steps shown. Default 2.
    pub history_length: usize,
    /// The wording. Default verl-agent's.
    pub style: PromptStyle,
}

impl Default for WebShopPrompt {
    fn default() -> Self {
        Self {
            history_length: 2,
            style: PromptStyle::VerlAgent,
        }
    }
}

impl WebShopPrompt {
    /// The prompt in `style` with the default memory.
    pub fn with_style(style: PromptStyle) -> Self {
        Self {
            style,
            ..Self::default()
        }
    }

    /// The expert's reply for `action` in this style: the action in `<action>` tags after a
    /// `<think>` part, the format the WebShop projection accepts as valid. verl-agent's has a
    /// short rationale that does not repeat the instruction (a search already copies it once,
    /// and a reply must fit the rollout's `max_new_tokens`); the compact style's is empty.
    pub fn expert_response(&self, action: &str) -> String {
        let why = match self.style {
            PromptStyle::Compact => "",
            _ if action.starts_with("search[") => "I search for the item I need.",
            _ if action == "click[buy now]" => "The options match, so I buy it.",
            _ if action == "click[next >]" => "The item is not on this page.",
            _ if is_product_click(action) => "This product matches the instruction.",
            PromptStyle::VerlAgent | PromptStyle::VerlAgentOct2025 => {
                "I choose the option the instruction asks for."
            }
        };
        format!("<think>{why}</think><action>{action}</action>")
    }

    /// `Task:` (the instruction), `Did:` (the last actions), `Now:` (the page's parts joined by
    /// ` | `) and `Actions:`, all lowercase, so that the search query and the product ids are
    /// the same words in the prompt as in the reply.
    fn build_compact(&self, observation: &Observation, history: &[HistoryEntry]) -> String {
        let mut text = format!("Task: {}\n", observation.task.to_lowercase());
        let start = history.len().saturating_sub(self.history_length);
        if start < history.len() {
            let did: Vec<&str> = history[start..].iter().map(|h| h.action.as_str()).collect();
            text.push_str(&format!("Did: {}\n", did.join(" | ")));
        }
        let page = observation.text.replace("' [SEP] '", " | ");
        let page = page.strip_prefix('\'').unwrap_or(&page);
        let page = page.strip_suffix('\'').unwrap_or(page);
        text.push_str(&format!(
            "Now: {}\nActions: {}\n",
            page.to_lowercase(),
            observation.admissible.join(" | ")
        ));
        text
    }
}

/// A click on a product's ASIN: ten letters and digits (`b07…` in the real catalog, `g000…` in
/// the generated one).
fn is_product_click(action: &str) -> bool {
    action
        .strip_prefix("click[")
        .and_then(|a| a.strip_suffix(']'))
        .is_some_and(|asin| {
            asin.len() == 10
                && asin.chars().all(|c| c.is_ascii_alphanumeric())
                && asin.chars().any(|c| c.is_ascii_digit())
        })
}

impl PromptBuilder for WebShopPrompt {
    fn build(&self, observation: &Observation, history: &[HistoryEntry], t: usize) -> String {
        if self.style == PromptStyle::Compact {
            return self.build_compact(observation, history);
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webshop::WebShopProjection;
    use envrl::{ActionParser, ParsedAction};

    #[test]
    fn verl_agent_replies_are_short_and_name_the_step() {
        let reply = |a: &str| WebShopPrompt::default().expert_response(a);
        assert_eq!(
            reply("search[red shoes]"),
            "<think>I search for the item I need.</think><action>search[red shoes]</action>"
        );
        for product in ["click[b07xyz1234]", "click[g000000221]"] {
            assert!(reply(product).contains("This product matches"), "{product}");
        }
        for option in ["click[xx-large]", "click[navy]", "click[9]"] {
            assert!(reply(option).contains("I choose the option"), "{option}");
        }
        assert!(reply("click[buy now]").contains("I buy it"));
    }

    #[test]
    fn compact_prompt_is_lowercase_with_the_recent_actions() {
        let prompt = WebShopPrompt::with_style(PromptStyle::Compact);
        let observation = Observation {
            task: "Find me Navy shoes".into(),
            text: "'Back to Search' [SEP] 'G000000221' [SEP] 'Navy Shoe' [SEP] '$9.5'".into(),
            admissible: vec!["click[back to search]".into(), "click[g000000221]".into()],
        };
        let h = |a: &str| HistoryEntry {
            observation: "page".into(),
            action: a.into(),
        };
        let history = [
            h("click[next >]"),
            h("search[find me navy shoes]"),
            h("click[< prev]"),
        ];
        assert_eq!(
            prompt.build(&observation, &history, 3),
            "Task: find me navy shoes\nDid: search[find me navy shoes] | click[< prev]\n\
             Now: back to search | g000000221 | navy shoe | $9.5\n\
             Actions: click[back to search] | click[g000000221]\n"
        );
        assert!(
            prompt
                .build(&observation, &[], 0)
                .starts_with("Task: find me navy shoes\nNow: ")
        );
        let reply = prompt.expert_response("click[g000000221]");
        assert_eq!(
            WebShopProjection.parse(&reply, &[]),
            ParsedAction {
                action: "click[g000000221]".into(),
                valid: true
            }
        );
    }
}
