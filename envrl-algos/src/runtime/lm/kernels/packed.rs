//! Matrices stored in bf16 or in 8-bit blocks, and their products with thin `f32` matrices
//! (decoding's few rows), accumulating in `f32`.
//!
//! Decoding one token per row reads every weight once per step, so its speed is the memory
//! bandwidth divided by the bytes of the weights: bf16 halves them, 8-bit blocks (one `f32`
//! scale per [`INT8_BLOCK`] weights) bring them to 1.125 bytes a weight. A matrix is stored
//! output by output (`[outputs, inputs]`, Hugging Face's layout), so each output is one dot
//! product over a contiguous row: the kernel decodes a row to `f32` once and takes its dot
//! product with every input row, [`ROWS_AT_ONCE`] at a time, in vector registers (`pulp`, for
//! the best instruction set of the CPU). Outputs are
//! split over the rayon pool.

use std::borrow::Cow;

use rayon::prelude::*;

/// Weights per scale of the 8-bit format (llama.cpp's `Q8_0` block).
pub const INT8_BLOCK: usize = 32;
/// Input rows multiplied by the decoded weight rows at a time.
const ROWS_AT_ONCE: usize = 4;
/// Weight rows decoded and multiplied together.
const WEIGHT_ROWS_AT_ONCE: usize = 4;
/// Pairs of bf16 per stored line (64 bytes, a cache line).
const PAIR_LINE: usize = 16;
/// Rayon tasks per thread of one product: few enough that waking the pool stays small beside
/// the work, enough to even out the threads.
const TASKS_PER_THREAD: usize = 4;

/// The storage of a [`PackedMatrix`].
#[derive(Debug, Clone, PartialEq)]
enum Storage {
    /// Two bf16 per `u32`: element `2p` of a row in the low half of its pair `p`, element
    /// `2p + 1` in the high half; each half becomes an `f32` by a shift or a mask, in
    /// registers. Rows are zero-padded to whole [`PAIR_LINE`]s of pairs and stored in panels of
    /// [`WEIGHT_ROWS_AT_ONCE`] rows (zero rows pad the last), line by line: a panel's first line
    /// of each of its rows, then their second lines, … — so that a product reads the matrix
    /// as one sequential stream.
    Bf16 { pairs: Vec<u32> },
    /// `round(w / scale)` per weight, row-major, with one scale per [`INT8_BLOCK`] weights of
    /// a row (`max |w| / 127` of the block; the last block of a row may be shorter).
    Int8 { values: Vec<i8>, scales: Vec<f32> },
}

/// A `[rows, cols]` matrix in a compact format, for `x · Wᵀ` (each row one output).
#[derive(Debug, Clone, PartialEq)]
pub struct PackedMatrix {
    rows: usize,
    cols: usize,
    storage: Storage,
}

/// The `f32` of the low (`element 2p`) and high (`2p + 1`) bf16 of a pair.
#[inline(always)]
fn unpair(pair: u32) -> (f32, f32) {
    (
        f32::from_bits(pair << 16),
        f32::from_bits(pair & 0xFFFF_0000),
    )
}

/// Pairs per stored bf16 row: `⌈cols / 2⌉` rounded up to whole lines.
fn padded_pairs(cols: usize) -> usize {
    cols.div_ceil(2).next_multiple_of(PAIR_LINE)
}

/// Where pair `p` of row `r` lies in the panel layout (see `Storage::Bf16`).
#[inline(always)]
fn pair_index(r: usize, p: usize, padded: usize) -> usize {
    let (panel, in_panel) = (r / WEIGHT_ROWS_AT_ONCE, r % WEIGHT_ROWS_AT_ONCE);
    let (line, in_line) = (p / PAIR_LINE, p % PAIR_LINE);
    panel * WEIGHT_ROWS_AT_ONCE * padded
        + (line * WEIGHT_ROWS_AT_ONCE + in_panel) * PAIR_LINE
        + in_line
}

