//! [`LmKernels`] on flex: `f32` row kernels from [`fast_math`], in place where a tensor is
//! not shared, spread over the rayon pool. Other float types use the [`reference`]
//! compositions.

use burn::backend::Flex;
use burn::backend::flex::FlexTensor;
use burn::backend::tensor::{FloatTensor, IntTensor};
use burn::tensor::{DType, TensorData};
use rayon::prelude::*;

use super::fast_math::{self, simd};
use super::flex_matmul;
use super::{LmKernels, reference};

/// Elements a parallel task works on at least: smaller tensors stay on the calling thread.
const TASK_ELEMENTS: usize = 1 << 14;

/// Whether every tensor is `f32`.
fn all_f32(tensors: &[&FlexTensor]) -> bool {
    tensors.iter().all(|t| t.dtype() == DType::F32)
}

/// `tensor` contiguous and writable: in place when it is `f32`, contiguous and not shared,
/// otherwise a copy.
fn writable(tensor: FlexTensor) -> FlexTensor {
    let contiguous = tensor.to_contiguous();
    drop(tensor);
    contiguous
}

/// The length of the last dimension.
fn row_len(tensor: &FlexTensor) -> usize {
    let shape = tensor.layout().shape();
    shape[shape.num_dims() - 1]
}

/// Runs `f(first_row, rows)` on `data` split into whole rows of `row` elements, on the rayon
/// pool when the tensor is large; `f` is compiled for the best SIMD instruction set.
fn for_rows(data: &mut [f32], row: usize, f: impl Fn(usize, &mut [f32]) + Sync) {
    if row == 0 || data.is_empty() {
        return;
    }
    let rows_per_task = (TASK_ELEMENTS / row).max(1);
    let chunk = rows_per_task * row;
    if data.len() <= chunk {
        simd(|| f(0, data));
    } else {
        data.par_chunks_mut(chunk)
            .enumerate()
            .for_each(|(task, rows)| simd(|| f(task * rows_per_task, rows)));
    }
}

/// Target ids of an integer tensor as `usize`.
///
/// # Panics
/// Panics if an id is negative or at least `vocab`: the targets are token ids of the model.
fn target_ids(targets: &FlexTensor, vocab: usize) -> Vec<usize> {
    let targets = targets.to_contiguous();
    let ids: Vec<i64> = match targets.dtype() {
        DType::I64 => targets.storage::<i64>().to_vec(),
        DType::I32 => targets.storage::<i32>().iter().map(|&v| v as i64).collect(),
        DType::U32 => targets.storage::<u32>().iter().map(|&v| v as i64).collect(),
        other => panic!("token_logprobs: unsupported target type {other:?}"),
    };
    ids.into_iter()
        .map(|id| {
            assert!(
                (0..vocab as i64).contains(&id),
                "token_logprobs: target id {id} outside the vocabulary of {vocab}"
            );
            id as usize
        })
        .collect()
}

/// Contiguous RoPE tables when `x` and the tables are `f32`, `x` is `[b, h, s, d]` with an even
/// `d` and the tables are `[b, 1, s, d]`; `None` otherwise.
fn rope_tables(
    x: &FlexTensor,
    cos: &FlexTensor,
    sin: &FlexTensor,
) -> Option<(FlexTensor, FlexTensor)> {
    let shape = x.layout().shape();
    let table = cos.layout().shape();
    let fits = all_f32(&[x, cos, sin])
        && shape.num_dims() == 4
        && shape[3].is_multiple_of(2)
        && table.num_dims() == 4
        && table[..] == [shape[0], 1, shape[2], shape[3]]
        && sin.layout().shape() == table;
    fits.then(|| (cos.to_contiguous(), sin.to_contiguous()))
}

/// Applies a RoPE row kernel to every head row of `x` in place (a contiguous copy when `x` is
/// strided or shared), with the table row of its batch and position. Generic over the kernel
/// so that it is inlined into the SIMD-dispatched loop.
fn apply_rope(
    x: FlexTensor,
    cos: &FlexTensor,
    sin: &FlexTensor,
    row_kernel: impl Fn(&mut [f32], &[f32], &[f32]) + Sync,
) -> FlexTensor {
    let shape = x.layout().shape().clone();
    let (heads, seq, d) = (shape[1], shape[2], shape[3]);
    let (cos, sin) = (cos.storage::<f32>(), sin.storage::<f32>());
    let mut out = writable(x);
    for_rows(out.storage_mut::<f32>(), d, |first, data| {
        for (i, row) in data.chunks_exact_mut(d).enumerate() {
            let r = first + i;
            let (batch, position) = (r / (heads * seq), r % seq);
            let table = (batch * seq + position) * d;
            row_kernel(row, &cos[table..table + d], &sin[table..table + d]);
        }
    });
    out
}

