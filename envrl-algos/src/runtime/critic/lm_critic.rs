//! The critic of PPO: a [`ValueModel`] with its own AdamW, trained on the clipped value loss
//! ([`crate::algorithms::loss`]).
//!
//! ```text
//! L_V = token-mean( max( (V − G)², (clip(V, V_old − c, V_old + c) − G)² ) )      c = 0.5
//! ```
//!
//! (no ½ factor; ENVRL.md §3.5).

use std::path::Path;
use std::time::Instant;

use burn::module::Module;
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::store::ModuleRecord;
use burn::tensor::{Device, Tensor};
use envrl::distributed::{Collective, sum_gradients};
use envrl::{
    Critic, FusedAdamW, ScoreRow, ValueStep, ValueUpdate, clip_global_grad_norm, pad_rows,
};

use crate::algorithms::loss::{CriticConfig, clipped_value_terms};
use crate::runtime::critic::ValueModel;
use crate::runtime::lm::CausalLm;

const CRITIC_FILE: &str = "critic.bpk";
const CRITIC_OPTIMIZER_FILE: &str = "critic-optimizer.bpk";

/// A [`ValueModel`] and its optimizer: the [`Critic`] the trainer updates next to the policy.
pub struct LmCritic {
    model: ValueModel,
    optimizer: ModuleOptimizer,
    config: CriticConfig,
    device: Device,
}

impl std::fmt::Debug for LmCritic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LmCritic")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl LmCritic {
    /// A critic initialised from `policy` (which lives on an autodiff device, like the
    /// trainer's).
    pub fn new(policy: &CausalLm, config: CriticConfig) -> Self {
        let optimizer = FusedAdamW::new(1e-8, config.weight_decay as f32).init();
        Self {
            model: ValueModel::from_policy(policy),
            optimizer,
            device: policy.device(),
            config,
        }
    }

    /// The value model.
    pub fn model(&self) -> &ValueModel {
        &self.model
    }
}

/// The sums over this rank's tokens of the value loss, the value and the clipped indicator (the
/// step's statistics once summed over ranks and divided by its tokens), and the loss to
/// back-propagate: the summed loss over the step's tokens.
struct ValueSums {
    loss: Tensor<1>,
    sums: [f32; 3],
}

impl LmCritic {
    fn value_sums(&self, step: &ValueStep<'_>) -> ValueSums {
        let (values, mask) = self.model.values(step.rows);
        let [n, width] = values.dims();
        let pad =
            |rows: &[Vec<f32>]| pad_rows(rows.iter().map(Vec::as_slice), n, width, &self.device);
        let (old, targets) = (pad(step.old_values), pad(step.returns));
        let value_sum = (values.clone().detach() * mask.clone()).sum();
        let (loss, clipped_larger) =
            clipped_value_terms(values, old, targets, self.config.value_clip);
        let loss_sum = (loss * mask.clone()).sum();
        let clipped_sum = (clipped_larger * mask).sum();
        let scalar = |t: Tensor<1>| t.into_scalar::<f32>();
        ValueSums {
            sums: [
                scalar(loss_sum.clone().detach()),
                scalar(value_sum),
                scalar(clipped_sum),
            ],
            loss: loss_sum / step.step_tokens.max(1) as f32,
        }
    }
}

impl Critic for LmCritic {
    fn values(&self, rows: &[ScoreRow]) -> Vec<Vec<f32>> {
        if rows.is_empty() {
            return Vec::new();
        }
        let (values, _) = self.model.valid().values(rows);
        let width = values.dims()[1];
        let flat: Vec<f32> = values
            .into_data()
            .convert::<f32>()
            .try_into_vec()
            .unwrap_or_default();
        rows.iter()
            .enumerate()
            .map(|(i, r)| flat[i * width..i * width + r.target.len()].to_vec())
            .collect()
    }

