//! A custom auxiliary objective in one page: **reward prediction**. From each step, the agent
//! learns to predict whether its episode will be won (`you win`) or not (`nothing`), given the
//! task, the observation and the action. It plugs into the trainer through the
//! `envrl::AuxObjective` trait alone; no library file changes.
//!
//! ```text
//! cargo run --release -p envrl-examples --example custom_aux -- [iterations]
//! ```

use anyhow::{Context, Result};
use burn::tensor::Device;
use envrl::{AuxExample, AuxObjective, RolloutBatch, Schedule, ScoreRow, Tokenizer};
use envrl_examples::keydoor::{KeyDoorSettings, build_with};
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
                AuxExample {
                    row: ScoreRow {
                        context: tokenizer.encode_prompt(&prompt),
                        target: tokenizer.encode_response(outcome),
                    },
                }
            })
            .collect()
    }
    // `loss` keeps its default: token-mean cross-entropy over the target tokens.
}

fn main() -> Result<()> {
    envrl_examples::keep_freed_memory();
    envrl_examples::init_logging();
    let iterations: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()
        .context("iterations")?
        .unwrap_or(10);

    // The usual key-and-door run, plus our objective at a constant weight of 0.1.
    let mut settings = KeyDoorSettings::quick(0);
    settings.trainer.iterations = iterations;
    settings.trainer.eval_every = 0;
    let objective = RewardPrediction {
        schedule: Schedule::Constant { start: 0.1 },
        examples_per_iteration: 64,
    };
    let mut run = build_with(&settings, &Device::flex(), vec![Box::new(objective)])?;

    // Train and watch the new loss fall while the agent learns.
    for _ in 0..iterations {
        let m = run.trainer.train_iteration();
        println!(
            "iter {:>3}  success {:.2}  loss/aux/reward_prediction {:.3}",
            m.iteration,
            m.get("episode/success").unwrap_or(0.0),
            m.get("loss/aux/reward_prediction").unwrap_or(f64::NAN)
        );
    }
    Ok(())
}