impl LmKernels for Flex {
    fn matmul(lhs: FloatTensor<Self>, rhs: FloatTensor<Self>) -> FloatTensor<Self> {
        match flex_matmul::matmul(&lhs, &rhs) {
            Some(out) => out,
            None => <Flex as burn::backend::ops::FloatTensorOps<Flex>>::float_matmul(lhs, rhs),
        }
    }

    fn softmax_rows(scores: FloatTensor<Self>, scale: f32, causal: bool) -> FloatTensor<Self> {
        if scores.dtype() != DType::F32 {
            return reference::softmax_rows::<Self>(scores, scale, causal);
        }
        let shape = scores.layout().shape().clone();
        let rank = shape.num_dims();
        let (rows, cols) = (shape[rank - 2], shape[rank - 1]);
        let mut out = writable(scores);
        for_rows(out.storage_mut::<f32>(), cols, |first, data| {
            for (i, row) in data.chunks_exact_mut(cols).enumerate() {
                let r = (first + i) % rows;
                let valid = if causal {
                    (r + 1 + cols).saturating_sub(rows).min(cols)
                } else {
                    cols
                };
                fast_math::softmax_row(row, scale, valid);
            }
        });
        out
    }

    fn softmax_rows_backward(
        probs: FloatTensor<Self>,
        grad: FloatTensor<Self>,
        scale: f32,
    ) -> FloatTensor<Self> {
        if !all_f32(&[&probs, &grad]) {
            return reference::softmax_rows_backward::<Self>(probs, grad, scale);
        }
        let cols = row_len(&probs);
        let probs = probs.to_contiguous();
        let probs = probs.storage::<f32>();
        let mut grad = writable(grad);
        for_rows(grad.storage_mut::<f32>(), cols, |first, data| {
            let probs = &probs[first * cols..first * cols + data.len()];
            for (g, p) in data.chunks_exact_mut(cols).zip(probs.chunks_exact(cols)) {
                fast_math::softmax_row_backward(p, g, scale);
            }
        });
        grad
    }

    fn rope(
        x: FloatTensor<Self>,
        cos: FloatTensor<Self>,
        sin: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        match rope_tables(&x, &cos, &sin) {
            Some((cos, sin)) => apply_rope(x, &cos, &sin, fast_math::rope_row),
            None => reference::rope::<Self>(x, cos, sin),
        }
    }

    fn rope_backward(
        grad: FloatTensor<Self>,
        cos: FloatTensor<Self>,
        sin: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        match rope_tables(&grad, &cos, &sin) {
            Some((cos, sin)) => apply_rope(grad, &cos, &sin, fast_math::rope_row_backward),
            None => reference::rope_backward::<Self>(grad, cos, sin),
        }
    }

    fn swiglu(gate: FloatTensor<Self>, up: FloatTensor<Self>) -> FloatTensor<Self> {
        if !all_f32(&[&gate, &up]) || gate.layout().shape() != up.layout().shape() {
            return reference::swiglu::<Self>(gate, up);
        }
        let gate = gate.to_contiguous();
        let gate_data = gate.storage::<f32>();
        let mut out = writable(up);
        let cols = row_len(&out);
        for_rows(out.storage_mut::<f32>(), cols, |first, data| {
            let gate = &gate_data[first * cols..first * cols + data.len()];
            fast_math::swiglu(gate, data);
        });
        out
    }

    fn swiglu_backward(
        gate: FloatTensor<Self>,
        up: FloatTensor<Self>,
        grad: FloatTensor<Self>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        let same_shape = gate.layout().shape() == up.layout().shape()
            && up.layout().shape() == grad.layout().shape();
        if !all_f32(&[&gate, &up, &grad]) || !same_shape {
            return reference::swiglu_backward::<Self>(gate, up, grad);
        }
        let gate = gate.to_contiguous();
        let gate = gate.storage::<f32>();
        let (mut up, mut grad) = (writable(up), writable(grad));
        let up_data = up.storage_mut::<f32>();
        let grad_data = grad.storage_mut::<f32>();
        let chunk = TASK_ELEMENTS;
        let work = |(g, (u, d)): (&[f32], (&mut [f32], &mut [f32]))| {
            simd(|| fast_math::swiglu_backward(g, u, d))
        };
        if grad_data.len() <= chunk {
            work((gate, (up_data, grad_data)));
        } else {
            gate.par_chunks(chunk)
                .zip(
                    up_data
                        .par_chunks_mut(chunk)
                        .zip(grad_data.par_chunks_mut(chunk)),
                )
                .for_each(work);
        }
        (grad, up)
    }

