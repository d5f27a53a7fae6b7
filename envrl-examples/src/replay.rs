//! `envrl replay`: play recorded action lists through an engine and write transcripts in the
//! golden files' schema.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use envrl_envs::alfworld::{AlfEngine, AlfStep, Game, MAX_STEPS, Wording};
use serde::{Deserialize, Serialize};

/// One input line: a game path relative to `DIR/json_2.1.1` and the actions to send.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayInput {
    /// e.g. `valid_unseen/look_at_obj_in_light-…/trial_…/game.tw-pddl`.
    pub game: String,
    /// Command strings, sent verbatim.
    pub actions: Vec<String>,
}

/// One step of an output transcript: the step index, the command, and the engine's result.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct ReplayStep {
    /// 0 for the reset.
    pub t: usize,
    /// The command sent (`null` at reset).
    pub action: Option<String>,
    /// observation, admissible_commands, won, done, score, moves.
    #[serde(flatten)]
    pub result: AlfStep,
}

/// One output line.
#[derive(Debug, Serialize, Deserialize)]
pub struct ReplayOutput {
    /// The game, as given.
    pub game: String,
    /// The reset and one entry per action, stopping after `done`.
    pub steps: Vec<ReplayStep>,
}

fn entry(t: usize, action: Option<String>, result: AlfStep) -> ReplayStep {
    ReplayStep { t, action, result }
}

/// Replays one action list on a loaded game.
pub fn replay_game(game: Arc<Game>, actions: &[String], wording: Wording) -> Vec<ReplayStep> {
    let mut engine = AlfEngine::new(game, wording, MAX_STEPS);
    let mut steps = vec![entry(0, None, engine.reset())];
    for (t, action) in actions.iter().enumerate() {
        let s = engine.step(action);
        let done = s.done;
        steps.push(entry(t + 1, Some(action.clone()), s));
        if done {
            break;
        }
    }
    steps
}

/// Replays every line of `input` on the games under `data/json_2.1.1` into `output`.
///
/// # Errors
/// When a file cannot be read or written, a line is not valid input, or a game fails to load.
pub fn replay_alfworld(
    data: &Path,
    input: &Path,
    output: &Path,
    wording: Wording,
) -> Result<usize> {
    let root = data.join("json_2.1.1");
    if !root.is_dir() {
        bail!(
            "{} has no json_2.1.1 folder (is it an ALFWORLD_DATA directory?)",
            data.display()
        );
    }
    let reader = BufReader::new(
        std::fs::File::open(input).with_context(|| format!("opening {}", input.display()))?,
    );
    let mut out = BufWriter::new(
        std::fs::File::create(output).with_context(|| format!("creating {}", output.display()))?,
    );
    let mut count = 0;
    for (n, line) in reader.lines().enumerate() {
        let line = line.with_context(|| format!("reading {}", input.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        let record: ReplayInput = serde_json::from_str(&line)
            .with_context(|| format!("{} line {}: not a replay input", input.display(), n + 1))?;
        let game = Arc::new(Game::load(root.join(&record.game))?);
        let steps = replay_game(game, &record.actions, wording);
        serde_json::to_writer(
            &mut out,
            &ReplayOutput {
                game: record.game,
                steps,
            },
        )?;
        writeln!(out)?;
        count += 1;
    }
    out.flush()?;
    Ok(count)
}
