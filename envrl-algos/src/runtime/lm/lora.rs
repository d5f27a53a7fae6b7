//! LoRA fine-tuning of [`CausalLm`]: trainable low-rank adapters on the projection weights,
//! everything else frozen (Burn's `Module::apply_lora`).

use burn::module::{Lora, Module, Param, ParamGroup};
use burn::nn::Linear;
use burn::tensor::Tensor;

use crate::runtime::lm::kernels::matmul;
use crate::runtime::lm::{CausalLm, DecoderLayer};

/// `x · W` for a projection weight `W` (`[d_in, d_out]`), `x` of `[rows, d_in]`.
///
/// With a LoRA adapter (`W = W₀ + s·A·B`) this is `x·W₀ + ((s·x·A)·B)`, never the adapted
/// matrix itself: Burn's `Param::val` materialises `W₀ + s·A·B` (`d_in × d_out` multiply-adds
/// per rank and a new matrix for every call, i.e. every decoded token), and its gradient
/// `xᵀ·∂y` is a full `d_in × d_out` product that the frozen `W₀` does not need. Here the
/// frozen base takes part in the forward product and in `∂x` only, and the adapters' gradients
/// come from products of width `rank`: about a third fewer multiply-adds in a LoRA update.
pub(crate) fn weight_product(x: Tensor<2>, weight: &Param<Tensor<2>>) -> Tensor<2> {
    let Some(adapter) = weight.adapter() else {
        return matmul(x, weight.val());
    };
    let (a, b) = (adapter.a.val(), adapter.b.val());
    let base = weight.base();
    // As Burn's adapter does: a dense base of another float type computes in the factors'.
    let base = if base.dtype().is_float() && base.dtype() != a.dtype() {
        base.cast(a.dtype())
    } else {
        base
    };
    let low = matmul(x.clone(), a).mul_scalar(adapter.scale);
    matmul(x, base) + matmul(low, b)
}

/// The parameter paths that get adapters: the attention and MLP projections' weights.
const ADAPTED: &str = "_proj.weight";

impl CausalLm {
    /// Freezes every parameter and attaches LoRA adapters of `rank` (scale `alpha / rank`) to
    /// the attention and MLP projections (`q/k/v/o_proj`, `gate/up/down_proj`); embeddings,
    /// norms, biases and the output layer stay frozen. Only the adapters are trained, so the
    /// optimizer keeps moments for a small fraction of the parameters (see
    /// [`CausalLm::adapter_parameters`]). Each adapter's `B` factor starts at zero, so the model
    /// computes the same function until it is trained; `A` ~ N(0, 1/rank²) comes from the
    /// device's generator seeded with `seed` (the same seed gives the same adapters on a given
    /// backend). A model with adapters loads and saves records of the same shape, so a run's
    /// checkpoints resume only with the same LoRA settings.
    pub fn with_lora(self, rank: usize, alpha: f64, seed: u64) -> Self {
        self.device().seed(seed);
        self.apply_lora(Lora::new(rank, alpha).set_param_group(ParamGroup::from_predicate(ADAPTED)))
    }

    /// The number of adapter parameters (0 without LoRA).
    pub fn adapter_parameters(&self) -> usize {
        self.projections()
            .filter_map(|linear| linear.weight.adapter())
            .map(|adapter| {
                adapter.a.lazy_shape().num_elements() + adapter.b.lazy_shape().num_elements()
            })
            .sum()
    }

    /// Every attention and MLP projection, layer by layer.
    fn projections(&self) -> impl Iterator<Item = &Linear> {
        self.model.layers.iter().flat_map(DecoderLayer::projections)
    }

    /// Every attention and MLP projection with its Hugging Face name
    /// (`model.layers.0.self_attn.q_proj`), layer by layer.
    pub(crate) fn named_projections(&self) -> Vec<(String, &Linear)> {
        let layers = self.model.layers.iter().map(DecoderLayer::projections);
        named(layers)
    }

    /// [`CausalLm::named_projections`], mutably.
    pub(crate) fn projections_mut(&mut self) -> Vec<(String, &mut Linear)> {
        let layers = self
            .model
            .layers
            .iter_mut()
            .map(DecoderLayer::projections_mut);
        named(layers)
    }
}

/// The Hugging Face names of a layer's projections, in [`DecoderLayer::projections`]' order.
const PROJECTION_NAMES: [&str; 7] = [
    "self_attn.q_proj",
    "self_attn.k_proj",
    "self_attn.v_proj",
    "self_attn.o_proj",
    "mlp.gate_proj",
    "mlp.up_proj",
    "mlp.down_proj",
];

