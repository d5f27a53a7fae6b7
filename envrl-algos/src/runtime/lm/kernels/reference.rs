//! The kernels as compositions of Burn's tensor operations: the default on backends without
//! a fused kernel, the fallback for half precision on flex, and the reference in tests.

use burn::backend::tensor::IndexingUpdateOp;
use burn::backend::tensor::{BoolTensor, Device, FloatTensor, IntTensor};
use burn::backend::{Backend, TensorMetadata, get_or_init_device_settings};
use burn::tensor::{DType, Shape};

/// The last dimension of `tensor`.
fn last_dim<B: Backend>(tensor: &FloatTensor<B>) -> usize {
    tensor.shape().num_dims() - 1
}

/// The smallest finite value and the smallest positive normal value of `tensor`'s float type.
fn float_limits<B: Backend>(tensor: &FloatTensor<B>) -> (f64, f64) {
    let info = tensor
        .dtype()
        .finfo()
        .unwrap_or(DType::F32.finfo().expect("f32 is a float type"));
    (info.min, info.min_positive)
}

/// `tensor` of shape `[..., d]` as the `[d]` vector broadcast to rank `rank`.
fn broadcast_vector<B: Backend>(vector: FloatTensor<B>, rank: usize) -> FloatTensor<B> {
    let d = vector.shape().num_elements();
    let mut dims = vec![1; rank];
    dims[rank - 1] = d;
    B::float_reshape(vector, Shape::from(dims))
}

/// `true` where column `c` of row `r` is hidden (`c > r + cols − rows`), shaped
/// `[1, …, 1, rows, cols]` of rank `rank`. Built on the device from index ranges, in the
/// device's boolean type (CubeCL backends cannot take host booleans).
fn causal_mask<B: Backend>(
    rows: usize,
    cols: usize,
    rank: usize,
    device: &Device<B>,
) -> BoolTensor<B> {
    let settings = get_or_init_device_settings::<B>(device);
    let arange = |n: usize| B::int_arange(0..n as i64, device, settings.int_dtype);
    let row = B::int_reshape(arange(rows), Shape::new([rows, 1]));
    let col = B::int_reshape(arange(cols), Shape::new([1, cols]));
    // hidden ⇔ r + (cols − rows) < c
    let shifted = B::int_add_scalar(row, (cols as i64 - rows as i64).into());
    let mask = B::int_lower(shifted, col, settings.bool_dtype);
    let mut dims = vec![1; rank];
    dims[rank - 2] = rows;
    dims[rank - 1] = cols;
    B::bool_reshape(mask, Shape::from(dims))
}

/// See [`LmKernels::softmax_rows`](super::LmKernels::softmax_rows).
pub(crate) fn softmax_rows<B: Backend>(
    scores: FloatTensor<B>,
    scale: f32,
    causal: bool,
) -> FloatTensor<B> {
    let shape = scores.shape();
    let rank = shape.num_dims();
    let (rows, cols) = (shape[rank - 2], shape[rank - 1]);
    let device = scores.device();
    let (min, min_positive) = float_limits::<B>(&scores);
    let mut x = B::float_mul_scalar(scores, (scale as f64).into());
    if causal {
        let mask = B::bool_expand(causal_mask::<B>(rows, cols, rank, &device), shape);
        x = B::float_mask_fill(x, mask, f64::NEG_INFINITY.into());
    }
    let last = rank - 1;
    let max = B::float_clamp_min(B::float_max_dim(x.clone(), last), min.into());
    let numerator = B::float_exp(B::float_sub(x, max));
    let sum = B::float_clamp_min(
        B::float_sum_dim(numerator.clone(), last),
        min_positive.into(),
    );
    B::float_div(numerator, sum)
}

/// See [`LmKernels::softmax_rows_backward`](super::LmKernels::softmax_rows_backward).
pub(crate) fn softmax_rows_backward<B: Backend>(
    probs: FloatTensor<B>,
    grad: FloatTensor<B>,
    scale: f32,
) -> FloatTensor<B> {
    let last = last_dim::<B>(&probs);
    let dot = B::float_sum_dim(B::float_mul(probs.clone(), grad.clone()), last);
    let grad = B::float_mul(probs, B::float_sub(grad, dot));
    B::float_mul_scalar(grad, (scale as f64).into())
}

