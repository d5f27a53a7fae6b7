//! The learner: it owns the policy being trained, its reference, the optimizer, the estimator,
//! the losses and the critic, and turns a gathered rollout into the update — the learner batch,
//! the recomputed old log-probabilities, the plan and the optimizer steps.

use std::sync::Arc;
use std::time::Instant;

use burn::optim::ModuleOptimizer;

use super::record::{Recompute, UpdateSummary};
use super::{TrainerParts, UNK_WARN_RATE, adamw};
use crate::advantage::Advantage;
use crate::auxiliary::AuxObjective;
use crate::critic::{Critic, ValueStep, ValueUpdate};
use crate::distributed::{Collective, gather, share_of};
use crate::env::{World, WorldInfo};
use crate::error::Result;
use crate::policy::{Policy, ScoreRow, Tokenizer};
use crate::trainer::metric_names as names;
use crate::trainer::{
    AuxBatch, AuxStream, IterationMetrics, LearnerBatch, LossAggregation, OptimizerStep, PlanSizes,
    PolicyLoss, StepRunner, TrainableWeights, TrainerConfig, optimizer_steps,
};
use crate::trajectory::RolloutBatch;

/// What one iteration's learning produced, for its record.
pub(super) struct Learned {
    pub(super) learner: LearnerBatch,
    pub(super) recompute: Option<Recompute>,
    pub(super) planned_steps: usize,
    pub(super) update: UpdateSummary,
    pub(super) update_secs: f64,
}

/// Where an update happens: the iteration, whether another program sampled the rollout, the
/// objectives' random streams and the exchange with the other ranks.
pub(super) struct UpdateContext<'a> {
    pub(super) iteration: usize,
    pub(super) sampled_elsewhere: bool,
    pub(super) aux_streams: &'a mut [AuxStream],
    pub(super) sync: &'a dyn Collective,
}

/// Learns from rollouts.
pub(super) struct Learner<P: Policy> {
    pub(super) config: TrainerConfig,
    pub(super) policy: P,
    pub(super) reference: Option<P>,
    pub(super) optimizer: ModuleOptimizer,
    pub(super) advantage: Box<dyn Advantage>,
    pub(super) loss: Box<dyn PolicyLoss>,
    pub(super) aux: Vec<Box<dyn AuxObjective>>,
    pub(super) critic: Option<Box<dyn Critic>>,
    pub(super) tokenizer: Arc<dyn Tokenizer>,
    /// What the objectives read of the world.
    pub(super) world: WorldInfo,
    pub(super) optimizer_steps: usize,
    /// The trainable weights the run started from (for `policy/weight_distance`).
    pub(super) start_weights: Option<TrainableWeights>,
    /// Objectives already warned about for unknown target tokens (once each).
    unk_warned: Vec<String>,
}

impl<P: Policy> Learner<P> {
    /// A learner of `policy` with the estimator, losses, objectives and critic of `parts`, a
    /// fresh optimizer (and a frozen reference when the loss has a KL term); the world goes
    /// back to the caller (the actor plays in it; the learner keeps only its facts).
    pub(super) fn new(config: TrainerConfig, policy: P, parts: TrainerParts) -> (Self, World) {
        let reference = parts.loss.needs_reference().then(|| policy.valid());
        let learner = Self {
            optimizer: adamw(&config),
            start_weights: Some(TrainableWeights::of(&policy)),
            config,
            reference,
            policy,
            advantage: parts.advantage,
            loss: parts.loss,
            aux: parts.aux,
            critic: parts.critic,
            tokenizer: parts.tokenizer,
            world: parts.world.info.clone(),
            optimizer_steps: 0,
            unk_warned: Vec::new(),
        };
        (learner, parts.world)
    }

