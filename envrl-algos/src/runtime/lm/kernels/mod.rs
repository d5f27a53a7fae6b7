//! Fused kernels of the causal LM, as a Burn backend extension ([`LmKernels`]).
//!
//! Each kernel replaces a chain of element-wise tensor operations that Burn would run (and
//! record for the backward pass) one by one: the attention softmax with its causal mask,
//! rotary embeddings, the SwiGLU activation, RMSNorm, and the log-probability of the target
//! tokens with the entropy. The matrix product ([`flex_matmul`]) writes straight into its
//! output where Burn flex zero-fills and copies it. Each has a forward and a backward kernel:
//!
//! - on **flex** (the CPU backend) they are single passes over the rows with a vectorised
//!   `exp` ([`fast_math`]), in place where the input is not shared, over the rayon pool;
//! - on **autodiff** they are one graph node each, whose backward pass calls the backward
//!   kernel (storing only what it needs: the probabilities, or the inputs);
//! - on every other backend (libtorch, wgpu, CUDA), and for half-precision tensors on flex,
//!   they are the same composition of Burn tensor operations as before ([`reference`]).
//!
//! The functions at the bottom ([`matmul`], [`softmax_rows`], [`rope`], [`swiglu`],
//! [`rms_norm`], [`token_logprobs`]) take and return [`Tensor`]s and route through Burn's
//! `Dispatch` backend.

// burn-tch is deprecated upstream; libtorch stays one of our backends.
#![allow(deprecated)]

mod autodiff;
pub(crate) mod fast_math;
mod flex;
mod flex_matmul;
pub(crate) mod packed;
pub(crate) mod reference;

use burn::backend::tensor::{FloatTensor, IntTensor};
use burn::backend::{Backend, Dispatch, backend_extension};
use burn::tensor::{Int, Tensor};

/// The fused operations of the causal LM. Implemented with fast kernels for flex and
/// autodiff, and with the [`reference`] compositions (the default bodies) elsewhere.
#[backend_extension(
    Flex,
    Autodiff,
    LibTorch: cfg(feature = "tch"),
    Cube: cfg(any(feature = "wgpu", feature = "cuda"))
)]
pub trait LmKernels: Backend {
    /// `lhs · rhs` over the last two dimensions (leading dimensions equal).
    fn matmul(lhs: FloatTensor<Self>, rhs: FloatTensor<Self>) -> FloatTensor<Self> {
        Self::float_matmul(lhs, rhs)
    }

    /// Softmax over the last dimension of `scale · scores`; with `causal`, column `c` of row
    /// `r` is masked when `c > r + (cols − rows)` (the last two dimensions).
    fn softmax_rows(scores: FloatTensor<Self>, scale: f32, causal: bool) -> FloatTensor<Self> {
        reference::softmax_rows::<Self>(scores, scale, causal)
    }

    /// Gradient of [`softmax_rows`](LmKernels::softmax_rows) from its output `probs`.
    fn softmax_rows_backward(
        probs: FloatTensor<Self>,
        grad: FloatTensor<Self>,
        scale: f32,
    ) -> FloatTensor<Self> {
        reference::softmax_rows_backward::<Self>(probs, grad, scale)
    }

    /// Rotary embedding `x·cos + rotate_half(x)·sin` of `x` `[batch, heads, seq, head_dim]`
    /// with tables `[batch, 1, seq, head_dim]`.
    fn rope(
        x: FloatTensor<Self>,
        cos: FloatTensor<Self>,
        sin: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        reference::rope::<Self>(x, cos, sin)
    }

    /// Gradient of [`rope`](LmKernels::rope) with respect to `x`.
    fn rope_backward(
        grad: FloatTensor<Self>,
        cos: FloatTensor<Self>,
        sin: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        reference::rope_backward::<Self>(grad, cos, sin)
    }

    /// `silu(gate) · up`.
    fn swiglu(gate: FloatTensor<Self>, up: FloatTensor<Self>) -> FloatTensor<Self> {
        reference::swiglu::<Self>(gate, up)
    }

    /// Gradients of [`swiglu`](LmKernels::swiglu) with respect to `gate` and `up`.
    fn swiglu_backward(
        gate: FloatTensor<Self>,
        up: FloatTensor<Self>,
        grad: FloatTensor<Self>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        reference::swiglu_backward::<Self>(gate, up, grad)
    }

