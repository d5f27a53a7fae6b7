//! GiGPO: episode-level group advantages plus step-level advantages from anchor groups of
//! identical observations.
//!
//! Feng, Xue, Liu, An, "Group-in-Group Policy Optimization for LLM Agent Training",
//! arXiv:2505.10978, §3; verl-agent `gigpo/core_gigpo.py` (ENVRL.md §3.6):
//!
//! ```text
//! A^E_i = (s_i − μ_g)/(σ_g + ε)  or  s_i − μ_g              episode level (Eq. 3), pooled rows
//! G     = rows of one episode group with byte-identical obs_t   anchor groups (Eq. 6)
//! R_t   = Σ_{k≥t} γ^{k−t} r_k,  R̃_t = R_t − c_pen·(1 − v_t)      discounted step return
//! A^S_i = (R̃_i − μ_G)/(σ_G + ε)  or  R̃_i − μ_G;  |G| = 1 ⇒ 0     step level (Eq. 7)
//! A_i   = A^E_i + ω·A^S_i                                       (Eq. 8)
//! ```
//!
//! Implementation details:
//! 1. Anchors are the raw observation string only, so identical texts such as
//!    `Nothing happens.` pool even when the hidden state differs (reference behaviour).
//! 2. Discounting uses raw environment rewards; the penalty is applied after, to the step's own
//!    return only.
//! 3. The reference uses `mean_std_norm` for ALFWorld and `mean_norm` for WebShop.

use std::collections::HashMap;

use envrl::{Advantage, RolloutBatch};
use serde::{Deserialize, Serialize};

use super::EstimatorConfig;
use super::scores::{group_mean_std, row_scores};
use crate::algorithms::checks::{check, check_penalty};

/// How both levels are normalised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GigpoNorm {
    /// Subtract the mean and divide by std + ε ("w/ std").
    MeanStdNorm,
    /// Subtract the mean only ("w/o std").
    MeanNorm,
}

/// GiGPO hyper-parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GigpoConfig {
    /// Invalid-action penalty c_pen. Default 0.1.
    pub invalid_penalty: f32,
    /// Discount γ of step returns. Default 0.95.
    pub gamma: f32,
    /// Weight ω of the step level. Default 1.0.
    pub omega: f32,
    /// Normalisation of both levels. Default `mean_std_norm`.
    pub norm: GigpoNorm,
}

impl Default for GigpoConfig {
    fn default() -> Self {
        Self {
            invalid_penalty: 0.1,
            gamma: 0.95,
            omega: 1.0,
            norm: GigpoNorm::MeanStdNorm,
        }
    }
}

/// The GiGPO advantage estimator.
#[derive(Debug, Clone, Default)]
pub struct Gigpo {
    /// Its hyper-parameters.
    pub config: GigpoConfig,
}

impl Advantage for Gigpo {
    fn group_relative(&self) -> bool {
        true
    }

    fn name(&self) -> &str {
        "gigpo"
    }

    fn compute(&self, batch: &RolloutBatch) -> Vec<f32> {
        let c = &self.config;
        let episode = episode_advantages(batch, c); // Eq. 3
        let anchors = anchor_groups(batch); // Eq. 6
        let returns = step_returns(batch, c.gamma, c.invalid_penalty);
        let step = step_advantages(&returns, &anchors, c.norm); // Eq. 7
        episode
            .iter()
            .zip(&step)
            .map(|(e, s)| e + c.omega * s)
            .collect() // Eq. 8
    }
}

fn normalise(x: f32, (mu, sigma): (f32, f32), norm: GigpoNorm) -> f32 {
    match norm {
        GigpoNorm::MeanStdNorm => (x - mu) / (sigma + 1e-6),
        GigpoNorm::MeanNorm => x - mu,
    }
}

/// Pooled GRPO over row scores.
fn episode_advantages(batch: &RolloutBatch, c: &GigpoConfig) -> Vec<f32> {
    let s = row_scores(batch, c.invalid_penalty);
    let groups: Vec<usize> = batch.rows().map(|r| r.trajectory.group_id).collect();
    let stats = group_mean_std(&s, &groups);
    s.iter()
        .zip(&groups)
        .map(|(&x, g)| normalise(x, stats[g], c.norm))
        .collect()
}

/// For every row, the id of its anchor group: same episode group and byte-identical `obs_t`.
fn anchor_groups(batch: &RolloutBatch) -> Vec<usize> {
    let mut ids: HashMap<(usize, &str), usize> = HashMap::new();
    batch
        .rows()
        .map(|r| {
            let next = ids.len();
            *ids.entry((r.trajectory.group_id, r.step.observation.as_str()))
                .or_insert(next)
        })
        .collect()
}

