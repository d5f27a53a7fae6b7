//! The [`Trainer`]: it sequences an [`Actor`](actor), which plays the policy in the world, and
//! a [`Learner`](learner), which turns each gathered rollout into the update; it keeps the run's
//! random streams, counters and checkpoints. One iteration: act (or take the rollout played
//! ahead), learn — while the actor plays the next rollout when it may be stale — and record.

use std::path::PathBuf;
use std::time::Instant;

use burn::optim::ModuleOptimizer;

use crate::distributed::{Collective, SingleProcess};
use crate::error::{Error, Result};
use crate::policy::Policy;
use crate::rollout::PolicyServer;
use crate::trainer::crash_point::crash_point;
use crate::trainer::metric_names as names;
use crate::trainer::{FusedAdamW, IterationMetrics, MetricsSink, RunStreams, TrainerConfig};
use crate::trajectory::RolloutBatch;

mod acting;
mod actor;
mod checkpointing;
mod learner;
mod parts;
mod pending;
mod record;

use actor::{Actor, Played, gather_rollouts};
use learner::{Learner, UpdateContext};
pub use parts::{EvalReport, TrainerParts};
pub(crate) use pending::PendingRollout;
use pending::staleness;
use record::{IterationRecord, Seconds};

/// Evaluation uses its own RNG, derived from the run seed by this offset (verl-agent's `+1000`).
pub const EVAL_SEED_OFFSET: u64 = 1000;

/// The fraction of an objective's target tokens that are unknown above which the trainer warns.
pub const UNK_WARN_RATE: f64 = 0.05;

/// Runs training: the actor's rollout → the learner's update (learner batch, plan, AdamW steps
/// with gradient clipping) → metrics → checkpoint.
pub struct Trainer<P: Policy> {
    config: TrainerConfig,
    /// Plays the policy: owns the environments and the inference server.
    actor: Actor<P>,
    /// Trains the policy: owns it, the optimizer, the losses and the critic.
    learner: Learner<P>,
    /// The run's random streams: tasks, rollout keys, the objectives' examples.
    streams: RunStreams,
    /// The exchange with the other ranks of a data-parallel run ([`SingleProcess`] alone).
    sync: Box<dyn Collective>,
    iteration: usize,
    env_steps: usize,
    checkpoint_dir: Option<PathBuf>,
    /// The iteration of the checkpoint last written or resumed from (never written twice).
    saved_at: Option<usize>,
    last_rollout: Option<RolloutBatch>,
    /// The next iteration's rollout, played during this one's update (`max_staleness` 1).
    pending: Option<PendingRollout>,
    /// Why this trainer cannot go on: a rollout playing ahead failed after the update it
    /// overlapped had changed the weights, so only a resume from a checkpoint continues exactly.
    stopped: Option<String>,
}

