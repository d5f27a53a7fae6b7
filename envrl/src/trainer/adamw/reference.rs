//! The AdamW step as Burn tensor operations, in the order of Burn's `AdamW`.

use burn::backend::Backend;
use burn::backend::tensor::FloatTensor;

use super::AdamWStep;

/// See [`AdamWKernel::adamw_step`](super::AdamWKernel::adamw_step).
pub(crate) fn adamw_step<B: Backend>(
    param: FloatTensor<B>,
    grad: FloatTensor<B>,
    moment_1: FloatTensor<B>,
    moment_2: FloatTensor<B>,
    step: AdamWStep,
) -> (FloatTensor<B>, FloatTensor<B>, FloatTensor<B>) {
    let (correction_1, correction_2) = step.bias_corrections();
    let moment_1 = B::float_add(
        B::float_mul_scalar(moment_1, step.beta_1.into()),
        B::float_mul_scalar(grad.clone(), (1.0 - step.beta_1).into()),
    );
    let moment_2 = B::float_add(
        B::float_mul_scalar(moment_2, step.beta_2.into()),
        B::float_mul_scalar(B::float_mul(grad.clone(), grad), (1.0 - step.beta_2).into()),
    );
    let m_hat = B::float_div_scalar(moment_1.clone(), correction_1.into());
    let v_hat = B::float_div_scalar(moment_2.clone(), correction_2.into());
    let delta = B::float_div(
        m_hat,
        B::float_add_scalar(B::float_sqrt(v_hat), step.epsilon.into()),
    );
    let decayed = match step.decay_factor() {
        Some(factor) => B::float_mul_scalar(param, factor.into()),
        None => param,
    };
    let param = B::float_sub(decayed, B::float_mul_scalar(delta, step.lr.into()));
    (param, moment_1, moment_2)
}
