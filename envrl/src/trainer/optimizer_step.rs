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
use crate::distributed::{Collective, gather, sum_gradients};
use crate::error::{Error, Result};
use crate::policy::{Policy, ScoreRow};
use crate::trainer::metric_names as names;
use crate::trainer::{
    GradClip, LearnerBatch, MicroBatch, OptimizerStep, PolicyLoss, PolicyLossInput,
    clip_global_grad_norm, copy_grads, global_grad_norm, scale_grads,
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
    /// The gradient-norm bound.
    pub max_grad_norm: f64,
    /// How the bound applies ([`GradClip`]).
    pub clip: GradClip,
    /// The exchange with the other ranks computing this step ([`crate::distributed`]).
    pub sync: &'a dyn Collective,
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

/// The gradients of one step: summed as they come, and kept apart per source when diagnosing
/// or clipping the parts apart.
struct StepGradients<P> {
    /// Every gradient in the order computed; unused when diagnosing (the parts' sum is then
    /// the step's gradient, as it has always been).
    summed: GradientsAccumulator<P>,
    /// The actor's and each objective's gradient apart (none when not needed).
    parts: Option<Parts<P>>,
}

struct Parts<P> {
    actor: GradientsAccumulator<P>,
    aux: Vec<GradientsAccumulator<P>>,
}

impl<P: Policy> StepGradients<P> {
    /// Adds one backward pass's gradient: the actor's (`objective` `None`) or objective `j`'s.
    fn accumulate(
        &mut self,
        policy: &P,
        objective: Option<usize>,
        grads: GradientsParams,
        diagnose: bool,
    ) {
        if let Some(parts) = &mut self.parts {
            let part = match objective {
                Some(j) => &mut parts.aux[j],
                None => &mut parts.actor,
            };
            if diagnose {
                part.accumulate(policy, grads);
                return;
            }
            part.accumulate(policy, copy_grads(policy, &grads));
        }
        self.summed.accumulate(policy, grads);
    }
}

/// How a step's gradient was clipped.
struct Clipped {
    /// The norm of the summed gradient before the global clip (after the parts' factors).
    norm: f64,
    /// Whether any factor below 1 was applied.
    bound: bool,
    /// The factor the actor's gradient was multiplied by in all.
    actor_factor: f64,
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
        let apart = diagnose || self.clip().needs_parts();
        let mut grads = StepGradients {
            summed: GradientsAccumulator::new(),
            parts: apart.then(|| Parts {
                actor: GradientsAccumulator::new(),
                aux: self
                    .aux
                    .iter()
                    .map(|_| GradientsAccumulator::new())
                    .collect(),
            }),
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
            match self.micro_batch(batch, step, micro, &mut grads, diagnose, &mut outcome) {
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
        let summed = match diagnose {
            true => None,
            false => Some(sum(grads.summed.grads())?),
        };
        let parts = match grads.parts {
            Some(mut parts) => Some((
                sum(parts.actor.grads())?,
                parts
                    .aux
                    .iter_mut()
                    .map(|a| sum(a.grads()))
                    .collect::<Result<Vec<_>>>()?,
            )),
            None => None,
        };
        outcome.exchanged = Exchanged::since(start, bytes);
        let (mut gradient, factors) = self.combine(summed, parts, diagnose, &mut outcome.stats);
        match self.clip_sum(&mut gradient, factors[0], factors.iter().any(|&f| f != 1.0)) {
            Some(clipped) => {
                add(&mut outcome.stats, names::GRAD_NORM, clipped.norm);
                add(
                    &mut outcome.stats,
                    names::CLIP_BOUND,
                    f64::from(u8::from(clipped.bound)),
                );
                add(
                    &mut outcome.stats,
                    names::ACTOR_GRAD_FACTOR,
                    clipped.actor_factor,
                );
                *self.policy =
                    self.optimizer
                        .step(self.learning_rate, self.policy.clone(), gradient);
                outcome.applied = true;
            }
            None => log::warn!("non-finite gradient norm; optimizer step skipped"),
        }
        Ok(outcome)
    }

    /// The step's gradient before the global clip and each part's factor (the actor's first):
    /// the parts, each multiplied by its [`GradClip::part_factors`] factor, summed (aux first,
    /// then the actor's, as the diagnostics have always summed them); or, when every factor is
    /// 1 and the gradients were summed as they came, that sum (the global mode's, bit for bit).
    fn combine(
        &self,
        summed: Option<GradientsParams>,
        parts: Option<(GradientsParams, Vec<GradientsParams>)>,
        diagnose: bool,
        stats: &mut Vec<(String, f64)>,
    ) -> (GradientsParams, Vec<f64>) {
        let policy = &*self.policy;
        let Some((mut actor, aux)) = parts else {
            let summed = summed.expect("the gradients are summed unless kept apart");
            return (summed, vec![1.0; self.aux.len() + 1]);
        };
        if diagnose {
            self.diagnose(&actor, &aux, stats);
        }
        let norms: Vec<f64> = std::iter::once(&actor)
            .chain(&aux)
            .map(|g| global_grad_norm(policy, g))
            .collect();
        let factors = self.clip().part_factors(self.max_grad_norm, &norms);
        if let (Some(summed), false) = (summed, factors.iter().any(|&f| f != 1.0)) {
            return (summed, factors);
        }
        let mut sum = GradientsAccumulator::new();
        for (mut grads, &factor) in aux.into_iter().zip(&factors[1..]) {
            if factor != 1.0 {
                scale_grads(policy, &mut grads, factor);
            }
            sum.accumulate(policy, grads);
        }
        if factors[0] != 1.0 {
            scale_grads(policy, &mut actor, factors[0]);
        }
        sum.accumulate(policy, actor);
        (sum.grads(), factors)
    }

    /// The clip this step applies: the configured one where an objective trains, else the global
    /// clip, which every mode is then (the gradients are summed as they come, bit for bit).
    fn clip(&self) -> GradClip {
        match self.lambdas.iter().any(|&lambda| lambda != 0.0) {
            true => self.clip,
            false => GradClip::Global,
        }
    }

    /// Clips the summed gradient as the mode says; `None` when its norm is not finite.
    fn clip_sum(
        &self,
        gradient: &mut GradientsParams,
        actor_factor: f64,
        parts_bound: bool,
    ) -> Option<Clipped> {
        let policy = &*self.policy;
        let bound = match self.clip().clips_the_sum() {
            true => self.max_grad_norm,
            false => 0.0,
        };
        let norm = clip_global_grad_norm(policy, gradient, bound)?;
        let global = GradClip::global_factor(bound, norm);
        Some(Clipped {
            norm,
            bound: parts_bound || global != 1.0,
            actor_factor: actor_factor * global,
        })
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
        diagnose: bool,
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
            grads.accumulate(&*self.policy, None, g, diagnose);
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
            grads.accumulate(&*self.policy, Some(j), g, diagnose);
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
    /// actor's).
    fn diagnose(
        &self,
        actor: &GradientsParams,
        aux: &[GradientsParams],
        stats: &mut Vec<(String, f64)>,
    ) {
        let parts = GradientParts::measure(&*self.policy, actor, aux);
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