/// AdamW with the config's weight decay (betas 0.9/0.999, ε 1e-8; clipping is done by the
/// optimizer step, [`crate::trainer::GradClip`]).
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
        parts.check(&config, &policy)?;
        let streams = RunStreams::new(config.seed, parts.aux.iter().map(|a| a.name()));
        let (learner, world) = Learner::new(config.clone(), policy, parts);
        Ok(Self {
            actor: Actor::new(world, learner.tokenizer.clone(), &config),
            learner,
            config,
            streams,
            sync: Box::new(SingleProcess),
            iteration: 0,
            env_steps: 0,
            checkpoint_dir: None,
            saved_at: None,
            last_rollout: None,
            pending: None,
            stopped: None,
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
    pub fn with_collective(mut self, sync: impl Collective + 'static) -> Self {
        self.sync = Box::new(sync);
        self
    }

    /// Samples the rollouts (training and evaluation) on `server` instead of this process: the
    /// trainer publishes the policy to it before each iteration's rollout (and after a resume),
    /// and recomputes the old log-probabilities with the learner's weights, logging the mean
    /// difference from the server's (`rollout/logprob_mismatch`, over the tokens it reported).
    pub fn with_policy_server(self, server: impl PolicyServer<P> + Send + 'static) -> Self {
        self.with_boxed_policy_server(Box::new(server))
    }

    /// [`Trainer::with_policy_server`] for a server chosen at run time (any engine, spawned or
    /// running elsewhere) behind one type.
    pub fn with_boxed_policy_server(mut self, server: Box<dyn PolicyServer<P> + Send>) -> Self {
        self.actor.use_server(server);
        self
    }

    /// The exchange with the other ranks ([`SingleProcess`] unless
    /// [`Trainer::with_collective`] gave one).
    pub fn collective(&self) -> &dyn Collective {
        self.sync.as_ref()
    }

    /// The config of the run.
    pub fn config(&self) -> &TrainerConfig {
        &self.config
    }

    /// The policy being trained.
    pub fn policy(&self) -> &P {
        &self.learner.policy
    }

    /// The world it trains in.
    pub fn world(&self) -> &crate::env::World {
        self.actor.world()
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

    /// Runs one iteration: act, learn (the learner batch, the plan, the optimizer steps),
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
                let rollout = self.training_rollout();
                let (batch, stats) = self.act(&rollout)?;
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

        // 2. Learn from it; the actor plays the next iteration's rollout meanwhile when it may
        // be stale.
        let (learned, waited) = self.learn_while_playing_ahead(&batch)?;

        // 3. Record.
        self.env_steps += stats.env_steps;
        let mut metrics = IterationRecord {
            iteration: self.iteration,
            env_steps: self.env_steps,
            learning_rate: self.config.learning_rate,
            batch: &batch,
            stats: &stats,
            learner: &learned.learner,
            aux_names: self.learner.aux.iter().map(|a| a.name()).collect(),
            unk_id: self.learner.tokenizer.unk_id(),
            planned_steps: learned.planned_steps,
            update: learned.update,
            recompute: learned.recompute,
            seconds: Seconds {
                wall: start.elapsed().as_secs_f64(),
                rollout: rollout_secs,
                update: learned.update_secs,
                publish: self
                    .actor
                    .has_server()
                    .then(|| self.actor.take_publish_seconds()),
            },
        }
        .metrics();
        self.learner.record_weight_distance(&mut metrics);
        if self.config.max_staleness > 0 {
            metrics.set(names::STALENESS, stale.mean);
            if let Some(waited) = waited {
                metrics.set(names::ROLLOUT_WAIT_S, waited);
            }
        }
        self.learner.warn_unknown_targets(&metrics);
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

    /// The learner's update on `batch`; when the next rollout may be stale, the actor plays it
    /// meanwhile (kept for the next iteration) and the seconds the update's end waited for it
    /// come back too.
    fn learn_while_playing_ahead(
        &mut self,
        batch: &RolloutBatch,
    ) -> Result<(learner::Learned, Option<f64>)> {
        let ahead = self.config.max_staleness > 0 && self.iteration + 1 < self.config.iterations;
        let next = match ahead {
            true => {
                let rollout = self.training_rollout();
                let version = self
                    .actor
                    .take_version(&self.learner.policy, self.iteration)?;
                Some((rollout, version))
            }
            false => None,
        };
        let shard = (self.sync.rank(), self.sync.size());
        let at = UpdateContext {
            iteration: self.iteration,
            sampled_elsewhere: self.actor.has_server(),
            aux_streams: &mut self.streams.aux,
            sync: self.sync.as_ref(),
        };
        let learner = &mut self.learner;
        let Some((rollout, version)) = next else {
            return Ok((learner.learn(batch, at)?, None));
        };
        let (learned, played, waited) = self
            .actor
            .play_during(version, &rollout, shard, || learner.learn(batch, at));
        self.keep_played_ahead(played)?;
        Ok((learned?, Some(waited)))
    }

    /// Keeps the rollout the actor played during the update, gathered from every rank, for
    /// the next iteration; when it failed, this trainer stops (the weights moved on without it).
    fn keep_played_ahead(&mut self, played: Played) -> Result<()> {
        let seconds = played.seconds;
        let gathered = played
            .result
            .and_then(|share| gather_rollouts(self.sync.as_ref(), share));
        let (batch, stats) = gathered.inspect_err(|e| {
            self.stopped = Some(format!(
                "iteration {}'s update ran, but the next rollout, playing during it, failed \
                 ({e}); resume from the last checkpoint",
                self.iteration
            ));
        })?;
        self.pending = Some(PendingRollout {
            batch,
            stats,
            seconds,
        });
        Ok(())
    }

    /// The rollout of the last training iteration, if one ran.
    pub fn last_rollout(&self) -> Option<&RolloutBatch> {
        self.last_rollout.as_ref()
    }
}
