//! Setting up a run in the library, in the steps `envrl train` takes: a word tokenizer over the
//! world's texts and the objectives' prompt words ([`word_tokenizer`]), a tiny model
//! ([`LmConfig::tiny`](crate::LmConfig::tiny)), a warm start from demonstrations
//! ([`envrl::BehaviourCloning`]), and the trainer from an algorithm config and the world's side
//! ([`TrainerRecipe`]).
//!
//! ```
//! use std::sync::Arc;
//! use envrl::{Environment, Observation, StepOutcome, TrainerConfig};
//! use envrl_algos::recipe::{EnvParts, TrainerRecipe, builtin_objectives, word_tokenizer};
//! use envrl_algos::{AlgorithmConfig, LmConfig};
//!
//! #[derive(Default)]
//! struct Coin;
//! impl Environment for Coin {
//!     fn reset(&mut self, _task: u64) -> Observation {
//!         Observation { task: "pick heads".into(), text: "a coin".into(),
//!                       admissible: vec!["heads".into(), "tails".into()] }
//!     }
//!     fn step(&mut self, action: &str) -> StepOutcome {
//!         let won = action == "heads";
//!         StepOutcome { observation: self.reset(0), reward: f32::from(u8::from(won)), done: true, won }
//!     }
//!     fn name(&self) -> &str { "coin" }
//! }
//!
//! // The vocabulary: the world's texts and every built-in objective's wording.
//! let objectives = builtin_objectives(&Coin);
//! let tokenizer = Arc::new(word_tokenizer(["pick heads a coin heads tails".to_string()], &objectives));
//! let device = burn::tensor::Device::flex().autodiff();
//! let model = LmConfig::tiny(envrl::Tokenizer::vocab_size(tokenizer.as_ref())).init(&device, 0)?;
//! let trainer_config = TrainerConfig {
//!     iterations: 1, groups: 2, group_size: 2, max_steps: 1, learning_rate: 1e-3,
//!     sampling: envrl::SamplingParams { max_new_tokens: 2, ..Default::default() },
//!     eval_every: 0,
//!     ..TrainerConfig::default()
//! };
//! let mut trainer = TrainerRecipe {
//!     trainer: &trainer_config,
//!     algorithm: &AlgorithmConfig::default(),
//!     tokenizer,
//!     env: EnvParts::verbatim(Coin::default, (0..4).collect(), (4..6).collect()),
//!     extra_aux: Vec::new(),
//! }
//! .build(model)?;
//! let metrics = trainer.train_iteration();
//! assert_eq!(metrics.iteration, 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::sync::Arc;

use envrl::{
    ActionParser, AuxObjective, Environment, HistoryEntry, Observation, ParsedAction,
    PromptBuilder, Tokenizer, Trainer, TrainerConfig, TrainerParts,
};

use crate::algorithm::{AlgorithmConfig, AuxConfig};
use crate::lm::CausalLm;
use crate::tokenizer::WordTokenizer;

/// Every built-in objective ([`AuxConfig::all`]) set up for `world` ([`AuxConfig::for_world`]):
/// what a from-scratch vocabulary must cover so that runs with and without objectives share one
/// tokenizer.
pub fn builtin_objectives<E: Environment + ?Sized>(world: &E) -> Vec<Box<dyn AuxObjective>> {
    AuxConfig::all()
        .into_iter()
        .map(|aux| aux.for_world(world).build())
        .collect()
}

/// A word tokenizer over `texts` plus the prompt words of `objectives`
/// ([`AuxObjective::prompt_words`]). Pass every objective an arm of the experiment may train
/// (for instance [`builtin_objectives`] and your own): a word the tokenizer never saw becomes
/// `<unk>`, and an objective whose targets are `<unk>` teaches nothing (the trainer logs
/// `aux/unk_rate/<name>` and warns above 5 %).
pub fn word_tokenizer(
    texts: impl IntoIterator<Item = String>,
    objectives: &[Box<dyn AuxObjective>],
) -> WordTokenizer {
    let mut texts: Vec<String> = texts.into_iter().collect();
    texts.extend(objectives.iter().flat_map(|o| o.prompt_words()));
    WordTokenizer::from_corpus(texts.iter().map(String::as_str))
}