/// The two halves of the last dimension of a rank-4 tensor.
fn halves<B: Backend>(x: FloatTensor<B>) -> (FloatTensor<B>, FloatTensor<B>) {
    let shape = x.shape();
    let half = shape[3] / 2;
    let part = |range: std::ops::Range<usize>| {
        let slices = [
            (0..shape[0]).into(),
            (0..shape[1]).into(),
            (0..shape[2]).into(),
            range.into(),
        ];
        B::float_slice(x.clone(), &slices)
    };
    (part(0..half), part(half..2 * half))
}

/// See [`LmKernels::rope`](super::LmKernels::rope).
pub(crate) fn rope<B: Backend>(
    x: FloatTensor<B>,
    cos: FloatTensor<B>,
    sin: FloatTensor<B>,
) -> FloatTensor<B> {
    let (x1, x2) = halves::<B>(x.clone());
    let rotated = B::float_cat(vec![B::float_neg(x2), x1], 3);
    B::float_add(B::float_mul(x, cos), B::float_mul(rotated, sin))
}

/// See [`LmKernels::rope_backward`](super::LmKernels::rope_backward).
pub(crate) fn rope_backward<B: Backend>(
    grad: FloatTensor<B>,
    cos: FloatTensor<B>,
    sin: FloatTensor<B>,
) -> FloatTensor<B> {
    let (y1, y2) = halves::<B>(B::float_mul(grad.clone(), sin));
    let rotated = B::float_cat(vec![y2, B::float_neg(y1)], 3);
    B::float_add(B::float_mul(grad, cos), rotated)
}

/// See [`LmKernels::swiglu`](super::LmKernels::swiglu).
pub(crate) fn swiglu<B: Backend>(gate: FloatTensor<B>, up: FloatTensor<B>) -> FloatTensor<B> {
    let silu = B::float_mul(gate.clone(), B::sigmoid(gate));
    B::float_mul(silu, up)
}

/// See [`LmKernels::swiglu_backward`](super::LmKernels::swiglu_backward).
pub(crate) fn swiglu_backward<B: Backend>(
    gate: FloatTensor<B>,
    up: FloatTensor<B>,
    grad: FloatTensor<B>,
) -> (FloatTensor<B>, FloatTensor<B>) {
    let s = B::sigmoid(gate.clone());
    let silu = B::float_mul(gate.clone(), s.clone());
    let d_up = B::float_mul(grad.clone(), silu);
    // d silu / d gate = s · (1 + gate · (1 − s))
    let one_minus_s = B::float_add_scalar(B::float_neg(s.clone()), 1.0.into());
    let slope = B::float_mul(
        s,
        B::float_add_scalar(B::float_mul(gate, one_minus_s), 1.0.into()),
    );
    let d_gate = B::float_mul(B::float_mul(grad, up), slope);
    (d_gate, d_up)
}

/// `sqrt(mean(x²) + eps)` over the last dimension, keeping it.
fn rms<B: Backend>(x: FloatTensor<B>, eps: f32) -> FloatTensor<B> {
    let last = last_dim::<B>(&x);
    let mean_square = B::float_mean_dim(B::float_mul(x.clone(), x), last);
    B::float_sqrt(B::float_add_scalar(mean_square, (eps as f64).into()))
}

/// See [`LmKernels::rms_norm`](super::LmKernels::rms_norm).
pub(crate) fn rms_norm<B: Backend>(
    x: FloatTensor<B>,
    weight: FloatTensor<B>,
    eps: f32,
) -> FloatTensor<B> {
    let rank = x.shape().num_dims();
    let normed = B::float_div(x.clone(), rms::<B>(x, eps));
    B::float_mul(normed, broadcast_vector::<B>(weight, rank))
}

