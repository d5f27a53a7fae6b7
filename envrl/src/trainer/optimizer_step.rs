//! Runs one planned [`OptimizerStep`]: the micro-batches' losses with the plan's weights,
//! gradients summed, clipped, one AdamW step, or none when anything is not finite. With several
//! ranks, each computes its share of every micro-batch and the ranks sum their gradients and
//! statistics before the identical clip and step.

use std::time::Instant;

use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::{GradientsAccumulator, GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Tensor, TensorData};
use serde::{Deserialize, Serialize};

use crate::auxiliary::AuxObjective;
use crate::distributed::{GradientSync, gather, sum_gradients};
use crate::error::{Error, Result};
use crate::policy::{Policy, ScoreRow};
use crate::trainer::metric_names as names;
use crate::trainer::{
    LearnerBatch, MicroBatch, OptimizerStep, PolicyLoss, PolicyLossInput, clip_global_grad_norm,
};

/// What one optimizer step needs besides its plan and batch: the models, the losses and the
/// optimizer settings.
pub struct StepRunner<'a, P: Policy> {
    /// The policy being trained (on an autodiff device); replaced by the stepped one.
    pub policy: &'a mut P,
    /// AdamW with its moments.
    pub optimizer: &'a mut ModuleOptimizer,
    /// The frozen reference, when the actor loss has a KL term.
    pub reference: Option<&'a P>,
    /// The actor loss.
    pub loss: &'a dyn PolicyLoss,
    /// The auxiliary objectives, in the order of the batch's and plan's objectives.
    pub aux: &'a [Box<dyn AuxObjective>],
    /// λ(t) of each objective this iteration. An objective at 0 (a placebo) is still scored
    /// for its metric, without a gradient.
    pub lambdas: &'a [f64],
    /// AdamW's learning rate.
    pub learning_rate: f64,
    /// The global gradient-norm clip.
    pub max_grad_norm: f64,
    /// The exchange with the other ranks computing this step ([`crate::distributed`]).
    pub sync: &'a dyn GradientSync,
}

/// The result of one optimizer step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepReport {
    /// The step's named values: the actor loss's statistics, `loss/aux/<name>`, `loss/total`,
    /// `optim/grad_norm`, and the gradient diagnostics when asked for.
    pub stats: Vec<(String, f64)>,
    /// Tokens scored (context and target).
    pub tokens: usize,
    /// Whether the optimizer stepped (false: a loss or the gradient norm was not finite).
    pub applied: bool,
    /// This rank's exchanges with the others (none in one process).
    #[serde(skip)]
    pub exchanged: Exchanged,
}

/// What a rank exchanged with the others.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Exchanged {
    /// Seconds spent in the exchanges.
    pub seconds: f64,
    /// Bytes this rank contributed.
    pub bytes: usize,
}

impl Exchanged {
    /// `bytes` exchanged since `start` (no time when nothing was exchanged).
    fn since(start: Instant, bytes: usize) -> Self {
        let seconds = match bytes {
            0 => 0.0,
            _ => start.elapsed().as_secs_f64(),
        };
        Self { seconds, bytes }
    }
}

/// The gradients of one step, kept apart per source when diagnosing.
struct StepGradients<P> {
    actor: GradientsAccumulator<P>,
    /// One per objective when diagnosing; empty otherwise (everything goes to `actor`).
    aux: Vec<GradientsAccumulator<P>>,
}

