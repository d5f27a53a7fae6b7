//! verl-agent's prompt memory, shared by the ALFWorld and WebShop prompts (ENVRL.md §2): the last
//! steps as `[Observation k: '…', Action k: '…']` lines with 1-based step numbers.

use envrl::HistoryEntry;

/// The last `history_length` entries as prompt lines joined by `\n`, and how many were shown.
pub fn recent_history(history: &[HistoryEntry], history_length: usize) -> (String, usize) {
    let shown = history.len().min(history_length);
    let start = history.len() - shown;
    let lines: Vec<String> = history[start..]
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let k = start + i + 1;
            format!(
                "[Observation {k}: '{}', Action {k}: '{}']",
                h.observation, h.action
            )
        })
        .collect();
    (lines.join("\n"), shown)
}
