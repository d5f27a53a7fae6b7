//! An environment's set-up split into what the trainer takes ([`EnvParts`], for the library's
//! [`TrainerRecipe`](envrl_algos::recipe::TrainerRecipe)) and what the report keeps.

use envrl::Environment;
use envrl_algos::recipe::EnvParts;
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

impl<E: Environment> EnvSetup<E> {
    /// The trainer's side of the set-up and the report's.
    pub fn split(self) -> (EnvParts<E>, Reporting) {
        let reporting = Reporting {
            demonstrate: self.demonstrate,
            task_label: self.task_label,
            scores: self.scores,
            eval_tasks: self.eval_tasks.clone(),
        };
        let parts = EnvParts {
            prompt: self.prompt,
            parser: self.parser,
            make_env: self.make_env,
            train_tasks: self.train_tasks,
            eval_tasks: self.eval_tasks,
        };
        (parts, reporting)
    }
}
