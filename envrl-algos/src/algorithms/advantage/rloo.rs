//! RLOO: each row's score minus the mean of the other rows of its group.
//!
//! Ahmadian et al., "Back to Basics: Revisiting REINFORCE Style Optimization for Learning from
//! Human Feedback in LLMs", arXiv:2402.14740; pooled multi-turn form of verl-agent's
//! `compute_rloo_outcome_advantage` (ENVRL.md §3.4):
//!
//! ```text
//! n = |I_g|,  A_i = n/(n−1)·(s_i − μ_g)  (= s_i − mean of the others)   if n > 1
//!             A_i = s_i                                               if n = 1
//! ```
//!
//! No std normalisation; the update is the clipped actor loss ("LOOP").

use envrl::{Advantage, RolloutBatch};
use serde::{Deserialize, Serialize};

use super::EstimatorConfig;
use super::scores::row_scores;
use crate::algorithms::checks::check_penalty;

/// RLOO hyper-parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RlooConfig {
    /// Invalid-action penalty c_pen. Default 0.1.
    pub invalid_penalty: f32,
}

impl Default for RlooConfig {
    fn default() -> Self {
        Self {
            invalid_penalty: 0.1,
        }
    }
}

/// The RLOO advantage estimator.
#[derive(Debug, Clone, Default)]
pub struct Rloo {
    /// Its hyper-parameters.
    pub config: RlooConfig,
}

impl Advantage for Rloo {
    fn group_relative(&self) -> bool {
        true
    }

    fn name(&self) -> &str {
        "rloo"
    }

    fn compute(&self, batch: &RolloutBatch) -> Vec<f32> {
        let s = row_scores(batch, self.config.invalid_penalty);
        let groups: Vec<usize> = batch.rows().map(|r| r.trajectory.group_id).collect();
        leave_one_out(&s, &groups)
    }
}

/// `n/(n−1)·(s_i − μ_g)` per row, `s_i` for singleton groups.
fn leave_one_out(s: &[f32], groups: &[usize]) -> Vec<f32> {
    let mut sums: std::collections::HashMap<usize, (f64, usize)> = Default::default();
    for (&x, &g) in s.iter().zip(groups) {
        let e = sums.entry(g).or_default();
        e.0 += x as f64;
        e.1 += 1;
    }
    s.iter()
        .zip(groups)
        .map(|(&x, g)| {
            let (sum, n) = sums[g];
            if n < 2 {
                return x;
            }
            let mu = sum / n as f64;
            (n as f64 / (n as f64 - 1.0) * (x as f64 - mu)) as f32
        })
        .collect()
}

impl EstimatorConfig for RlooConfig {
    const NAME: &'static str = "rloo";

    fn build(&self) -> Box<dyn Advantage> {
        Box::new(Rloo {
            config: self.clone(),
        })
    }

    fn validate(&self) -> envrl::Result<()> {
        check_penalty(self.invalid_penalty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::batch;

    #[test]
    fn each_row_is_compared_with_the_mean_of_the_others() {
        // Scores [10, 0, 2]: 10 − mean(0, 2) = 9; 0 − 6 = −6; 2 − 5 = −3.
        let s = [10.0, 0.0, 2.0];
        assert_eq!(leave_one_out(&s, &[0, 0, 0]), vec![9.0, -6.0, -3.0]);
    }

    #[test]
    fn a_singleton_group_keeps_its_score_and_penalties_count() {
        let b = batch(&[(0, 10.0, &[true]), (1, 0.0, &[false])]);
        assert_eq!(Rloo::default().compute(&b), vec![10.0, -0.1]);
    }
}
