use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use burn::optim::{GradientsAccumulator, GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Tensor, TensorData};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::advantage::{Advantage, TokenAdvantages};
use crate::auxiliary::{AuxExample, AuxObjective};
use crate::critic::Critic;
use crate::env::Environment;
use crate::error::{Error, Result};
use crate::policy::{Policy, SamplingParams, ScoreRow, Tokenizer};
use crate::rollout::{ActionParser, PromptBuilder, RolloutEngine, RolloutStats, grouped_slots};
use crate::trainer::FusedAdamW;
use crate::trainer::{
    CHECKPOINT_FORMAT, CheckpointState, IterationMetrics, MetricsSink, PolicyLoss, PolicyLossInput,
    TrainerConfig, clip_global_grad_norm, load_checkpoint, prune_checkpoints, save_checkpoint,
};
use crate::trajectory::RolloutBatch;

/// Evaluation uses its own RNG, derived from the run seed by this offset (verl-agent's `+1000`).
pub const EVAL_SEED_OFFSET: u64 = 1000;

/// The parts a [`Trainer`] composes, all behind the crate's traits.
pub struct TrainerParts<E> {
    /// The policy's tokenizer.
    pub tokenizer: Arc<dyn Tokenizer>,
    /// Builds each step's prompt.
    pub prompt: Box<dyn PromptBuilder>,
    /// Projects responses to actions.
    pub parser: Box<dyn ActionParser>,
    /// The advantage estimator (GRPO, …).
    pub advantage: Box<dyn Advantage>,
    /// The actor loss (clipped surrogate, KL, entropy).
    pub loss: Box<dyn PolicyLoss>,
    /// The value function, for estimators that [need one](Advantage::needs_values) (PPO).
    pub critic: Option<Box<dyn Critic>>,
    /// Auxiliary objectives (state prediction, inverse dynamics, yours).
    pub aux: Vec<Box<dyn AuxObjective>>,
    /// Makes one environment; called once per parallel rollout slot.
    pub make_env: Box<dyn Fn() -> E + Send>,
    /// The task ids training samples from.
    pub train_tasks: Vec<u64>,
    /// The task ids evaluation plays, in order.
    pub eval_tasks: Vec<u64>,
}

/// The outcome of an evaluation.
#[derive(Debug, Clone)]
pub struct EvalReport {
    /// Fraction of episodes won.
    pub success_rate: f64,
    /// Mean episode return.
    pub mean_return: f64,
    /// The played episodes, for per-task breakdowns.
    pub batch: RolloutBatch,
}

/// Runs training: rollout → advantages → losses → AdamW steps with gradient clipping →
/// metrics → checkpoint.
pub struct Trainer<P: Policy, E: Environment> {
    config: TrainerConfig,
    device: Device,
    policy: P,
    reference: Option<P>,
    optimizer: ModuleOptimizer,
    parts: TrainerParts<E>,
    envs: Vec<E>,
    rng: ChaCha8Rng,
    iteration: usize,
    env_steps: usize,
    checkpoint_dir: Option<PathBuf>,
}

/// AdamW with the config's weight decay (betas 0.9/0.999, ε 1e-8; clipping is global and done
/// by the trainer).
fn adamw(config: &TrainerConfig) -> ModuleOptimizer {
    FusedAdamW::new(1e-8, config.weight_decay as f32).init()
}