impl PackedMatrix {
    /// `values` (`[rows, cols]`, row-major) rounded to the nearest bf16.
    ///
    /// # Panics
    /// Panics if `values.len() != rows · cols`.
    pub fn bf16(values: &[f32], rows: usize, cols: usize) -> Self {
        assert_eq!(values.len(), rows * cols, "a [{rows}, {cols}] matrix");
        let bits = |v: f32| u32::from(half::bf16::from_f32(v).to_bits());
        let padded = padded_pairs(cols);
        let mut pairs = vec![0u32; rows.next_multiple_of(WEIGHT_ROWS_AT_ONCE) * padded];
        for (r, row) in values.chunks(cols.max(1)).take(rows).enumerate() {
            for (p, pair) in row.chunks(2).enumerate() {
                let high = pair.get(1).map_or(0, |&v| bits(v));
                pairs[pair_index(r, p, padded)] = bits(pair[0]) | high << 16;
            }
        }
        Self {
            rows,
            cols,
            storage: Storage::Bf16 { pairs },
        }
    }

    /// `values` (`[rows, cols]`, row-major) in 8-bit blocks of [`INT8_BLOCK`] along each row.
    ///
    /// # Panics
    /// Panics if `values.len() != rows · cols`.
    pub fn int8(values: &[f32], rows: usize, cols: usize) -> Self {
        assert_eq!(values.len(), rows * cols, "a [{rows}, {cols}] matrix");
        let blocks = cols.div_ceil(INT8_BLOCK);
        let mut quantised = Vec::with_capacity(values.len());
        let mut scales = Vec::with_capacity(rows * blocks);
        for row in values.chunks(cols.max(1)).take(rows) {
            for block in row.chunks(INT8_BLOCK) {
                let top = block.iter().fold(0.0f32, |m, v| m.max(v.abs()));
                let scale = top / 127.0;
                let inv = if scale > 0.0 { 1.0 / scale } else { 0.0 };
                quantised.extend(block.iter().map(|v| (v * inv).round() as i8));
                scales.push(scale);
            }
        }
        Self {
            rows,
            cols,
            storage: Storage::Int8 {
                values: quantised,
                scales,
            },
        }
    }

    /// Rows (outputs).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The bytes the weights take (what one product reads).
    pub fn bytes(&self) -> usize {
        match &self.storage {
            Storage::Bf16 { pairs } => 4 * pairs.len(),
            Storage::Int8 { values, scales } => values.len() + 4 * scales.len(),
        }
    }

    /// Row `row` as `f32`, into `out` (`cols` long).
    #[inline(always)]
    fn decode_row(&self, row: usize, out: &mut [f32]) {
        let cols = self.cols;
        match &self.storage {
            Storage::Bf16 { pairs } => {
                let padded = padded_pairs(cols);
                for (line, out) in out.chunks_mut(2 * PAIR_LINE).enumerate() {
                    let at = pair_index(row, line * PAIR_LINE, padded);
                    for (o, &pair) in out.chunks_mut(2).zip(&pairs[at..at + PAIR_LINE]) {
                        let (low, high) = unpair(pair);
                        o[0] = low;
                        if let Some(o) = o.get_mut(1) {
                            *o = high;
                        }
                    }
                }
            }
            Storage::Int8 { values, scales } => {
                let values = &values[row * cols..(row + 1) * cols];
                let scales = &scales[row * cols.div_ceil(INT8_BLOCK)..];
                for ((o, q), &scale) in out
                    .chunks_mut(INT8_BLOCK)
                    .zip(values.chunks(INT8_BLOCK))
                    .zip(scales)
                {
                    for (o, &q) in o.iter_mut().zip(q) {
                        *o = f32::from(q) * scale;
                    }
                }
            }
        }
    }

    /// The matrix as `f32`, `[rows, cols]` row-major (exactly the values the products use).
    pub fn to_f32(&self) -> Vec<f32> {
        let mut out = vec![0.0; self.rows * self.cols];
        if self.cols > 0 {
            out.par_chunks_mut(self.cols)
                .enumerate()
                .for_each(|(row, dst)| self.decode_row(row, dst));
        }
        out
    }

