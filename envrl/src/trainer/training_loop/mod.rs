//! The [`Trainer`]: one iteration as labelled steps (act, learner batch, plan, optimizer steps,
//! record) and the run loop; acting and evaluation in `acting.rs`.

use std::path::PathBuf;
use std::time::Instant;

use burn::optim::ModuleOptimizer;

use crate::critic::{ValueStep, ValueUpdate};
use crate::distributed::{GradientSync, SingleProcess, gather, share_of};
use crate::env::Environment;
use crate::error::{Error, Result};
use crate::policy::{Policy, RolloutWeights, ScoreRow};
use crate::rollout::PolicyServer;
use crate::trainer::crash_point::crash_point;
use crate::trainer::metric_names as names;
use crate::trainer::{
    AuxBatch, FusedAdamW, IterationMetrics, LearnerBatch, LossAggregation, MetricsSink,
    OptimizerStep, PlanSizes, RunStreams, StepRunner, TrainableWeights, TrainerConfig,
    optimizer_steps,
};
use crate::trajectory::RolloutBatch;

mod acting;
mod checkpointing;
mod parts;
mod record;
mod rollout_job;

use parts::group_size_warning;
pub use parts::{EvalReport, TrainerParts};
use record::{IterationRecord, Recompute, Seconds, UpdateSummary};
pub(crate) use rollout_job::PendingRollout;
use rollout_job::{BoxedServer, staleness};

/// Evaluation uses its own RNG, derived from the run seed by this offset (verl-agent's `+1000`).
pub const EVAL_SEED_OFFSET: u64 = 1000;

/// The fraction of an objective's target tokens that are unknown above which the trainer warns.
pub const UNK_WARN_RATE: f64 = 0.05;

/// Runs training: rollout → learner batch → plan of optimizer steps → AdamW steps with
/// gradient clipping → metrics → checkpoint.
pub struct Trainer<P: Policy> {
    config: TrainerConfig,
    policy: P,
    reference: Option<P>,
    optimizer: ModuleOptimizer,
    parts: TrainerParts,
    envs: Vec<Box<dyn Environment>>,
    streams: RunStreams,
    iteration: usize,
    env_steps: usize,
    optimizer_steps: usize,
    checkpoint_dir: Option<PathBuf>,
    /// The iteration of the checkpoint last written or resumed from (never written twice).
    saved_at: Option<usize>,
    last_rollout: Option<RolloutBatch>,
    /// Objectives already warned about for unknown target tokens (once each).
    unk_warned: Vec<String>,
    /// The exchange with the other ranks of a data-parallel run ([`SingleProcess`] alone).
    sync: Box<dyn GradientSync>,
    /// The inference server that samples the rollouts, when not this process.
    server: Option<BoxedServer<P>>,
    /// The policy version the server holds (the iteration it was published at).
    served: Option<usize>,
    /// Seconds spent publishing policies to the server since the last iteration's record.
    publish_secs: f64,
    /// The next iteration's rollout, played during this one's update (`max_staleness` 1).
    pending: Option<PendingRollout>,
    /// The trainable weights the run started from (for `policy/weight_distance`).
    start_weights: Option<TrainableWeights>,
    /// Why this trainer cannot go on: a rollout playing ahead failed after the update it
    /// overlapped had changed the weights, so only a resume from a checkpoint continues exactly.
    stopped: Option<String>,
}

/// What one iteration's learning produced, for its record.
struct Learned {
    learner: LearnerBatch,
    recompute: Option<Recompute>,
    planned_steps: usize,
    update: UpdateSummary,
    update_secs: f64,
}

/// AdamW with the config's weight decay (betas 0.9/0.999, ε 1e-8; clipping is global and done
/// by the trainer).
fn adamw(config: &TrainerConfig) -> ModuleOptimizer {
    FusedAdamW::new(1e-8, config.weight_decay as f32).init()
}

