//! verl-agent's Sokoban prompt and projection, byte for byte (its `prompts/sokoban.py` and
//! `sokoban_projection`): the templates start and end with a newline, keep the typo
//! "observaitons" and the space after `</think> tags.`, and the memory shows actions by their
//! names (`Up`, `Still`). A compact style for small from-scratch models shows the room without
//! tabs and the same facts without the instructions.

use envrl::{ActionParser, HistoryEntry, Observation, ParsedAction, PromptBuilder};

use crate::history::recent_history;
use crate::prompt_style::PromptStyle;
use crate::python::python_strip;
use crate::sokoban::engine::Move;

const HEADER: &str = "\nYou are an expert agent operating in the Sokoban environment.\n\n# Symbols and Their Meaning\n- Walls (`#`): These block movement. You can't move through or push anything into walls.\n- Floor (`_`): Open spaces where you can walk and move boxes.\n- Targets (`O`): The spots where boxes need to go.\n- Boxes (`X`): These are what you need to push onto the targets.\n- Player (`P`): That's you! You'll move around the grid to push boxes.\n- Box on Target (`\u{221a}`): A box successfully placed on a target.\n- Player on Target (`S`): You standing on a target.\n\n# Your Goal\nYour goal is to push all the boxes (`X`) onto the target spots (`O`). Once all boxes are on the targets, you win!\n\n# Rules\nYou can only push boxes. You can't pull them, so plan ahead to avoid getting stuck.\nYou can't walk through or push boxes into walls (`#`).\nTo avoid traps, do not push boxes into corners or against walls where they can't be moved again.\n\n# Current Step\n";

const FOOTER: &str = "\nYour admissible actions are [\"up\", \"down\", \"left\", \"right\"].\n\nNow it's your turn to make a move (choose ONE action only for the current step).\nYou should first reason step-by-step about the current situation \u{2014} observe the positions of boxes and targets, plan a path to push a box toward a target, and avoid traps like corners or walls. This reasoning process MUST be enclosed within <think> </think> tags. \nOnce you've finished your reasoning, you should choose an admissible action for current step and present it within <action> </action> tags.\n";

/// The Sokoban prompt with a memory of the last `history_length` steps.
#[derive(Debug, Clone, Copy)]
pub struct SokobanPrompt {
    /// Remembered steps shown. Default 2 (verl-agent's `env.history_length`).
    pub history_length: usize,
    /// The wording. Default verl-agent's.
    pub style: PromptStyle,
}

impl Default for SokobanPrompt {
    /// verl-agent's current templates ([`PromptStyle::VerlAgentOct2025`]); the recorded
    /// transcripts use [`PromptStyle::VerlAgent`].
    fn default() -> Self {
        Self {
            history_length: 2,
            style: PromptStyle::VerlAgentOct2025,
        }
    }
}

impl SokobanPrompt {
    /// The prompt in `style` with the default memory.
    pub fn with_style(style: PromptStyle) -> Self {
        Self {
            style,
            ..Self::default()
        }
    }

    /// The expert's reply for `action` (a word of [`Move::word`]) in this style, in the format
    /// the projection accepts as valid; verl-agent's has a one-sentence rationale, the compact
    /// style's is empty.
    pub fn expert_response(&self, action: &str) -> String {
        match self.style {
            PromptStyle::VerlAgent | PromptStyle::VerlAgentOct2025 => format!(
                "<think>Moving {action} follows a shortest plan that puts every box on a target.</think><action>{action}</action>"
            ),
            PromptStyle::Compact => format!("<think></think><action>{action}</action>"),
        }
    }

    fn build_compact(&self, observation: &Observation, history: &[HistoryEntry]) -> String {
        let mut text = format!("Task: {}\n", observation.task);
        let start = history.len().saturating_sub(self.history_length);
        for h in &history[start..] {
            text.push_str(&format!(
                "Seen: {} Did: {}\n",
                compact_room(&h.observation),
                Move::from_word(&h.action).word()
            ));
        }
        text.push_str(&format!(
            "Now: {}\nActions: {}\n",
            compact_room(&observation.text),
            observation.admissible.join(" | ")
        ));
        text
    }
}

