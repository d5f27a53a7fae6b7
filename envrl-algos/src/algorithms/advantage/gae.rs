//! PPO's estimator: generalised advantage estimation over each row's response tokens, from a
//! learned critic.
//!
//! Schulman et al., "High-Dimensional Continuous Control Using Generalized Advantage
//! Estimation", arXiv:1506.02438; verl-agent's `compute_gae_advantage_return` with
//! `adv_estimator = gae` (ENVRL.md §3.5):
//!
//! ```text
//! r_k = s_i at the row's last response token, 0 elsewhere     s_i = R(τ) − c_pen·(1 − v_i)
//! δ_k = r_k + γ·V_{k+1} − V_k                                 V_{K+1} = 0
//! Â_k = Σ_j (γλ)^j δ_{k+j}                                    G_k = Â_k + V_k  (value target)
//! A_k = (Â_k − mean Â) / sqrt(var_unbiased Â + 1e-8)           over all response tokens of the batch
//! ```
//!
//! With the reference's γ = λ = 1, each row is an independent prediction of its own score and
//! `Â_k = s_i − V_k`. Without values (`compute`), `V = 0`.

use envrl::{Advantage, RolloutBatch, TokenAdvantages};
use serde::{Deserialize, Serialize};

use super::scores::row_scores;

/// PPO (GAE) hyper-parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GaeConfig {
    /// Invalid-action penalty c_pen. Default 0.1.
    pub invalid_penalty: f32,
    /// Discount γ over response tokens. Default 1.0.
    pub gamma: f32,
    /// GAE λ. Default 1.0.
    pub lambda: f32,
}

impl Default for GaeConfig {
    fn default() -> Self {
        Self {
            invalid_penalty: 0.1,
            gamma: 1.0,
            lambda: 1.0,
        }
    }
}

/// The GAE estimator of PPO; it needs a [`envrl::Critic`].
#[derive(Debug, Clone, Default)]
pub struct Gae {
    /// Its hyper-parameters.
    pub config: GaeConfig,
}

impl Advantage for Gae {
    fn name(&self) -> &str {
        "gae"
    }

    /// The whitened advantage of each row's first token with `V = 0` (for inspection; training
    /// uses [`Advantage::compute_tokens`]).
    fn compute(&self, batch: &RolloutBatch) -> Vec<f32> {
        self.compute_tokens(batch, None)
            .advantages
            .iter()
            .map(|row| row.first().copied().unwrap_or(0.0))
            .collect()
    }

    fn needs_values(&self) -> bool {
        true
    }

    fn compute_tokens(&self, batch: &RolloutBatch, values: Option<&[Vec<f32>]>) -> TokenAdvantages {
        let scores = row_scores(batch, self.config.invalid_penalty);
        let mut advantages = Vec::with_capacity(scores.len());
        let mut returns = Vec::with_capacity(scores.len());
        for (i, (row, score)) in batch.rows().zip(scores).enumerate() {
            let k = row.step.response_ids.len();
            let zeros = vec![0.0; k];
            let v = values.and_then(|v| v.get(i)).unwrap_or(&zeros);
            let (adv, ret) = gae_row(score, v, self.config.gamma, self.config.lambda);
            advantages.push(adv);
            returns.push(ret);
        }
        whiten(&mut advantages);
        TokenAdvantages {
            advantages,
            returns: Some(returns),
        }
    }
}

/// GAE over one row whose only reward is `score` at its last token: `(Â, G = Â + V)`.
pub fn gae_row(score: f32, values: &[f32], gamma: f32, lambda: f32) -> (Vec<f32>, Vec<f32>) {
    let k = values.len();
    let mut adv = vec![0.0f32; k];
    let mut running = 0.0f32;
    for t in (0..k).rev() {
        let reward = if t + 1 == k { score } else { 0.0 };
        let next_value = values.get(t + 1).copied().unwrap_or(0.0);
        let delta = reward + gamma * next_value - values[t];
        running = delta + gamma * lambda * running;
        adv[t] = running;
    }
    let returns = adv.iter().zip(values).map(|(a, v)| a + v).collect();
    (adv, returns)
}

