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