    /// `x · Wᵀ` for `x` of `m` rows of `cols` (row-major): `m` rows of `rows` outputs.
    ///
    /// # Panics
    /// Panics if `x.len() != m · cols`.
    pub fn matmul_transposed(&self, x: &[f32], m: usize) -> Vec<f32> {
        let (n, k) = (self.rows, self.cols);
        assert_eq!(x.len(), m * k, "{m} input rows of {k}");
        let mut out = vec![0.0f32; m * n];
        if m == 0 || n == 0 || k == 0 {
            return out;
        }
        // A bf16 product multiplies even and odd elements apart: split the inputs that way.
        let inputs = match self.storage {
            Storage::Bf16 { .. } => Cow::Owned(split_even_odd(x, k)),
            Storage::Int8 { .. } => Cow::Borrowed(x),
        };
        let per_task = n
            .div_ceil(TASKS_PER_THREAD * rayon::current_num_threads())
            .next_multiple_of(WEIGHT_ROWS_AT_ONCE);
        // Each task writes its outputs' columns of every output row.
        let mut tasks: Vec<Vec<&mut [f32]>> = (0..n.div_ceil(per_task))
            .map(|_| Vec::with_capacity(m))
            .collect();
        for row in out.chunks_mut(n) {
            for (task, part) in tasks.iter_mut().zip(row.chunks_mut(per_task)) {
                task.push(part);
            }
        }
        tasks
            .into_par_iter()
            .enumerate()
            .for_each(|(task, mut dst)| {
                pulp::Arch::new().dispatch(Task {
                    matrix: self,
                    first: task * per_task,
                    inputs: &inputs,
                    dst: &mut dst,
                })
            });
        out
    }
}

/// Each row of `x` (rows of `k`) as its even elements then its odd ones, each
/// [`padded_pairs`]`(k)` long (zeros after the row's own).
fn split_even_odd(x: &[f32], k: usize) -> Vec<f32> {
    let half = padded_pairs(k);
    let mut out = vec![0.0f32; x.len() / k * 2 * half];
    for (row, dst) in x.chunks_exact(k).zip(out.chunks_exact_mut(2 * half)) {
        let (even, odd) = dst.split_at_mut(half);
        for (p, pair) in row.chunks(2).enumerate() {
            even[p] = pair[0];
            if let Some(&v) = pair.get(1) {
                odd[p] = v;
            }
        }
    }
    out
}

/// One rayon task of [`PackedMatrix::matmul_transposed`]: the outputs of weight rows
/// `first..`, [`WEIGHT_ROWS_AT_ONCE`] at a time, for every input row, into `dst` (one slice of
/// outputs per input row).
struct Task<'a, 'o> {
    matrix: &'a PackedMatrix,
    first: usize,
    /// The input rows: as given for int8, split in even and odd halves for bf16.
    inputs: &'a [f32],
    dst: &'a mut [&'o mut [f32]],
}

impl pulp::WithSimd for Task<'_, '_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) {
        let k = self.matrix.cols;
        let outputs = self.dst.first().map_or(0, |d| d.len());
        match &self.matrix.storage {
            Storage::Bf16 { pairs } => {
                let half = padded_pairs(k);
                let x: Vec<(&[f32], &[f32])> = self
                    .inputs
                    .chunks_exact(2 * half)
                    .map(|row| row.split_at(half))
                    .collect();
                let panel_len = WEIGHT_ROWS_AT_ONCE * half;
                for block in 0..outputs.div_ceil(WEIGHT_ROWS_AT_ONCE) {
                    let panel = (self.first / WEIGHT_ROWS_AT_ONCE + block) * panel_len;
                    let panel = &pairs[panel..panel + panel_len];
                    // A last panel's zero rows are computed and not written.
                    for_input_rows(
                        &x,
                        self.dst,
                        block * WEIGHT_ROWS_AT_ONCE,
                        |x| bf16_panel(simd, panel, x),
                        |x| bf16_panel(simd, panel, x),
                    );
                }
            }
            Storage::Int8 { .. } => {
                let x: Vec<&[f32]> = self.inputs.chunks_exact(k).collect();
                let mut decoded = vec![0.0f32; WEIGHT_ROWS_AT_ONCE * k];
                for block in 0..outputs.div_ceil(WEIGHT_ROWS_AT_ONCE) {
                    let at = block * WEIGHT_ROWS_AT_ONCE;
                    let rows = (outputs - at).min(WEIGHT_ROWS_AT_ONCE);
                    for (r, buf) in decoded.chunks_mut(k).take(rows).enumerate() {
                        let row = self.first + at + r;
                        self.matrix.decode_row(row, buf);
                    }
                    // A last block of fewer rows computes the buffer's others (finite values
                    // of an earlier block, or zeros) and does not write them.
                    let w: [&[f32]; WEIGHT_ROWS_AT_ONCE] =
                        std::array::from_fn(|r| &decoded[r * k..(r + 1) * k]);
                    for_input_rows(
                        &x,
                        self.dst,
                        at,
                        |x| f32_block(simd, w, x),
                        |x| f32_block(simd, w, x),
                    );
                }
            }
        }
    }
}