/// A rendered room without the padding: cells separated by a space, rows by ` / `.
pub fn compact_room(text: &str) -> String {
    text.lines()
        .map(|row| row.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join(" / ")
}

impl PromptBuilder for SokobanPrompt {
    fn build(&self, observation: &Observation, history: &[HistoryEntry], t: usize) -> String {
        if self.style == PromptStyle::Compact {
            return self.build_compact(observation, history);
        }
        if t == 0 || self.history_length == 0 {
            return format!(
                "{HEADER}Your current observation is:\n{}{FOOTER}",
                observation.text
            );
        }
        let named: Vec<HistoryEntry> = history
            .iter()
            .map(|h| HistoryEntry {
                observation: h.observation.clone(),
                action: Move::from_word(&h.action).name().to_string(),
            })
            .collect();
        let (lines, shown) = recent_history(&named, self.history_length);
        format!(
            "{HEADER}Prior to this step, you have already taken {} step(s). Below are the most recent {shown} {} and the corresponding actions you took: {lines}\nYou are now at step {} and your current observation is:\n{}{FOOTER}",
            history.len(),
            self.style.observations_word(),
            history.len() + 1,
            observation.text
        )
    }
}

/// verl-agent's `sokoban_projection`: the lower-cased text between the first `<action>` and
/// `</action>`, stripped, names the first of `up`, `down`, `left`, `right`, `still` it
/// contains (so `push up` is `up`, and `stillup` is `up`); nothing found, or no tags, is
/// `still`. Valid when a direction or `still` was found and the response has `<think>` and
/// `</think>`.
#[derive(Debug, Clone, Copy, Default)]
pub struct SokobanProjection;

impl ActionParser for SokobanProjection {
    fn parse(&self, response: &str, _admissible: &[String]) -> ParsedAction {
        let (m, found) = project(response);
        let has_think = response.contains("<think>") && response.contains("</think>");
        ParsedAction {
            action: m.word().to_string(),
            valid: found && has_think,
        }
    }
}

fn project(response: &str) -> (Move, bool) {
    let lower = response.to_lowercase();
    let (Some(start), Some(end)) = (lower.find("<action>"), lower.find("</action>")) else {
        return (Move::Still, false);
    };
    let from = start + "<action>".len();
    let inner = if end > from { &lower[from..end] } else { "" };
    let inner = python_strip(inner).to_lowercase();
    let pool = [Move::Up, Move::Down, Move::Left, Move::Right, Move::Still];
    match pool.into_iter().find(|m| inner.contains(m.word())) {
        Some(m) => (m, true),
        None => (Move::Still, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_templates_differ_from_the_recorded_ones_by_the_fixed_word_alone() {
        let observation = Observation {
            task: "push".into(),
            text: "#\t#\t#".into(),
            admissible: Vec::new(),
        };
        let history = [HistoryEntry {
            observation: "#\t_\t#".into(),
            action: "up".into(),
        }];
        let old = SokobanPrompt::with_style(PromptStyle::VerlAgent);
        let new = SokobanPrompt::default();
        assert_eq!(new.style, PromptStyle::VerlAgentOct2025);
        for t in [0, 1] {
            let recorded = old.build(&observation, &history[..t], t);
            let current = new.build(&observation, &history[..t], t);
            assert_eq!(current, recorded.replace("observaitons", "observations"));
            assert_eq!(current.contains("most recent 1 observations"), t == 1);
        }
    }

    #[test]
    fn the_projection_takes_the_first_named_direction() {
        let p = |r: &str| SokobanProjection.parse(r, &[]);
        assert_eq!(p("<think>a</think><action>Push Up</action>").action, "up");
        assert!(p("<think>a</think><action>still</action>").valid);
        assert!(!p("<think>a</think><action>north</action>").valid);
        assert_eq!(p("<action>left</action>").action, "left");
        assert!(!p("<action>left</action>").valid);
    }

    #[test]
    fn compact_prompts_show_the_room_without_padding() {
        let obs = Observation {
            task: "push every box onto a target".into(),
            text: " # \t P \t\n # \t X \t".into(),
            admissible: vec!["up".into(), "down".into()],
        };
        let prompt = SokobanPrompt::with_style(PromptStyle::Compact);
        let history = [HistoryEntry {
            observation: " # \t _ \t".into(),
            action: "dance".into(),
        }];
        assert_eq!(
            prompt.build(&obs, &history, 1),
            "Task: push every box onto a target\nSeen: # _ Did: still\nNow: # P / # X\nActions: up | down\n"
        );
        let reply = prompt.expert_response("up");
        assert_eq!(SokobanProjection.parse(&reply, &[]).action, "up");
        assert!(
            SokobanProjection
                .parse(&SokobanPrompt::default().expert_response("left"), &[])
                .valid
        );
    }
}
