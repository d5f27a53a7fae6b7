//! Seeded parameter initialisation on the host, so the same seed gives the same weights on
//! every backend and in every thread.

use burn::module::Param;
use burn::nn::Linear;
use burn::tensor::{Device, Tensor, TensorData};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Samples `n` values from N(0, std²) (Box–Muller).
pub(crate) fn normal(rng: &mut ChaCha8Rng, n: usize, std: f64) -> Vec<f32> {
    let mut out = Vec::with_capacity(n + 1);
    while out.len() < n {
        let u1: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
        let u2: f64 = rng.random::<f64>();
        let r = (-2.0 * u1.ln()).sqrt() * std;
        let theta = std::f64::consts::TAU * u2;
        out.push((r * theta.cos()) as f32);
        out.push((r * theta.sin()) as f32);
    }
    out.truncate(n);
    out
}

/// A float parameter of `shape` from `values`.
pub(crate) fn param<const D: usize>(
    values: Vec<f32>,
    shape: [usize; D],
    device: &Device,
) -> Param<Tensor<D>> {
    Param::from_tensor(Tensor::from_data(TensorData::new(values, shape), device))
}

/// A `Linear` with N(0, std²) weights of Burn's `[d_input, d_output]` layout and zero bias.
pub(crate) fn linear(
    rng: &mut ChaCha8Rng,
    d_input: usize,
    d_output: usize,
    bias: bool,
    std: f64,
    device: &Device,
) -> Linear {
    Linear {
        weight: param(
            normal(rng, d_input * d_output, std),
            [d_input, d_output],
            device,
        ),
        bias: bias.then(|| param(vec![0.0; d_output], [d_output], device)),
    }
}

/// `values` (`[rows, cols]`, row-major) transposed to `[cols, rows]`, in cache-sized blocks:
/// Hugging Face and GGUF store projections `[out, in]`, Burn's `Linear` holds `[in, out]`.
pub(crate) fn transpose(values: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    const BLOCK: usize = 32;
    let mut out = vec![0.0f32; values.len()];
    for r0 in (0..rows).step_by(BLOCK) {
        for c0 in (0..cols).step_by(BLOCK) {
            for r in r0..(r0 + BLOCK).min(rows) {
                for c in c0..(c0 + BLOCK).min(cols) {
                    out[c * rows + r] = values[r * cols + c];
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn transpose_swaps_rows_and_columns() {
        let (rows, cols) = (37, 70);
        let values: Vec<f32> = (0..rows * cols).map(|v| v as f32).collect();
        let t = super::transpose(&values, rows, cols);
        for r in 0..rows {
            for c in 0..cols {
                assert_eq!(t[c * rows + r], values[r * cols + c]);
            }
        }
    }
}
