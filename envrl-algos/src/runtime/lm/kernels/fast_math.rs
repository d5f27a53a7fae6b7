//! A vectorisable `exp` and the row loops of the fused kernels, on plain `f32` slices.
//!
//! libm's `expf` is scalar; called element by element it was the largest single cost of
//! training on the CPU. [`exp`] is Cephes' single-precision polynomial (relative error below
//! 2 ulp), written with plain arithmetic and bit casts so that the compiler vectorises the loops
//! that call it; [`simd`] compiles each loop for the best instruction set present (AVX-512, AVX2
//! or the baseline) through `pulp`.

/// Runs `f` compiled for the best SIMD instruction set of this CPU.
#[inline(always)]
pub(crate) fn simd<R>(f: impl FnOnce() -> R) -> R {
    pulp::Arch::new().dispatch(f)
}

const LOG2E: f32 = std::f32::consts::LOG2_E;
/// ln 2 split in two so that `x - n·ln2` stays exact.
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
/// Above this `exp` would overflow `f32`; the result is clamped to `exp(MAX_X)`.
const MAX_X: f32 = 88.3;
/// Below this `exp` is under `f32::MIN_POSITIVE`; the result is 0.
const MIN_X: f32 = -87.3;
/// 1.5·2²³: adding it rounds to the nearest integer and leaves that integer in the low bits.
const ROUND: f32 = 12_582_912.0;

/// `e^x` for `f32`, vectorisable. Exact 0 below −87.3 (including −∞), clamped above 88.3.
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    let clamped = x.clamp(MIN_X, MAX_X);
    let shifted = clamped * LOG2E + ROUND;
    let n = shifted - ROUND;
    let r = clamped - n * LN2_HI - n * LN2_LO;
    let r2 = r * r;
    let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r
        + 1.666_666_5e-1)
        * r
        + 0.5;
    let y = p * r2 + r + 1.0;
    // `shifted`'s low mantissa bits hold n + 2²²; move n + 127 into the exponent field.
    let n_bits = (shifted.to_bits() as i32).wrapping_sub(ROUND.to_bits() as i32);
    let scale = f32::from_bits(((n_bits + 127) << 23) as u32);
    if x < MIN_X { 0.0 } else { y * scale }
}

/// The logistic function `1 / (1 + e^-x)`.
#[inline(always)]
fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + exp(-x))
}

/// Lanes of the reductions below: 16 independent partial results, so that the loops
/// vectorise (a single running `f32` sum or maximum cannot be reordered by the compiler).
const LANES: usize = 16;

/// Reduces `f` over the elements of equal-length slices, lane by lane, then the lanes.
macro_rules! lane_reduce {
    ($init:expr, $combine:expr, |$($x:ident in $xs:ident),+| $body:expr) => {{
        let combine = $combine;
        let mut acc = [$init; LANES];
        let len = [$($xs.len()),+].into_iter().min().unwrap_or(0);
        $(let $x = &$xs[..len];)+
        let full = len / LANES * LANES;
        let mut start = 0;
        while start < full {
            $(let chunk_x: &[f32; LANES] = $x[start..start + LANES].try_into().expect("a full chunk");
              let $x = chunk_x;)+
            for lane in 0..LANES {
                $(let $x = $x[lane];)+
                acc[lane] = combine(acc[lane], $body);
            }
            start += LANES;
        }
        let mut total = $init;
        for i in full..len {
            $(let $x = $x[i];)+
            total = combine(total, $body);
        }
        acc.into_iter().fold(total, combine)
    }};
}

/// Σ of `body` over the elements of equal-length slices, in lanes (see `lane_reduce`).
macro_rules! lane_sum {
    (|$($x:ident in $xs:ident),+| $body:expr) => {
        lane_reduce!(0.0f32, |a: f32, b: f32| a + b, |$($x in $xs),+| $body)
    };
}

/// Σ xᵢ.
#[inline(always)]
fn sum(xs: &[f32]) -> f32 {
    lane_sum!(|x in xs| x)
}

/// Σ aᵢ·bᵢ over the shorter length.
#[inline(always)]
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    lane_sum!(|x in a, y in b| x * y)
}

/// `y += alpha · x` over the shorter length. Call it from code compiled by [`simd`] or a `pulp`
/// dispatch: there `mul_add` is one instruction, elsewhere a call into libm.
#[inline(always)]
pub(crate) fn axpy(alpha: f32, x: &[f32], y: &mut [f32]) {
    for (y, &x) in y.iter_mut().zip(x) {
        *y = alpha.mul_add(x, *y);
    }
}