/// The world's side of a trainer: how prompts are built and replies read, how environments are
/// made, and which tasks train and evaluate.
pub struct EnvParts<E> {
    /// Builds each step's prompt.
    pub prompt: Box<dyn PromptBuilder>,
    /// Projects replies to actions.
    pub parser: Box<dyn ActionParser>,
    /// Makes one environment.
    pub make_env: Box<dyn Fn() -> E + Send>,
    /// Training task ids.
    pub train_tasks: Vec<u64>,
    /// Held-out evaluation task ids.
    pub eval_tasks: Vec<u64>,
}

impl<E: Environment> EnvParts<E> {
    /// A world whose prompt is the task, the observation and the admissible actions, and whose
    /// replies are taken verbatim as actions: the simplest set-up for a small world.
    pub fn verbatim(
        make_env: impl Fn() -> E + Send + 'static,
        train_tasks: Vec<u64>,
        eval_tasks: Vec<u64>,
    ) -> Self {
        EnvParts {
            prompt: Box::new(PlainPrompt),
            parser: Box::new(VerbatimParser),
            make_env: Box::new(make_env),
            train_tasks,
            eval_tasks,
        }
    }
}

/// `task : … . step t . <observation> . actions : a , b` ([`EnvParts::verbatim`]'s prompt).
#[derive(Debug, Clone, Copy, Default)]
pub struct PlainPrompt;

impl PromptBuilder for PlainPrompt {
    fn build(&self, obs: &Observation, _history: &[HistoryEntry], t: usize) -> String {
        format!(
            "task : {} . step {t} . {} . actions : {}",
            obs.task,
            obs.text,
            obs.admissible.join(" , ")
        )
    }
}

/// A reply is the action itself, valid when admissible ([`EnvParts::verbatim`]'s parser).
#[derive(Debug, Clone, Copy, Default)]
pub struct VerbatimParser;

impl ActionParser for VerbatimParser {
    fn parse(&self, response: &str, admissible: &[String]) -> ParsedAction {
        let action = response.trim().to_string();
        ParsedAction {
            valid: admissible.contains(&action),
            action,
        }
    }
}

/// A trainer from its parts: the configs, the tokenizer, the world's side and objectives of the
/// caller's own. `envrl train` assembles its trainers with this too.
pub struct TrainerRecipe<'a, E> {
    /// Iterations, batch, learning rate, sampling, evaluation, checkpoints.
    pub trainer: &'a TrainerConfig,
    /// Estimator, actor loss and the configured objectives.
    pub algorithm: &'a AlgorithmConfig,
    /// The model's tokenizer.
    pub tokenizer: Arc<dyn Tokenizer>,
    /// The world's side.
    pub env: EnvParts<E>,
    /// Objectives of the caller's own, trained after the configured ones.
    pub extra_aux: Vec<Box<dyn AuxObjective>>,
}

impl<E: Environment + 'static> TrainerRecipe<'_, E> {
    /// The trainer, with the configured objectives set up for the world
    /// ([`AlgorithmConfig::for_world`]: its description, its no-op observations), a critic when the estimator needs one, and the caller's
    /// objectives after the configured ones.
    ///
    /// # Errors
    /// [`envrl::Error::InvalidConfig`] when the trainer config does not fit the tasks or the
    /// model.
    pub fn build(self, model: CausalLm) -> envrl::Result<Trainer<CausalLm, E>> {
        let env = self.env;
        let algorithm = self.algorithm.clone().for_world(&(env.make_env)());
        let parts = algorithm.build();
        let critic = algorithm.build_critic(&model);
        Trainer::new(
            self.trainer.clone(),
            model,
            TrainerParts {
                tokenizer: self.tokenizer,
                prompt: env.prompt,
                parser: env.parser,
                advantage: parts.advantage,
                loss: parts.loss,
                critic,
                aux: parts.aux.into_iter().chain(self.extra_aux).collect(),
                make_env: env.make_env,
                train_tasks: env.train_tasks,
                eval_tasks: env.eval_tasks,
            },
        )
    }
}