    fn update(&mut self, step: ValueStep<'_>, sync: &dyn Collective) -> envrl::Result<ValueUpdate> {
        let mut update = ValueUpdate::default();
        if step.step_tokens == 0 {
            return Ok(update);
        }
        let own = match step.rows.is_empty() {
            true => None,
            false => Some(self.value_sums(&step)),
        };
        let mut sums = own.as_ref().map_or([0.0; 3], |o| o.sums);
        let start = Instant::now();
        sync.sum(&mut sums)?;
        let tokens = step.step_tokens as f64;
        let [loss_sum, value_sum, clipped_sum] = sums.map(|s| s as f64 / tokens);
        update.stats = vec![
            ("loss/value".to_string(), loss_sum),
            ("value/mean".to_string(), value_sum),
            ("value/clip_frac".to_string(), clipped_sum),
        ];
        let mut skipped = 1.0;
        // The summed loss is the same on every rank, so every rank skips or steps together.
        if loss_sum.is_finite() {
            let grads = match own {
                Some(own) => GradientsParams::from_grads(own.loss.backward(), &self.model),
                None => GradientsParams::new(),
            };
            let (mut grads, sent) = sum_gradients(&self.model, grads, sync)?;
            if sync.size() > 1 {
                update.exchanged_bytes = sent + sums.len() * size_of::<f32>();
                update.exchange_seconds = start.elapsed().as_secs_f64();
            }
            if let Some(norm) =
                clip_global_grad_norm(&self.model, &mut grads, self.config.max_grad_norm)
            {
                update.stats.push(("optim/critic_grad_norm".into(), norm));
                self.model =
                    self.optimizer
                        .step(self.config.learning_rate, self.model.clone(), grads);
                skipped = 0.0;
            }
        }
        update
            .stats
            .push(("optim/critic_skipped_steps".into(), skipped));
        Ok(update)
    }

    fn save(&self, dir: &Path) -> envrl::Result<()> {
        let fail = |file: &str, e: burn::store::RecordError| envrl::Error::Checkpoint {
            path: dir.join(file),
            reason: e.to_string(),
        };
        self.model
            .clone()
            .save_file(dir.join(CRITIC_FILE))
            .map_err(|e| fail(CRITIC_FILE, e))?;
        self.optimizer
            .save(dir.join(CRITIC_OPTIMIZER_FILE))
            .map_err(|e| fail(CRITIC_OPTIMIZER_FILE, e))
    }

    fn load(&mut self, dir: &Path) -> envrl::Result<()> {
        let fail = |file: &str, reason: String| envrl::Error::Checkpoint {
            path: dir.join(file),
            reason,
        };
        let read =
            |file: &str| envrl::read_whole(&dir.join(file)).map_err(|e| fail(file, e.to_string()));
        let record = ModuleRecord::from_bytes(read(CRITIC_FILE)?)
            .map_err(|e| fail(CRITIC_FILE, e.to_string()))?;
        self.model = self
            .model
            .clone()
            .try_load_record(record)
            .map_err(|e| fail(CRITIC_FILE, e.to_string()))?;
        let optimizer = FusedAdamW::new(1e-8, self.config.weight_decay as f32).init();
        self.optimizer = optimizer
            .from_bytes(read(CRITIC_OPTIMIZER_FILE)?)
            .map_err(|e| fail(CRITIC_OPTIMIZER_FILE, e.to_string()))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::loss::clipped_value_loss;
    use burn::tensor::TensorData;

    fn t2(values: &[f32], n: usize, w: usize) -> Tensor<2> {
        Tensor::from_data(TensorData::new(values.to_vec(), [n, w]), &Device::flex())
    }

    #[test]
    fn value_loss_takes_the_larger_of_clipped_and_unclipped_errors() {
        // Token 0: V 2.0, V_old 0.0 → clipped 0.5; G 1.0 → (1)² vs (−0.5)² → 1.0, not clipped.
        // Token 1: V 0.0, V_old 1.0 → clipped 0.5; G −1.0 → (1)² vs (1.5)² → 2.25, clipped.
        let (loss, frac) = clipped_value_loss(
            t2(&[2.0, 0.0], 1, 2),
            t2(&[0.0, 1.0], 1, 2),
            t2(&[1.0, -1.0], 1, 2),
            t2(&[1.0, 1.0], 1, 2),
            0.5,
        );
        assert!((loss.into_scalar::<f32>() - 1.625).abs() < 1e-6);
        assert!((frac.into_scalar::<f32>() - 0.5).abs() < 1e-6);
    }
}