/// `(x − mean) / sqrt(var_unbiased + 1e-8)` over every entry of every row (in place). A single
/// entry is only centred.
pub fn whiten(rows: &mut [Vec<f32>]) {
    let n: usize = rows.iter().map(Vec::len).sum();
    if n == 0 {
        return;
    }
    let mean = rows.iter().flatten().map(|&x| x as f64).sum::<f64>() / n as f64;
    let var = if n > 1 {
        rows.iter()
            .flatten()
            .map(|&x| (x as f64 - mean).powi(2))
            .sum::<f64>()
            / (n - 1) as f64
    } else {
        0.0
    };
    let scale = if n > 1 { (var + 1e-8).sqrt() } else { 1.0 };
    for x in rows.iter_mut().flatten() {
        *x = ((*x as f64 - mean) / scale) as f32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::batch;

    #[test]
    fn gae_matches_a_hand_computation() {
        // γ = 0.9, λ = 0.5, V = [0.2, 0.4, 0.1], score 1 at the last token.
        // δ2 = 1 − 0.1 = 0.9; δ1 = 0 + 0.9·0.1 − 0.4 = −0.31; δ0 = 0.9·0.4 − 0.2 = 0.16
        // Â2 = 0.9; Â1 = −0.31 + 0.45·0.9 = 0.095; Â0 = 0.16 + 0.45·0.095 = 0.20275
        let (adv, ret) = gae_row(1.0, &[0.2, 0.4, 0.1], 0.9, 0.5);
        let expect = [0.20275, 0.095, 0.9];
        for (a, e) in adv.iter().zip(expect) {
            assert!((a - e).abs() < 1e-6, "{adv:?}");
        }
        let expect_ret = [0.40275, 0.495, 1.0];
        for (g, e) in ret.iter().zip(expect_ret) {
            assert!((g - e).abs() < 1e-6, "{ret:?}");
        }
    }

    #[test]
    fn with_unit_gamma_and_lambda_every_token_predicts_the_row_score() {
        let (adv, ret) = gae_row(0.9, &[0.5, 0.3], 1.0, 1.0);
        assert!((adv[0] - 0.4).abs() < 1e-6 && (adv[1] - 0.6).abs() < 1e-6);
        assert!(ret.iter().all(|g| (g - 0.9).abs() < 1e-6));
    }

    #[test]
    fn advantages_are_whitened_over_all_tokens_of_the_batch() {
        // Two single-step trajectories, one token each: scores 1 and 0, V = 0.
        let b = batch(&[(0, 1.0, &[true]), (1, 0.0, &[true])]);
        let out = Gae::default().compute_tokens(&b, Some(&[vec![0.0], vec![0.0]]));
        // mean 0.5, unbiased var 0.5 → ±0.5/√0.5 = ±0.7071
        assert!((out.advantages[0][0] - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-5);
        assert!((out.advantages[1][0] + std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-5);
        assert_eq!(out.returns.unwrap(), vec![vec![1.0], vec![0.0]]);
    }

    #[test]
    fn identical_scores_give_zero_advantages_not_nan() {
        let b = batch(&[(0, 1.0, &[true]), (1, 1.0, &[true])]);
        let out = Gae::default().compute_tokens(&b, None);
        assert_eq!(out.advantages, vec![vec![0.0], vec![0.0]]);
    }

    #[test]
    fn invalid_rows_are_penalised_in_the_value_target() {
        let b = batch(&[(0, 0.0, &[false])]);
        let out = Gae::default().compute_tokens(&b, None);
        assert!((out.returns.unwrap()[0][0] + 0.1).abs() < 1e-6);
    }
}