impl<P: Policy> Trainer<P> {
    /// Builds a trainer for `policy`, which must live on an autodiff device.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] when the config is invalid, when there are fewer training tasks
    /// than `groups`, when there are no evaluation tasks but evaluation is on, or when the
    /// advantage estimator needs a critic and none is given.
    pub fn new(config: TrainerConfig, policy: P, parts: TrainerParts) -> Result<Self> {
        config.validate()?;
        config.validate_against_tasks(parts.world.train_tasks.len())?;
        if config.eval_every > 0 && parts.world.eval_tasks.is_empty() {
            return Err(Error::config(
                "eval_every",
                "evaluation is on but there are no eval tasks",
            ));
        }
        if parts.advantage.needs_values() && parts.critic.is_none() {
            return Err(Error::config(
                "critic",
                format!(
                    "the `{}` estimator needs a critic (TrainerParts::critic)",
                    parts.advantage.name()
                ),
            ));
        }
        let device = policy
            .devices()
            .first()
            .cloned()
            .ok_or_else(|| Error::config("policy", "the policy has no parameters"))?;
        if !device.is_autodiff() {
            return Err(Error::config(
                "policy",
                "the policy must live on an autodiff device",
            ));
        }
        if let Some(warning) = group_size_warning(config.group_size, parts.advantage.as_ref()) {
            log::warn!("{warning}");
        }
        if config.rollout_weights != RolloutWeights::F32 {
            // Refused here, not at the first rollout.
            policy.acting_copy(config.rollout_weights)?;
        }
        let reference = parts.loss.needs_reference().then(|| policy.valid());
        let optimizer = adamw(&config);
        let streams = RunStreams::new(config.seed, parts.aux.iter().map(|a| a.name()));
        let start_weights = Some(TrainableWeights::of(&policy));
        Ok(Self {
            config,
            policy,
            reference,
            optimizer,
            parts,
            envs: Vec::new(),
            streams,
            iteration: 0,
            env_steps: 0,
            optimizer_steps: 0,
            checkpoint_dir: None,
            saved_at: None,
            last_rollout: None,
            unk_warned: Vec::new(),
            sync: Box::new(SingleProcess),
            server: None,
            served: None,
            publish_secs: 0.0,
            pending: None,
            stopped: None,
            start_weights,
        })
    }

