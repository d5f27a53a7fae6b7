//! The fused kernels against their reference compositions: values on flex (`f32` and the
//! `bf16` fallback) and gradients through autodiff.

use burn::backend::Dispatch;
use burn::tensor::{DType, Device, Distribution, Int, Tensor, TensorData};

use super::{matmul, reference, rms_norm, rope, softmax_rows, swiglu, token_logprobs};

fn device() -> Device {
    Device::flex()
}

fn random<const D: usize>(shape: [usize; D], device: &Device) -> Tensor<D> {
    Tensor::random(shape, Distribution::Normal(0.0, 2.0), device)
}

fn max_abs_diff<const D: usize>(a: Tensor<D>, b: Tensor<D>) -> f32 {
    (a - b).abs().max().into_scalar::<f32>()
}

fn reference_tensor<const D: usize>(
    f: impl FnOnce() -> burn::backend::DispatchTensor,
) -> Tensor<D> {
    Tensor::from_dispatch(f())
}

#[test]
fn softmax_rows_matches_the_composition_causal_or_not() {
    let device = device();
    // The last two are large enough to run on the rayon pool.
    for (shape, causal) in [
        ([2, 3, 5, 5], true),
        ([2, 3, 4, 9], true),
        ([1, 2, 3, 70], false),
        ([2, 4, 64, 64], true),
        ([1, 2, 70, 300], false),
    ] {
        let scores = random(shape, &device);
        let fused = softmax_rows(scores.clone(), 0.3, causal);
        let expected = reference_tensor(|| {
            reference::softmax_rows::<Dispatch>(scores.clone().into_dispatch(), 0.3, causal)
        });
        assert!(max_abs_diff(fused.clone(), expected) < 1e-6);
        let row_sums = fused.sum_dim(3);
        assert!(
            max_abs_diff(
                row_sums,
                Tensor::ones([shape[0], shape[1], shape[2], 1], &device)
            ) < 1e-5
        );
    }
}

#[test]
fn elementwise_kernels_match_the_composition() {
    let device = device();
    let (gate, up) = (random([4, 70, 128], &device), random([4, 70, 128], &device));
    let expected = reference_tensor(|| {
        reference::swiglu::<Dispatch>(gate.clone().into_dispatch(), up.clone().into_dispatch())
    });
    assert!(max_abs_diff(swiglu(gate, up), expected) < 1e-5);

    let (x, weight) = (random([4, 70, 128], &device), random([128], &device));
    let expected = reference_tensor(|| {
        reference::rms_norm::<Dispatch>(
            x.clone().into_dispatch(),
            weight.clone().into_dispatch(),
            1e-6,
        )
    });
    assert!(max_abs_diff(rms_norm(x, weight, 1e-6), expected) < 1e-5);
}

#[test]
fn token_logprobs_match_log_softmax_and_the_entropy() {
    let device = device();
    let rows = 64;
    let logits = random([rows, 600], &device);
    let ids: Vec<i64> = (0..rows as i64).map(|i| (i * 37) % 600).collect();
    let targets = Tensor::<1, Int>::from_data(TensorData::new(ids, [rows]), &device);
    let (logprobs, entropy) = token_logprobs(logits.clone(), targets.clone());
    let log_softmax = burn::tensor::activation::log_softmax(logits, 1);
    let expected = log_softmax
        .clone()
        .gather(1, targets.reshape([rows, 1]))
        .reshape([rows]);
    assert!(max_abs_diff(logprobs, expected) < 1e-5);
    let expected = (log_softmax.clone().exp() * log_softmax)
        .sum_dim(1)
        .neg()
        .reshape([rows]);
    assert!(max_abs_diff(entropy, expected) < 1e-5);
}

#[test]
fn half_precision_takes_the_composition() {
    let device = device();
    let x = random([2, 4, 16], &device).cast(DType::BF16);
    let weight = random([16], &device).cast(DType::BF16);
    let out = rms_norm(x.clone(), weight.clone(), 1e-6);
    assert_eq!(out.dtype(), DType::BF16);
    let expected = reference_tensor(|| {
        reference::rms_norm::<Dispatch>(x.into_dispatch(), weight.into_dispatch(), 1e-6)
    });
    assert_eq!(
        max_abs_diff(out.cast(DType::F32), expected.cast(DType::F32)),
        0.0
    );
}

