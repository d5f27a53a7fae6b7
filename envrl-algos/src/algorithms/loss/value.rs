//! The critic's loss and settings, whatever model the critic is: the clipped value loss
//!
//! ```text
//! L_V = token-mean( max( (V − G)², (clip(V, V_old − c, V_old + c) − G)² ) )      c = 0.5
//! ```
//!
//! (no ½ factor; ENVRL.md §3.5).

use burn::tensor::Tensor;
use serde::{Deserialize, Serialize};

use super::token_mean;

/// Critic hyper-parameters (ENVRL.md §5: lr 1e-5, clip 0.5, grad clip 1.0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CriticConfig {
    /// AdamW learning rate. Default 1e-5.
    pub learning_rate: f64,
    /// AdamW weight decay. Default 0.01.
    pub weight_decay: f64,
    /// Value clip range c around the old values. Default 0.5.
    pub value_clip: f32,
    /// Global gradient-norm clip. Default 1.0.
    pub max_grad_norm: f64,
}

impl Default for CriticConfig {
    fn default() -> Self {
        Self {
            learning_rate: 1e-5,
            weight_decay: 0.01,
            value_clip: 0.5,
            max_grad_norm: 1.0,
        }
    }
}

/// The clipped value loss of every token and whether its clipped term was the larger:
///
/// ```text
/// l = max( (V − G)², (clip(V, V_old − c, V_old + c) − G)² )
/// ```
pub fn clipped_value_terms(
    values: Tensor<2>,
    old_values: Tensor<2>,
    returns: Tensor<2>,
    clip: f32,
) -> (Tensor<2>, Tensor<2>) {
    let clipped = (values.clone() - old_values.clone()).clamp(-clip, clip) + old_values;
    let unclipped_loss = (values - returns.clone()).square();
    let clipped_loss = (clipped - returns).square();
    let clipped_larger = clipped_loss.clone().greater(unclipped_loss.clone()).float();
    (unclipped_loss.max_pair(clipped_loss), clipped_larger)
}

/// The clipped value loss (a token mean) and the fraction of tokens where the clipped term was
/// larger.
pub fn clipped_value_loss(
    values: Tensor<2>,
    old_values: Tensor<2>,
    returns: Tensor<2>,
    mask: Tensor<2>,
    clip: f32,
) -> (Tensor<1>, Tensor<1>) {
    let (loss, clipped_larger) = clipped_value_terms(values, old_values, returns, clip);
    (
        token_mean(loss, mask.clone()),
        token_mean(clipped_larger, mask),
    )
}
