//! A trainer from a model, a tokenizer, an environment's set-up and the algorithm's config, by
//! the library's one way ([`TrainerRecipe`]), keeping what the report needs: `envrl train` and
//! the key-and-door example both use it.

use std::sync::Arc;

use anyhow::Result;
use envrl::{AuxObjective, Environment, Tokenizer, Trainer, TrainerConfig};
use envrl_algos::recipe::{EnvParts, TrainerRecipe};
use envrl_algos::{AlgorithmConfig, CausalLm};
use envrl_envs::webshop::ScoreLog;

use super::envs::{Demonstrate, EnvSetup};

/// What the set-up keeps for the report once the trainer has its parts.
pub struct Reporting {
    /// Expert demonstrations in the prompt format.
    pub demonstrate: Demonstrate,
    /// The evaluation-table row of a task.
    pub task_label: Box<dyn Fn(u64) -> String>,
    /// Raw scores of WebShop purchases, by task.
    pub scores: Option<ScoreLog>,
    /// Held-out evaluation task ids.
    pub eval_tasks: Vec<u64>,
}

/// What a trainer is assembled from, besides the model.
pub struct Assembly<'a, E: Environment> {
    /// Iterations, batch, learning rate, sampling, evaluation, checkpoints.
    pub trainer: &'a TrainerConfig,
    /// Estimator, actor loss and the configured objectives.
    pub algorithm: &'a AlgorithmConfig,
    /// The tokenizer of the model.
    pub tokenizer: Arc<dyn Tokenizer>,
    /// The environment's side.
    pub setup: EnvSetup<E>,
    /// Objectives of the caller's own (a custom [`AuxObjective`] plugs in here).
    pub extra_aux: Vec<Box<dyn AuxObjective>>,
}

impl<E: Environment + 'static> Assembly<'_, E> {
    /// The trainer ([`TrainerRecipe::build`]: the algorithm's objectives named for the
    /// environment, the caller's after them), and what the set-up keeps for the report.
    ///
    /// # Errors
    /// When the trainer's config does not fit the tasks or the model.
    pub fn build(self, model: CausalLm) -> Result<(Trainer<CausalLm, E>, Reporting)> {
        let setup = self.setup;
        let reporting = Reporting {
            demonstrate: setup.demonstrate,
            task_label: setup.task_label,
            scores: setup.scores,
            eval_tasks: setup.eval_tasks.clone(),
        };
        let trainer = TrainerRecipe {
            trainer: self.trainer,
            algorithm: self.algorithm,
            tokenizer: self.tokenizer,
            env: EnvParts {
                prompt: setup.prompt,
                parser: setup.parser,
                make_env: setup.make_env,
                train_tasks: setup.train_tasks,
                eval_tasks: setup.eval_tasks,
            },
            extra_aux: self.extra_aux,
        }
        .build(model)?;
        Ok((trainer, reporting))
    }
}
