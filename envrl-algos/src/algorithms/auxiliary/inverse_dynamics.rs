//! EnvRL inverse dynamics: given the task and two consecutive observations, predict the action
//! that linked them, in the policy's output format (ENVRL.md §4.2, §4.4).
//!
//! ```text
//! user:      You are analysing the {env} environment.
//!            Task: {task}
//!            Observation before: {s_t}
//!            Observation after: {s_{t+1}}
//!            Which single action caused this change?
//!            [Admissible actions: [{admissible}]]      (option, off by default)
//! assistant: <action>{a_t}</action><eos>                (or the bare action)
//! L_ID = token-mean cross-entropy over the assistant tokens
//! ```

use envrl::{ActionForm, AuxExample, AuxObjective, RolloutBatch, Schedule, Tokenizer, WorldInfo};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::algorithms::auxiliary::{ObjectiveConfig, Targets, TransitionFilter, retarget};

/// Inverse-dynamics settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InverseDynamicsConfig {
    /// λ_ID(t). Default cosine from λ0 = 0.2.
    pub schedule: Schedule,
    /// Eligibility, budget and truncation.
    pub transitions: TransitionFilter,
    /// Whose targets are trained on: each transition's own (the default), or another
    /// transition's of the same iteration (`shuffled`: the control, named
    /// `inverse_dynamics_shuffled` in metrics and `inverse_dynamics:shuffled` in labels and on
    /// the command line; `shuffled_any`: the earlier control, [`Targets::ShuffledAny`]).
    #[serde(default, skip_serializing_if = "Targets::is_own")]
    pub targets: Targets,
    /// Append the admissible list to the prompt. Default false.
    pub show_admissible: bool,
    /// Target form. Default the world's ([`WorldInfo::actions`]: the form of the policy's own
    /// replies).
    pub target: Option<ActionForm>,
}

impl Default for InverseDynamicsConfig {
    fn default() -> Self {
        Self {
            schedule: Schedule::Cosine { start: 0.2 },
            transitions: TransitionFilter::default(),
            targets: Targets::Own,
            show_admissible: false,
            target: None,
        }
    }
}

/// The inverse-dynamics objective.
#[derive(Debug, Clone, Default)]
pub struct InverseDynamics {
    /// Its settings.
    pub config: InverseDynamicsConfig,
}

/// The user message of an inverse-dynamics example.
pub fn inverse_dynamics_prompt(
    environment: &str,
    task: &str,
    before: &str,
    after: &str,
    admissible: Option<&[String]>,
) -> String {
    let mut text = format!(
        "You are analysing the {environment} environment.\nTask: {task}\nObservation before: {before}\nObservation after: {after}\nWhich single action caused this change?"
    );
    if let Some(actions) = admissible {
        text.push_str(&format!("\nAdmissible actions: [{}]", actions.join(", ")));
    }
    text
}

impl AuxObjective for InverseDynamics {
    fn name(&self) -> &str {
        match self.config.targets {
            Targets::Own => <InverseDynamicsConfig as ObjectiveConfig>::NAME,
            Targets::Shuffled => "inverse_dynamics_shuffled",
            Targets::ShuffledAny => "inverse_dynamics_shuffled_any",
        }
    }

    fn prompt_words(&self, world: &WorldInfo) -> Vec<String> {
        vec![inverse_dynamics_prompt(&world.description, "", "", "", None)]
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
        let c = &self.config;
        let t = &c.transitions;
        let budgets = t.budgets(world);
        let form = c.target.unwrap_or(world.actions);
        let rows = t
            .sample(batch, world, rng)
            .iter()
            .map(|x| {
                let mut fields = vec![x.observation.to_string(), x.next_observation.to_string()];
                let admissible = c.show_admissible.then_some(x.admissible);
                let render = |f: &[String]| {
                    let description = &world.description;
                    inverse_dynamics_prompt(description, x.task, &f[0], &f[1], admissible)
                };
                let target = match form {
                    ActionForm::Tagged => format!("<action>{}</action>", x.action),
                    ActionForm::Bare => x.action.to_string(),
                };
                TransitionFilter::tokenize(budgets, tokenizer, &mut fields, render, &target)
            })
            .collect();
        retarget(self.name(), c.targets, rows, rng)
    }
}
impl ObjectiveConfig for InverseDynamicsConfig {
    const NAME: &'static str = "inverse_dynamics";

    fn build(&self) -> Box<dyn AuxObjective> {
        Box::new(InverseDynamics {
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

