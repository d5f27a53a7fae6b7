//! EnvRL state prediction: given the task, the observation and the action, predict the next
//! observation (ENVRL.md §4.2, §4.4).
//!
//! ```text
//! user:      You are modelling the {env} environment.
//!            Task: {task}
//!            Current observation: {s_t}
//!            Action taken: {a_t}
//!            Predict the next observation returned by the environment.
//! assistant: {s_{t+1}}<eos>
//! L_SP = token-mean cross-entropy over the assistant tokens
//! ```
//!
//! The prompt wording is ours (the paper's is not public) and lives only here.

use envrl::{AuxExample, AuxObjective, RolloutBatch, Schedule, Tokenizer, WorldInfo};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::algorithms::auxiliary::{ObjectiveConfig, Targets, TransitionFilter, retarget};

/// State-prediction settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StatePredictionConfig {
    /// λ_SP(t). Default cosine from λ0 = 0.2 (ENVRL.md §4.5).
    pub schedule: Schedule,
    /// Eligibility, budget and truncation.
    pub transitions: TransitionFilter,
    /// Whose targets are trained on: each transition's own (the default), or another
    /// transition's of the same iteration (`shuffled`: the control, named
    /// `state_prediction_shuffled` in metrics and `state_prediction:shuffled` in labels and on
    /// the command line; `shuffled_any`: the earlier control, [`Targets::ShuffledAny`]).
    #[serde(default, skip_serializing_if = "Targets::is_own")]
    pub targets: Targets,
}

impl Default for StatePredictionConfig {
    fn default() -> Self {
        Self {
            schedule: Schedule::Cosine { start: 0.2 },
            transitions: TransitionFilter::default(),
            targets: Targets::Own,
        }
    }
}

/// The state-prediction objective.
#[derive(Debug, Clone, Default)]
pub struct StatePrediction {
    /// Its settings.
    pub config: StatePredictionConfig,
}

/// The user message of a state-prediction example.
pub fn state_prediction_prompt(environment: &str, task: &str, state: &str, action: &str) -> String {
    format!(
        "You are modelling the {environment} environment.\nTask: {task}\nCurrent observation: {state}\nAction taken: {action}\nPredict the next observation returned by the environment."
    )
}

impl AuxObjective for StatePrediction {
    fn name(&self) -> &str {
        match self.config.targets {
            Targets::Own => <StatePredictionConfig as ObjectiveConfig>::NAME,
            Targets::Shuffled => "state_prediction_shuffled",
            Targets::ShuffledAny => "state_prediction_shuffled_any",
        }
    }

    /// The prompt's template and the observations it treats as no-ops.
    fn prompt_words(&self, world: &WorldInfo) -> Vec<String> {
        let t = &self.config.transitions;
        std::iter::once(state_prediction_prompt(&world.description, "", "", ""))
            .chain(t.noop_observations.iter().cloned())
            .chain(world.noop_observations.iter().cloned())
            .collect()
    }

    fn schedule(&self) -> &Schedule {
        &self.config.schedule
    }

    fn examples(
        &self,
        batch: &RolloutBatch,
        world: &WorldInfo,
        tokenizer: &dyn Tokenizer,
        rng: &mut ChaCha8Rng,
    ) -> Vec<AuxExample> {
        let t = &self.config.transitions;
        let budgets = t.budgets(world);
        let rows = t
            .sample(batch, world, rng)
            .iter()
            .map(|x| {
                let mut fields = vec![x.observation.to_string()];
                let render = |f: &[String]| {
                    state_prediction_prompt(&world.description, x.task, &f[0], x.action)
                };
                let target = x.next_observation;
                TransitionFilter::tokenize(budgets, tokenizer, &mut fields, render, target)
            })
            .collect();
        retarget(self.name(), self.config.targets, rows, rng)
    }
}

impl ObjectiveConfig for StatePredictionConfig {
    const NAME: &'static str = "state_prediction";

    fn build(&self) -> Box<dyn AuxObjective> {
        Box::new(StatePrediction {
            config: self.clone(),
        })
    }

    fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    fn schedule_mut(&mut self) -> &mut Schedule {
        &mut self.schedule
    }

    fn targets(&self) -> Targets {
        self.targets
    }

    fn targets_mut(&mut self) -> Option<&mut Targets> {
        Some(&mut self.targets)
    }
}