impl<P: Policy> StepRunner<'_, P> {
    /// Runs `step` on `batch`. With `diagnose`, the actor's gradient and each objective's
    /// weighted gradient are also measured apart before they are summed (norms and cosines).
    ///
    /// # Errors
    /// [`Error::Distributed`] when the exchange with the other ranks fails.
    pub fn run(
        &mut self,
        batch: &LearnerBatch,
        step: &OptimizerStep,
        diagnose: bool,
    ) -> Result<StepReport> {
        let (rank, size) = (self.sync.rank(), self.sync.size());
        let mut outcome = StepReport::default();
        let mut grads = StepGradients {
            actor: GradientsAccumulator::new(),
            aux: match diagnose {
                true => self
                    .aux
                    .iter()
                    .map(|_| GradientsAccumulator::new())
                    .collect(),
                false => Vec::new(),
            },
        };
        let mut total = Some(0.0);
        for micro in &step.micro_batches {
            let share;
            let micro = match size {
                1 => micro,
                _ => {
                    share = micro.share(rank, size);
                    &share
                }
            };
            match self.micro_batch(batch, step, micro, &mut grads, &mut outcome) {
                Some(loss) => total = total.map(|t| t + loss),
                None => {
                    total = None;
                    break;
                }
            }
        }
        let start = Instant::now();
        let (agreed, mut bytes) = self.agree(&mut outcome, total)?;
        let Some(total) = agreed else {
            log::warn!("non-finite loss; optimizer step skipped");
            outcome.exchanged = Exchanged::since(start, bytes);
            return Ok(outcome);
        };
        add(&mut outcome.stats, names::LOSS_TOTAL, total);
        let policy = &*self.policy;
        let mut sum = |grads: GradientsParams| {
            let (summed, sent) = sum_gradients(policy, grads, self.sync)?;
            bytes += sent;
            Ok::<_, Error>(summed)
        };
        let actor = sum(grads.actor.grads())?;
        let aux = match diagnose {
            true => grads
                .aux
                .into_iter()
                .map(|mut a| sum(a.grads()))
                .collect::<Result<Vec<_>>>()?,
            false => Vec::new(),
        };
        outcome.exchanged = Exchanged::since(start, bytes);
        let mut summed = match diagnose {
            true => self.diagnose(actor, aux, &mut outcome.stats),
            false => actor,
        };
        match clip_global_grad_norm(&*self.policy, &mut summed, self.max_grad_norm) {
            Some(norm) => {
                add(&mut outcome.stats, names::GRAD_NORM, norm);
                *self.policy = self
                    .optimizer
                    .step(self.learning_rate, self.policy.clone(), summed);
                outcome.applied = true;
            }
            None => log::warn!("non-finite gradient norm; optimizer step skipped"),
        }
        Ok(outcome)
    }

    /// Sums the ranks' shares of the step's statistics, tokens and total loss (in rank order)
    /// into `outcome`; the total is `None` when any rank met a non-finite loss. Also returns
    /// the bytes this rank sent. One rank: as given.
    fn agree(&self, outcome: &mut StepReport, total: Option<f64>) -> Result<(Option<f64>, usize)> {
        if self.sync.size() == 1 {
            return Ok((total, 0));
        }
        // A non-finite loss arrives as it left (the step is then skipped on every rank, as in
        // one process).
        let (parts, sent) = gather(self.sync, "step report", &(outcome.clone(), total))?;
        let mut merged = StepReport::default();
        let mut sum = Some(0.0);
        for (part, part_total) in parts {
            merged.tokens += part.tokens;
            for (name, value) in part.stats {
                add(&mut merged.stats, &name, value);
            }
            sum = sum.zip(part_total).map(|(a, b)| a + b);
        }
        *outcome = merged;
        Ok((sum, sent))
    }

    /// Scores one micro-batch, back-propagates each weighted part and accumulates its gradient;
    /// returns its contribution to the step's total loss, or `None` when a trained part is not
    /// finite.
    fn micro_batch(
        &mut self,
        batch: &LearnerBatch,
        step: &OptimizerStep,
        micro: &MicroBatch,
        grads: &mut StepGradients<P>,
        outcome: &mut StepReport,
    ) -> Option<f64> {
        let mut total = 0.0;
        if !micro.rows.is_empty() {
            let loss = self.actor_loss(batch, micro, outcome);
            let value = loss.clone().into_scalar::<f32>() as f64;
            if !value.is_finite() {
                return None;
            }
            total += value;
            let g = GradientsParams::from_grads(loss.backward(), &*self.policy);
            grads.actor.accumulate(&*self.policy, g);
        }
        for (j, part) in micro.aux.iter().enumerate() {
            if part.is_empty() {
                continue;
            }
            let objective = &self.aux[j];
            let rows: Vec<ScoreRow> = batch.aux[j].examples[part.clone()]
                .iter()
                .map(|e| e.row.clone())
                .collect();
            outcome.tokens += tokens(&rows);
            let weight = step.aux_token_weight(j);
            let lambda = self.lambdas[j];
            if lambda == 0.0 {
                // A placebo (or a finished schedule): measured, never trained.
                let scores = self.policy.valid().score(&rows, false);
                let mean = weighted_sum(objective.token_losses(&scores), &scores.mask, weight);
                add(
                    &mut outcome.stats,
                    &names::aux_loss(objective.name()),
                    mean.into_scalar::<f32>() as f64,
                );
                continue;
            }
            let scores = self.policy.score(&rows, false);
            let mean = weighted_sum(objective.token_losses(&scores), &scores.mask, weight);
            let value = mean.clone().into_scalar::<f32>() as f64;
            if !value.is_finite() {
                return None;
            }
            add(
                &mut outcome.stats,
                &names::aux_loss(objective.name()),
                value,
            );
            total += lambda * value;
            let g = GradientsParams::from_grads(mean.mul_scalar(lambda).backward(), &*self.policy);
            let into = grads.aux.get_mut(j).unwrap_or(&mut grads.actor);
            into.accumulate(&*self.policy, g);
        }
        Some(total)
    }

    /// The weighted actor loss of one micro-batch's rows, its statistics added to `outcome`.
    fn actor_loss(
        &self,
        batch: &LearnerBatch,
        micro: &MicroBatch,
        outcome: &mut StepReport,
    ) -> Tensor<1> {
        let range = micro.rows.clone();
        let rows = &batch.rows[range.clone()];
        outcome.tokens += tokens(rows);
        let scores = self.policy.score(rows, self.loss.needs_entropy());
        let device = scores.mask.device();
        let [n, width] = scores.mask.dims();
        let pad =
            |values: &[Vec<f32>]| pad_rows(values.iter().map(Vec::as_slice), n, width, &device);
        let weights: Vec<f32> = micro.row_token_weights.iter().map(|&w| w as f32).collect();
        let token_weights =
            scores.mask.clone() * Tensor::<2>::from_data(TensorData::new(weights, [n, 1]), &device);
        let ref_logprobs = self.reference.map(|reference| {
            let data = reference.score(rows, false).logprobs.into_data();
            Tensor::<2>::from_data(data, &device)
        });
        let output = self.loss.loss(PolicyLossInput {
            scores: &scores,
            old_logprobs: pad(&batch.old_logprobs[range.clone()]),
            ref_logprobs,
            advantages: pad(&batch.advantages.advantages[range]),
            token_weights,
        });
        for (name, value) in output.stats {
            add(&mut outcome.stats, name, value.into_scalar::<f32>() as f64);
        }
        output.loss
    }

    /// Measures the actor's and each objective's gradient apart (norms, cosines with the
    /// actor's) and returns their sum.
    fn diagnose(
        &self,
        actor: GradientsParams,
        aux: Vec<GradientsParams>,
        stats: &mut Vec<(String, f64)>,
    ) -> GradientsParams {
        let policy = &*self.policy;
        let parts = GradientParts::measure(policy, &actor, &aux);
        let actor_norm = parts.actor_sq.sqrt();
        add(stats, names::GRAD_ACTOR_NORM, actor_norm);
        for ((objective, sq), dot) in self.aux.iter().zip(&parts.aux_sq).zip(&parts.dot) {
            let norm = sq.sqrt();
            if norm > 0.0 {
                add(stats, &names::aux_grad_norm(objective.name()), norm);
                if actor_norm > 0.0 {
                    add(
                        stats,
                        &names::aux_grad_cos(objective.name()),
                        dot / (actor_norm * norm),
                    );
                }
            }
        }
        let mut sum = GradientsAccumulator::new();
        for grads in aux {
            sum.accumulate(policy, grads);
        }
        sum.accumulate(policy, actor);
        sum.grads()
    }
}

