use std::path::Path;

use serde::Deserialize;

use crate::alfworld::Problem;
use crate::error::{Error, Result};

/// Caps the size of a game file read from disk (the largest real one is 138 KB).
pub const MAX_GAME_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// A `game.tw-pddl` file: the task sentence, the parsed PDDL problem and the walkthrough.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameFile {
    /// `Your task is to: ….`, as stored in the grammar.
    pub task: String,
    /// The parsed problem.
    pub problem: Problem,
    /// The stored plan in command wording.
    pub walkthrough: Vec<String>,
}

#[derive(Deserialize)]
struct RawGameFile {
    #[allow(dead_code)]
    pddl_domain: String,
    grammar: String,
    pddl_problem: String,
    #[serde(default)]
    walkthrough: Vec<String>,
}

impl GameFile {
    /// Reads and parses a game file.
    ///
    /// # Errors
    /// [`Error::GameFile`] when the file is unreadable, too large, not JSON, or lacks a key or
    /// the task sentence; the PDDL errors of [`Problem::parse`].
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let fail = |reason: String| Error::GameFile {
            path: path.to_path_buf(),
            reason,
        };
        let size = std::fs::metadata(path)
            .map_err(|e| fail(e.to_string()))?
            .len();
        if size > MAX_GAME_FILE_BYTES {
            return Err(fail(format!(
                "{size} bytes, more than the {MAX_GAME_FILE_BYTES} accepted"
            )));
        }
        let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
        Self::parse(&text, path)
    }

    /// Parses the JSON text of a game file; `path` names it in errors.
    ///
    /// # Errors
    /// As [`GameFile::load`].
    pub fn parse(text: &str, path: &Path) -> Result<Self> {
        let fail = |reason: String| Error::GameFile {
            path: path.to_path_buf(),
            reason,
        };
        let raw: RawGameFile =
            serde_json::from_str(text).map_err(|e| fail(format!("not a game file: {e}")))?;
        let task = task_sentence(&raw.grammar)
            .ok_or_else(|| fail("the grammar has no `Your task is to: ` sentence".into()))?;
        let problem = Problem::parse(&raw.pddl_problem, path)?;
        Ok(GameFile {
            task,
            problem,
            walkthrough: raw.walkthrough,
        })
    }
}

/// The task sentence inside the grammar: from `Your task is to: ` to the closing quote.
fn task_sentence(grammar: &str) -> Option<String> {
    let start = grammar.find("Your task is to: ")?;
    let end = grammar[start..].find('"')?;
    Some(grammar[start..start + end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn game_json(problem: &str) -> String {
        serde_json::json!({
            "pddl_domain": "(define (domain alfred))",
            "grammar": "{\"task\": [ {\n \"rhs\": \"Your task is to: put some apple on desk.\"\n } ]}",
            "pddl_problem": problem,
            "solvable": true,
            "walkthrough": ["go to desk 1"],
        })
        .to_string()
    }

    const PROBLEM: &str = "(define (problem p) (:objects agent1 - agent l - location) \
                           (:init (atLocation agent1 l)) (:goal (atLocation agent1 l)))";

    #[test]
    fn reads_task_problem_and_walkthrough() {
        let g = GameFile::parse(&game_json(PROBLEM), Path::new("x/game.tw-pddl")).unwrap();
        assert_eq!(g.task, "Your task is to: put some apple on desk.");
        assert_eq!(g.walkthrough, vec!["go to desk 1"]);
        assert_eq!(g.problem.init.len(), 1);
    }

    #[test]
    fn non_json_and_wrong_schema_name_the_file() {
        for text in ["{\"pddl_domain\": ", "{\"foo\": 1}", "[]"] {
            let err = GameFile::parse(text, Path::new("x/game.tw-pddl"))
                .unwrap_err()
                .to_string();
            assert!(err.contains("x/game.tw-pddl"), "{err}");
        }
    }

    #[test]
    fn missing_file_is_a_clear_error() {
        let err = GameFile::load("/nonexistent/game.tw-pddl")
            .unwrap_err()
            .to_string();
        assert!(err.contains("/nonexistent/game.tw-pddl"), "{err}");
    }
}