/// Each layer's projections under `model.layers.{i}.{name}`.
fn named<T>(layers: impl Iterator<Item = [T; 7]>) -> Vec<(String, T)> {
    layers
        .enumerate()
        .flat_map(|(i, projections)| {
            PROJECTION_NAMES
                .iter()
                .zip(projections)
                .map(move |(part, linear)| (format!("model.layers.{i}.{part}"), linear))
        })
        .collect()
}

impl DecoderLayer {
    /// The layer's q, k, v, o, gate, up and down projections.
    fn projections(&self) -> [&Linear; 7] {
        let (a, m) = (&self.self_attn, &self.mlp);
        [
            &a.q_proj,
            &a.k_proj,
            &a.v_proj,
            &a.o_proj,
            &m.gate_proj,
            &m.up_proj,
            &m.down_proj,
        ]
    }

    /// [`DecoderLayer::projections`], mutably.
    fn projections_mut(&mut self) -> [&mut Linear; 7] {
        let (a, m) = (&mut self.self_attn, &mut self.mlp);
        [
            &mut a.q_proj,
            &mut a.k_proj,
            &mut a.v_proj,
            &mut a.o_proj,
            &mut m.gate_proj,
            &mut m.up_proj,
            &mut m.down_proj,
        ]
    }
}

/// A parameter under its Hugging Face name, as Hugging Face lays it out.
#[derive(Debug, Clone, Copy)]
pub enum HfParam<'a> {
    /// A matrix; `true` when Burn holds it transposed (`Linear` weights are `[in, out]`,
    /// Hugging Face's `[out, in]`).
    Matrix(&'a Param<Tensor<2>>, bool),
    /// A vector (a bias or a norm's gain).
    Vector(&'a Param<Tensor<1>>),
}

impl CausalLm {
    /// Every parameter with its Hugging Face name, in the order of a Hugging Face checkpoint:
    /// the embedding, each layer's projections (weight, then bias if any) and norms, the final
    /// norm, and the output layer when untied. A LoRA projection's `Param` computes its adapted
    /// weight through `val()`.
    pub fn hf_parameters(&self) -> Vec<(String, HfParam<'_>)> {
        let mut out = vec![(
            "model.embed_tokens.weight".to_string(),
            HfParam::Matrix(&self.model.embed_tokens, false),
        )];
        let projections = self.named_projections();
        let mut projections = projections.into_iter();
        for (i, layer) in self.model.layers.iter().enumerate() {
            for (name, linear) in projections.by_ref().take(7) {
                push_linear(&mut out, name, linear);
            }
            out.push((
                format!("model.layers.{i}.input_layernorm.weight"),
                HfParam::Vector(&layer.input_layernorm.weight),
            ));
            out.push((
                format!("model.layers.{i}.post_attention_layernorm.weight"),
                HfParam::Vector(&layer.post_attention_layernorm.weight),
            ));
        }
        out.push((
            "model.norm.weight".into(),
            HfParam::Vector(&self.model.norm.weight),
        ));
        if let Some(head) = &self.lm_head {
            push_linear(&mut out, "lm_head".into(), head);
        }
        out
    }
}

/// A `Linear`'s weight and bias under `{name}.weight` and `{name}.bias`.
fn push_linear<'a>(out: &mut Vec<(String, HfParam<'a>)>, name: String, linear: &'a Linear) {
    out.push((
        format!("{name}.weight"),
        HfParam::Matrix(&linear.weight, true),
    ));
    if let Some(bias) = &linear.bias {
        out.push((format!("{name}.bias"), HfParam::Vector(bias)));
    }
}

#[cfg(test)]
mod tests {
    use burn::module::Module;
    use burn::tensor::{Device, Tensor, TensorData};
    use envrl::{BehaviourCloning, Policy, ScoreRow};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::weight_product;
    use crate::runtime::lm::LmConfig;
    use crate::runtime::lm::kernels::matmul;

    fn rows() -> Vec<ScoreRow> {
        (0..4u32)
            .map(|i| ScoreRow {
                context: vec![1 + i, 2, 3 + i],
                target: vec![4 + i, 5, 6],
            })
            .collect()
    }

    fn weights(model: &crate::runtime::lm::CausalLm) -> Vec<f32> {
        let layer = &model.model.layers[0];
        [
            layer.self_attn.q_proj.weight.val(),
            model.model.embed_tokens.val(),
        ]
        .into_iter()
        .flat_map(|t| t.into_data().try_to_vec::<f32>().unwrap())
        .collect()
    }