impl<P, E> Trainer<P, E>
where
    P: Policy,
    E: Environment,
{
    /// Builds a trainer for `policy`, which must live on an autodiff device.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] when the config is invalid, when there are fewer training tasks
    /// than `groups`, when there are no evaluation tasks but evaluation is on, or when the
    /// advantage estimator needs a critic and none is given.
    pub fn new(config: TrainerConfig, policy: P, parts: TrainerParts<E>) -> Result<Self> {
        config.validate()?;
        config.validate_against_tasks(parts.train_tasks.len())?;
        if config.eval_every > 0 && parts.eval_tasks.is_empty() {
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
        let reference = parts.loss.needs_reference().then(|| policy.valid());
        let optimizer = adamw(&config);
        let rng = ChaCha8Rng::seed_from_u64(config.seed);
        Ok(Self {
            config,
            device,
            policy,
            reference,
            optimizer,
            parts,
            envs: Vec::new(),
            rng,
            iteration: 0,
            env_steps: 0,
            checkpoint_dir: None,
        })
    }

    /// Saves checkpoints under `dir` every `config.checkpoint_every` iterations.
    pub fn with_checkpoint_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.checkpoint_dir = Some(dir.into());
        self
    }

    /// The config of the run.
    pub fn config(&self) -> &TrainerConfig {
        &self.config
    }

    /// The policy being trained.
    pub fn policy(&self) -> &P {
        &self.policy
    }

    /// Iterations completed.
    pub fn iteration(&self) -> usize {
        self.iteration
    }

    /// Runs the remaining iterations, evaluating and checkpointing as configured.
    ///
    /// # Errors
    /// [`Error::Io`] or [`Error::Checkpoint`] when a checkpoint cannot be written.
    pub fn run(&mut self, sink: &mut dyn MetricsSink) -> Result<()> {
        while self.iteration < self.config.iterations {
            let eval = (self.config.eval_every > 0
                && self.iteration.is_multiple_of(self.config.eval_every))
            .then(|| self.evaluate(self.config.eval_episodes));
            let mut metrics = self.train_iteration();
            if let Some(report) = eval {
                metrics.set("eval/success", report.success_rate);
                metrics.set("eval/return", report.mean_return);
            }
            sink.record(&metrics);
            let every = self.config.checkpoint_every;
            if every > 0 && self.iteration.is_multiple_of(every) {
                self.save_checkpoint()?;
            }
        }
        Ok(())
    }

    /// Plays `episodes` evaluation episodes (one per task, cycling over the eval tasks) with
    /// the evaluation sampling settings and a fixed RNG, so every evaluation sees the same noise.
    pub fn evaluate(&mut self, episodes: usize) -> EvalReport {
        let tasks: Vec<u64> = self
            .parts
            .eval_tasks
            .iter()
            .copied()
            .cycle()
            .take(episodes)
            .collect();
        let mut rng = ChaCha8Rng::seed_from_u64(self.config.seed.wrapping_add(EVAL_SEED_OFFSET));
        let sampling = self.config.eval_sampling.clone();
        let (batch, _) = self.rollout(&tasks, 1, &sampling, &mut rng);
        EvalReport {
            success_rate: batch.success_rate(),
            mean_return: batch.mean_return(),
            batch,
        }
    }

    fn rollout(
        &mut self,
        tasks: &[u64],
        group_size: usize,
        sampling: &SamplingParams,
        rng: &mut ChaCha8Rng,
    ) -> (RolloutBatch, RolloutStats) {
        let slots = grouped_slots(tasks, group_size);
        while self.envs.len() < slots.len() {
            self.envs.push((self.parts.make_env)());
        }
        let engine = RolloutEngine {
            tokenizer: self.parts.tokenizer.as_ref(),
            prompt: self.parts.prompt.as_ref(),
            parser: self.parts.parser.as_ref(),
            sampling,
            max_steps: self.config.max_steps,
        };
        let acting = self.policy.valid();
        engine.run(&acting, &mut self.envs[..slots.len()], &slots, rng)
    }

    /// Runs one iteration: rollout, advantages, auxiliary examples and one epoch of updates.
    pub fn train_iteration(&mut self) -> IterationMetrics {
        let start = Instant::now();
        // Sample distinct tasks for the groups.
        let picks = rand::seq::index::sample(
            &mut self.rng,
            self.parts.train_tasks.len(),
            self.config.groups,
        );
        let tasks: Vec<u64> = picks.iter().map(|i| self.parts.train_tasks[i]).collect();
        let sampling = self.config.sampling.clone();
        let mut rng = self.rng.clone();
        let (batch, stats) = self.rollout(&tasks, self.config.group_size, &sampling, &mut rng);
        self.rng = rng;
        let rollout_secs = start.elapsed().as_secs_f64();

        let rows: Vec<ScoreRow> = batch
            .rows()
            .map(|r| ScoreRow {
                context: r.step.prompt_ids.clone(),
                target: r.step.response_ids.clone(),
            })
            .collect();
        let values = self.critic_values(&rows);
        let mut advantages = self
            .parts
            .advantage
            .compute_tokens(&batch, values.as_deref());
        let nonfinite_rows = zero_nonfinite_rows(&mut advantages, values.as_deref());
        if nonfinite_rows > 0 {
            log::warn!(
                "{nonfinite_rows} rows with non-finite advantages (rewards?) at iteration {}; \
                 their advantages were set to 0",
                self.iteration
            );
        }
        let mut dropped = Vec::with_capacity(self.parts.aux.len());
        let aux_examples: Vec<Vec<AuxExample>> = self
            .parts
            .aux
            .iter()
            .map(|aux| {
                let mut examples =
                    aux.examples(&batch, self.parts.tokenizer.as_ref(), &mut self.rng);
                let before = examples.len();
                examples.retain(|e| {
                    let len = e.row.context.len() + e.row.target.len();
                    !e.row.context.is_empty()
                        && !e.row.target.is_empty()
                        && len <= self.config.max_aux_tokens
                });
                dropped.push(before - examples.len());
                examples
            })
            .collect();

        let update_start = Instant::now();
        let old_logprobs: Vec<&[f32]> = batch
            .rows()
            .map(|r| r.step.old_logprobs.as_slice())
            .collect();
        let mut update = self.update(
            &rows,
            &old_logprobs,
            &advantages,
            values.as_deref(),
            &aux_examples,
        );
        let update_secs = update_start.elapsed().as_secs_f64();
        update
            .values
            .push(("advantage/nonfinite_rows".into(), nonfinite_rows as f64));
        for (aux, dropped) in self.parts.aux.iter().zip(dropped) {
            update
                .values
                .push((format!("aux/dropped/{}", aux.name()), dropped as f64));
        }

        self.env_steps += stats.env_steps;
        let mut metrics = IterationMetrics {
            iteration: self.iteration,
            env_steps: self.env_steps,
            values: Default::default(),
        };
        metrics.set("episode/success", batch.success_rate());
        metrics.set("episode/return", batch.mean_return());
        metrics.set("episode/length", batch.mean_length());
        metrics.set("policy/invalid_action_rate", batch.invalid_rate());
        metrics.set("optim/lr", self.config.learning_rate);
        for (name, value) in update.values.drain(..) {
            metrics.set(name, value);
        }
        let wall = start.elapsed().as_secs_f64();
        metrics.set("perf/wall_s", wall);
        metrics.set("perf/rollout_s", rollout_secs);
        metrics.set("perf/update_s", update_secs);
        metrics.set(
            "perf/env_steps_per_s",
            stats.env_steps as f64 / rollout_secs.max(1e-9),
        );
        metrics.set(
            "perf/gen_tokens_per_s",
            stats.generated_tokens as f64 / rollout_secs.max(1e-9),
        );
        metrics.set(
            "perf/train_tokens_per_s",
            update.tokens as f64 / update_secs.max(1e-9),
        );
        metrics.set(
            "perf/tokens_per_s",
            (update.tokens + stats.generated_tokens) as f64 / wall.max(1e-9),
        );
        self.iteration += 1;
        log::info!(
            "iteration {} success {:.3} return {:.3}",
            metrics.iteration,
            batch.success_rate(),
            batch.mean_return()
        );
        metrics
    }

    /// The critic's values of every row, in mini-batch chunks, when the estimator needs them.
    fn critic_values(&self, rows: &[ScoreRow]) -> Option<Vec<Vec<f32>>> {
        if !self.parts.advantage.needs_values() {
            return None;
        }
        let critic = self.parts.critic.as_ref()?;
        Some(
            rows.chunks(self.config.mini_batch_rows)
                .flat_map(|chunk| critic.values(chunk))
                .collect(),
        )
    }

    fn update(
        &mut self,
        rows: &[ScoreRow],
        old_logprobs: &[&[f32]],
        advantages: &TokenAdvantages,
        values: Option<&[Vec<f32>]>,
        aux_examples: &[Vec<AuxExample>],
    ) -> UpdateSummary {
        let mini = self.config.mini_batch_rows;
        let n_minibatches = rows.len().div_ceil(mini).max(1);
        let lambdas: Vec<f64> = self
            .parts
            .aux
            .iter()
            .map(|aux| aux.schedule().value(self.iteration, self.config.iterations))
            .collect();
        let mut summary = UpdateSummary::default();
        let mut sums: Vec<(String, f64)> = Vec::new();
        let add = |sums: &mut Vec<(String, f64)>, name: &str, value: f64| match sums
            .iter_mut()
            .find(|(n, _)| n == name)
        {
            Some((_, v)) => *v += value,
            None => sums.push((name.to_string(), value)),
        };

        let micro = match self.config.micro_batch_rows {
            0 => mini,
            rows => rows.min(mini),
        };
        for (m, chunk_start) in (0..rows.len()).step_by(mini).enumerate() {
            let range = chunk_start..(chunk_start + mini).min(rows.len());
            if let (Some(critic), Some(values), Some(returns)) = (
                self.parts.critic.as_mut(),
                values,
                advantages.returns.as_ref(),
            ) {
                for (name, value) in critic.update(
                    &rows[range.clone()],
                    &values[range.clone()],
                    &returns[range.clone()],
                ) {
                    add(&mut sums, &name, value);
                }
            }
            // This optimizer step's even share of each objective's examples.
            let aux_shares: Vec<std::ops::Range<usize>> = aux_examples
                .iter()
                .map(|examples| even_share(examples.len(), n_minibatches, m))
                .collect();
            let n_micro = range.len().div_ceil(micro).max(1);
            let mut accumulated = GradientsAccumulator::new();
            let mut step_stats: Vec<(String, f64)> = Vec::new();
            let mut finite = true;
            for (u, micro_start) in range.clone().step_by(micro).enumerate() {
                let micro_range = micro_start..(micro_start + micro).min(range.end);
                let scale = 1.0 / n_micro as f64;
                let (total, stats, tokens) = self.micro_batch_loss(
                    &rows[micro_range.clone()],
                    &old_logprobs[micro_range.clone()],
                    &advantages.advantages[micro_range],
                    aux_examples,
                    &aux_shares,
                    (u, n_micro),
                    &lambdas,
                );
                summary.tokens += tokens;
                let total_value = total.clone().into_scalar::<f32>();
                if !total_value.is_finite() {
                    finite = false;
                    break;
                }
                for (name, value) in stats {
                    add(&mut step_stats, &name, value * scale);
                }
                add(&mut step_stats, "loss/total", total_value as f64 * scale);
                let grads = GradientsParams::from_grads(
                    total.mul_scalar(scale as f32).backward(),
                    &self.policy,
                );
                accumulated.accumulate(&self.policy, grads);
            }
            if !finite {
                log::warn!(
                    "non-finite loss at iteration {}; step skipped",
                    self.iteration
                );
                summary.skipped += 1;
                continue;
            }
            for (name, value) in step_stats {
                add(&mut sums, &name, value);
            }
            let mut grads = accumulated.grads();
            match clip_global_grad_norm(&self.policy, &mut grads, self.config.max_grad_norm) {
                Some(norm) => {
                    add(&mut sums, "optim/grad_norm", norm);
                    self.policy =
                        self.optimizer
                            .step(self.config.learning_rate, self.policy.clone(), grads);
                }
                None => {
                    log::warn!(
                        "non-finite gradient norm at iteration {}; step skipped",
                        self.iteration
                    );
                    summary.skipped += 1;
                }
            }
        }
        for (name, sum) in sums {
            summary.values.push((name, sum / n_minibatches as f64));
        }
        for ((aux, lambda), examples) in self.parts.aux.iter().zip(lambdas).zip(aux_examples) {
            let name = aux.name();
            summary.values.push((format!("aux/lambda/{name}"), lambda));
            summary
                .values
                .push((format!("aux/examples/{name}"), examples.len() as f64));
        }
        summary
            .values
            .push(("optim/steps".into(), n_minibatches as f64));
        summary
            .values
            .push(("optim/skipped_steps".into(), summary.skipped as f64));
        summary
    }

    /// The loss of one micro-batch: the actor loss of its rows plus, for each auxiliary
    /// objective, `λ ·` the loss of the micro-batch's part of the step's share of examples.
    /// Returns the loss, its named statistics and the tokens scored.
    #[allow(clippy::too_many_arguments)]
    fn micro_batch_loss(
        &self,
        score_rows: &[ScoreRow],
        old_logprobs: &[&[f32]],
        advantages: &[Vec<f32>],
        aux_examples: &[Vec<AuxExample>],
        aux_shares: &[std::ops::Range<usize>],
        (micro, n_micro): (usize, usize),
        lambdas: &[f64],
    ) -> (Tensor<1>, Vec<(String, f64)>, usize) {
        let mut stats = Vec::new();
        let mut tokens: usize = score_rows
            .iter()
            .map(|r| r.context.len() + r.target.len())
            .sum();
        let scores = self
            .policy
            .score(score_rows, self.parts.loss.needs_entropy());
        let [n, width] = scores.mask.dims();
        let old = pad_rows(old_logprobs.iter().copied(), n, width, &self.device);
        let ref_logprobs = self.reference.as_ref().map(|reference| {
            let data = reference.score(score_rows, false).logprobs.into_data();
            Tensor::<2>::from_data(data, &self.device)
        });
        let adv = pad_rows(advantages.iter().map(Vec::as_slice), n, width, &self.device);
        let output = self.parts.loss.loss(PolicyLossInput {
            scores: &scores,
            old_logprobs: old,
            ref_logprobs,
            advantages: adv,
        });
        let mut total = output.loss;
        for (name, value) in output.stats {
            stats.push((name.to_string(), value.into_scalar::<f32>() as f64));
        }
        let objectives = self.parts.aux.iter().zip(aux_examples);
        for (((aux, examples), share), &lambda) in objectives.zip(aux_shares).zip(lambdas) {
            let part = even_share(share.len(), n_micro, micro);
            if part.is_empty() || lambda == 0.0 {
                continue;
            }
            let aux_rows: Vec<ScoreRow> = examples
                [share.start + part.start..share.start + part.end]
                .iter()
                .map(|e| e.row.clone())
                .collect();
            tokens += aux_rows
                .iter()
                .map(|r| r.context.len() + r.target.len())
                .sum::<usize>();
            let aux_loss = aux.loss(&self.policy.score(&aux_rows, false));
            stats.push((
                format!("loss/aux/{}", aux.name()),
                aux_loss.clone().into_scalar::<f32>() as f64,
            ));
            total = total + aux_loss.mul_scalar(lambda);
        }
        (total, stats, tokens)
    }

    /// Writes a checkpoint of the current state into the checkpoint directory and prunes old
    /// ones. Does nothing without a checkpoint directory.
    ///
    /// # Errors
    /// [`Error::Io`] or [`Error::Checkpoint`] when it cannot be written.
    pub fn save_checkpoint(&self) -> Result<Option<PathBuf>> {
        let Some(dir) = &self.checkpoint_dir else {
            return Ok(None);
        };
        let state = CheckpointState {
            format: CHECKPOINT_FORMAT,
            iteration: self.iteration,
            env_steps: self.env_steps,
            rng: self.rng.clone(),
            config: serde_json::to_value(&self.config).unwrap_or_default(),
        };
        let path = save_checkpoint(
            dir,
            &state,
            &self.policy,
            self.reference.as_ref(),
            &self.optimizer,
            self.parts.critic.as_deref(),
        )?;
        prune_checkpoints(dir, self.config.keep_checkpoints)?;
        Ok(Some(path))
    }

    /// Restores model, reference, optimizer, RNG and counters from a checkpoint directory.
    ///
    /// # Errors
    /// [`Error::Checkpoint`] when it is missing, corrupt or does not fit the model.
    pub fn resume(&mut self, path: &std::path::Path) -> Result<()> {
        let loaded = load_checkpoint(path, self.policy.clone(), adamw(&self.config))?;
        self.policy = loaded.model;
        if self.reference.is_some() {
            self.reference = Some(match loaded.reference {
                Some(reference) => reference.valid(),
                None => {
                    return Err(Error::Checkpoint {
                        path: path.to_path_buf(),
                        reason: "the run needs a reference model but the checkpoint has none"
                            .into(),
                    });
                }
            });
        }
        if let Some(critic) = self.parts.critic.as_mut() {
            critic.load(path)?;
        }
        self.optimizer = loaded.optimizer;
        self.rng = loaded.state.rng;
        self.iteration = loaded.state.iteration;
        self.env_steps = loaded.state.env_steps;
        Ok(())
    }
}