    /// The update on `batch`: the learner batch, the recomputed old log-probabilities (when
    /// asked, or when another program or policy version sampled), the plan and the optimizer
    /// steps.
    ///
    /// # Errors
    /// [`crate::Error::Distributed`] when the exchange with the other ranks fails.
    pub(super) fn learn(&mut self, batch: &RolloutBatch, at: UpdateContext<'_>) -> Result<Learned> {
        // The learner batch: rows, values, advantages and the objectives' examples.
        let mut learner = self.learner_batch(batch, at.aux_streams, at.sync)?;
        if learner.nonfinite_rows > 0 {
            log::warn!(
                "{} rows with non-finite advantages (rewards?) at iteration {}; \
                 their advantages were set to 0",
                learner.nonfinite_rows,
                at.iteration
            );
        }

        // Rows of similar lengths together in each optimizer step, so that its micro-batches
        // (and the recompute's chunks) pad less. The steps keep their rows; only the mean of
        // micro-batch means depends on how a step is cut, so it keeps the order.
        if self.config.loss_aggregation != LossAggregation::MicroBatchTokenMean {
            learner.sort_rows_within(self.config.mini_batch_rows);
        }

        // The old log-probabilities from the learner's weights, when asked (by default when the
        // acting copy is lighter than the learner's, or the rollout may be stale). A server's
        // log-probabilities come from another program (and some are not reported): the
        // learner's are the loss's.
        let recompute =
            (at.sampled_elsewhere || self.config.recomputes_old_logprobs()).then(|| {
                let start = Instant::now();
                let recomputed = self.learner_logprobs(&learner.rows);
                Recompute {
                    gap: learner.replace_old_logprobs(recomputed, self.config.rollout_is_cap),
                    seconds: start.elapsed().as_secs_f64(),
                }
            });

        // The plan: which rows and examples go into which micro-batch of which step.
        let plan = optimizer_steps(PlanSizes {
            row_tokens: &learner.row_tokens(),
            aux_tokens: &learner.aux_tokens(),
            mini_batch_rows: self.config.mini_batch_rows,
            micro_batch_rows: self.config.micro_batch_rows,
            aggregation: self.config.loss_aggregation,
        });

        // The steps.
        let update_start = Instant::now();
        let update = self.run_steps(&learner, &plan, at.iteration, at.sync)?;
        Ok(Learned {
            update_secs: update_start.elapsed().as_secs_f64(),
            planned_steps: plan.len(),
            learner,
            recompute,
            update,
        })
    }

    /// How far the trainable weights moved from where the run started, into `metrics`.
    pub(super) fn record_weight_distance(&self, metrics: &mut IterationMetrics) {
        let moved = self
            .start_weights
            .as_ref()
            .and_then(|start| TrainableWeights::of(&self.policy).distance_from(start));
        if let Some(moved) = moved {
            metrics.set(names::WEIGHT_DISTANCE, moved.l2);
            if let Some(relative) = moved.relative {
                metrics.set(names::WEIGHT_DISTANCE_REL, relative);
            }
        }
    }

    /// Warns once per objective whose targets are more than [`UNK_WARN_RATE`] unknown tokens:
    /// its loss can still fall (it learns to predict `<unk>`) while it teaches nothing.
    pub(super) fn warn_unknown_targets(&mut self, metrics: &IterationMetrics) {
        for aux in &self.aux {
            let name = aux.name();
            let rate = metrics.get(&names::aux_unk_rate(name)).unwrap_or(0.0);
            if rate > UNK_WARN_RATE && !self.unk_warned.iter().any(|n| n == name) {
                log::warn!(
                    "{:.0} % of objective `{name}`'s target tokens are unknown to the tokenizer \
                     (<unk>): it learns nothing from them. Build the word tokenizer from the \
                     texts the objective produces too (AuxObjective::prompt_words, the \
                     environment's observations)",
                    100.0 * rate
                );
                self.unk_warned.push(name.to_string());
            }
        }
    }