/// `Σ mask · losses · weight`: a part of the step's token mean.
fn weighted_sum(losses: Tensor<2>, mask: &Tensor<2>, weight: f64) -> Tensor<1> {
    (losses * mask.clone()).sum().mul_scalar(weight)
}

fn tokens(rows: &[ScoreRow]) -> usize {
    rows.iter().map(|r| r.context.len() + r.target.len()).sum()
}

/// Adds `value` to the named entry, creating it.
fn add(stats: &mut Vec<(String, f64)>, name: &str, value: f64) {
    match stats.iter_mut().find(|(n, _)| n == name) {
        Some((_, v)) => *v += value,
        None => stats.push((name.to_string(), value)),
    }
}

/// Squared norms of the actor's and each objective's gradient and their dot products, summed
/// on the host in f64 in parameter order, so the diagnostics are the same in every process.
struct GradientParts<'a> {
    actor: &'a GradientsParams,
    aux: &'a [GradientsParams],
    actor_sq: f64,
    aux_sq: Vec<f64>,
    dot: Vec<f64>,
}

impl<'a> GradientParts<'a> {
    fn measure<M: Module>(
        module: &M,
        actor: &'a GradientsParams,
        aux: &'a [GradientsParams],
    ) -> Self {
        let mut parts = Self {
            actor,
            aux,
            actor_sq: 0.0,
            aux_sq: vec![0.0; aux.len()],
            dot: vec![0.0; aux.len()],
        };
        module.visit(&mut parts);
        parts
    }
}

fn host_values<const D: usize>(
    grads: &GradientsParams,
    param: &Param<Tensor<D>>,
) -> Option<Vec<f32>> {
    let data = grads.get::<D>(param.id)?.into_data().convert::<f32>();
    data.try_into_vec::<f32>().ok()
}

impl ModuleVisitor for GradientParts<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let actor = host_values(self.actor, param);
        if let Some(a) = &actor {
            self.actor_sq += a.iter().map(|&x| (x as f64) * (x as f64)).sum::<f64>();
        }
        for (j, grads) in self.aux.iter().enumerate() {
            let Some(b) = host_values(grads, param) else {
                continue;
            };
            self.aux_sq[j] += b.iter().map(|&x| (x as f64) * (x as f64)).sum::<f64>();
            if let Some(a) = &actor {
                self.dot[j] += a
                    .iter()
                    .zip(&b)
                    .map(|(&x, &y)| x as f64 * y as f64)
                    .sum::<f64>();
            }
        }
    }
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