    /// Saves checkpoints under `dir` every `config.checkpoint_every` iterations.
    pub fn with_checkpoint_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.checkpoint_dir = Some(dir.into());
        self
    }

    /// Trains as one rank of a data-parallel run ([`crate::distributed`]): every rank plays its
    /// share of the groups (and of each evaluation) and gathers the others', computes its share
    /// of each optimizer step and sums the gradients with the others, so that every rank steps
    /// to the same weights. Only rank 0 records metrics and writes checkpoints.
    pub fn with_gradient_sync(mut self, sync: impl GradientSync + 'static) -> Self {
        self.sync = Box::new(sync);
        self
    }

    /// Samples the rollouts (training and evaluation) on `server` instead of this process: the
    /// trainer publishes the policy to it before each iteration's rollout (and after a resume),
    /// and recomputes the old log-probabilities with the learner's weights, logging the mean
    /// difference from the server's (`rollout/logprob_mismatch`, over the tokens it reported).
    pub fn with_policy_server(mut self, server: impl PolicyServer<P> + Send + 'static) -> Self {
        self.server = Some(Box::new(server));
        self.served = None;
        self
    }

    /// The exchange with the other ranks ([`SingleProcess`] unless
    /// [`Trainer::with_gradient_sync`] gave one).
    pub fn gradient_sync(&self) -> &dyn GradientSync {
        self.sync.as_ref()
    }

    /// The config of the run.
    pub fn config(&self) -> &TrainerConfig {
        &self.config
    }

    /// The policy being trained.
    pub fn policy(&self) -> &P {
        &self.policy
    }

    /// The world it trains in.
    pub fn world(&self) -> &crate::env::World {
        &self.parts.world
    }

    /// Iterations completed.
    pub fn iteration(&self) -> usize {
        self.iteration
    }

    /// Runs the remaining iterations, evaluating and checkpointing as configured (on rank 0 of a
    /// data-parallel run; the other ranks record nothing).
    ///
    /// # Errors
    /// [`Error::Io`] or [`Error::Checkpoint`] when a checkpoint cannot be written, the error
    /// of a [`MetricsSink`] that could not keep an iteration's metrics, or
    /// [`Error::Distributed`] when the exchange with the other ranks fails.
    pub fn run(&mut self, sink: &mut dyn MetricsSink) -> Result<()> {
        while self.iteration < self.config.iterations {
            let eval = (self.config.eval_every > 0
                && self.iteration.is_multiple_of(self.config.eval_every))
            .then(|| self.evaluate(self.config.eval_episodes))
            .transpose()?;
            let mut metrics = self.train_iteration()?;
            if let Some(report) = eval {
                metrics.set(names::EVAL_SUCCESS, report.success_rate);
                metrics.set(names::EVAL_RETURN, report.mean_return);
            }
            if self.sync.rank() == 0 {
                sink.record(&metrics)?;
            }
            crash_point("metrics-recorded");
            let every = self.config.checkpoint_every;
            if every > 0 && self.iteration.is_multiple_of(every) {
                self.save_checkpoint()?;
            }
        }
        Ok(())
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

    /// Runs one iteration: act, build the learner batch, plan the optimizer steps, run them,
    /// record the metrics. With `max_staleness` 1 the rollout was played during the previous
    /// iteration's update, and the next one plays during this one's.
    ///
    /// # Errors
    /// [`Error::RolloutServer`] when the rollout server fails, [`Error::InvalidConfig`] when a
    /// rollout is staler than `max_staleness`, [`Error::Distributed`] when the exchange with
    /// the other ranks fails (never in one process).
    pub fn train_iteration(&mut self) -> Result<IterationMetrics> {
        self.check_not_stopped()?;
        let start = Instant::now();
        // 1. Act: this iteration's tasks, each played by a group of `group_size` rollouts —
        // now, or ahead during the previous update.
        let (batch, stats, rollout_secs) = match self.pending.take() {
            Some(ahead) => (ahead.batch, ahead.stats, ahead.seconds),
            None => {
                let job = self.training_rollout_job()?;
                let (batch, stats) = self.finish_rollout(job.play())?;
                (batch, stats, start.elapsed().as_secs_f64())
            }
        };
        let stale = staleness(&batch, self.iteration);
        if stale.max > self.config.max_staleness {
            return Err(Error::config(
                "max_staleness",
                format!(
                    "iteration {}'s rollout has trajectories played {} updates ago; the bound \
                     is {}",
                    self.iteration, stale.max, self.config.max_staleness
                ),
            ));
        }

        // 2–4. Learn from it; the next iteration's rollout plays meanwhile when it may be stale.
        let ahead = (self.config.max_staleness > 0 && self.iteration + 1 < self.config.iterations)
            .then(|| self.training_rollout_job())
            .transpose()?;
        let (learned, waited) = match ahead {
            None => (self.learn(&batch)?, None),
            Some(job) => {
                let (learned, played, waited) = std::thread::scope(|scope| {
                    let playing = scope.spawn(move || job.play());
                    let learned = self.learn(&batch);
                    let waiting = Instant::now();
                    let played = playing
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                    (learned, played, waiting.elapsed().as_secs_f64())
                });
                let seconds = played.seconds;
                let (next, stats) = self.finish_rollout(played).inspect_err(|e| {
                    self.stopped = Some(format!(
                        "iteration {}'s update ran, but the next rollout, playing during it, \
                         failed ({e}); resume from the last checkpoint",
                        self.iteration
                    ));
                })?;
                self.pending = Some(PendingRollout {
                    batch: next,
                    stats,
                    seconds,
                });
                (learned?, Some(waited))
            }
        };

        // 5. Record.
        self.env_steps += stats.env_steps;
        let mut metrics = IterationRecord {
            iteration: self.iteration,
            env_steps: self.env_steps,
            learning_rate: self.config.learning_rate,
            batch: &batch,
            stats: &stats,
            learner: &learned.learner,
            aux_names: self.parts.aux.iter().map(|a| a.name()).collect(),
            unk_id: self.parts.tokenizer.unk_id(),
            planned_steps: learned.planned_steps,
            update: learned.update,
            recompute: learned.recompute,
            seconds: Seconds {
                wall: start.elapsed().as_secs_f64(),
                rollout: rollout_secs,
                update: learned.update_secs,
                publish: self
                    .server
                    .is_some()
                    .then(|| std::mem::take(&mut self.publish_secs)),
            },
        }
        .metrics();
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
        if self.config.max_staleness > 0 {
            metrics.set(names::STALENESS, stale.mean);
            if let Some(waited) = waited {
                metrics.set(names::ROLLOUT_WAIT_S, waited);
            }
        }
        self.warn_unknown_targets(&metrics);
        self.iteration += 1;
        log::info!(
            "iteration {} success {:.3} return {:.3}",
            metrics.iteration,
            batch.success_rate(),
            batch.mean_return()
        );
        self.last_rollout = Some(batch);
        Ok(metrics)
    }

    /// An error when a rollout that played ahead failed after its update (the weights moved
    /// on without the next iteration's rollout).
    pub(super) fn check_not_stopped(&self) -> Result<()> {
        match &self.stopped {
            Some(why) => Err(Error::Stopped {
                reason: why.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Steps 2–4 of an iteration on `batch`: the learner batch, the recomputed old
    /// log-probabilities (when asked, or when another program or policy version sampled), the
    /// plan and the optimizer steps.
    fn learn(&mut self, batch: &RolloutBatch) -> Result<Learned> {
        // 2. The learner batch: rows, values, advantages and the objectives' examples.
        let mut learner = self.learner_batch(batch)?;
        if learner.nonfinite_rows > 0 {
            log::warn!(
                "{} rows with non-finite advantages (rewards?) at iteration {}; \
                 their advantages were set to 0",
                learner.nonfinite_rows,
                self.iteration
            );
        }

        // 2a. Rows of similar lengths together in each optimizer step, so that its
        // micro-batches (and the recompute's chunks) pad less. The steps keep their rows; only
        // the mean of micro-batch means depends on how a step is cut, so it keeps the order.
        if self.config.loss_aggregation != LossAggregation::MicroBatchTokenMean {
            learner.sort_rows_within(self.config.mini_batch_rows);
        }

        // 2b. The old log-probabilities from the learner's weights, when asked (by default
        // when the acting copy is lighter than the learner's, or the rollout may be stale).
        // A server's log-probabilities come from another program (and some are not reported):
        // the learner's are the loss's. (While a rollout plays ahead it holds the server, and
        // `max_staleness` > 0 recomputes anyway.)
        let recompute =
            (self.server.is_some() || self.config.recomputes_old_logprobs()).then(|| {
                let start = Instant::now();
                let recomputed = self.learner_logprobs(&learner.rows);
                Recompute {
                    gap: learner.replace_old_logprobs(recomputed, self.config.rollout_is_cap),
                    seconds: start.elapsed().as_secs_f64(),
                }
            });

        // 3. The plan: which rows and examples go into which micro-batch of which step.
        let plan = optimizer_steps(PlanSizes {
            row_tokens: &learner.row_tokens(),
            aux_tokens: &learner.aux_tokens(),
            mini_batch_rows: self.config.mini_batch_rows,
            micro_batch_rows: self.config.micro_batch_rows,
            aggregation: self.config.loss_aggregation,
        });

        // 4. Run the steps.
        let update_start = Instant::now();
        let update = self.run_steps(&learner, &plan)?;
        Ok(Learned {
            update_secs: update_start.elapsed().as_secs_f64(),
            planned_steps: plan.len(),
            learner,
            recompute,
            update,
        })
    }

    /// The rollout of the last training iteration, if one ran.
    pub fn last_rollout(&self) -> Option<&RolloutBatch> {
        self.last_rollout.as_ref()
    }

    /// Scores the rollout's rows with the critic (when the estimator needs values), computes
    /// the advantages and draws each objective's examples from its own stream.
    ///
    /// # Errors
    /// [`Error::Distributed`] when the exchange with the other ranks fails.
    fn learner_batch(&mut self, batch: &RolloutBatch) -> Result<LearnerBatch> {
        let rows = LearnerBatch::score_rows(batch);
        let values = self.critic_values(&rows)?;
        let advantages = self
            .parts
            .advantage
            .compute_tokens(batch, values.as_deref());
        let tokenizer = self.parts.tokenizer.as_ref();
        let world = &self.parts.world.info;
        let aux = self
            .parts
            .aux
            .iter()
            .zip(&mut self.streams.aux)
            .map(|(aux, stream)| {
                let examples = aux.examples(batch, world, tokenizer, &mut stream.rng);
                AuxBatch::filtered(examples, self.config.max_aux_tokens)
            })
            .collect();
        Ok(LearnerBatch::new(batch, rows, advantages, values, aux))
    }

    /// The critic's values of every row, in mini-batch chunks, when the estimator needs them.
    /// In a data-parallel run each rank scores its share of the rows and the ranks gather them.
    ///
    /// # Errors
    /// [`Error::Distributed`] when the exchange with the other ranks fails.
    fn critic_values(&self, rows: &[ScoreRow]) -> Result<Option<Vec<Vec<f32>>>> {
        if !self.parts.advantage.needs_values() {
            return Ok(None);
        }
        let Some(critic) = self.parts.critic.as_ref() else {
            return Ok(None);
        };
        let (rank, size) = (self.sync.rank(), self.sync.size());
        let mine: Vec<Vec<f32>> = rows[share_of(&(0..rows.len()), rank, size)]
            .chunks(self.config.mini_batch_rows)
            .flat_map(|chunk| critic.values(chunk))
            .collect();
        if size == 1 {
            return Ok(Some(mine));
        }
        let (parts, _) = gather(self.sync.as_ref(), "critic values", &mine)?;
        Ok(Some(parts.into_iter().flatten().collect()))
    }

    /// The critic's step on this rank's share of `step`'s rows, when there is a critic to train.
    ///
    /// # Errors
    /// [`Error::Distributed`] when the exchange with the other ranks fails.
    fn critic_step(
        &mut self,
        learner: &LearnerBatch,
        step: &OptimizerStep,
    ) -> Result<Option<ValueUpdate>> {
        let (Some(critic), Some(values), Some(returns)) = (
            self.parts.critic.as_mut(),
            learner.values.as_ref(),
            learner.advantages.returns.as_ref(),
        ) else {
            return Ok(None);
        };
        if step.rows.is_empty() {
            return Ok(None);
        }
        let share = share_of(&step.rows, self.sync.rank(), self.sync.size());
        let value_step = ValueStep {
            rows: &learner.rows[share.clone()],
            old_values: &values[share.clone()],
            returns: &returns[share],
            step_tokens: learner.rows[step.rows.clone()]
                .iter()
                .map(|r| r.target.len())
                .sum(),
        };
        critic.update(value_step, self.sync.as_ref()).map(Some)
    }

    /// Runs the planned optimizer steps (and the critic's, on the same rows).
    fn run_steps(
        &mut self,
        learner: &LearnerBatch,
        plan: &[OptimizerStep],
    ) -> Result<UpdateSummary> {
        let lambdas: Vec<f64> = self
            .parts
            .aux
            .iter()
            .map(|aux| aux.schedule().value(self.iteration, self.config.iterations))
            .collect();
        let mut summary = UpdateSummary::default();
        for step in plan {
            if let Some(update) = self.critic_step(learner, step)? {
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
                loss: self.parts.loss.as_ref(),
                aux: &self.parts.aux,
                lambdas: &lambdas,
                learning_rate: self.config.learning_rate,
                max_grad_norm: self.config.max_grad_norm,
                clip: self.config.clip,
                sync: self.sync.as_ref(),
            }
            .run(learner, step, diagnose)?;
            self.optimizer_steps += 1;
            summary.tokens += outcome.tokens;
            summary.exchanged.seconds += outcome.exchanged.seconds;
            summary.exchanged.bytes += outcome.exchanged.bytes;
            if outcome.applied {
                summary.means.add_all(outcome.stats);
            } else {
                log::warn!(
                    "iteration {}: an optimizer step was skipped",
                    self.iteration
                );
                summary.skipped += 1;
            }
        }
        summary.lambdas = lambdas;
        Ok(summary)
    }
}
