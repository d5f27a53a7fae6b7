//! The verl-agent ALFWorld prompt (ENVRL.md §2.1), byte for byte: the template
//! strings start and end with a newline, the `</think> tags.` line ends with a space, and the
//! history sentence keeps the typo "observaitons". A compact style for small from-scratch
//! models carries the same information in about 40 % of the tokens.

use envrl::{HistoryEntry, Observation, PromptBuilder};

use crate::history::recent_history;
use crate::prompt_style::PromptStyle;

/// The first-step template (no history).
pub const ALFWORLD_TEMPLATE_NO_HIS: &str = "\nYou are an expert agent operating in the ALFRED Embodied Environment.\nYour current observation is: {current_observation}\nYour admissible actions of the current situation are: [{admissible_actions}].\n\nNow it's your turn to take an action.\nYou should first reason step-by-step about the current situation. This reasoning process MUST be enclosed within <think> </think> tags. \nOnce you've finished your reasoning, you should choose an admissible action for current step and present it within <action> </action> tags.\n";

/// The template of later steps.
pub const ALFWORLD_TEMPLATE: &str = "\nYou are an expert agent operating in the ALFRED Embodied Environment. Your task is to: {task_description}\nPrior to this step, you have already taken {step_count} step(s). Below are the most recent {history_length} observaitons and the corresponding actions you took: {action_history}\nYou are now at step {current_step} and your current observation is: {current_observation}\nYour admissible actions of the current situation are: [{admissible_actions}].\n\nNow it's your turn to take an action.\nYou should first reason step-by-step about the current situation. This reasoning process MUST be enclosed within <think> </think> tags. \nOnce you've finished your reasoning, you should choose an admissible action for current step and present it within <action> </action> tags.\n";

/// Builds the ALFWorld prompt with a memory of the last `history_length` steps.
#[derive(Debug, Clone, Copy)]
pub struct AlfworldPrompt {
    /// Remembered steps shown. Default 2.
    pub history_length: usize,
    /// The wording. Default verl-agent's.
    pub style: PromptStyle,
}

impl Default for AlfworldPrompt {
    fn default() -> Self {
        Self {
            history_length: 2,
            style: PromptStyle::VerlAgent,
        }
    }
}

impl AlfworldPrompt {
    /// The prompt in `style` with the default memory.
    pub fn with_style(style: PromptStyle) -> Self {
        Self {
            style,
            ..Self::default()
        }
    }

    /// The expert's reply for `action` in this style: the action in `<action>` tags after a
    /// `<think>` part, the format the ALFWorld projection accepts as valid. verl-agent's has a
    /// one-sentence rationale that does not restate the task; the compact style's is empty.
    pub fn expert_response(&self, action: &str) -> String {
        match self.style {
            PromptStyle::Compact => format!("<think></think><action>{action}</action>"),
            PromptStyle::VerlAgent | PromptStyle::VerlAgentOct2025 => {
                format!("<think>The next step is to {action}.</think><action>{action}</action>")
            }
        }
    }

    fn build_compact(&self, observation: &Observation, history: &[HistoryEntry]) -> String {
        let mut text = format!("Task: {}\n", observation.task);
        let start = history.len().saturating_sub(self.history_length);
        for h in &history[start..] {
            text.push_str(&format!("Seen: {} Did: {}\n", h.observation, h.action));
        }
        let actions: Vec<&str> = shown_admissible(&observation.admissible).collect();
        text.push_str(&format!(
            "Now: {}\nActions: {}\n",
            observation.text,
            actions.join(" | ")
        ));
        text
    }
}

/// The admissible actions a prompt shows: all but `help`.
fn shown_admissible(admissible: &[String]) -> impl Iterator<Item = &str> {
    admissible
        .iter()
        .map(String::as_str)
        .filter(|a| *a != "help")
}

/// The admissible list as the template shows it: `help` removed, each in single quotes, joined
/// by a newline and a space.
pub fn format_admissible(admissible: &[String]) -> String {
    shown_admissible(admissible)
        .map(|a| format!("'{a}'"))
        .collect::<Vec<_>>()
        .join("\n ")
}

impl PromptBuilder for AlfworldPrompt {
    fn build(&self, observation: &Observation, history: &[HistoryEntry], t: usize) -> String {
        if self.style == PromptStyle::Compact {
            return self.build_compact(observation, history);
        }
        let admissible = format_admissible(&observation.admissible);
        if t == 0 || self.history_length == 0 {
            return ALFWORLD_TEMPLATE_NO_HIS
                .replace("{current_observation}", &observation.text)
                .replace("{admissible_actions}", &admissible);
        }
        let (lines, shown) = recent_history(history, self.history_length);
        ALFWORLD_TEMPLATE
            .replace("observaitons", self.style.observations_word())
            .replace("{task_description}", &observation.task)
            .replace("{step_count}", &history.len().to_string())
            .replace("{history_length}", &shown.to_string())
            .replace("{action_history}", &lines)
            .replace("{current_step}", &(history.len() + 1).to_string())
            .replace("{current_observation}", &observation.text)
            .replace("{admissible_actions}", &admissible)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alfworld::AlfworldProjection;
    use envrl::{ActionParser, ParsedAction};

    fn obs(text: &str) -> Observation {
        Observation {
            task: "put a mug in desk.".into(),
            text: text.into(),
            admissible: vec!["go to desk 1".into(), "help".into(), "look".into()],
        }
    }

    #[test]
    fn first_step_prompt_is_the_template_without_history() {
        let p = AlfworldPrompt::default().build(&obs("banner"), &[], 0);
        assert!(p.starts_with("\nYou are an expert agent operating in the ALFRED Embodied Environment.\nYour current observation is: banner\n"));
        assert!(p.contains("are: ['go to desk 1'\n 'look'].\n"));
        assert!(p.contains("<think> </think> tags. \n") && p.ends_with("tags.\n"));
    }

    #[test]
    fn later_steps_show_the_last_two_steps_with_absolute_numbers() {
        let h = |o: &str, a: &str| HistoryEntry {
            observation: o.into(),
            action: a.into(),
        };
        let history = [h("o1", "a1"), h("o2", "a2"), h("o3", "a3")];
        let p = AlfworldPrompt::default().build(&obs("now"), &history, 3);
        assert!(p.contains("Your task is to: put a mug in desk.\nPrior to this step, you have already taken 3 step(s). Below are the most recent 2 observaitons"));
        assert!(p.contains("took: [Observation 2: 'o2', Action 2: 'a2']\n[Observation 3: 'o3', Action 3: 'a3']\nYou are now at step 4 and your current observation is: now\n"));
    }

    #[test]
    fn compact_prompt_keeps_task_memory_observation_and_actions() {
        let h = |o: &str, a: &str| HistoryEntry {
            observation: o.into(),
            action: a.into(),
        };
        let prompt = AlfworldPrompt::with_style(PromptStyle::Compact);
        let history = [h("o1", "a1"), h("o2", "a2"), h("o3", "a3")];
        assert_eq!(
            prompt.build(&obs("now"), &history, 3),
            "Task: put a mug in desk.\nSeen: o2 Did: a2\nSeen: o3 Did: a3\nNow: now\nActions: go to desk 1 | look\n"
        );
        assert_eq!(
            prompt.build(&obs("banner"), &[], 0),
            "Task: put a mug in desk.\nNow: banner\nActions: go to desk 1 | look\n"
        );
        let reply = prompt.expert_response("go to desk 1");
        assert_eq!(
            AlfworldProjection.parse(&reply, &[]),
            ParsedAction {
                action: "go to desk 1".into(),
                valid: true
            }
        );
    }
}
