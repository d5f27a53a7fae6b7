//! [`AdamWKernel`] on flex: one pass over parameter, gradient and moments, in place, on the
//! rayon pool; other float types and layouts use the [`reference`] composition.

use burn::backend::Flex;
use burn::backend::flex::FlexTensor;
use burn::backend::tensor::FloatTensor;
use burn::tensor::DType;
use rayon::prelude::*;

use super::{AdamWKernel, AdamWStep, reference};

/// Elements per parallel task.
const TASK_ELEMENTS: usize = 1 << 15;

/// `tensor` contiguous and writable (in place when it is not shared, otherwise a copy).
fn writable(tensor: FlexTensor) -> FlexTensor {
    let contiguous = tensor.to_contiguous();
    drop(tensor);
    contiguous
}

/// The update of one chunk, in Burn's `AdamW` order of operations.
#[inline(always)]
fn update(param: &mut [f32], grad: &[f32], m: &mut [f32], v: &mut [f32], step: &AdamWStep) {
    let (correction_1, correction_2) = step.bias_corrections();
    let (beta_1, beta_2) = (step.beta_1, step.beta_2);
    let (factor_1, factor_2) = (1.0 - beta_1, 1.0 - beta_2);
    let (lr, epsilon) = (step.lr as f32, step.epsilon);
    let decay = step.decay_factor();
    let n = param.len();
    let (grad, m, v) = (&grad[..n], &mut m[..n], &mut v[..n]);
    for i in 0..n {
        let g = grad[i];
        m[i] = m[i] * beta_1 + g * factor_1;
        v[i] = v[i] * beta_2 + g * g * factor_2;
        let delta = (m[i] / correction_1) / ((v[i] / correction_2).sqrt() + epsilon);
        let p = match decay {
            Some(factor) => param[i] * factor,
            None => param[i],
        };
        param[i] = p - delta * lr;
    }
}

impl AdamWKernel for Flex {
    fn adamw_step(
        param: FloatTensor<Self>,
        grad: FloatTensor<Self>,
        moment_1: FloatTensor<Self>,
        moment_2: FloatTensor<Self>,
        step: AdamWStep,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let tensors = [&param, &grad, &moment_1, &moment_2];
        let shape = param.layout().shape();
        let fits = tensors
            .iter()
            .all(|t| t.dtype() == DType::F32 && t.layout().shape() == shape);
        if !fits {
            return reference::adamw_step::<Self>(param, grad, moment_1, moment_2, step);
        }
        let grad = grad.to_contiguous();
        let grad = grad.storage::<f32>();
        let (mut param, mut m, mut v) = (writable(param), writable(moment_1), writable(moment_2));
        let (p, m_data, v_data) = (
            param.storage_mut::<f32>(),
            m.storage_mut::<f32>(),
            v.storage_mut::<f32>(),
        );
        let run = |p: &mut [f32], g: &[f32], m: &mut [f32], v: &mut [f32]| {
            pulp::Arch::new().dispatch(|| update(p, g, m, v, &step))
        };
        if p.len() <= TASK_ELEMENTS {
            run(p, grad, m_data, v_data);
        } else {
            p.par_chunks_mut(TASK_ELEMENTS)
                .zip(grad.par_chunks(TASK_ELEMENTS))
                .zip(m_data.par_chunks_mut(TASK_ELEMENTS))
                .zip(v_data.par_chunks_mut(TASK_ELEMENTS))
                .for_each(|(((p, g), m), v)| run(p, g, m, v));
        }
        (param, m, v)
    }
}
