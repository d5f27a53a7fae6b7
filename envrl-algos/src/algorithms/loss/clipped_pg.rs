//! The PPO-style actor loss shared by every critic-free estimator (ENVRL.md §3.2).
//!
//! ```text
//! ρ    = exp(logπ_θ − logπ_old)
//! l    = max(−A·ρ, −A·clip(ρ, 1−ε_low, 1+ε_high))       clipped surrogate
//! l    = min(l, −A·c)  where A < 0                       dual clip, c = 3
//! kl   = clamp(exp(Δ) − Δ − 1, −10, 10),  Δ = logπ_ref − logπ_θ   (k3, "low_var_kl")
//! L    = Σw·l − c_ent·Σw·H + β·Σw·kl                    w = the step's token weights (plan)
//! ```
//!
//! Schulman et al., "Proximal Policy Optimization Algorithms", arXiv:1707.06347; dual clip:
//! Ye et al., arXiv:1912.09729; k3 estimator: <http://joschu.net/blog/kl-approx.html>.

use burn::tensor::Tensor;
use envrl::{PolicyLoss, PolicyLossInput, PolicyLossOutput};
use serde::{Deserialize, Serialize};

/// Hyper-parameters of the actor loss.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClippedPgConfig {
    /// ε_low. Default 0.2.
    pub clip_low: f32,
    /// ε_high. Default 0.2.
    pub clip_high: f32,
    /// Dual-clip constant c (applies where A < 0). Default 3.0.
    pub dual_clip: f32,
    /// KL coefficient β. Default 0.01; 0 disables the reference model.
    pub kl_coef: f32,
    /// Entropy coefficient c_ent. Default 0.001.
    pub entropy_coef: f32,
}

impl Default for ClippedPgConfig {
    fn default() -> Self {
        Self {
            clip_low: 0.2,
            clip_high: 0.2,
            dual_clip: 3.0,
            kl_coef: 0.01,
            entropy_coef: 0.001,
        }
    }
}

/// The clipped-surrogate actor loss with KL and entropy terms.
#[derive(Debug, Clone, Default)]
pub struct ClippedPolicyGradient {
    /// Its hyper-parameters.
    pub config: ClippedPgConfig,
}

impl ClippedPolicyGradient {
    /// The loss with `config`.
    pub fn new(config: ClippedPgConfig) -> Self {
        Self { config }
    }
}

impl PolicyLoss for ClippedPolicyGradient {
    fn needs_reference(&self) -> bool {
        self.config.kl_coef != 0.0
    }

    fn needs_entropy(&self) -> bool {
        true
    }

    fn loss(&self, input: PolicyLossInput<'_>) -> PolicyLossOutput {
        let c = &self.config;
        let w = input.token_weights;
        let logp = input.scores.logprobs.clone();
        let [n, width] = logp.dims();
        let adv = input.advantages.expand([n, width]);

        let (pg, clip_frac) = clipped_surrogate(logp.clone(), input.old_logprobs.clone(), adv, c);
        let l_pg = weighted(pg, w.clone());
        let mut loss = l_pg.clone();
        let mut stats = vec![
            ("loss/policy", l_pg.detach()),
            ("policy/clip_frac", weighted(clip_frac, w.clone()).detach()),
            (
                "policy/approx_kl",
                weighted(input.old_logprobs - logp.clone(), w.clone()).detach(),
            ),
        ];
        if let Some(entropy) = &input.scores.entropy {
            let l_ent = weighted(entropy.clone(), w.clone());
            loss = loss - l_ent.clone().mul_scalar(c.entropy_coef);
            stats.push(("loss/entropy", l_ent.detach()));
        }
        if let Some(reference) = input.ref_logprobs {
            let l_kl = weighted(low_var_kl(reference, logp), w);
            loss = loss + l_kl.clone().mul_scalar(c.kl_coef);
            stats.push(("loss/kl", l_kl.detach()));
        }
        PolicyLossOutput { loss, stats }
    }
}

/// Per-token clipped (and dual-clipped) surrogate loss, and the indicator of clipped tokens.
fn clipped_surrogate(
    logp: Tensor<2>,
    old_logp: Tensor<2>,
    adv: Tensor<2>,
    c: &ClippedPgConfig,
) -> (Tensor<2>, Tensor<2>) {
    let ratio = (logp - old_logp).exp();
    let pg_loss1 = adv.clone().neg() * ratio.clone();
    let pg_loss2 = adv.clone().neg() * ratio.clamp(1.0 - c.clip_low, 1.0 + c.clip_high);
    let clipped = pg_loss2.clone().greater(pg_loss1.clone()).float();
    let pg_loss = pg_loss1.max_pair(pg_loss2);
    let pg_loss3 = adv.clone().neg().mul_scalar(c.dual_clip);
    let dual = pg_loss.clone().min_pair(pg_loss3);
    let negative = adv.lower_elem(0.0);
    (pg_loss.mask_where(negative, dual), clipped)
}