/// The largest element (−∞ for an empty slice; NaNs are skipped).
#[inline(always)]
fn max(xs: &[f32]) -> f32 {
    lane_reduce!(f32::NEG_INFINITY, |a: f32, b: f32| if b > a { b } else { a }, |x in xs| x)
}

/// Softmax of one row of attention scores in place: `softmax(scale · row[..valid])`, zeros
/// after `valid` (the causal mask). A row whose every score is −∞ becomes all zeros.
#[inline(always)]
pub(crate) fn softmax_row(row: &mut [f32], scale: f32, valid: usize) {
    let (seen, hidden) = row.split_at_mut(valid);
    hidden.fill(0.0);
    let top = max(seen) * scale;
    if top == f32::NEG_INFINITY {
        seen.fill(0.0);
        return;
    }
    seen.iter_mut().for_each(|v| *v = exp(*v * scale - top));
    let inv = 1.0 / sum(seen).max(f32::MIN_POSITIVE);
    seen.iter_mut().for_each(|v| *v *= inv);
}

/// Gradient of [`softmax_row`] in place of `grad`: `scale · p ⊙ (g − Σ g ⊙ p)`.
#[inline(always)]
pub(crate) fn softmax_row_backward(probs: &[f32], grad: &mut [f32], scale: f32) {
    let dot = lane_sum!(|p in probs, g in grad| p * g);
    for (g, p) in grad.iter_mut().zip(probs) {
        *g = scale * p * (*g - dot);
    }
}

/// `silu(gate) · up`, element-wise in place of `up`.
#[inline(always)]
pub(crate) fn swiglu(gate: &[f32], up: &mut [f32]) {
    for (u, &g) in up.iter_mut().zip(gate) {
        *u *= g * sigmoid(g);
    }
}

/// Gradients of [`swiglu`]: `grad` becomes d/d`gate`, `up` becomes d/d`up`.
#[inline(always)]
pub(crate) fn swiglu_backward(gate: &[f32], up: &mut [f32], grad: &mut [f32]) {
    for ((d, u), &g) in grad.iter_mut().zip(up.iter_mut()).zip(gate) {
        let s = sigmoid(g);
        let d_gate = *d * *u * s * (1.0 + g * (1.0 - s));
        *u = *d * g * s;
        *d = d_gate;
    }
}

/// `1 / sqrt(mean(x²) + eps)` of one row.
#[inline(always)]
fn inverse_rms(x: &[f32], eps: f32) -> f32 {
    let mean_square = lane_sum!(|v in x| v * v) / x.len() as f32;
    1.0 / (mean_square + eps).sqrt()
}

/// `x / sqrt(mean(x²) + eps) · weight` for one row, into `out`.
#[inline(always)]
pub(crate) fn rms_norm_row(x: &[f32], weight: &[f32], eps: f32, out: &mut [f32]) {
    let inv = inverse_rms(x, eps);
    for ((o, &v), &w) in out.iter_mut().zip(x).zip(weight) {
        *o = v * inv * w;
    }
}

/// Gradients of [`rms_norm_row`] for one row: `grad` becomes d/d`x`; d/d`weight` is added
/// to `weight_grad`.
#[inline(always)]
pub(crate) fn rms_norm_row_backward(
    x: &[f32],
    weight: &[f32],
    eps: f32,
    grad: &mut [f32],
    weight_grad: &mut [f32],
) {
    let inv = inverse_rms(x, eps);
    let dot = lane_sum!(|v in x, w in weight, g in grad| v * w * g);
    let coefficient = inv * inv * inv * dot / x.len() as f32;
    for (((g, &x), &w), wg) in grad
        .iter_mut()
        .zip(x)
        .zip(weight)
        .zip(weight_grad.iter_mut())
    {
        *wg += *g * x * inv;
        *g = *g * w * inv - x * coefficient;
    }
}

/// Rotary embedding of one head row in place: `x·cos + rotate_half(x)·sin`, where
/// `rotate_half([x₁ | x₂]) = [−x₂ | x₁]`.
#[inline(always)]
pub(crate) fn rope_row(row: &mut [f32], cos: &[f32], sin: &[f32]) {
    let half = row.len() / 2;
    let (x1, x2) = row.split_at_mut(half);
    let (c1, c2) = cos.split_at(half);
    let (s1, s2) = sin.split_at(half);
    for i in 0..half.min(x2.len()).min(c2.len()).min(s2.len()) {
        let (a, b) = (x1[i], x2[i]);
        x1[i] = a * c1[i] - b * s1[i];
        x2[i] = b * c2[i] + a * s2[i];
    }
}