    fn rms_norm(x: FloatTensor<Self>, weight: FloatTensor<Self>, eps: f32) -> FloatTensor<Self> {
        let d = row_len(&x);
        if !all_f32(&[&x, &weight]) || weight.layout().num_elements() != d {
            return reference::rms_norm::<Self>(x, weight, eps);
        }
        let weight = weight.to_contiguous();
        let weight = weight.storage::<f32>();
        let shape = x.layout().shape().clone();
        let x = x.to_contiguous();
        let x = x.storage::<f32>();
        let mut out = vec![0.0f32; x.len()];
        for_rows(&mut out, d, |first, data| {
            let x = &x[first * d..first * d + data.len()];
            for (o, x) in data.chunks_exact_mut(d).zip(x.chunks_exact(d)) {
                fast_math::rms_norm_row(x, weight, eps, o);
            }
        });
        FlexTensor::from_data(TensorData::new(out, shape))
    }

    fn rms_norm_backward(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        grad: FloatTensor<Self>,
        eps: f32,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        let d = row_len(&x);
        if !all_f32(&[&x, &weight, &grad]) || weight.layout().num_elements() != d || d == 0 {
            return reference::rms_norm_backward::<Self>(x, weight, grad, eps);
        }
        let weight_shape = weight.layout().shape().clone();
        let weight = weight.to_contiguous();
        let weight = weight.storage::<f32>();
        let x = x.to_contiguous();
        let x = x.storage::<f32>();
        let mut grad = writable(grad);
        let grad_data = grad.storage_mut::<f32>();
        let rows_per_task = (TASK_ELEMENTS / d).max(1);
        let task = |(x, g): (&[f32], &mut [f32])| {
            let mut weight_grad = vec![0.0f32; d];
            simd(|| {
                for (x, g) in x.chunks_exact(d).zip(g.chunks_exact_mut(d)) {
                    fast_math::rms_norm_row_backward(x, weight, eps, g, &mut weight_grad);
                }
            });
            weight_grad
        };
        let weight_grad = if grad_data.len() <= rows_per_task * d {
            task((x, grad_data))
        } else {
            // Each task's partial sum, added in task order: rayon's `reduce` would add them in
            // a tree shaped by work stealing, so the result would change from run to run.
            let partials: Vec<Vec<f32>> = x
                .par_chunks(rows_per_task * d)
                .zip(grad_data.par_chunks_mut(rows_per_task * d))
                .map(task)
                .collect();
            let mut total = vec![0.0f32; d];
            for partial in partials {
                total.iter_mut().zip(partial).for_each(|(t, p)| *t += p);
            }
            total
        };
        (
            grad,
            FlexTensor::from_data(TensorData::new(weight_grad, weight_shape)),
        )
    }

    fn token_logprobs(logits: FloatTensor<Self>, targets: IntTensor<Self>) -> FloatTensor<Self> {
        let vocab = row_len(&logits);
        if logits.dtype() != DType::F32 || vocab == 0 {
            return reference::token_logprobs::<Self>(logits, targets);
        }
        let logits = logits.to_contiguous();
        let logits = logits.storage::<f32>();
        let targets = target_ids(&targets, vocab);
        let mut out = vec![0.0f32; targets.len() * 2];
        out.par_chunks_mut(2)
            .zip(logits.par_chunks(vocab))
            .zip(&targets)
            .with_min_len((TASK_ELEMENTS / vocab).max(1))
            .for_each_init(
                || vec![0.0f32; vocab],
                |scratch, ((out, row), &target)| {
                    let (logprob, entropy) =
                        simd(|| fast_math::logprob_entropy_row(row, target, scratch));
                    out.copy_from_slice(&[logprob, entropy]);
                },
            );
        FlexTensor::from_data(TensorData::new(out, [targets.len(), 2]))
    }

    fn token_logprobs_backward(
        logits: FloatTensor<Self>,
        targets: IntTensor<Self>,
        output: FloatTensor<Self>,
        grad: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        if !all_f32(&[&logits, &output, &grad]) {
            return reference::token_logprobs_backward::<Self>(logits, targets, output, grad);
        }
        let vocab = row_len(&logits);
        let targets = target_ids(&targets, vocab);
        let output = output.to_contiguous();
        let output = output.storage::<f32>();
        let grad = grad.to_contiguous();
        let grad = grad.storage::<f32>();
        let mut d_logits = writable(logits);
        for_rows(d_logits.storage_mut::<f32>(), vocab, |first, data| {
            for (i, row) in data.chunks_exact_mut(vocab).enumerate() {
                let r = first + i;
                fast_math::logprob_entropy_row_backward(
                    row,
                    targets[r],
                    (output[2 * r], output[2 * r + 1]),
                    (grad[2 * r], grad[2 * r + 1]),
                );
            }
        });
        d_logits
    }
}