/// Schulman's k3 estimator of KL(π_θ ‖ π_ref), clamped to [−10, 10].
fn low_var_kl(ref_logp: Tensor<2>, logp: Tensor<2>) -> Tensor<2> {
    let delta = ref_logp - logp;
    (delta.clone().exp() - delta - 1.0).clamp(-10.0, 10.0)
}

/// `Σ w·x`: a term aggregated with the plan's token weights.
fn weighted(x: Tensor<2>, w: Tensor<2>) -> Tensor<1> {
    (x * w).sum()
}

/// `Σ mask·x / (Σ mask + 1e-8)`.
pub fn token_mean(x: Tensor<2>, mask: Tensor<2>) -> Tensor<1> {
    (x * mask.clone()).sum() / (mask.sum() + 1e-8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{Device, TensorData};
    use envrl::TokenScores;

    fn t2(values: &[f32], n: usize, w: usize) -> Tensor<2> {
        Tensor::from_data(TensorData::new(values.to_vec(), [n, w]), &Device::flex())
    }

    fn scalar(x: Tensor<1>) -> f32 {
        x.into_scalar::<f32>()
    }

    #[test]
    fn surrogate_clips_and_dual_clips_as_computed_by_hand() {
        let c = ClippedPgConfig::default();
        // Row 0: A = 1, ratio e^0.5 = 1.6487 → clipped to 1.2, loss max(-1.6487, -1.2) = -1.2.
        // Row 1: A = -1, ratio e^2 = 7.389 → l1 = 7.389, l2 = 1.2, max 7.389, dual clip min(.,3) = 3.
        let logp = t2(&[0.5, 2.0], 2, 1);
        let old = t2(&[0.0, 0.0], 2, 1);
        let adv = t2(&[1.0, -1.0], 2, 1);
        let (l, clipped) = clipped_surrogate(logp, old, adv, &c);
        let l: Vec<f32> = l.into_data().try_into_vec().unwrap();
        assert!(
            (l[0] + 1.2).abs() < 1e-5 && (l[1] - 3.0).abs() < 1e-5,
            "{l:?}"
        );
        assert_eq!(
            clipped.into_data().try_into_vec::<f32>().unwrap(),
            vec![1.0, 0.0]
        );
    }

    #[test]
    fn k3_kl_matches_hand_computation() {
        // Δ = 0.3 - 0.1 = 0.2 → e^0.2 − 0.2 − 1 = 0.0214028
        let kl = low_var_kl(t2(&[0.3], 1, 1), t2(&[0.1], 1, 1));
        assert!((scalar(kl.sum()) - 0.021_402_76).abs() < 1e-6);
    }

    #[test]
    fn token_mean_ignores_padding() {
        let x = t2(&[1.0, 2.0, 100.0, 3.0], 2, 2);
        let mask = t2(&[1.0, 1.0, 0.0, 1.0], 2, 2);
        assert!((scalar(token_mean(x, mask)) - 2.0).abs() < 1e-6);
    }

    #[test]
    fn full_loss_combines_terms_with_their_coefficients() {
        let config = ClippedPgConfig {
            kl_coef: 0.5,
            entropy_coef: 0.1,
            ..Default::default()
        };
        let loss = ClippedPolicyGradient::new(config);
        let scores = TokenScores {
            logprobs: t2(&[0.0, 0.0], 1, 2),
            entropy: Some(t2(&[2.0, 4.0], 1, 2)),
            mask: t2(&[1.0, 1.0], 1, 2),
        };
        let out = loss.loss(PolicyLossInput {
            scores: &scores,
            old_logprobs: t2(&[0.0, 0.0], 1, 2),
            ref_logprobs: Some(t2(&[0.2, 0.2], 1, 2)),
            advantages: t2(&[2.0, 2.0], 1, 2),
            token_weights: t2(&[0.5, 0.5], 1, 2),
        });
        // pg = −2; entropy 3 → −0.3; kl = e^0.2 − 1.2 = 0.0214028 → +0.0107014
        let expect = -2.0 - 0.3 + 0.5 * 0.021_402_76;
        assert!((scalar(out.loss) - expect).abs() < 1e-5);
    }
}
