use serde::{Deserialize, Serialize};

/// What the agent sees: the task, the observation text and the admissible actions.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Observation {
    /// The task instruction, e.g. `put a clean mug in the coffeemachine.`
    pub task: String,
    /// The observation text the environment returned (the GiGPO "anchor").
    pub text: String,
    /// The actions the environment accepts now, in the environment's order. Empty when the
    /// benchmark defines none.
    pub admissible: Vec<String>,
}

/// The result of one [`Environment::step`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepOutcome {
    /// The observation after the action.
    pub observation: Observation,
    /// The environment reward of this step.
    pub reward: f32,
    /// The episode is over (success, failure or step limit).
    pub done: bool,
    /// The task was accomplished. Success is always read from `won`, never from `done`.
    pub won: bool,
}

/// A text environment.
///
/// An action the environment does not accept is part of its semantics: it answers with an
/// observation (for example `Nothing happens.`), never with an error or a panic.
/// Environments are deterministic given the task they were reset to.
pub trait Environment: Send {
    /// Starts the episode of task `task` (an index or seed the environment interprets) and
    /// returns the first observation.
    fn reset(&mut self, task: u64) -> Observation;

    /// Executes `action` and returns what followed.
    fn step(&mut self, action: &str) -> StepOutcome;

    /// A short name for metrics and run directories, e.g. `alfworld`.
    fn name(&self) -> &str;

    /// How the world is named in the auxiliary objectives' prompts ("You are modelling the
    /// {description} environment."), e.g. `ALFRED household`. By default [`Environment::name`].
    fn description(&self) -> &str {
        self.name()
    }

    /// Observations that mean the action changed nothing (ALFWorld's `Nothing happens.`): EnvRL's
    /// objectives skip such steps, as they skip steps whose observation did not change. By
    /// default none.
    fn noop_observations(&self) -> Vec<String> {
        Vec::new()
    }

    /// The score the benchmark reports for the episode so far, where it keeps one beside the
    /// reward (WebShop's purchase score from 0 to 1 once something is bought). By default none.
    fn score(&self) -> Option<f64> {
        None
    }
}

/// A boxed environment is an environment: worlds hand out `Box<dyn Environment>`.
impl<E: Environment + ?Sized> Environment for Box<E> {
    fn reset(&mut self, task: u64) -> Observation {
        (**self).reset(task)
    }

    fn step(&mut self, action: &str) -> StepOutcome {
        (**self).step(action)
    }

    fn name(&self) -> &str {
        (**self).name()
    }

    fn description(&self) -> &str {
        (**self).description()
    }

    fn noop_observations(&self) -> Vec<String> {
        (**self).noop_observations()
    }

    fn score(&self) -> Option<f64> {
        (**self).score()
    }
}
