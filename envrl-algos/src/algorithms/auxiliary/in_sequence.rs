//! The in-sequence (ECHO-style) state-prediction variant (ENVRL.md §4.6): the next observation
//! is predicted right after the step's own response, as a new user turn of the same sequence.
//!
//! ```text
//! [prompt ; response ; separator ; obs_next ; <eos>]     loss on obs_next and <eos> only
//! ```
//!
//! Shrivastava et al., "Terminal Agents Learn World Models for Free", arXiv:2605.24517.
//! Implementation detail: the reference computes this loss on the RL forward pass; envrl scores
//! the extended sequences in their own pass. With causal attention the loss is the same function
//! of the weights; only the cost differs. No example budget applies; every eligible row is used,
//! with `obs_next` capped at `max_obs_tokens` (by default the world's target budget).

use envrl::{AuxExample, AuxObjective, RolloutBatch, Schedule, ScoreRow, Tokenizer, WorldInfo};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::algorithms::auxiliary::{ObjectiveConfig, TransitionFilter};

/// In-sequence state-prediction settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InSequenceConfig {
    /// λ_SP(t). Default cosine from λ0 = 0.2.
    pub schedule: Schedule,
    /// Eligibility (its example budget and prompt budget are not used here).
    pub transitions: TransitionFilter,
    /// Text between the response and the observation: the chat template's user-turn opening.
    /// Default `"\n<|im_start|>user\n"` (Qwen2.5).
    pub separator: String,
    /// Most observation tokens per row. Default the world's target budget
    /// ([`envrl::ExampleBudgets::target_tokens`]: 256, WebShop 768).
    pub max_obs_tokens: Option<usize>,
}

impl Default for InSequenceConfig {
    fn default() -> Self {
        Self {
            schedule: Schedule::Cosine { start: 0.2 },
            transitions: TransitionFilter::default(),
            separator: "\n<|im_start|>user\n".into(),
            max_obs_tokens: None,
        }
    }
}

/// The in-sequence state-prediction objective.
#[derive(Debug, Clone, Default)]
pub struct InSequenceStatePrediction {
    /// Its settings.
    pub config: InSequenceConfig,
}

impl AuxObjective for InSequenceStatePrediction {
    fn name(&self) -> &str {
        <InSequenceConfig as ObjectiveConfig>::NAME
    }

    fn schedule(&self) -> &Schedule {
        &self.config.schedule
    }

    fn examples(
        &self,
        batch: &RolloutBatch,
        world: &WorldInfo,
        tokenizer: &dyn Tokenizer,
        _rng: &mut ChaCha8Rng,
    ) -> Vec<AuxExample> {
        let c = &self.config;
        let separator = tokenizer.encode(&c.separator);
        let max_obs_tokens = c
            .max_obs_tokens
            .unwrap_or(world.example_budgets.target_tokens);
        c.transitions
            .eligible(batch, world)
            .into_iter()
            .map(|x| {
                let context = [x.prompt_ids, x.response_ids, &separator].concat();
                let mut target = tokenizer.encode_response(x.next_observation);
                if target.len() > max_obs_tokens {
                    target.truncate(max_obs_tokens);
                    if target.last() == Some(&tokenizer.eos_id()) {
                        target.pop();
                    }
                }
                AuxExample::own(ScoreRow { context, target })
            })
            .collect()
    }
}

impl ObjectiveConfig for InSequenceConfig {
    const NAME: &'static str = "state_prediction_in_sequence";

    fn build(&self) -> Box<dyn AuxObjective> {
        Box::new(InSequenceStatePrediction {
            config: self.clone(),
        })
    }

    fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    fn schedule_mut(&mut self) -> &mut Schedule {
        &mut self.schedule
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WordTokenizer;
    use crate::test_support::batch;
    use rand::SeedableRng;

    #[test]
    fn the_observation_follows_the_response_in_the_same_sequence() {
        let mut b = batch(&[(0, 0.0, &[true])]);
        let step = &mut b.trajectories[0].steps[0];
        step.prompt_ids = vec![5, 6];
        step.response_ids = vec![7, 1];
        step.observation = "a".into();
        step.next_observation = "x y".into();
        let tok = WordTokenizer::from_corpus(["x y user"]);
        let config = InSequenceConfig {
            separator: "user".into(),
            max_obs_tokens: Some(8),
            ..Default::default()
        };
        let objective = InSequenceStatePrediction { config };
        let world = WorldInfo::default();
        let examples = objective.examples(&b, &world, &tok, &mut ChaCha8Rng::seed_from_u64(0));
        let user = tok.encode("user")[0];
        assert_eq!(examples[0].row.context, vec![5, 6, 7, 1, user]);
        assert_eq!(examples[0].row.target, tok.encode_response("x y"));
    }
}
