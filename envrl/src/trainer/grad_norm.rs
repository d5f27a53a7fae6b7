//! Gradient norms, scaling and the global clip over a module's gradients.

use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::Tensor;

use crate::trainer::GradClip;

struct SquaredNorm<'a> {
    grads: &'a GradientsParams,
    total: Option<Tensor<1>>,
}

impl ModuleVisitor for SquaredNorm<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(grad) = self.grads.get::<D>(param.id) {
            let sum = squared_sum(grad);
            self.total = Some(match self.total.take() {
                Some(total) => total + sum,
                None => sum,
            });
        }
    }
}

/// `Σ x²` of `tensor`, summed row by row (the last dimension) and then over the rows: in the
/// same order on any thread count. A whole-tensor `sum` on flex splits a large tensor over the
/// rayon pool and adds the pieces in an order that work stealing decides, which changes the
/// norm, and so the clipping, from run to run.
fn squared_sum<const D: usize>(tensor: Tensor<D>) -> Tensor<1> {
    let dims = tensor.dims();
    let (elements, last) = (dims.iter().product::<usize>(), dims[D - 1]);
    if elements == 0 {
        return tensor.square().sum();
    }
    tensor
        .square()
        .reshape([elements / last, last])
        .sum_dim(1)
        .sum()
}

struct Scale<'a> {
    grads: &'a mut GradientsParams,
    factor: f64,
}

impl ModuleVisitor for Scale<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(grad) = self.grads.remove::<D>(param.id) {
            self.grads.register(param.id, grad.mul_scalar(self.factor));
        }
    }
}

/// The global L2 norm of all gradients of `module`.
pub fn global_grad_norm<M: Module>(module: &M, grads: &GradientsParams) -> f64 {
    let mut visitor = SquaredNorm { grads, total: None };
    module.visit(&mut visitor);
    match visitor.total {
        Some(total) => (total.into_scalar::<f32>() as f64).sqrt(),
        None => 0.0,
    }
}

/// Scales all gradients so that their global norm is at most `max_norm`, and returns the norm
/// before clipping. Returns `None`, leaving the gradients untouched, when the norm is not finite:
/// the caller then skips the optimizer step (ENVRL.md §3.2).
pub fn clip_global_grad_norm<M: Module>(
    module: &M,
    grads: &mut GradientsParams,
    max_norm: f64,
) -> Option<f64> {
    let norm = global_grad_norm(module, grads);
    if !norm.is_finite() {
        return None;
    }
    let factor = GradClip::global_factor(max_norm, norm);
    if factor != 1.0 {
        scale_grads(module, grads, factor);
    }
    Some(norm)
}

/// Multiplies every gradient of `module` by `factor`.
pub fn scale_grads<M: Module>(module: &M, grads: &mut GradientsParams, factor: f64) {
    module.visit(&mut Scale { grads, factor });
}

struct Copy<'a> {
    from: &'a GradientsParams,
    into: GradientsParams,
}

impl ModuleVisitor for Copy<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(grad) = self.from.get::<D>(param.id) {
            self.into.register(param.id, grad);
        }
    }
}

/// A copy of the gradients of `module` (the tensors are shared until one is changed).
pub fn copy_grads<M: Module>(module: &M, grads: &GradientsParams) -> GradientsParams {
    let mut visitor = Copy {
        from: grads,
        into: GradientsParams::new(),
    };
    module.visit(&mut visitor);
    visitor.into
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Device, TensorData};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;

    #[test]
    fn squared_sums_are_the_same_on_any_thread_count() {
        // More than the 2²² elements from which flex sums a whole tensor over the rayon pool.
        let shape = [2100, 2048];
        for seed in 0..3 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let values: Vec<f32> = (0..shape[0] * shape[1])
                .map(|_| rng.random_range(0.5..1.5))
                .collect();
            let on = |threads: usize| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap()
                    .install(|| {
                        let data = TensorData::new(values.clone(), shape);
                        let tensor = Tensor::<2>::from_data(data, &Device::flex());
                        squared_sum(tensor).into_scalar::<f32>()
                    })
            };
            let one = on(1);
            for threads in [2, 3, 8] {
                assert_eq!(on(threads).to_bits(), one.to_bits(), "{threads} threads");
            }
            let exact: f64 = values.iter().map(|&v| f64::from(v) * f64::from(v)).sum();
            assert!(
                (f64::from(one) - exact).abs() <= 1e-5 * exact,
                "{one} vs {exact}"
            );
        }
    }
}
