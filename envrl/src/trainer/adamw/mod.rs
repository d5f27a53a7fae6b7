//! AdamW as one fused pass per parameter tensor.
//!
//! Burn's `AdamW` updates a parameter with about fourteen element-wise tensor operations
//! (each reading and writing a parameter-sized buffer); on a 135M-parameter model those
//! passes took a tenth of a training step on the CPU. [`FusedAdamW`] computes the same update,
//! in the same order of `f32` operations, in one pass over the parameter, its gradient and
//! both moments ([`AdamWKernel`]: a loop over the rayon pool on flex, Burn's tensor
//! operations on the other backends). Its state is Burn's [`AdamWState`], so optimizer
//! checkpoints are unchanged.

// burn-tch is deprecated upstream; libtorch stays one of our backends.
#![allow(deprecated)]

mod flex;
mod reference;

use burn::backend::tensor::FloatTensor;
use burn::backend::{Backend, Dispatch, backend_extension};
use burn::optim::{AdamWState, AdaptiveMomentumState, LearningRate, ModuleOptimizer, Optimizer};
use burn::tensor::{Device, Tensor};

/// The scalars of one AdamW step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdamWStep {
    /// Learning rate.
    pub lr: f64,
    /// First-moment decay β₁.
    pub beta_1: f32,
    /// Second-moment decay β₂.
    pub beta_2: f32,
    /// ε added to `sqrt(v̂)`.
    pub epsilon: f32,
    /// Decoupled weight decay (multiplied by the learning rate).
    pub weight_decay: f32,
    /// The step number, from 1.
    pub time: i32,
}

impl AdamWStep {
    /// `1 − β₁ᵗ` and `1 − β₂ᵗ`.
    fn bias_corrections(&self) -> (f32, f32) {
        (
            1.0 - self.beta_1.powi(self.time),
            1.0 - self.beta_2.powi(self.time),
        )
    }

    /// The factor the parameter is multiplied by before the update, `None` without decay.
    fn decay_factor(&self) -> Option<f32> {
        let rate = self.lr * self.weight_decay as f64;
        (rate != 0.0).then_some((1.0 - rate) as f32)
    }
}

/// The fused AdamW update as a Burn backend extension.
#[backend_extension(
    Flex,
    Autodiff,
    LibTorch: cfg(feature = "tch"),
    Cube: cfg(any(feature = "wgpu", feature = "cuda"))
)]
pub trait AdamWKernel: Backend {
    /// One AdamW step: returns the new parameter, first moment and second moment.
    fn adamw_step(
        param: FloatTensor<Self>,
        grad: FloatTensor<Self>,
        moment_1: FloatTensor<Self>,
        moment_2: FloatTensor<Self>,
        step: AdamWStep,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        reference::adamw_step::<Self>(param, grad, moment_1, moment_2, step)
    }
}

impl<B: Backend, C: burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy> AdamWKernel
    for burn::backend::Autodiff<B, C>
{
}

#[cfg(feature = "tch")]
impl AdamWKernel for burn::backend::LibTorch {}

#[cfg(any(feature = "wgpu", feature = "cuda"))]
impl AdamWKernel for burn::backend::Cube {}

/// AdamW (Loshchilov & Hutter) with Burn's defaults and update order, fused into one pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FusedAdamW {
    /// β₁ (0.9).
    pub beta_1: f32,
    /// β₂ (0.999).
    pub beta_2: f32,
    /// ε.
    pub epsilon: f32,
    /// Decoupled weight decay.
    pub weight_decay: f32,
}

impl FusedAdamW {
    /// β = (0.9, 0.999) with the given ε and weight decay.
    pub fn new(epsilon: f32, weight_decay: f32) -> Self {
        Self {
            beta_1: 0.9,
            beta_2: 0.999,
            epsilon,
            weight_decay,
        }
    }

    /// The optimizer for a whole module.
    pub fn init(self) -> ModuleOptimizer {
        ModuleOptimizer::from(self)
    }
}

impl Optimizer for FusedAdamW {
    type State<const D: usize> = AdamWState<D>;

    fn step<const D: usize>(
        &self,
        lr: LearningRate,
        tensor: Tensor<D>,
        grad: Tensor<D>,
        state: Option<Self::State<D>>,
    ) -> (Tensor<D>, Option<Self::State<D>>) {
        let (moment_1, moment_2, time) = match state {
            Some(AdamWState { momentum }) => (momentum.moment_1, momentum.moment_2, momentum.time),
            // Zero moments give exactly Burn's first step: m = (1 − β₁)·g, v = (1 − β₂)·g².
            None => (grad.zeros_like(), grad.zeros_like(), 0),
        };
        let step = AdamWStep {
            lr,
            beta_1: self.beta_1,
            beta_2: self.beta_2,
            epsilon: self.epsilon,
            weight_decay: self.weight_decay,
            time: (time + 1) as i32,
        };
        let (param, moment_1, moment_2) = <Dispatch as AdamWKernel>::adamw_step(
            tensor.into_dispatch(),
            grad.into_dispatch(),
            moment_1.into_dispatch(),
            moment_2.into_dispatch(),
            step,
        );
        let momentum = AdaptiveMomentumState {
            time: time + 1,
            moment_1: Tensor::from_dispatch(moment_1),
            moment_2: Tensor::from_dispatch(moment_2),
            max_moment_2: None,
        };
        (Tensor::from_dispatch(param), Some(AdamWState { momentum }))
    }

    fn to_device<const D: usize>(mut state: Self::State<D>, device: &Device) -> Self::State<D> {
        state.momentum = state.momentum.to_device(device);
        state
    }
}

#[cfg(test)]
mod tests;
