//! Strided `f32` matrix products on flex through the `gemm` crate, written straight into the
//! output buffer.
//!
//! Burn flex's own product allocates its output zeroed as bytes and then copies it into an
//! aligned buffer. This calls the same `gemm` kernels with the same threading rule, on
//! strided operands (transposes are free), into an uninitialised `Vec<f32>` that `gemm`
//! overwrites completely. Products of a few rows whose operands are laid out for it (decoding's
//! attention: a few query rows against the cached keys, then their probabilities against the
//! cached values) skip `gemm` and its packing of the right operand: each output is a dot
//! product of contiguous vectors, or each output row a sum of contiguous rows.

use std::mem::MaybeUninit;

use burn::backend::flex::FlexTensor;
use burn::tensor::{DType, Shape, TensorData};
use rayon::prelude::*;

use super::fast_math;

/// Multiply-adds from which one product uses the whole rayon pool (Burn flex's threshold).
const PARALLEL_PRODUCT: usize = 192 * 192 * 192;
/// Multiply-adds of a batch from which its products run in parallel, one per task.
const PARALLEL_BATCH: usize = 1 << 21;
/// Rows of the left operand up to which a product may be computed directly, without `gemm`.
const FEW_ROWS: usize = 8;
/// Elements of the right operand up to which it may (1 MiB, about a core's second-level cache:
/// the direct product reads it once per left row; weight matrices go to `gemm`).
const FEW_ROWS_RIGHT: usize = 1 << 18;

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

    /// Line `i` of matrix `b` (`len` elements from `i · stride`, contiguous).
    #[inline(always)]
    fn line(&self, b: usize, i: usize, stride: isize, len: usize) -> &[f32] {
        let start = self.offsets[b] + i * stride as usize;
        &self.data[start..start + len]
    }
}

/// How the right operand of a few-row product is read: by its columns (each one dot product
/// with a left row) or by its rows (each one added to an output row, scaled).
#[derive(Clone, Copy)]
enum FewRows {
    Columns,
    Rows,
}

/// The batch of `m × k` by `k × n` products directly into `dst` (`[batch, m, n]`), for left
/// operands with contiguous rows and right operands read as `how` says.
fn few_rows_product(a: &Operand, b: &Operand, mkn: [usize; 3], how: FewRows, dst: &mut [f32]) {
    let [m, k, n] = mkn;
    let product = |batch: usize, out: &mut [f32]| {
        pulp::Arch::new().dispatch(FewRowsProduct {
            a,
            b,
            mkn,
            how,
            batch,
            out,
        })
    };
    if m * n * k * a.offsets.len() >= PARALLEL_BATCH {
        dst.par_chunks_mut(m * n)
            .enumerate()
            .for_each(|(i, out)| product(i, out));
    } else {
        for (i, out) in dst.chunks_mut(m * n).enumerate() {
            product(i, out);
        }
    }
}

/// One product of [`few_rows_product`], compiled for the CPU's best instruction set (its
/// loops vectorise there).
struct FewRowsProduct<'a> {
    a: &'a Operand<'a>,
    b: &'a Operand<'a>,
    mkn: [usize; 3],
    how: FewRows,
    /// Which product of the batch.
    batch: usize,
    /// Its `[m, n]` outputs.
    out: &'a mut [f32],
}

impl pulp::WithSimd for FewRowsProduct<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let (a, b, i) = (self.a, self.b, self.batch);
        let [_, k, n] = self.mkn;
        for (r, out) in self.out.chunks_exact_mut(n).enumerate() {
            let lhs = a.line(i, r, a.row_stride, k);
            match self.how {
                FewRows::Columns => {
                    for (j, o) in out.iter_mut().enumerate() {
                        *o = fast_math::dot(lhs, b.line(i, j, b.col_stride, k));
                    }
                }
                FewRows::Rows => {
                    out.fill(0.0);
                    for (l, &alpha) in lhs.iter().enumerate() {
                        fast_math::axpy(alpha, b.line(i, l, b.row_stride, n), out);
                    }
                }
            }
        }
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
    let mut dims = ls.to_vec();
    dims[rank - 1] = n;
    let few_rows = match (a.col_stride, b.row_stride, b.col_stride) {
        _ if m > FEW_ROWS || k * n > FEW_ROWS_RIGHT => None,
        (1, 1, _) => Some(FewRows::Columns),
        (1, _, 1) => Some(FewRows::Rows),
        _ => None,
    };
    if let Some(how) = few_rows {
        let mut out = vec![0.0f32; batch * m * n];
        few_rows_product(&a, &b, [m, k, n], how, &mut out);
        return Some(FlexTensor::from_data(TensorData::new(
            out,
            Shape::from(dims),
        )));
    }
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
    Some(FlexTensor::from_data(TensorData::new(
        out,
        Shape::from(dims),
    )))
}
