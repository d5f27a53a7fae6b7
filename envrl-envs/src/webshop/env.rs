//! WebShop as an [`Environment`], the way verl-agent's workers drive it (WEBSHOP.md §8.1, §8.6).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use envrl::{Environment, ExampleBudgets, Observation, StepOutcome};

use crate::webshop::engine::{ObservationMode, WebShopData, WebShopEngine};
use crate::webshop::prompt::{admissible_actions, format_observation};

/// The RL reward of a won episode (raw score exactly 1.0).
pub const WIN_REWARD: f32 = 10.0;

/// The token budgets of the auxiliary objectives' examples in WebShop: its pages are longer than
/// ALFWorld's, so 2048 prompt and 768 target tokens (ENVRL.md §4).
pub const EXAMPLE_BUDGETS: ExampleBudgets = ExampleBudgets {
    prompt_tokens: 2048,
    target_tokens: 768,
};

/// A task id: the environment seed (which fixes goal order and prices) and a goal index.
pub fn webshop_task(seed: u32, goal: u32) -> u64 {
    ((seed as u64) << 32) | goal as u64
}

/// The `(seed, goal index)` of a task id.
pub fn split_webshop_task(task: u64) -> (u32, u32) {
    ((task >> 32) as u32, task as u32)
}

/// WebShop as an [`Environment`]: task [`webshop_task`]`(seed, goal)` resets the environment of
/// that seed (one per seed, each with its own random stream) to that goal. Observations are
/// formatted for the verl-agent prompt, admissible actions are the prompt's action strings, and
/// the reward is 10 on a purchase that scores exactly 1.0.
#[derive(Debug, Clone)]
pub struct WebShop {
    data: Arc<WebShopData>,
    engines: HashMap<u32, WebShopEngine>,
    current: Option<u32>,
    instruction: String,
    last_score: Option<f64>,
    task: u64,
    score_log: Option<ScoreLog>,
}

/// Raw purchase scores (0–1) by task id, shared by the environments of a run, for the
/// evaluation table (the RL reward only says whether the score was exactly 1).
pub type ScoreLog = Arc<Mutex<HashMap<u64, f64>>>;

impl WebShop {
    /// An environment over shared data.
    pub fn new(data: Arc<WebShopData>) -> Self {
        Self {
            data,
            engines: HashMap::new(),
            current: None,
            instruction: String::new(),
            last_score: None,
            task: 0,
            score_log: None,
        }
    }

    /// Records every purchase's raw score into `log`, keyed by task id.
    pub fn with_score_log(mut self, log: ScoreLog) -> Self {
        self.score_log = Some(log);
        self
    }

    /// The raw score (0–1) of the last purchase, if the last step bought something.
    pub fn last_score(&self) -> Option<f64> {
        self.last_score
    }

    /// The engine of the current episode.
    pub fn engine(&self) -> Option<&WebShopEngine> {
        self.current.and_then(|s| self.engines.get(&s))
    }

    fn observe(&self, page: &str) -> Observation {
        let engine = self.engine();
        Observation {
            task: self.instruction.clone(),
            text: format_observation(page, &self.instruction),
            admissible: engine
                .map(|e| admissible_actions(&e.available_actions()))
                .unwrap_or_default(),
        }
    }
}

impl Environment for WebShop {
    fn reset(&mut self, task: u64) -> Observation {
        let (seed, goal) = split_webshop_task(task);
        let data = self.data.clone();
        let engine = self
            .engines
            .entry(seed)
            .or_insert_with(|| WebShopEngine::new(data, seed as i64, ObservationMode::Text));
        let page = engine.reset(Some(goal as usize));
        self.instruction = page.split(" [SEP] ").nth(2).unwrap_or("").to_string();
        self.current = Some(seed);
        self.last_score = None;
        self.task = task;
        self.observe(&page)
    }

    fn step(&mut self, action: &str) -> StepOutcome {
        let Some(engine) = self.current.and_then(|s| self.engines.get_mut(&s)) else {
            return StepOutcome {
                observation: Observation::default(),
                reward: 0.0,
                done: true,
                won: false,
            };
        };
        let result = engine.step(action);
        let won = result.done && result.reward == 1.0;
        self.last_score = result.done.then_some(result.reward);
        if let (true, Some(log)) = (result.done, &self.score_log) {
            log.lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(self.task, result.reward);
        }
        StepOutcome {
            observation: self.observe(&result.observation),
            reward: if won { WIN_REWARD } else { 0.0 },
            done: result.done,
            won,
        }
    }

    fn name(&self) -> &str {
        "webshop"
    }

    fn description(&self) -> &str {
        "WebShop online shopping"
    }

    /// The last purchase's score (0–1), once the episode bought something.
    fn score(&self) -> Option<f64> {
        self.last_score
    }
}