/// Gradient of [`rope_row`] in place of `grad`: `g·cos + rotate_halfᵀ(g·sin)`, where
/// `rotate_halfᵀ([y₁ | y₂]) = [y₂ | −y₁]`.
#[inline(always)]
pub(crate) fn rope_row_backward(grad: &mut [f32], cos: &[f32], sin: &[f32]) {
    let half = grad.len() / 2;
    let (g1, g2) = grad.split_at_mut(half);
    let (c1, c2) = cos.split_at(half);
    let (s1, s2) = sin.split_at(half);
    for i in 0..half.min(g2.len()).min(c2.len()).min(s2.len()) {
        let (a, b) = (g1[i], g2[i]);
        g1[i] = a * c1[i] + b * s2[i];
        g2[i] = b * c2[i] - a * s1[i];
    }
}

/// Log-probability of `target` and entropy of the softmax of one row of logits; `scratch`
/// (as long as the row) is overwritten.
#[inline(always)]
pub(crate) fn logprob_entropy_row(
    logits: &[f32],
    target: usize,
    scratch: &mut [f32],
) -> (f32, f32) {
    let top = max(logits);
    let scratch = &mut scratch[..logits.len()];
    for (e, &z) in scratch.iter_mut().zip(logits) {
        *e = exp(z - top);
    }
    let sum = sum(scratch);
    let weighted = lane_sum!(|e in scratch, z in logits| e * (z - top));
    let log_sum = sum.ln();
    let logprob = logits[target] - top - log_sum;
    // H = −Σ p log p = log Σe − Σ p (z − max)
    let entropy = log_sum - weighted / sum;
    (logprob, entropy)
}

/// Gradient of [`logprob_entropy_row`] with respect to the logits, in place of `logits`:
/// `d_logprob · (onehot − p) − d_entropy · p ⊙ (log p + H)`.
#[inline(always)]
pub(crate) fn logprob_entropy_row_backward(
    logits: &mut [f32],
    target: usize,
    (logprob, entropy): (f32, f32),
    (d_logprob, d_entropy): (f32, f32),
) {
    // log Z = z_target − log p(target)
    let log_z = logits[target] - logprob;
    if d_entropy == 0.0 {
        logits
            .iter_mut()
            .for_each(|z| *z = -d_logprob * exp(*z - log_z));
    } else {
        for z in logits.iter_mut() {
            let log_p = *z - log_z;
            let p = exp(log_p);
            *z = -d_logprob * p - d_entropy * p * (log_p + entropy);
        }
    }
    logits[target] += d_logprob;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_within_two_ulp_of_libm_over_the_whole_range() {
        let mut worst = 0.0f64;
        let mut x = -87.0f32;
        while x < 88.0 {
            let (got, want) = (exp(x) as f64, (x as f64).exp());
            worst = worst.max(((got - want) / want).abs());
            x += 0.001_7;
        }
        assert!(worst < 2.5e-7, "worst relative error {worst}");
    }

    #[test]
    fn exp_saturates_cleanly() {
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp(-1e30), 0.0);
        assert_eq!(exp(f32::MIN), 0.0);
        assert!(exp(1e30).is_finite() && exp(1e30) > 1e38);
        assert_eq!(exp(0.0), 1.0);
    }

    #[test]
    fn softmax_row_masks_and_normalises() {
        let mut row = [1.0, 2.0, 3.0, 100.0];
        softmax_row(&mut row, 0.5, 3);
        let z: f32 = [0.5f32, 1.0, 1.5].iter().map(|v| v.exp()).sum();
        for (got, v) in row.iter().zip([0.5f32, 1.0, 1.5]) {
            assert!((got - v.exp() / z).abs() < 1e-7);
        }
        assert_eq!(row[3], 0.0);
        let mut masked = [f32::NEG_INFINITY; 3];
        softmax_row(&mut masked, 1.0, 3);
        assert_eq!(masked, [0.0; 3]);
    }

    #[test]
    fn logprob_and_entropy_match_their_definitions() {
        let logits = [0.3f32, -1.2, 2.0, 0.0];
        let (logp, entropy) = logprob_entropy_row(&logits, 2, &mut [0.0; 4]);
        let z: f64 = logits.iter().map(|&v| (v as f64).exp()).sum();
        let p: Vec<f64> = logits.iter().map(|&v| (v as f64).exp() / z).collect();
        assert!((logp as f64 - p[2].ln()).abs() < 1e-6);
        let h: f64 = -p.iter().map(|p| p * p.ln()).sum::<f64>();
        assert!((entropy as f64 - h).abs() < 1e-6);
    }
}
