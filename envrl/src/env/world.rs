//! The world a run trains in, as one value: how its environments are made, how prompts are built
//! and replies read, which tasks train and evaluate, and the facts the world states about itself
//! ([`WorldInfo`]), which reach the auxiliary objectives with the data they learn from.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::env::Environment;
use crate::rollout::{ActionParser, PromptBuilder};

/// How the policy's replies carry their action: the form an objective that predicts actions
/// (inverse dynamics) gives its targets, so that they read like the policy's own replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionForm {
    /// `<action>{a}</action>`, verl-agent's format (ALFWorld, WebShop, Sokoban).
    #[default]
    Tagged,
    /// The action alone (worlds whose replies are bare actions).
    Bare,
}

/// Token budgets of the examples an auxiliary objective builds from this world's transitions:
/// its prompt (context) and its target. ENVRL.md §4 uses 1024 / 256 for ALFWorld (the default)
/// and 2048 / 768 for WebShop, whose pages are longer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExampleBudgets {
    /// Most tokens of an example's chat-wrapped prompt.
    pub prompt_tokens: usize,
    /// Most tokens of an example's target.
    pub target_tokens: usize,
}

impl Default for ExampleBudgets {
    fn default() -> Self {
        Self {
            prompt_tokens: 1024,
            target_tokens: 256,
        }
    }
}

/// What a world says about itself, for the auxiliary objectives: its name, how their prompts
/// name it, which observations mean "nothing changed", the form of its actions and the token
/// budgets of examples built from it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WorldInfo {
    /// [`Environment::name`], e.g. `alfworld`.
    pub name: String,
    /// [`Environment::description`], e.g. `ALFRED household`.
    pub description: String,
    /// [`Environment::noop_observations`], e.g. `Nothing happens.`.
    pub noop_observations: Vec<String>,
    /// How replies carry the action.
    pub actions: ActionForm,
    /// Example budgets.
    pub example_budgets: ExampleBudgets,
}

impl WorldInfo {
    /// The facts `env` states (name, description, no-op observations), with tagged actions and
    /// the default budgets.
    pub fn of(env: &dyn Environment) -> Self {
        Self {
            name: env.name().to_string(),
            description: env.description().to_string(),
            noop_observations: env.noop_observations(),
            actions: ActionForm::default(),
            example_budgets: ExampleBudgets::default(),
        }
    }
}

/// Makes one environment of a world.
pub type EnvFactory = Box<dyn Fn() -> Box<dyn Environment> + Send>;

/// Everything a run needs of an environment, built once and handed down: the trainer, the
/// rollout engine and the objectives read it; nothing copies its fields.
///
/// ```
/// use envrl::{Environment, Observation, StepOutcome, World};
///
/// struct Coin;
/// impl Environment for Coin {
///     fn reset(&mut self, _task: u64) -> Observation {
///         Observation { task: "pick heads".into(), text: "a coin".into(),
///                       admissible: vec!["heads".into(), "tails".into()] }
///     }
///     fn step(&mut self, action: &str) -> StepOutcome {
///         let won = action == "heads";
///         StepOutcome { observation: self.reset(0), reward: f32::from(u8::from(won)), done: true, won }
///     }
///     fn name(&self) -> &str { "coin" }
/// }
///
/// let world = World::verbatim(|| Coin, (0..4).collect(), (4..6).collect());
/// assert_eq!(world.info.name, "coin");
/// assert_eq!(world.new_env().reset(0).text, "a coin");
/// ```
pub struct World {
    /// What the world says about itself.
    pub info: WorldInfo,
    /// Makes one environment; called once per parallel rollout slot.
    pub make_env: EnvFactory,
    /// Builds each step's prompt (shared with a rollout played in the background).
    pub prompt: Arc<dyn PromptBuilder>,
    /// Projects replies to actions (shared like the prompt).
    pub parser: Arc<dyn ActionParser>,
    /// The task ids training samples from.
    pub train_tasks: Vec<u64>,
    /// The task ids evaluation plays, in order.
    pub eval_tasks: Vec<u64>,
    /// The names of the tasks that have one (ALFWorld's game files), for logs and servers.
    pub task_names: BTreeMap<u64, String>,
}

impl World {
    /// A world of the environments `make_env` makes, prompted by `prompt` and read by `parser`,
    /// with no tasks yet ([`World::with_tasks`]); its [`WorldInfo`] is what one of them states.
    pub fn new<E: Environment + 'static>(
        make_env: impl Fn() -> E + Send + 'static,
        prompt: impl PromptBuilder + 'static,
        parser: impl ActionParser + 'static,
    ) -> Self {
        let info = WorldInfo::of(&make_env());
        Self {
            info,
            make_env: Box::new(move || Box::new(make_env())),
            prompt: Arc::new(prompt),
            parser: Arc::new(parser),
            train_tasks: Vec::new(),
            eval_tasks: Vec::new(),
            task_names: BTreeMap::new(),
        }
    }

    /// A world whose prompt is the task, the observation and the admissible actions
    /// ([`PlainPrompt`](crate::PlainPrompt)) and whose replies are taken verbatim as actions
    /// ([`VerbatimParser`](crate::VerbatimParser)): the simplest set-up for a small world.
    pub fn verbatim<E: Environment + 'static>(
        make_env: impl Fn() -> E + Send + 'static,
        train_tasks: Vec<u64>,
        eval_tasks: Vec<u64>,
    ) -> Self {
        Self::new(make_env, crate::PlainPrompt, crate::VerbatimParser)
            .with_tasks(train_tasks, eval_tasks)
    }

    /// The world with these training and evaluation tasks.
    pub fn with_tasks(mut self, train_tasks: Vec<u64>, eval_tasks: Vec<u64>) -> Self {
        self.train_tasks = train_tasks;
        self.eval_tasks = eval_tasks;
        self
    }

    /// The world with these task names ([`World::task_names`]).
    pub fn with_task_names(mut self, names: impl IntoIterator<Item = (u64, String)>) -> Self {
        self.task_names = names.into_iter().collect();
        self
    }

    /// The world with replies of this form ([`WorldInfo::actions`]).
    pub fn with_actions(mut self, actions: ActionForm) -> Self {
        self.info.actions = actions;
        self
    }

    /// The world with these example budgets ([`WorldInfo::example_budgets`]).
    pub fn with_example_budgets(mut self, budgets: ExampleBudgets) -> Self {
        self.info.example_budgets = budgets;
        self
    }

    /// A new environment of the world.
    pub fn new_env(&self) -> Box<dyn Environment> {
        (self.make_env)()
    }
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("info", &self.info)
            .field("train_tasks", &self.train_tasks.len())
            .field("eval_tasks", &self.eval_tasks.len())
            .finish_non_exhaustive()
    }
}
