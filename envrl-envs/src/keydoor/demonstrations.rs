//! Warm-start rows for the key-and-door world: the world has no expert, so the warm start
//! teaches the reply format from a uniformly random agent.

use envrl::{Environment, PromptBuilder, ScoreRow, Tokenizer};
use rand::seq::IndexedRandom;
use rand_chacha::ChaCha8Rng;

use super::{KeyDoor, KeyDoorPrompt};

/// Behaviour-cloning rows of a uniformly random admissible-action agent: the [`KeyDoorPrompt`]
/// of every step of `episodes` episodes (tasks `0..episodes`) of a corridor of `rooms` rooms,
/// answered with the action it took.
pub fn random_agent_rows(
    tokenizer: &dyn Tokenizer,
    rooms: usize,
    max_steps: usize,
    episodes: u64,
    rng: &mut ChaCha8Rng,
) -> Vec<ScoreRow> {
    let mut rows = Vec::new();
    for task in 0..episodes {
        let mut env = KeyDoor::new(rooms, max_steps);
        let mut obs = env.reset(task);
        for t in 0..max_steps {
            let Some(action) = obs.admissible.choose(rng).cloned() else {
                break;
            };
            rows.push(ScoreRow {
                context: tokenizer.encode_prompt(&KeyDoorPrompt.build(&obs, &[], t)),
                target: tokenizer.encode_response(&action),
            });
            let outcome = env.step(&action);
            if outcome.done {
                break;
            }
            obs = outcome.observation;
        }
    }
    rows
}
