//! How an optimizer step's gradient is clipped: one bound on the sum ([`GradClip::Global`]) or
//! on its parts apart ([`GradClip::PerLoss`], [`GradClip::AuxRatio`]).

use serde::{Deserialize, Serialize};

/// How an optimizer step's gradient is clipped to `max_grad_norm` (`trainer.clip`). The
/// policy's gradient and each auxiliary objective's weighted gradient are summed into the step's
/// gradient; when an objective's gradient is many times the policy's (EnvRL's early in
/// training), a global clip shrinks the policy's step with it.
///
/// The default is `{ aux_ratio = 1.0 }`: on ALFWorld (12 paired seeds, docs/results.md) it won
/// back 3.4 [1.1, 5.7] of the 4.1 points the global clip's EnvRL runs lost to GRPO. Where no
/// objective trains, every mode is the global clip bit for bit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GradClip {
    /// The sum clipped to the bound as one gradient (the only mode before December 2026).
    Global,
    /// The policy's gradient and each objective's weighted gradient clipped to the bound apart,
    /// then summed (no further clip): an objective's size never shrinks the policy's step.
    PerLoss,
    /// Each objective's weighted gradient capped at this multiple of the policy gradient's
    /// norm, then the sum clipped to the bound as one (`clip = { aux_ratio = 1.0 }`, the
    /// default); where the policy's gradient is zero, no objective trains.
    AuxRatio(f64),
}

impl Default for GradClip {
    /// The objectives capped at the policy gradient's norm: `AuxRatio(1.0)`.
    fn default() -> Self {
        GradClip::AuxRatio(1.0)
    }
}

impl GradClip {
    /// Whether this is the global clip.
    pub fn is_global(&self) -> bool {
        *self == GradClip::Global
    }

    /// A short label: `global`, `per_loss` or `aux_ratio 0.5`.
    pub fn label(&self) -> String {
        match self {
            GradClip::Global => "global".into(),
            GradClip::PerLoss => "per_loss".into(),
            GradClip::AuxRatio(ratio) => format!("aux_ratio {ratio}"),
        }
    }

    /// Whether the policy's and the objectives' gradients must be kept apart to clip.
    pub fn needs_parts(&self) -> bool {
        !self.is_global()
    }

    /// Whether the summed gradient is clipped to the bound as one after the parts' factors.
    pub fn clips_the_sum(&self) -> bool {
        !matches!(self, GradClip::PerLoss)
    }

    /// The factor each part of a step's gradient is multiplied by before they are summed, given
    /// the policy gradient's norm and each objective's (`parts`: the policy's first, then the
    /// objectives' in order) and the bound `max_norm` (0: no bound). Every factor is 1 where
    /// nothing exceeds its bound, so the sum is then the global mode's bit for bit.
    pub fn part_factors(&self, max_norm: f64, parts: &[f64]) -> Vec<f64> {
        let cap = |norm: f64, bound: f64| match norm > bound {
            true => bound / (norm + 1e-6),
            false => 1.0,
        };
        match *self {
            GradClip::Global => vec![1.0; parts.len()],
            GradClip::PerLoss if max_norm <= 0.0 => vec![1.0; parts.len()],
            GradClip::PerLoss => parts.iter().map(|&n| cap(n, max_norm)).collect(),
            GradClip::AuxRatio(ratio) => {
                let policy = parts.first().copied().unwrap_or(0.0);
                let objectives = parts.iter().skip(1).map(|&n| cap(n, ratio * policy));
                std::iter::once(1.0).chain(objectives).collect()
            }
        }
    }

    /// The factor of the global clip: `max_norm / (norm + 1e-6)` when `norm` exceeds a positive
    /// bound, else 1 (`clip_global_grad_norm`).
    pub fn global_factor(max_norm: f64, norm: f64) -> f64 {
        match max_norm > 0.0 && norm > max_norm {
            true => max_norm / (norm + 1e-6),
            false => 1.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_modes_scale_only_the_parts_over_their_bound() {
        let near = |a: &[f64], b: &[f64]| {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-9)
        };
        // The policy's gradient 0.5, two objectives' 4 and 0.8, bound 1.
        let parts = [0.5, 4.0, 0.8];
        assert_eq!(GradClip::Global.part_factors(1.0, &parts), vec![1.0; 3]);
        let per_loss = GradClip::PerLoss.part_factors(1.0, &parts);
        assert!(
            near(&per_loss, &[1.0, 1.0 / (4.0 + 1e-6), 1.0]),
            "{per_loss:?}"
        );
        // Nothing over its bound: every factor exactly 1 (the sum is the global mode's).
        assert_eq!(
            GradClip::PerLoss.part_factors(1.0, &[0.5, 0.9, 0.1]),
            vec![1.0; 3]
        );
        assert_eq!(GradClip::PerLoss.part_factors(0.0, &parts), vec![1.0; 3]);
        // The objectives capped at the policy's norm (0.5): 4 → 0.5, 0.8 → 0.5.
        let ratio = GradClip::AuxRatio(1.0).part_factors(1.0, &parts);
        assert!(
            near(&ratio, &[1.0, 0.5 / (4.0 + 1e-6), 0.5 / (0.8 + 1e-6)]),
            "{ratio:?}"
        );
        assert!(GradClip::AuxRatio(1.0).clips_the_sum() && !GradClip::PerLoss.clips_the_sum());
        assert_eq!(GradClip::global_factor(1.0, 0.5), 1.0);
        assert!((GradClip::global_factor(1.0, 2.0) - 1.0 / (2.0 + 1e-6)).abs() < 1e-12);
        assert_eq!(GradClip::global_factor(0.0, 2.0), 1.0);
    }

    #[test]
    fn clip_modes_read_from_a_config() {
        let read = |s: &str| serde_json::from_str::<GradClip>(s);
        assert_eq!(read("\"per_loss\"").unwrap(), GradClip::PerLoss);
        assert_eq!(read("\"global\"").unwrap(), GradClip::Global);
        assert_eq!(
            read(r#"{"aux_ratio": 0.5}"#).unwrap(),
            GradClip::AuxRatio(0.5)
        );
        assert!(read("\"local\"").is_err());
    }
}
