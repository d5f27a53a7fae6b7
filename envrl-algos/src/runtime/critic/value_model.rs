//! A causal LM trunk with a scalar value head.

use burn::module::{Module, ModuleMapper, Param};
use burn::nn::Linear;
use burn::tensor::Tensor;
use envrl::ScoreRow;

use crate::runtime::lm::CausalLm;
use crate::runtime::lm::init::param;

/// `V(context, target_<k)`: the trunk's final hidden state at the position before each target
/// token, projected to a scalar (ENVRL.md §3.5).
#[derive(Module, Debug)]
pub struct ValueModel {
    /// The transformer (its output layer is unused).
    pub trunk: CausalLm,
    /// `[d_model, 1]`, with bias.
    pub value_head: Linear,
}

impl ValueModel {
    /// A critic initialised from `policy`'s weights (with fresh parameter ids, so it trains
    /// independently) and a zero value head, so every initial value is 0.
    pub fn from_policy(policy: &CausalLm) -> Self {
        let trunk = policy.clone().map(&mut FreshParams);
        let device = policy.device();
        let d_model = trunk.model.norm.weight.dims()[0];
        Self {
            trunk,
            value_head: Linear {
                weight: param(vec![0.0; d_model], [d_model, 1], &device),
                bias: Some(param(vec![0.0], [1], &device)),
            },
        }
    }

    /// The value of every target token, `[rows, max_target]`, and the target mask.
    ///
    /// # Panics
    /// Panics if a row has an empty context.
    pub fn values(&self, rows: &[ScoreRow]) -> (Tensor<2>, Tensor<2>) {
        let targeted = self.trunk.target_hidden(rows);
        let [n, width, _] = targeted.hidden.dims();
        let values = self.value_head.forward(targeted.hidden).reshape([n, width]);
        (values, targeted.mask)
    }
}

/// Gives every parameter a new id (a detached copy of its value).
struct FreshParams;

impl ModuleMapper for FreshParams {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        Param::from_tensor(param.val().detach())
    }
}
