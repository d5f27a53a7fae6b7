//! Strided `f32` matrix products on flex through the `gemm` crate, written straight into the
//! output buffer.
//!
//! Burn flex's own product allocates its output zeroed as bytes and then copies it into an
//! aligned buffer. This calls the same `gemm` kernels with the same threading rule, on
//! strided operands (transposes are free), into an uninitialised `Vec<f32>` that `gemm`
//! overwrites completely.

use std::mem::MaybeUninit;

use burn::backend::flex::FlexTensor;
use burn::tensor::{DType, Shape, TensorData};
use rayon::prelude::*;

/// Multiply-adds from which one product uses the whole rayon pool (Burn flex's threshold).
const PARALLEL_PRODUCT: usize = 192 * 192 * 192;
/// Multiply-adds of a batch from which its products run in parallel, one per task.
const PARALLEL_BATCH: usize = 1 << 21;

/// One operand: its buffer, the element offset of each matrix of the batch, and its row and
/// column strides.
struct Operand<'a> {
    data: &'a [f32],
    offsets: Vec<usize>,
    row_stride: isize,
    col_stride: isize,
}

impl<'a> Operand<'a> {
    /// `None` unless `tensor` is `f32` with non-negative strides.
    fn new(tensor: &'a FlexTensor) -> Option<Self> {
        let layout = tensor.layout();
        if tensor.dtype() != DType::F32 || !layout.has_positive_strides() {
            return None;
        }
        let shape = layout.shape();
        let strides = layout.strides();
        let rank = shape.num_dims();
        let batch: usize = (0..rank - 2).map(|d| shape[d]).product();
        let offsets = (0..batch)
            .map(|mut b| {
                let mut offset = layout.start_offset();
                for d in (0..rank - 2).rev() {
                    offset += (b % shape[d]) * strides[d] as usize;
                    b /= shape[d];
                }
                offset
            })
            .collect();
        Some(Self {
            data: tensor.storage::<f32>(),
            offsets,
            row_stride: strides[rank - 2],
            col_stride: strides[rank - 1],
        })
    }

    /// The first element of matrix `b`.
    fn ptr(&self, b: usize) -> *const f32 {
        self.data[self.offsets[b]..].as_ptr()
    }
}

/// `lhs · rhs` over the last two dimensions, or `None` when the operands are not `f32`,
/// have broadcast or mismatched leading dimensions, negative strides or an empty dimension
/// (the caller then uses Burn's product).
pub(crate) fn matmul(lhs: &FlexTensor, rhs: &FlexTensor) -> Option<FlexTensor> {
    let (ls, rs) = (lhs.layout().shape(), rhs.layout().shape());
    let rank = ls.num_dims();
    if rank < 2 || rs.num_dims() != rank || ls[..rank - 2] != rs[..rank - 2] {
        return None;
    }
    let (m, k, n) = (ls[rank - 2], ls[rank - 1], rs[rank - 1]);
    if rs[rank - 2] != k || m == 0 || k == 0 || n == 0 {
        return None;
    }
    let (a, b) = (Operand::new(lhs)?, Operand::new(rhs)?);
    let batch = a.offsets.len();
    let mut out: Vec<f32> = Vec::with_capacity(batch * m * n);
    let product = |dst: &mut [MaybeUninit<f32>], i: usize, parallelism| {
        // SAFETY: `dst` holds `m · n` elements, written row-major (row stride n, column
        // stride 1); the operand pointers and strides describe `m × k` and `k × n` matrices
        // inside their buffers (checked shapes, non-negative strides, offsets from the
        // layouts); `read_dst = false`, so `gemm` writes every element and reads none.
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                dst.as_mut_ptr().cast::<f32>(),
                1,
                n as isize,
                false,
                a.ptr(i),
                a.col_stride,
                a.row_stride,
                b.ptr(i),
                b.col_stride,
                b.row_stride,
                0.0,
                1.0,
                false,
                false,
                false,
                parallelism,
            );
        }
    };
    let per_product = m * n * k;
    let spare = &mut out.spare_capacity_mut()[..batch * m * n];
    if batch > 1 && batch * per_product >= PARALLEL_BATCH && per_product < PARALLEL_PRODUCT {
        spare
            .par_chunks_mut(m * n)
            .enumerate()
            .for_each(|(i, dst)| product(dst, i, gemm::Parallelism::None));
    } else {
        let parallelism = if per_product >= PARALLEL_PRODUCT {
            gemm::Parallelism::Rayon(0)
        } else {
            gemm::Parallelism::None
        };
        for (i, dst) in spare.chunks_mut(m * n).enumerate() {
            product(dst, i, parallelism);
        }
    }
    // SAFETY: every one of the `batch · m · n` elements was written by `gemm` above.
    unsafe { out.set_len(batch * m * n) };
    let mut dims = ls.to_vec();
    dims[rank - 1] = n;
    Some(FlexTensor::from_data(TensorData::new(
        out,
        Shape::from(dims),
    )))
}