/// See [`LmKernels::rms_norm_backward`](super::LmKernels::rms_norm_backward).
pub(crate) fn rms_norm_backward<B: Backend>(
    x: FloatTensor<B>,
    weight: FloatTensor<B>,
    grad: FloatTensor<B>,
    eps: f32,
) -> (FloatTensor<B>, FloatTensor<B>) {
    let shape = x.shape();
    let (rank, d) = (shape.num_dims(), shape[shape.num_dims() - 1]);
    let weight_shape = weight.shape();
    let inv = B::float_recip(rms::<B>(x.clone(), eps));
    let normed = B::float_mul(x.clone(), inv.clone());
    let d_weight = B::float_mul(grad.clone(), normed);
    let d_weight = B::float_sum_dim(
        B::float_reshape(d_weight, Shape::new([shape.num_elements() / d, d])),
        0,
    );
    let g = B::float_mul(grad, broadcast_vector::<B>(weight, rank));
    // dx = g / rms − x · mean(x ⊙ g) / rms³
    let dot = B::float_mean_dim(B::float_mul(x.clone(), g.clone()), rank - 1);
    let inv_cubed = B::float_mul(B::float_mul(inv.clone(), inv.clone()), inv.clone());
    let d_x = B::float_sub(
        B::float_mul(g, inv),
        B::float_mul(x, B::float_mul(dot, inv_cubed)),
    );
    (d_x, B::float_reshape(d_weight, weight_shape))
}

/// `targets` `[rows]` as `[rows, 1]` indices.
fn target_column<B: Backend>(targets: IntTensor<B>) -> IntTensor<B> {
    let rows = targets.shape().num_elements();
    B::int_reshape(targets, Shape::new([rows, 1]))
}

/// See [`LmKernels::token_logprobs`](super::LmKernels::token_logprobs).
pub(crate) fn token_logprobs<B: Backend>(
    logits: FloatTensor<B>,
    targets: IntTensor<B>,
) -> FloatTensor<B> {
    let max = B::float_max_dim(logits.clone(), 1);
    let shifted = B::float_sub(logits, max);
    let exps = B::float_exp(shifted.clone());
    let sum = B::float_sum_dim(exps.clone(), 1);
    let log_sum = B::float_log(sum.clone());
    let target = B::float_gather(1, shifted.clone(), target_column::<B>(targets));
    let logprob = B::float_sub(target, log_sum.clone());
    // H = −Σ p log p = log Σe − Σ e (z − max) / Σe
    let weighted = B::float_sum_dim(B::float_mul(exps, shifted), 1);
    let entropy = B::float_sub(log_sum, B::float_div(weighted, sum));
    B::float_cat(vec![logprob, entropy], 1)
}

/// Column `column` of a `[rows, 2]` tensor, as `[rows, 1]`.
fn column<B: Backend>(tensor: FloatTensor<B>, column: usize) -> FloatTensor<B> {
    let rows = tensor.shape()[0];
    B::float_slice(tensor, &[(0..rows).into(), (column..column + 1).into()])
}

/// See [`LmKernels::token_logprobs_backward`](super::LmKernels::token_logprobs_backward).
pub(crate) fn token_logprobs_backward<B: Backend>(
    logits: FloatTensor<B>,
    targets: IntTensor<B>,
    output: FloatTensor<B>,
    grad: FloatTensor<B>,
) -> FloatTensor<B> {
    let targets = target_column::<B>(targets);
    let (logprob, entropy) = (column::<B>(output.clone(), 0), column::<B>(output, 1));
    let (d_logprob, d_entropy) = (column::<B>(grad.clone(), 0), column::<B>(grad, 1));
    // log Z = z_target − log p(target); log p = z − log Z
    let log_z = B::float_sub(B::float_gather(1, logits.clone(), targets.clone()), logprob);
    let log_p = B::float_sub(logits, log_z);
    let p = B::float_exp(log_p.clone());
    let from_logprob = B::float_mul(B::float_neg(p.clone()), d_logprob.clone());
    let from_entropy = B::float_mul(B::float_mul(p, B::float_add(log_p, entropy)), d_entropy);
    let d_logits = B::float_sub(from_logprob, from_entropy);
    B::float_scatter(1, d_logits, targets, d_logprob, IndexingUpdateOp::Add)
}