/// The dot products of `R` weight rows with every input row of `x`, [`ROWS_AT_ONCE`] input rows
/// at a time (`four`), the rest one by one (`one`), into outputs `at..` of `out` (one slice
/// per input row; a block's weight rows beyond the slices' length are dropped).
#[inline(always)]
fn for_input_rows<X: Copy, const R: usize>(
    x: &[X],
    out: &mut [&mut [f32]],
    at: usize,
    four: impl Fn([X; ROWS_AT_ONCE]) -> [[f32; ROWS_AT_ONCE]; R],
    one: impl Fn([X; 1]) -> [[f32; 1]; R],
) {
    let m = x.len();
    let rows = out.first().map_or(0, |o| o.len().saturating_sub(at)).min(R);
    let mut i = 0;
    while i + ROWS_AT_ONCE <= m {
        let sums = four(std::array::from_fn(|j| x[i + j]));
        for (r, sums) in sums.iter().enumerate().take(rows) {
            for (j, &sum) in sums.iter().enumerate() {
                out[i + j][at + r] = sum;
            }
        }
        i += ROWS_AT_ONCE;
    }
    for (i, &row) in x.iter().enumerate().skip(i) {
        for (r, sums) in one([row]).iter().enumerate().take(rows) {
            out[i][at + r] = sums[0];
        }
    }
}

/// The dot products of a panel's [`WEIGHT_ROWS_AT_ONCE`] bf16 rows with `C` input rows, in
/// vector accumulators; the pairs are widened to `f32` in registers. The panel is read once,
/// in order.
#[inline(always)]
fn bf16_panel<S: pulp::Simd, const C: usize>(
    simd: S,
    panel: &[u32],
    x: [(&[f32], &[f32]); C],
) -> [[f32; C]; WEIGHT_ROWS_AT_ONCE] {
    const R: usize = WEIGHT_ROWS_AT_ONCE;
    let even = x.map(|x| S::as_simd_f32s(x.0).0);
    let odd = x.map(|x| S::as_simd_f32s(x.1).0);
    let lines = S::as_simd_u32s(panel).0;
    // Vectors per line of pairs (1 with AVX-512, 2 with AVX2).
    let per_line = (even[0].len() * PAIR_LINE / x[0].0.len().max(1)).max(1);
    let (shift, high) = (simd.splat_u32s(16), simd.splat_u32s(0xFFFF_0000));
    // With one input row, even and odd elements go to separate accumulators (two independent
    // chains per product hide the multiply-add's latency); with several, the `R · C`
    // accumulators do, and twice as many would not fit the registers.
    let mut acc_even = [[simd.splat_f32s(0.0); C]; R];
    let mut acc_odd = [[simd.splat_f32s(0.0); C]; R];
    for (line, panel_line) in lines.chunks_exact(R * per_line).enumerate() {
        for t in 0..per_line {
            let v = line * per_line + t;
            let (xe, xo) = (even.map(|h| h[v]), odd.map(|h| h[v]));
            for r in 0..R {
                let pair = panel_line[r * per_line + t];
                let we = simd.transmute_f32s_u32s(simd.wrapping_dyn_shl_u32s(pair, shift));
                let wo = simd.transmute_f32s_u32s(simd.and_u32s(pair, high));
                for j in 0..C {
                    if C == 1 {
                        acc_even[r][j] = simd.mul_add_f32s(we, xe[j], acc_even[r][j]);
                        acc_odd[r][j] = simd.mul_add_f32s(wo, xo[j], acc_odd[r][j]);
                    } else {
                        let a = simd.mul_add_f32s(we, xe[j], acc_even[r][j]);
                        acc_even[r][j] = simd.mul_add_f32s(wo, xo[j], a);
                    }
                }
            }
        }
    }
    let mut sums = [[0.0f32; C]; R];
    for r in 0..R {
        for j in 0..C {
            sums[r][j] = simd.reduce_sum_f32s(simd.add_f32s(acc_even[r][j], acc_odd[r][j]));
        }
    }
    sums
}

