//! A custom auxiliary objective in one page: **reward prediction**. From each step, the agent
//! learns to predict whether its episode will be won (`you win`) or not (`nothing`), given the
//! task, the observation and the action. It plugs into the trainer through the
//! `envrl::AuxObjective` trait alone; no library file changes. The set-up uses the library
//! crates only (`envrl`, `envrl-algos`, `envrl-envs`), the way a crate of your own would.
//!
//! ```text
//! cargo run --release -p envrl-examples --example custom_aux -- [iterations]
//! ```

use std::sync::Arc;

use anyhow::{Context, Result};
use burn::tensor::Device;
use envrl::{
    ActionForm, AuxExample, AuxObjective, BehaviourCloning, RolloutBatch, Schedule, ScoreRow,
    Tokenizer, TrainerConfig, World, WorldInfo, metric_names,
};
use envrl_algos::recipe::{TrainerRecipe, builtin_objectives, word_tokenizer};
use envrl_algos::{AlgorithmConfig, LmConfig};
use envrl_envs::keydoor::{KeyDoor, KeyDoorProjection, KeyDoorPrompt, random_agent_rows};
use rand::SeedableRng;
use rand::seq::index::sample;
use rand_chacha::ChaCha8Rng;

/// Predicts the episode's outcome from one step.
struct RewardPrediction {
    schedule: Schedule,
    examples_per_iteration: usize,
}

impl AuxObjective for RewardPrediction {
    fn name(&self) -> &str {
        "reward_prediction"
    }

    fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    fn examples(
        &self,
        batch: &RolloutBatch,
        _world: &WorldInfo,
        tokenizer: &dyn Tokenizer,
        rng: &mut ChaCha8Rng,
    ) -> Vec<AuxExample> {
        // Every valid step is a candidate; sample a fixed budget with the run's RNG.
        let rows: Vec<_> = batch.rows().filter(|r| r.step.valid).collect();
        let n = rows.len().min(self.examples_per_iteration);
        sample(rng, rows.len(), n)
            .into_iter()
            .map(|i| {
                let r = rows[i];
                // Context: the step in the world's own words; target: the outcome, then EOS.
                let prompt = format!(
                    "task : {} . {} action : {}",
                    r.trajectory.task, r.step.observation, r.step.action
                );
                let outcome = if r.trajectory.won() {
                    "you win"
                } else {
                    "nothing"
                };
                AuxExample::own(ScoreRow {
                    context: tokenizer.encode_prompt(&prompt),
                    target: tokenizer.encode_response(outcome),
                })
            })
            .collect()
    }
    // `loss` keeps its default: token-mean cross-entropy over the target tokens.
}

fn main() -> Result<()> {
    let iterations: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()
        .context("iterations")?
        .unwrap_or(10);
    let objective = RewardPrediction {
        schedule: Schedule::Constant { start: 0.1 },
        examples_per_iteration: 64,
    };

    // 1. The world: a corridor of 4 rooms, its prompt and parser, training and held-out tasks;
    //    its replies are bare actions.
    let world = World::new(|| KeyDoor::new(4, 12), KeyDoorPrompt, KeyDoorProjection)
        .with_tasks((0..1000).collect(), (100_000..100_064).collect())
        .with_actions(ActionForm::Bare);

    // 2. A word tokenizer over the world's texts and every objective's wording in it (the
    //    built-in ones and ours), so that no target is `<unk>`.
    let mut objectives = builtin_objectives();
    objectives.push(Box::new(objective));
    let tokenizer = Arc::new(word_tokenizer(KeyDoor::corpus(), &objectives, &world.info));
    let ours = objectives.pop().expect("pushed above");

    // 3. A tiny model, warm-started on the reply format (a random agent's steps: the world has
    //    no expert).
    let device = Device::flex().autodiff();
    let model = LmConfig::tiny(tokenizer.vocab_size()).init(&device, 0)?;
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let rows = random_agent_rows(tokenizer.as_ref(), 4, 12, 200, &mut rng);
    let warm_start = BehaviourCloning {
        steps: 150,
        batch_size: 64,
        learning_rate: 3e-3,
        max_grad_norm: 1.0,
        context_weight: 0.0,
    };
    let (model, _) = warm_start.train(model, &rows, &mut rng);

    // 4. The trainer: GRPO, plus our objective.
    let config = TrainerConfig {
        iterations,
        groups: 16,
        group_size: 8,
        max_steps: 12,
        mini_batch_rows: 256,
        learning_rate: 3e-4,
        weight_decay: 0.0,
        sampling: envrl::SamplingParams {
            max_new_tokens: 4,
            ..Default::default()
        },
        eval_every: 0,
        checkpoint_every: 0,
        ..Default::default()
    };
    let mut trainer = TrainerRecipe {
        trainer: &config,
        algorithm: &AlgorithmConfig::default(),
        tokenizer,
        world,
        extra_aux: vec![ours],
    }
    .build(model)?;

    // Train and watch the new loss fall while the agent learns.
    for _ in 0..iterations {
        let m = trainer.train_iteration()?;
        println!(
            "iter {:>3}  success {:.2}  loss/aux/reward_prediction {:.3}",
            m.iteration,
            m.value(metric_names::EPISODE_SUCCESS)?,
            m.value(&metric_names::aux_loss("reward_prediction"))?,
        );
    }
    Ok(())
}
