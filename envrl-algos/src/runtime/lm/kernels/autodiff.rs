//! [`LmKernels`] on autodiff: each kernel is one graph node whose backward pass calls the
//! inner backend's backward kernel.

use burn::backend::Autodiff;
use burn::backend::TensorMetadata;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind, unary};
use burn::backend::tensor::{FloatTensor, IntTensor};

use super::LmKernels;

/// Registers the gradients of a two-input node for the parents that need them.
macro_rules! register_pair {
    ($grads:expr, $parents:expr, $pair:expr) => {{
        let [first_parent, second_parent] = $parents;
        let (first, second) = $pair;
        if let Some(node) = first_parent {
            $grads.register::<B>(node.id, first);
        }
        if let Some(node) = second_parent {
            $grads.register::<B>(node.id, second);
        }
    }};
}

#[derive(Debug)]
struct Matmul;

impl<B: LmKernels> Backward<B, 2> for Matmul {
    /// Both operands.
    type State = (FloatTensor<B>, FloatTensor<B>);

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
        let Ops {
            parents: [lhs_parent, rhs_parent],
            node,
            state: (lhs, rhs),
        } = ops;
        let grad = grads.consume::<B>(&node);
        let rank = grad.shape().num_dims();
        let transpose = |t| B::float_swap_dims(t, rank - 2, rank - 1);
        if let Some(parent) = lhs_parent {
            grads.register::<B>(parent.id, B::matmul(grad.clone(), transpose(rhs)));
        }
        if let Some(parent) = rhs_parent {
            grads.register::<B>(parent.id, B::matmul(transpose(lhs), grad));
        }
    }
}

#[derive(Debug)]
struct SoftmaxRows;

impl<B: LmKernels> Backward<B, 1> for SoftmaxRows {
    /// The probabilities and the scale.
    type State = (FloatTensor<B>, f32);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let (probs, scale) = ops.state;
        unary::<B, _>(ops.parents, ops.node, grads, |grad| {
            B::softmax_rows_backward(probs, grad, scale)
        });
    }
}

#[derive(Debug)]
struct Rope;

impl<B: LmKernels> Backward<B, 1> for Rope {
    /// The cosine and sine tables (constants).
    type State = (FloatTensor<B>, FloatTensor<B>);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let (cos, sin) = ops.state;
        unary::<B, _>(ops.parents, ops.node, grads, |grad| {
            B::rope_backward(grad, cos, sin)
        });
    }
}

#[derive(Debug)]
struct Swiglu;

impl<B: LmKernels> Backward<B, 2> for Swiglu {
    /// The gate and up inputs.
    type State = (FloatTensor<B>, FloatTensor<B>);

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
        let Ops {
            parents,
            node,
            state: (gate, up),
        } = ops;
        let grad = grads.consume::<B>(&node);
        register_pair!(grads, parents, B::swiglu_backward(gate, up, grad));
    }
}

#[derive(Debug)]
struct RmsNorm;

impl<B: LmKernels> Backward<B, 2> for RmsNorm {
    /// The input, the weight and ε.
    type State = (FloatTensor<B>, FloatTensor<B>, f32);

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
        let Ops {
            parents,
            node,
            state: (x, weight, eps),
        } = ops;
        let grad = grads.consume::<B>(&node);
        register_pair!(grads, parents, B::rms_norm_backward(x, weight, grad, eps));
    }
}

#[derive(Debug)]
struct TokenLogprobs;

impl<B: LmKernels> Backward<B, 1> for TokenLogprobs {
    /// The logits, the targets and the output.
    type State = (FloatTensor<B>, IntTensor<B>, FloatTensor<B>);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let (logits, targets, output) = ops.state;
        unary::<B, _>(ops.parents, ops.node, grads, |grad| {
            B::token_logprobs_backward(logits, targets, output, grad)
        });
    }
}

impl<B: LmKernels, C: CheckpointStrategy> LmKernels for Autodiff<B, C> {
    fn matmul(lhs: FloatTensor<Self>, rhs: FloatTensor<Self>) -> FloatTensor<Self> {
        let ((lhs, lhs_node), (rhs, rhs_node)) = (lhs.into_parts(), rhs.into_parts());
        match Matmul
            .prepare::<C>([lhs_node, rhs_node])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => {
                let out = B::matmul(lhs.clone(), rhs.clone());
                prep.finish((lhs, rhs), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::matmul(lhs, rhs)),
        }
    }

    fn softmax_rows(scores: FloatTensor<Self>, scale: f32, causal: bool) -> FloatTensor<Self> {
        let (scores, node) = scores.into_parts();
        match SoftmaxRows.prepare::<C>([node]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let probs = B::softmax_rows(scores, scale, causal);
                prep.finish((probs.clone(), scale), probs)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::softmax_rows(scores, scale, causal)),
        }
    }

    /// The tables are constants: no gradient flows to them.
    fn rope(
        x: FloatTensor<Self>,
        cos: FloatTensor<Self>,
        sin: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        let (x, node) = x.into_parts();
        let (cos, sin) = (cos.into_primitive(), sin.into_primitive());
        match Rope.prepare::<C>([node]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let out = B::rope(x, cos.clone(), sin.clone());
                prep.finish((cos, sin), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::rope(x, cos, sin)),
        }
    }

    fn swiglu(gate: FloatTensor<Self>, up: FloatTensor<Self>) -> FloatTensor<Self> {
        let ((gate, gate_node), (up, up_node)) = (gate.into_parts(), up.into_parts());
        match Swiglu
            .prepare::<C>([gate_node, up_node])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => {
                let out = B::swiglu(gate.clone(), up.clone());
                prep.finish((gate, up), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::swiglu(gate, up)),
        }
    }

    fn rms_norm(x: FloatTensor<Self>, weight: FloatTensor<Self>, eps: f32) -> FloatTensor<Self> {
        let ((x, x_node), (weight, weight_node)) = (x.into_parts(), weight.into_parts());
        match RmsNorm
            .prepare::<C>([x_node, weight_node])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => {
                let out = B::rms_norm(x.clone(), weight.clone(), eps);
                prep.finish((x, weight, eps), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::rms_norm(x, weight, eps)),
        }
    }

    fn token_logprobs(logits: FloatTensor<Self>, targets: IntTensor<Self>) -> FloatTensor<Self> {
        let (logits, node) = logits.into_parts();
        match TokenLogprobs
            .prepare::<C>([node])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => {
                let out = B::token_logprobs(logits.clone(), targets.clone());
                prep.finish((logits, targets, out.clone()), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::token_logprobs(logits, targets)),
        }
    }
}