/// The `R × C` dot products of `f32` rows `w` with rows `x` (all as long), in `R · C` vector
/// accumulators.
#[inline(always)]
fn f32_block<S: pulp::Simd, const R: usize, const C: usize>(
    simd: S,
    w: [&[f32]; R],
    x: [&[f32]; C],
) -> [[f32; C]; R] {
    let len = w[0].len();
    let w_heads = w.map(|w| S::as_simd_f32s(w).0);
    let x_heads = x.map(|x| S::as_simd_f32s(x).0);
    let mut acc = [[simd.splat_f32s(0.0); C]; R];
    for c in 0..w_heads[0].len() {
        let xs = x_heads.map(|h| h[c]);
        for (acc, wh) in acc.iter_mut().zip(&w_heads) {
            let wv = wh[c];
            for (a, &xv) in acc.iter_mut().zip(&xs) {
                *a = simd.mul_add_f32s(wv, xv, *a);
            }
        }
    }
    let done = len - S::as_simd_f32s(w[0]).1.len();
    let mut sums = [[0.0f32; C]; R];
    for r in 0..R {
        for j in 0..C {
            let tail: f32 = w[r][done..]
                .iter()
                .zip(&x[j][done..])
                .map(|(a, b)| a * b)
                .sum();
            sums[r][j] = simd.reduce_sum_f32s(acc[r][j]) + tail;
        }
    }
    sums
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;

    fn random(rng: &mut ChaCha8Rng, len: usize) -> Vec<f32> {
        (0..len).map(|_| rng.random_range(-1.0..1.0)).collect()
    }

    /// `x · Wᵀ` in f64 from the matrix's own `f32` values.
    fn reference(w: &[f32], rows: usize, cols: usize, x: &[f32], m: usize) -> Vec<f32> {
        let mut out = vec![0.0; m * rows];
        for i in 0..m {
            for j in 0..rows {
                let dot: f64 = (0..cols)
                    .map(|c| f64::from(x[i * cols + c]) * f64::from(w[j * cols + c]))
                    .sum();
                out[i * rows + j] = dot as f32;
            }
        }
        out
    }

    #[test]
    fn products_equal_the_f32_product_of_the_stored_values_at_odd_sizes() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        // Columns below, at and off the lane width and the int8 block; rows off the task size.
        for (rows, cols) in [(1, 1), (7, 15), (33, 16), (65, 33), (40, 100), (3, 577)] {
            let values = random(&mut rng, rows * cols);
            for packed in [
                PackedMatrix::bf16(&values, rows, cols),
                PackedMatrix::int8(&values, rows, cols),
            ] {
                let stored = packed.to_f32();
                for m in [1, 2, 4, 5, 9, 16] {
                    let x = random(&mut rng, m * cols);
                    let ours = packed.matmul_transposed(&x, m);
                    let expected = reference(&stored, rows, cols, &x, m);
                    for (a, b) in ours.iter().zip(&expected) {
                        assert!(
                            (a - b).abs() <= 1e-5 * (cols as f32).sqrt(),
                            "[{rows}, {cols}] × {m} rows: {a} vs {b}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn the_stored_values_are_within_the_formats_rounding() {
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let (rows, cols) = (9, 70);
        let values = random(&mut rng, rows * cols);
        let bf16 = PackedMatrix::bf16(&values, rows, cols).to_f32();
        for (v, b) in values.iter().zip(&bf16) {
            // bf16 keeps 8 significant bits: half an ulp is 2⁻⁸ of the value.
            assert!((v - b).abs() <= v.abs() / 256.0, "{v} vs {b}");
        }
        let packed = PackedMatrix::int8(&values, rows, cols);
        let int8 = packed.to_f32();
        for (r, (row, stored)) in values.chunks(cols).zip(int8.chunks(cols)).enumerate() {
            for (block, (v, q)) in row
                .chunks(INT8_BLOCK)
                .zip(stored.chunks(INT8_BLOCK))
                .enumerate()
            {
                let top = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
                for (a, b) in v.iter().zip(q) {
                    // Half a step of the block's scale.
                    assert!((a - b).abs() <= top / 254.0 + 1e-7, "row {r} block {block}");
                }
            }
        }
        assert_eq!(packed.bytes(), rows * cols + 4 * rows * 3);
        // bf16 rows are padded to whole lines of 16 pairs, and to panels of 4 rows: 70
        // columns are 35 pairs, 48 stored; 9 rows, 12 stored.
        assert_eq!(PackedMatrix::bf16(&values, rows, cols).bytes(), 4 * 12 * 48);
        // An all-zero block has scale 0 and decodes to zeros.
        let zeros = PackedMatrix::int8(&[0.0; 40], 1, 40);
        assert_eq!(zeros.to_f32(), vec![0.0; 40]);
    }
}
