use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::Tensor;

struct SquaredNorm<'a> {
    grads: &'a GradientsParams,
    total: Option<Tensor<1>>,
}

impl ModuleVisitor for SquaredNorm<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(grad) = self.grads.get::<D>(param.id) {
            let sum = grad.square().sum();
            self.total = Some(match self.total.take() {
                Some(total) => total + sum,
                None => sum,
            });
        }
    }
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
    if max_norm > 0.0 && norm > max_norm {
        let mut visitor = Scale {
            grads,
            factor: max_norm / (norm + 1e-6),
        };
        module.visit(&mut visitor);
    }
    Some(norm)
}
