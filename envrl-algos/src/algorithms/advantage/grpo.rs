//! GRPO for multi-turn agents: episode returns normalised within each group of rollouts of
//! the same task.
//!
//! Shao et al., "DeepSeekMath", arXiv:2402.03300, §4.1; multi-turn form as in verl-agent's
//! `compute_grpo_outcome_advantage` (ENVRL.md §3.3):
//!
//! ```text
//! s_i = R(τ(i)) − c_pen·(1 − v_i)                   row score (§1.6)
//! μ_g = mean_{i∈I_g} s_i,  σ_g = unbiased std       pooled over the group's step rows
//! |I_g| = 1 ⇒ μ_g = 0, σ_g = 1
//! A_i = (s_i − μ_g)/(σ_g + ε)   or   s_i − μ_g       (norm_by_std)
//! ```
//!
//! Implementation details:
//! 1. Every step row counts as one sample (`pooled`, the reference default); `per_trajectory`
//!    takes one score per trajectory — its first row's, as the reference does.
//! 2. A zero-variance group gives A = 0 exactly: σ = 0 and s_i − μ_g = 0.
//! 3. The invalid-action penalty enters the row score, not the environment return.

use envrl::{Advantage, RolloutBatch};
use serde::{Deserialize, Serialize};

use super::EstimatorConfig;
use super::scores::{group_mean_std, row_scores};
use crate::algorithms::checks::{check, check_penalty};

/// Which samples the group statistics are taken over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GrpoStats {
    /// Every step row of the group (reference default).
    Pooled,
    /// One score per trajectory (its first row's).
    PerTrajectory,
}

/// GRPO hyper-parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GrpoConfig {
    /// Invalid-action penalty c_pen. Default 0.1 (ENVRL.md §1.5).
    pub invalid_penalty: f32,
    /// Divide by the group std. Default true (false is "Dr. GRPO").
    pub norm_by_std: bool,
    /// Over which samples μ and σ are taken. Default pooled.
    pub stats: GrpoStats,
    /// ε added to σ. Default 1e-6.
    pub epsilon: f32,
}

impl Default for GrpoConfig {
    fn default() -> Self {
        Self {
            invalid_penalty: 0.1,
            norm_by_std: true,
            stats: GrpoStats::Pooled,
            epsilon: 1e-6,
        }
    }
}

/// The GRPO advantage estimator.
#[derive(Debug, Clone, Default)]
pub struct Grpo {
    /// Its hyper-parameters.
    pub config: GrpoConfig,
}

impl Grpo {
    /// GRPO with `config`.
    pub fn new(config: GrpoConfig) -> Self {
        Self { config }
    }
}

impl Advantage for Grpo {
    fn group_relative(&self) -> bool {
        true
    }

    fn name(&self) -> &str {
        "grpo"
    }

    fn compute(&self, batch: &RolloutBatch) -> Vec<f32> {
        let scores = row_scores(batch, self.config.invalid_penalty); // §1.6
        let groups: Vec<usize> = batch.rows().map(|r| r.trajectory.group_id).collect();
        let samples = match self.config.stats {
            GrpoStats::Pooled => scores.clone(),
            GrpoStats::PerTrajectory => first_row_scores(batch, &scores),
        };
        let sample_groups = match self.config.stats {
            GrpoStats::Pooled => groups.clone(),
            GrpoStats::PerTrajectory => batch
                .trajectories
                .iter()
                .filter(|t| !t.steps.is_empty())
                .map(|t| t.group_id)
                .collect(),
        };
        let stats = group_mean_std(&samples, &sample_groups); // μ_g, σ_g
        scores
            .iter()
            .zip(&groups)
            .map(|(&s, g)| {
                let (mu, sigma) = stats.get(g).copied().unwrap_or((0.0, 1.0));
                if self.config.norm_by_std {
                    (s - mu) / (sigma + self.config.epsilon)
                } else {
                    s - mu
                }
            })
            .collect()
    }
}

fn first_row_scores(batch: &RolloutBatch, scores: &[f32]) -> Vec<f32> {
    let mut out = Vec::new();
    let mut offset = 0;
    for t in &batch.trajectories {
        if !t.steps.is_empty() {
            out.push(scores[offset]);
        }
        offset += t.steps.len();
    }
    out
}

impl EstimatorConfig for GrpoConfig {
    const NAME: &'static str = "grpo";

    fn build(&self) -> Box<dyn Advantage> {
        Box::new(Grpo::new(self.clone()))
    }

    fn validate(&self) -> envrl::Result<()> {
        check_penalty(self.invalid_penalty)?;
        check("algorithm.advantage.epsilon", self.epsilon as f64, |v| v > 0.0, "> 0")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::batch;

    #[test]
    fn pooled_advantages_match_hand_computation() {
        // Group 0: a won 2-step trajectory (R=10) and a lost 1-step one (R=0) with an invalid row.
        let b = batch(&[(0, 10.0, &[true, true]), (0, 0.0, &[false])]);
        let a = Grpo::default().compute(&b);
        // scores [10, 10, -0.1]; mean 6.6333; unbiased std 5.8312
        let mean = (10.0 + 10.0 - 0.1) / 3.0;
        let std = (((10.0f64 - mean).powi(2) * 2.0 + (-0.1f64 - mean).powi(2)) / 2.0).sqrt();
        let expect = [
            (10.0 - mean) / std,
            (10.0 - mean) / std,
            (-0.1 - mean) / std,
        ];
        for (x, e) in a.iter().zip(expect) {
            assert!((*x as f64 - e).abs() < 1e-4, "{x} vs {e}");
        }
    }

    #[test]
    fn zero_variance_group_has_zero_advantage() {
        let b = batch(&[(0, 0.0, &[true, true]), (0, 0.0, &[true])]);
        assert_eq!(Grpo::default().compute(&b), vec![0.0, 0.0, 0.0]);
    }

    #[test]
    fn single_member_group_keeps_its_score() {
        let b = batch(&[(3, 10.0, &[true])]);
        let a = Grpo::default().compute(&b);
        assert!((a[0] - 10.0 / (1.0 + 1e-6)).abs() < 1e-4);
    }

    #[test]
    fn unnormalised_variant_subtracts_the_mean_only() {
        let b = batch(&[(0, 10.0, &[true]), (0, 0.0, &[true])]);
        let config = GrpoConfig {
            norm_by_std: false,
            ..Default::default()
        };
        assert_eq!(Grpo::new(config).compute(&b), vec![5.0, -5.0]);
    }

    #[test]
    fn per_trajectory_statistics_count_each_trajectory_once() {
        // Pooled would weigh the 3-row loser thrice; per-trajectory gives mean 5, std 7.071.
        let b = batch(&[(0, 10.0, &[true]), (0, 0.0, &[true, true, true])]);
        let config = GrpoConfig {
            stats: GrpoStats::PerTrajectory,
            ..Default::default()
        };
        let a = Grpo::new(config).compute(&b);
        let std = 50f32.sqrt();
        assert!((a[0] - 5.0 / std).abs() < 1e-4 && (a[1] + 5.0 / std).abs() < 1e-4);
    }
}