    /// The learner's log-probability of every response token of `rows`, scored off the graph
    /// in chunks of the micro-batch size (the mini-batch size without micro-batches).
    fn learner_logprobs(&self, rows: &[ScoreRow]) -> Vec<Vec<f32>> {
        let scorer = self.policy.valid();
        let chunk = match self.config.micro_batch_rows {
            0 => self.config.mini_batch_rows,
            micro => micro,
        };
        rows.chunks(chunk.max(1))
            .flat_map(|chunk| {
                let scores = scorer.score(chunk, false);
                let width = scores.logprobs.dims()[1];
                let values: Vec<f32> = scores.logprobs.into_data().iter::<f32>().collect();
                chunk
                    .iter()
                    .enumerate()
                    .map(|(i, row)| values[i * width..i * width + row.target.len()].to_vec())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Scores the rollout's rows with the critic (when the estimator needs values), computes
    /// the advantages and draws each objective's examples from its own stream.
    fn learner_batch(
        &mut self,
        batch: &RolloutBatch,
        aux_streams: &mut [AuxStream],
        sync: &dyn Collective,
    ) -> Result<LearnerBatch> {
        let rows = LearnerBatch::score_rows(batch);
        let values = self.critic_values(&rows, sync)?;
        let advantages = self.advantage.compute_tokens(batch, values.as_deref());
        let tokenizer = self.tokenizer.as_ref();
        let aux = self
            .aux
            .iter()
            .zip(aux_streams)
            .map(|(aux, stream)| {
                let examples = aux.examples(batch, &self.world, tokenizer, &mut stream.rng);
                AuxBatch::filtered(examples, self.config.max_aux_tokens)
            })
            .collect();
        Ok(LearnerBatch::new(batch, rows, advantages, values, aux))
    }

    /// The critic's values of every row, in mini-batch chunks, when the estimator needs them.
    /// In a data-parallel run each rank scores its share of the rows and the ranks gather them.
    fn critic_values(
        &self,
        rows: &[ScoreRow],
        sync: &dyn Collective,
    ) -> Result<Option<Vec<Vec<f32>>>> {
        if !self.advantage.needs_values() {
            return Ok(None);
        }
        let Some(critic) = self.critic.as_ref() else {
            return Ok(None);
        };
        let (rank, size) = (sync.rank(), sync.size());
        let mine: Vec<Vec<f32>> = rows[share_of(&(0..rows.len()), rank, size)]
            .chunks(self.config.mini_batch_rows)
            .flat_map(|chunk| critic.values(chunk))
            .collect();
        if size == 1 {
            return Ok(Some(mine));
        }
        let (parts, _) = gather(sync, "critic values", &mine)?;
        Ok(Some(parts.into_iter().flatten().collect()))
    }

    /// The critic's step on this rank's share of `step`'s rows, when there is a critic to train.
    fn critic_step(
        &mut self,
        learner: &LearnerBatch,
        step: &OptimizerStep,
        sync: &dyn Collective,
    ) -> Result<Option<ValueUpdate>> {
        let (Some(critic), Some(values), Some(returns)) = (
            self.critic.as_mut(),
            learner.values.as_ref(),
            learner.advantages.returns.as_ref(),
        ) else {
            return Ok(None);
        };
        if step.rows.is_empty() {
            return Ok(None);
        }
        let share = share_of(&step.rows, sync.rank(), sync.size());
        let value_step = ValueStep {
            rows: &learner.rows[share.clone()],
            old_values: &values[share.clone()],
            returns: &returns[share],
            step_tokens: learner.rows[step.rows.clone()]
                .iter()
                .map(|r| r.target.len())
                .sum(),
        };
        critic.update(value_step, sync).map(Some)
    }

    /// Runs the planned optimizer steps (and the critic's, on the same rows).
    fn run_steps(
        &mut self,
        learner: &LearnerBatch,
        plan: &[OptimizerStep],
        iteration: usize,
        sync: &dyn Collective,
    ) -> Result<UpdateSummary> {
        let lambdas: Vec<f64> = self
            .aux
            .iter()
            .map(|aux| aux.schedule().value(iteration, self.config.iterations))
            .collect();
        let mut summary = UpdateSummary::default();
        for step in plan {
            if let Some(update) = self.critic_step(learner, step, sync)? {
                summary.means.add_all(update.stats);
                summary.exchanged.seconds += update.exchange_seconds;
                summary.exchanged.bytes += update.exchanged_bytes;
            }
            let every = self.config.grad_diagnostics_every;
            let diagnose = every > 0 && self.optimizer_steps.is_multiple_of(every);
            let outcome = StepRunner {
                policy: &mut self.policy,
                optimizer: &mut self.optimizer,
                reference: self.reference.as_ref(),
                loss: self.loss.as_ref(),
                aux: &self.aux,
                lambdas: &lambdas,
                learning_rate: self.config.learning_rate,
                max_grad_norm: self.config.max_grad_norm,
                clip: self.config.clip,
                sync,
            }
            .run(learner, step, diagnose)?;
            self.optimizer_steps += 1;
            summary.tokens += outcome.tokens;
            summary.exchanged.seconds += outcome.exchanged.seconds;
            summary.exchanged.bytes += outcome.exchanged.bytes;
            if outcome.applied {
                summary.means.add_all(outcome.stats);
            } else {
                log::warn!("iteration {iteration}: an optimizer step was skipped");
                summary.skipped += 1;
            }
        }
        summary.lambdas = lambdas;
        Ok(summary)
    }
}
