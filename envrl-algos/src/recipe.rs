//! Setting up a run in the library, in the steps `envrl train` takes: a word tokenizer over the
//! world's texts and the objectives' prompt words ([`word_tokenizer`]), a tiny model
//! ([`LmConfig::tiny`](crate::LmConfig::tiny)), a warm start from demonstrations
//! ([`envrl::BehaviourCloning`]), and the trainer from an algorithm config and the
//! [`World`] ([`TrainerRecipe`]).
//!
//! ```
//! use std::sync::Arc;
//! use envrl::{Environment, Observation, StepOutcome, TrainerConfig, World};
//! use envrl_algos::recipe::{TrainerRecipe, builtin_objectives, word_tokenizer};
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
//! let world = World::verbatim(Coin::default, (0..4).collect(), (4..6).collect());
//! // The vocabulary: the world's texts and every built-in objective's wording for this world.
//! let texts = ["pick heads a coin heads tails".to_string()];
//! let tokenizer = Arc::new(word_tokenizer(texts, &builtin_objectives(), &world.info));
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
//!     world,
//!     extra_aux: Vec::new(),
//! }
//! .build(model)?;
//! let metrics = trainer.train_iteration()?;
//! assert_eq!(metrics.iteration, 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::sync::Arc;

use envrl::{AuxObjective, Tokenizer, Trainer, TrainerConfig, TrainerParts, World, WorldInfo};

use crate::algorithms::algorithm::{AlgorithmConfig, AuxConfig};
use crate::runtime::lm::CausalLm;
use crate::runtime::tokenizer::WordTokenizer;

/// Every built-in objective ([`AuxConfig::all`]) with its default settings: what a
/// from-scratch vocabulary must cover so that runs with and without objectives share one
/// tokenizer.
pub fn builtin_objectives() -> Vec<Box<dyn AuxObjective>> {
    AuxConfig::all().iter().map(AuxConfig::build).collect()
}

/// A word tokenizer over `texts` plus the prompt words `objectives` use in `world`
/// ([`AuxObjective::prompt_words`]). Pass every objective an arm of the experiment may train
/// (for instance [`builtin_objectives`] and your own): a word the tokenizer never saw becomes
/// `<unk>`, and an objective whose targets are `<unk>` teaches nothing (the trainer logs
/// `aux/unk_rate/<name>` and warns above 5 %).
pub fn word_tokenizer(
    texts: impl IntoIterator<Item = String>,
    objectives: &[Box<dyn AuxObjective>],
    world: &WorldInfo,
) -> WordTokenizer {
    let mut texts: Vec<String> = texts.into_iter().collect();
    texts.extend(objectives.iter().flat_map(|o| o.prompt_words(world)));
    WordTokenizer::from_corpus(texts.iter().map(String::as_str))
}

/// A trainer from its parts: the configs, the tokenizer, the world and objectives of the
/// caller's own. `envrl train` assembles its trainers with this too.
pub struct TrainerRecipe<'a> {
    /// Iterations, batch, learning rate, sampling, evaluation, checkpoints.
    pub trainer: &'a TrainerConfig,
    /// Estimator, actor loss and the configured objectives.
    pub algorithm: &'a AlgorithmConfig,
    /// The model's tokenizer.
    pub tokenizer: Arc<dyn Tokenizer>,
    /// The world.
    pub world: World,
    /// Objectives of the caller's own, trained after the configured ones.
    pub extra_aux: Vec<Box<dyn AuxObjective>>,
}

impl TrainerRecipe<'_> {
    /// The trainer, with the configured objectives, a critic when the estimator needs one, and
    /// the caller's objectives after the configured ones.
    ///
    /// # Errors
    /// [`envrl::Error::InvalidConfig`] when the trainer config does not fit the tasks or the
    /// model.
    pub fn build(self, model: CausalLm) -> envrl::Result<Trainer<CausalLm>> {
        let parts = self.algorithm.build();
        let critic = self.algorithm.build_critic(&model);
        Trainer::new(
            self.trainer.clone(),
            model,
            TrainerParts {
                world: self.world,
                tokenizer: self.tokenizer,
                advantage: parts.advantage,
                loss: parts.loss,
                critic,
                aux: parts.aux.into_iter().chain(self.extra_aux).collect(),
            },
        )
    }
}
