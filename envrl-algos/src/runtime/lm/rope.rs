//! Rotary position embeddings (the "rotate half" form of Hugging Face's Qwen2 and Llama).

use burn::tensor::{Device, Tensor, TensorData};

use crate::runtime::lm::kernels::rope;

/// Cosine and sine tables for given positions, `[batch, 1, seq, head_dim]` each.
#[derive(Debug, Clone)]
pub struct RopeTables {
    /// cos(p·θ_i), the frequencies repeated over both halves of the head.
    pub cos: Tensor<4>,
    /// sin(p·θ_i).
    pub sin: Tensor<4>,
}

impl RopeTables {
    /// Tables for `positions` (row-major `[batch, seq]`).
    pub fn new(
        positions: &[usize],
        batch: usize,
        seq: usize,
        head_dim: usize,
        theta: f64,
        device: &Device,
    ) -> Self {
        let half = head_dim / 2;
        let inv_freq: Vec<f64> = (0..half)
            .map(|i| 1.0 / theta.powf(2.0 * i as f64 / head_dim as f64))
            .collect();
        let mut cos = vec![0.0f32; positions.len() * head_dim];
        let mut sin = vec![0.0f32; positions.len() * head_dim];
        for (n, &p) in positions.iter().enumerate() {
            for (i, f) in inv_freq.iter().enumerate() {
                // Computed in f32 like transformers: inv_freq (f32) · position.
                let angle = (*f as f32) * p as f32;
                let (s, c) = angle.sin_cos();
                cos[n * head_dim + i] = c;
                cos[n * head_dim + half + i] = c;
                sin[n * head_dim + i] = s;
                sin[n * head_dim + half + i] = s;
            }
        }
        let shape = [batch, 1, seq, head_dim];
        Self {
            cos: Tensor::from_data(TensorData::new(cos, shape), device),
            sin: Tensor::from_data(TensorData::new(sin, shape), device),
        }
    }

    /// Rotates `x` (`[batch, heads, seq, head_dim]`): `x·cos + rotate_half(x)·sin`.
    pub fn apply(&self, x: Tensor<4>) -> Tensor<4> {
        rope(x, self.cos.clone(), self.sin.clone())
    }
}