/// `R̃_t = Σ_{k≥t} γ^{k−t} r_k − c_pen·(1 − v_t)` for every row, in row order.
fn step_returns(batch: &RolloutBatch, gamma: f32, invalid_penalty: f32) -> Vec<f32> {
    let mut out = Vec::with_capacity(batch.num_rows());
    for t in &batch.trajectories {
        let mut ret = vec![0.0f32; t.steps.len()];
        let mut running = 0.0f32;
        for (k, step) in t.steps.iter().enumerate().rev() {
            running = step.reward + gamma * running;
            ret[k] = running;
        }
        out.extend(
            t.steps
                .iter()
                .zip(ret)
                .map(|(s, r)| if s.valid { r } else { r - invalid_penalty }),
        );
    }
    out
}

/// Step-level advantages within anchor groups; singletons get 0.
fn step_advantages(returns: &[f32], anchors: &[usize], norm: GigpoNorm) -> Vec<f32> {
    let stats = group_mean_std(returns, anchors);
    let mut sizes: HashMap<usize, usize> = HashMap::new();
    for &a in anchors {
        *sizes.entry(a).or_default() += 1;
    }
    returns
        .iter()
        .zip(anchors)
        .map(|(&r, a)| {
            if sizes[a] < 2 {
                0.0
            } else {
                normalise(r, stats[a], norm)
            }
        })
        .collect()
}

impl EstimatorConfig for GigpoConfig {
    const NAME: &'static str = "gigpo";

    fn build(&self) -> Box<dyn Advantage> {
        Box::new(Gigpo {
            config: self.clone(),
        })
    }

    fn validate(&self) -> envrl::Result<()> {
        let nonneg = |v: f64| v >= 0.0;
        check_penalty(self.invalid_penalty)?;
        check(
            "algorithm.advantage.gamma",
            self.gamma as f64,
            |v| (0.0..=1.0).contains(&v),
            "in [0, 1]",
        )?;
        check("algorithm.advantage.omega", self.omega as f64, nonneg, "≥ 0")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::batch;

    #[test]
    fn step_returns_discount_raw_rewards_then_penalise_the_invalid_step() {
        // One trajectory: rewards [0, 0, 10], step 1 invalid, γ = 0.5 → [2.5, 5 − 0.1, 10].
        let b = batch(&[(0, 10.0, &[true, false, true])]);
        let r = step_returns(&b, 0.5, 0.1);
        assert!(
            (r[0] - 2.5).abs() < 1e-6 && (r[1] - 4.9).abs() < 1e-6 && (r[2] - 10.0).abs() < 1e-6
        );
    }

    #[test]
    fn identical_observations_share_an_anchor_only_within_a_group() {
        let mut b = batch(&[
            (0, 0.0, &[true, true]),
            (0, 0.0, &[true]),
            (1, 0.0, &[true]),
        ]);
        let obs = ["a", "b", "a", "a"];
        let mut k = 0;
        for t in &mut b.trajectories {
            for s in &mut t.steps {
                s.observation = obs[k].into();
                k += 1;
            }
        }
        let a = anchor_groups(&b);
        assert_eq!(a[0], a[2]);
        assert_ne!(a[0], a[1]);
        assert_ne!(a[0], a[3], "group 1's 'a' is another anchor");
    }

    #[test]
    fn singleton_anchor_gets_no_step_advantage_and_pairs_are_normalised() {
        let r = [10.0, 0.0, 3.0];
        let anchors = [0, 0, 1];
        let a = step_advantages(&r, &anchors, GigpoNorm::MeanNorm);
        assert_eq!(a, vec![5.0, -5.0, 0.0]);
        let a = step_advantages(&r, &anchors, GigpoNorm::MeanStdNorm);
        let std = 50f32.sqrt();
        assert!((a[0] - 5.0 / std).abs() < 1e-4 && a[2] == 0.0);
    }

    #[test]
    fn total_is_episode_plus_omega_times_step() {
        // Two 1-step trajectories in one group with distinct observations: step level is 0.
        let b = batch(&[(0, 10.0, &[true]), (0, 0.0, &[true])]);
        let mut b2 = b.clone();
        b2.trajectories[1].steps[0].observation = "other".into();
        let config = GigpoConfig {
            norm: GigpoNorm::MeanNorm,
            ..Default::default()
        };
        let a = Gigpo {
            config: config.clone(),
        }
        .compute(&b2);
        assert_eq!(a, vec![5.0, -5.0]);
        // Same observation: step returns [10, 0] also give ±5, weighted by ω = 0.5.
        let config = GigpoConfig {
            omega: 0.5,
            ..config
        };
        let a = Gigpo { config }.compute(&b);
        assert_eq!(a, vec![7.5, -7.5]);
    }
}
