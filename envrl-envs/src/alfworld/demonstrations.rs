//! Expert demonstrations of ALFWorld in the verl-agent prompt format: each game's walkthrough
//! (the planner's, for generated games) replayed through the engine, for an SFT warm start.

use std::collections::HashSet;
use std::sync::Arc;

use envrl::{Demonstration, Observation, Tokenizer, record_demonstration};
use rand::SeedableRng;
use rand::seq::IndexedRandom;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::alfworld::{
    AlfEngine, AlfWorld, AlfworldPrompt, DEFAULT_PLAN_BUDGET, Game, MAX_STEPS, Wording,
};

/// Plays the walkthrough of the game of each task (task `i` is game `i mod games`, as in
/// [`AlfWorld`]) and records it with `prompt` and `tokenizer`.
pub fn walkthrough_demonstrations(
    games: &Arc<Vec<Arc<Game>>>,
    tasks: impl IntoIterator<Item = u64>,
    prompt: &AlfworldPrompt,
    tokenizer: &dyn Tokenizer,
) -> Vec<Demonstration> {
    record_games(
        games,
        tasks,
        prompt,
        tokenizer,
        MAX_STEPS as usize,
        |_, game| {
            let game = game.clone();
            move |_: &Observation, t: usize| game.walkthrough.get(t).cloned()
        },
    )
}

/// Records, for each task, the game of that task (task `i` is game `i mod games`) played by the
/// expert `expert_for(task, game)` makes, for at most `max_steps` steps. Tasks are recorded in
/// parallel (one environment per worker); the result is in task order.
fn record_games<X: FnMut(&Observation, usize) -> Option<String>>(
    games: &Arc<Vec<Arc<Game>>>,
    tasks: impl IntoIterator<Item = u64>,
    prompt: &AlfworldPrompt,
    tokenizer: &dyn Tokenizer,
    max_steps: usize,
    expert_for: impl Fn(u64, &Arc<Game>) -> X + Sync,
) -> Vec<Demonstration> {
    if games.is_empty() {
        return Vec::new();
    }
    let tasks: Vec<u64> = tasks.into_iter().collect();
    tasks
        .into_par_iter()
        .map_init(
            || AlfWorld::new(games.clone()),
            |env, task| {
                let game = &games[(task % games.len() as u64) as usize];
                let mut expert = expert_for(task, game);
                record_demonstration(
                    env,
                    task,
                    max_steps,
                    prompt,
                    tokenizer,
                    &mut expert,
                    &|_, action| prompt.expert_response(action),
                )
            },
        )
        .collect()
}

/// An expert that only acts on what it has seen: it searches the room (going to receptacles in a
/// seeded random order and opening closed ones) until it has seen the object the planner's next
/// `take` names, then follows the planner. Unlike the walkthrough, which goes straight to an
/// object the agent could not know the place of, its episodes are a policy a model can imitate
/// from the prompt alone. Plans are searched with [`DEFAULT_PLAN_BUDGET`].
pub struct SearchingExpert {
    engine: AlfEngine,
    seen: String,
    visited: HashSet<String>,
    rng: ChaCha8Rng,
}

impl SearchingExpert {
    /// An expert for `game` at its initial state; `seed` orders the search.
    pub fn new(game: Arc<Game>, seed: u64) -> Self {
        let mut engine = AlfEngine::new(game, Wording::V212, MAX_STEPS);
        let seen = engine.reset().observation;
        Self {
            engine,
            seen,
            visited: HashSet::new(),
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// The next command for the current `observation`; `None` when the goal holds or no plan
    /// exists. The command is applied to the expert's own copy of the game, so the caller must
    /// send it to the environment.
    pub fn act(&mut self, observation: &Observation) -> Option<String> {
        let plan = self.engine.plan(DEFAULT_PLAN_BUDGET)?;
        let next_take = plan.iter().find(|c| c.starts_with("take "));
        let searching = self.engine.state().held.is_none()
            && next_take.is_some_and(|take| {
                let object = take["take ".len()..].split(" from ").next().unwrap_or("");
                !mentions(&self.seen, object)
            });
        let command = if searching {
            self.search_step(observation)?
        } else {
            plan.first()?.clone()
        };
        if let Some(place) = command.strip_prefix("go to ") {
            self.visited.insert(place.to_string());
        }
        let step = self.engine.step(&command);
        self.seen.push('\n');
        self.seen.push_str(&step.observation);
        Some(command)
    }

    fn search_step(&mut self, observation: &Observation) -> Option<String> {
        if observation.text.contains(" is closed.")
            && let Some(open) = observation
                .admissible
                .iter()
                .find(|a| a.starts_with("open "))
        {
            return Some(open.clone());
        }
        let goes: Vec<&String> = observation
            .admissible
            .iter()
            .filter(|a| a.starts_with("go to "))
            .collect();
        let fresh: Vec<&String> = goes
            .iter()
            .copied()
            .filter(|a| !self.visited.contains(&a["go to ".len()..]))
            .collect();
        let pool = if fresh.is_empty() { &goes } else { &fresh };
        pool.choose(&mut self.rng).map(|a| (*a).clone())
    }
}

/// Whether `text` names `entity` (`mug 1`, not `mug 10`).
fn mentions(text: &str, entity: &str) -> bool {
    text.match_indices(entity).any(|(i, _)| {
        !text[i + entity.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
    })
}

/// Plays each task's game (task `i` is game `i mod games`) with a [`SearchingExpert`] seeded by
/// `seed` and the task, and records it with `prompt` and `tokenizer`; episodes end at
/// `max_steps`, won or not.
pub fn search_demonstrations(
    games: &Arc<Vec<Arc<Game>>>,
    tasks: impl IntoIterator<Item = u64>,
    prompt: &AlfworldPrompt,
    tokenizer: &dyn Tokenizer,
    max_steps: usize,
    seed: u64,
) -> Vec<Demonstration> {
    record_games(games, tasks, prompt, tokenizer, max_steps, |task, game| {
        let mut searcher =
            SearchingExpert::new(game.clone(), seed ^ task.wrapping_mul(0x9E37_79B9));
        move |observation: &Observation, _: usize| searcher.act(observation)
    })
}