    /// `x / sqrt(mean(x²) + eps) · weight` over the last dimension.
    fn rms_norm(x: FloatTensor<Self>, weight: FloatTensor<Self>, eps: f32) -> FloatTensor<Self> {
        reference::rms_norm::<Self>(x, weight, eps)
    }

    /// Gradients of [`rms_norm`](LmKernels::rms_norm) with respect to `x` and `weight`.
    fn rms_norm_backward(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        grad: FloatTensor<Self>,
        eps: f32,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        reference::rms_norm_backward::<Self>(x, weight, grad, eps)
    }

    /// For `logits` `[rows, vocab]` and `targets` `[rows]`: `[rows, 2]` holding
    /// `log softmax(logits)[target]` and the entropy of `softmax(logits)`.
    fn token_logprobs(logits: FloatTensor<Self>, targets: IntTensor<Self>) -> FloatTensor<Self> {
        reference::token_logprobs::<Self>(logits, targets)
    }

    /// Gradient of [`token_logprobs`](LmKernels::token_logprobs) with respect to the logits,
    /// given its output and the output's gradient (both `[rows, 2]`).
    fn token_logprobs_backward(
        logits: FloatTensor<Self>,
        targets: IntTensor<Self>,
        output: FloatTensor<Self>,
        grad: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        reference::token_logprobs_backward::<Self>(logits, targets, output, grad)
    }
}

#[cfg(feature = "tch")]
impl LmKernels for burn::backend::LibTorch {}

#[cfg(any(feature = "wgpu", feature = "cuda"))]
impl LmKernels for burn::backend::Cube {}

/// `lhs · rhs` over the last two dimensions; the leading dimensions must be equal (no
/// broadcasting).
pub fn matmul<const D: usize>(lhs: Tensor<D>, rhs: Tensor<D>) -> Tensor<D> {
    Tensor::from_dispatch(<Dispatch as LmKernels>::matmul(
        lhs.into_dispatch(),
        rhs.into_dispatch(),
    ))
}

/// Softmax over the last dimension of `scale · scores`, causally masked when `causal`.
///
/// # Shapes
/// - `scores`: `[..., rows, cols]`; returns the same shape
pub fn softmax_rows<const D: usize>(scores: Tensor<D>, scale: f32, causal: bool) -> Tensor<D> {
    Tensor::from_dispatch(<Dispatch as LmKernels>::softmax_rows(
        scores.into_dispatch(),
        scale,
        causal,
    ))
}

/// Rotary position embedding: `x·cos + rotate_half(x)·sin`.
///
/// # Shapes
/// - `x`: `[batch, heads, seq, head_dim]`, `cos` and `sin`: `[batch, 1, seq, head_dim]`
pub fn rope(x: Tensor<4>, cos: Tensor<4>, sin: Tensor<4>) -> Tensor<4> {
    Tensor::from_dispatch(<Dispatch as LmKernels>::rope(
        x.into_dispatch(),
        cos.into_dispatch(),
        sin.into_dispatch(),
    ))
}

/// `silu(gate) · up`, the SwiGLU activation.
pub fn swiglu<const D: usize>(gate: Tensor<D>, up: Tensor<D>) -> Tensor<D> {
    Tensor::from_dispatch(<Dispatch as LmKernels>::swiglu(
        gate.into_dispatch(),
        up.into_dispatch(),
    ))
}

/// RMSNorm over the last dimension: `x / sqrt(mean(x²) + eps) · weight`.
pub fn rms_norm<const D: usize>(x: Tensor<D>, weight: Tensor<1>, eps: f32) -> Tensor<D> {
    Tensor::from_dispatch(<Dispatch as LmKernels>::rms_norm(
        x.into_dispatch(),
        weight.into_dispatch(),
        eps,
    ))
}

/// The log-probability of each target token and the entropy of each row's distribution.
///
/// # Shapes
/// - `logits`: `[rows, vocab]`, `targets`: `[rows]`
/// - returns (`[rows]` log-probabilities, `[rows]` entropies)
pub fn token_logprobs(logits: Tensor<2>, targets: Tensor<1, Int>) -> (Tensor<1>, Tensor<1>) {
    let rows = logits.dims()[0];
    let both: Tensor<2> = Tensor::from_dispatch(<Dispatch as LmKernels>::token_logprobs(
        logits.into_dispatch(),
        targets.into_dispatch(),
    ));
    let logprobs = both.clone().narrow(1, 0, 1).reshape([rows]);
    let entropy = both.narrow(1, 1, 1).reshape([rows]);
    (logprobs, entropy)
}

#[cfg(test)]
mod tests;