/// Gradients of `Σ w ⊙ f(inputs)` for the fused and the reference `f`, input by input.
fn assert_same_gradients<const D: usize, const N: usize>(
    inputs: [Tensor<D>; N],
    fused: impl Fn(&[Tensor<D>; N]) -> Tensor<D>,
    composed: impl Fn(&[Tensor<D>; N]) -> Tensor<D>,
    tolerance: f32,
) {
    let device = device().autodiff();
    let weights = random(fused(&inputs).dims(), &device);
    let grads = |f: &dyn Fn(&[Tensor<D>; N]) -> Tensor<D>| {
        let tracked = inputs
            .clone()
            .map(|t| Tensor::from_data(t.into_data(), &device).require_grad());
        let grads = (f(&tracked) * weights.clone()).sum().backward();
        tracked.map(|t| t.grad(&grads).expect("every input gets a gradient"))
    };
    for (fused, composed) in grads(&fused).into_iter().zip(grads(&composed)) {
        let diff = (fused - composed).abs().max().into_scalar::<f32>();
        assert!(diff < tolerance, "gradient differs by {diff}");
    }
}

#[test]
fn gradients_match_the_composition() {
    let device = device();
    assert_same_gradients(
        [random([2, 4, 40, 40], &device)],
        |[s]| softmax_rows(s.clone(), 0.4, true),
        |[s]| {
            reference_tensor(|| {
                reference::softmax_rows::<Dispatch>(s.clone().into_dispatch(), 0.4, true)
            })
        },
        1e-5,
    );
    assert_same_gradients(
        [random([3, 50, 240], &device), random([3, 50, 240], &device)],
        |[g, u]| swiglu(g.clone(), u.clone()),
        |[g, u]| {
            reference_tensor(|| {
                reference::swiglu::<Dispatch>(g.clone().into_dispatch(), u.clone().into_dispatch())
            })
        },
        1e-4,
    );
}

#[test]
fn rms_norm_and_logprob_gradients_match_the_composition() {
    let device = device();
    let ad = device.clone().autodiff();
    let x = random([3, 50, 240], &device);
    let weight = random([240], &device);
    let weights = random([3, 50, 240], &ad);
    let grads = |fused: bool| {
        let x = Tensor::<3>::from_data(x.clone().into_data(), &ad).require_grad();
        let w = Tensor::<1>::from_data(weight.clone().into_data(), &ad).require_grad();
        let out = if fused {
            rms_norm(x.clone(), w.clone(), 1e-5)
        } else {
            reference_tensor(|| {
                reference::rms_norm::<Dispatch>(
                    x.clone().into_dispatch(),
                    w.clone().into_dispatch(),
                    1e-5,
                )
            })
        };
        let grads = (out * weights.clone()).sum().backward();
        (x.grad(&grads).unwrap(), w.grad(&grads).unwrap())
    };
    let ((fx, fw), (cx, cw)) = (grads(true), grads(false));
    assert!(max_abs_diff(fx, cx) < 1e-4);
    assert!(max_abs_diff(fw, cw) < 1e-4);

    let logits = random([5, 50], &device);
    let targets = Tensor::<1, Int>::from_data(TensorData::new(vec![1i64, 0, 49, 7, 7], [5]), &ad);
    let (wl, we) = (random([5], &ad), random([5], &ad));
    let grads = |fused: bool| {
        let z = Tensor::<2>::from_data(logits.clone().into_data(), &ad).require_grad();
        let (logp, entropy) = if fused {
            token_logprobs(z.clone(), targets.clone())
        } else {
            let both: Tensor<2> = reference_tensor(|| {
                reference::token_logprobs::<Dispatch>(
                    z.clone().into_dispatch(),
                    targets.clone().into_dispatch(),
                )
            });
            (
                both.clone().narrow(1, 0, 1).reshape([5]),
                both.narrow(1, 1, 1).reshape([5]),
            )
        };
        let grads = (logp * wl.clone() + entropy * we.clone()).sum().backward();
        z.grad(&grads).unwrap()
    };
    assert!(max_abs_diff(grads(true), grads(false)) < 1e-5);
}

/// The RMSNorm weight gradient sums one partial per task; it must not depend on how the rayon
/// pool shares them out (work stealing), or the same seed would not give the same run.
#[test]
fn the_rms_norm_weight_gradient_is_the_same_on_any_thread_count() {
    let device = device();
    let ad = device.clone().autodiff();
    // 1,200 rows of 240: about 18 tasks.
    let x = random([3, 400, 240], &device);
    let weight = random([240], &device);
    let upstream = random([3, 400, 240], &device);
    let weight_grad = || {
        let x = Tensor::<3>::from_data(x.clone().into_data(), &ad).require_grad();
        let w = Tensor::<1>::from_data(weight.clone().into_data(), &ad).require_grad();
        let upstream = Tensor::<3>::from_data(upstream.clone().into_data(), &ad);
        let grads = (rms_norm(x, w.clone(), 1e-5) * upstream).sum().backward();
        let bits: Vec<u32> = w
            .grad(&grads)
            .unwrap()
            .into_data()
            .iter::<f32>()
            .map(f32::to_bits)
            .collect();
        bits
    };
    let on = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(weight_grad)
    };
    let one = on(1);
    for threads in [2, 3, 8] {
        for _ in 0..3 {
            assert!(on(threads) == one, "{threads} threads");
        }
    }
}