    #[test]
    fn adapters_start_as_the_identity_and_are_all_that_trains() {
        let config = LmConfig::tiny(40);
        let device = Device::flex().autodiff();
        let model = config.init(&device, 3).unwrap();
        let before = model.score(&rows(), false).logprobs.into_data();
        let lora = model.clone().with_lora(4, 8.0, 0);
        // 7 projections per layer, each with rank × (d_in + d_out) adapter parameters.
        let expected: usize = lora
            .projections()
            .map(|l| {
                let [d_in, d_out] = l.weight.lazy_shape().dims();
                4 * (d_in + d_out)
            })
            .sum();
        assert_eq!(lora.adapter_parameters(), expected);
        assert_eq!(model.adapter_parameters(), 0);
        assert!(expected < model.num_params() / 2, "{expected}");
        // B = 0: the same function as the base model.
        let after = lora.score(&rows(), false).logprobs.into_data();
        after.assert_approx_eq::<f32>(&before, Default::default());

        let bc = BehaviourCloning {
            steps: 3,
            batch_size: 4,
            learning_rate: 1e-2,
            max_grad_norm: 1.0,
            context_weight: 0.0,
        };
        let (trained, losses) = bc.train(lora, &rows(), &mut ChaCha8Rng::seed_from_u64(0));
        assert!(losses[2] < losses[0], "{losses:?}");
        // The adapted weight moved; the frozen embedding did not.
        let (w0, w1) = (weights(&model), weights(&trained));
        let n_q = model.model.layers[0]
            .self_attn
            .q_proj
            .weight
            .lazy_shape()
            .num_elements();
        assert!(
            w0[..n_q] != w1[..n_q],
            "the adapted projection did not change"
        );
        assert_eq!(w0[n_q..], w1[n_q..], "the frozen embedding changed");
        // A record of the adapted model loads back into a model with the same adapters.
        let record = trained.clone().into_record();
        let reloaded = model.with_lora(4, 8.0, 1).try_load_record(record).unwrap();
        assert_eq!(weights(&reloaded), w1);
    }

    #[test]
    fn the_factored_product_equals_the_adapted_matrix_and_its_gradients() {
        let device = Device::flex().autodiff();
        let lora = LmConfig::tiny(40)
            .init(&device, 3)
            .unwrap()
            .with_lora(4, 8.0, 0);
        // A few steps so that B is no longer zero.
        let bc = BehaviourCloning {
            steps: 2,
            batch_size: 4,
            learning_rate: 1e-2,
            max_grad_norm: 1.0,
            context_weight: 0.0,
        };
        let (trained, _) = bc.train(lora, &rows(), &mut ChaCha8Rng::seed_from_u64(0));
        let weight = &trained.model.layers[0].mlp.gate_proj.weight;
        let adapter = weight.adapter().expect("an adapted projection");
        let [d_in, d_out] = weight.lazy_shape().dims();
        let values = |n: usize, shift: f32| -> Vec<f32> {
            (0..n).map(|i| (i as f32 * 0.37 + shift).sin()).collect()
        };
        let x = Tensor::<2>::from_data(TensorData::new(values(5 * d_in, 0.1), [5, d_in]), &device)
            .require_grad();
        let upstream =
            Tensor::<2>::from_data(TensorData::new(values(5 * d_out, 0.7), [5, d_out]), &device);
        let run = |y: Tensor<2>| {
            let grads = (y.clone() * upstream.clone()).sum().backward();
            let grad = |t: Tensor<2>| t.grad(&grads).unwrap().into_data();
            (
                y.into_data(),
                grad(x.clone()),
                grad(adapter.a.val()),
                grad(adapter.b.val()),
                weight.base().grad(&grads).is_some(),
            )
        };
        let factored = run(weight_product(x.clone(), weight));
        let adapted = run(matmul(x.clone(), weight.val()));
        let tolerance = burn::tensor::Tolerance::<f32>::rel_abs(1e-4, 1e-5);
        for (f, a) in [
            (&factored.0, &adapted.0),
            (&factored.1, &adapted.1),
            (&factored.2, &adapted.2),
            (&factored.3, &adapted.3),
        ] {
            f.assert_approx_eq::<f32>(a, tolerance);
        }
        assert!(
            adapter.b.val().abs().sum().into_scalar::<f32>() > 0.0,
            "B is still zero"
        );
        assert!(!factored.4, "the frozen base got a gradient");
    }
}