#[derive(Default)]
struct UpdateSummary {
    values: Vec<(String, f64)>,
    tokens: usize,
    skipped: usize,
}

/// The `m`-th of `parts` contiguous, nearly equal slices of `0..len`.
fn even_share(len: usize, parts: usize, m: usize) -> std::ops::Range<usize> {
    let start = len * m / parts;
    let end = len * (m + 1) / parts;
    start..end
}

/// Sets the advantages of rows with any non-finite advantage (or value) to 0 and their value
/// targets to the critic's own values, so they contribute nothing; returns how many there were.
fn zero_nonfinite_rows(advantages: &mut TokenAdvantages, values: Option<&[Vec<f32>]>) -> usize {
    let mut count = 0;
    for (i, row) in advantages.advantages.iter_mut().enumerate() {
        let value_row = values.and_then(|v| v.get(i));
        let returns_row = advantages.returns.as_ref().and_then(|r| r.get(i));
        let finite = |x: Option<&Vec<f32>>| x.is_none_or(|v| v.iter().all(|x| x.is_finite()));
        if row.iter().all(|a| a.is_finite()) && finite(value_row) && finite(returns_row) {
            continue;
        }
        count += 1;
        row.iter_mut().for_each(|a| *a = 0.0);
        if let Some(returns) = advantages.returns.as_mut().and_then(|r| r.get_mut(i)) {
            match value_row.filter(|v| v.iter().all(|x| x.is_finite())) {
                Some(v) => returns.clone_from(v),
                None => returns.iter_mut().for_each(|g| *g = 0.0),
            }
        }
    }
    count
}

/// Pads per-row values with zeros into a `[rows, width]` tensor (rows longer than `width` are
/// cut).
pub fn pad_rows<'a>(
    rows: impl Iterator<Item = &'a [f32]>,
    n: usize,
    width: usize,
    device: &Device,
) -> Tensor<2> {
    let mut data = vec![0.0f32; n * width];
    for (i, row) in rows.enumerate() {
        let k = row.len().min(width);
        data[i * width..i * width + k].copy_from_slice(&row[..k]);
    }
    Tensor::from_data(TensorData::new(data, [n, width]), device)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_shares_cover_everything_once() {
        let shares: Vec<_> = (0..3).map(|m| even_share(7, 3, m)).collect();
        assert_eq!(shares, vec![0..2, 2..4, 4..7]);
        assert!(even_share(0, 3, 1).is_empty());
    }
}