#[test]
fn rope_matches_the_composition_on_strided_input_with_its_gradient() {
    let device = device();
    // A swapped view, as the attention passes it: [b, s, h, d] → [b, h, s, d].
    let base = random([2, 70, 3, 16], &device);
    let x = base.clone().swap_dims(1, 2);
    let (cos, sin) = (
        random([2, 1, 70, 16], &device),
        random([2, 1, 70, 16], &device),
    );
    let expected = reference_tensor(|| {
        reference::rope::<Dispatch>(
            x.clone().into_dispatch(),
            cos.clone().into_dispatch(),
            sin.clone().into_dispatch(),
        )
    });
    assert!(max_abs_diff(rope(x.clone(), cos.clone(), sin.clone()), expected) < 1e-5);
    let ad = device.autodiff();
    let (cos, sin) = (
        Tensor::<4>::from_data(cos.into_data(), &ad),
        Tensor::<4>::from_data(sin.into_data(), &ad),
    );
    assert_same_gradients(
        [base],
        |[x]: &[Tensor<4>; 1]| rope(x.clone().swap_dims(1, 2), cos.clone(), sin.clone()),
        |[x]: &[Tensor<4>; 1]| {
            reference_tensor(|| {
                reference::rope::<Dispatch>(
                    x.clone().swap_dims(1, 2).into_dispatch(),
                    cos.clone().into_dispatch(),
                    sin.clone().into_dispatch(),
                )
            })
        },
        1e-4,
    );
}

#[test]
fn matmul_matches_burns_product_on_strided_batches_with_its_gradients() {
    let device = device();
    // Plain, transposed right operand, swapped batch view, and a product large enough to
    // run on the rayon pool.
    let a = random([2, 3, 7, 5], &device);
    let b = random([2, 3, 5, 4], &device);
    assert!(max_abs_diff(matmul(a.clone(), b.clone()), a.clone().matmul(b.clone())) < 1e-5);
    let bt = random([2, 3, 4, 5], &device).transpose();
    assert!(max_abs_diff(matmul(a.clone(), bt.clone()), a.clone().matmul(bt)) < 1e-5);
    let swapped = random([2, 7, 3, 5], &device).swap_dims(1, 2);
    assert!(max_abs_diff(matmul(swapped.clone(), b.clone()), swapped.matmul(b)) < 1e-5);
    let (x, w) = (random([300, 200], &device), random([200, 250], &device));
    assert!(max_abs_diff(matmul(x.clone(), w.clone()), x.matmul(w)) < 1e-3);
    assert_same_gradients(
        [random([2, 9, 6], &device), random([2, 6, 9], &device)],
        |[a, b]| matmul(a.clone(), b.clone().swap_dims(1, 2).swap_dims(1, 2)),
        |[a, b]| a.clone().matmul(b.clone()),
        1e-4,
    );
}

#[test]
fn few_row_products_match_burns_product_on_cache_views() {
    let device = device();
    // Decoding's attention: 3 query rows per key/value head against the first 37 positions
    // of a cache buffer of 50 (a strided view), keys read by columns, values by rows; a batch
    // large enough for the rayon pool; 8 and 9 rows (the limit of the direct product).
    for (batch, rows) in [(2, 3), (400, 3), (2, 8), (2, 9)] {
        let keys = random([batch, 2, 50, 16], &device).narrow(2, 0, 37);
        let values = random([batch, 2, 50, 16], &device).narrow(2, 0, 37);
        let q = random([batch, 2, rows, 16], &device);
        let scores = matmul(q.clone(), keys.clone().transpose());
        let expected = q.matmul(keys.transpose());
        assert!(
            max_abs_diff(scores.clone(), expected) < 1e-4,
            "{batch} × {rows} scores"
        );
        let out = matmul(scores.clone(), values.clone());
        assert!(
            max_abs_diff(out, scores.matmul(values)) < 1e-3,
            "{batch} × {rows} values"
        );
    }
    // A right operand beyond the direct product's size (a weight matrix) goes to `gemm`.
    let (x, w) = (random([1, 600], &device), random([600, 500], &device));
    assert!(max_abs_diff(matmul(x.clone(), w.clone()), x.matmul(w)) < 1e-2);
}
