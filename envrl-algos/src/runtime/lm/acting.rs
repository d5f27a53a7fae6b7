//! The acting copy of a [`CausalLm`]: its projection and output matrices in bf16 or 8-bit
//! blocks ([`PackedMatrix`]), for rollouts that read fewer bytes per decoded token.
//!
//! The copy keeps the model's own (f32) embedding lookup, norms and biases; every matrix
//! product goes through the packed matrices: decoding's few rows through the packed product
//! ([`PackedMatrix::matmul_transposed`]), a prefill's many rows through the `f32` product of
//! the packed values decoded for the call. Either way the copy computes with exactly the
//! packed values. LoRA adapters are merged into the packed matrices.

use std::sync::Arc;

use burn::module::Module;
use burn::nn::Linear;
use burn::tensor::{DType, Device, Tensor, TensorData};
use envrl::{Error, RolloutWeights};

use crate::runtime::lm::kernels::matmul;
use crate::runtime::lm::kernels::packed::PackedMatrix;
use crate::runtime::lm::{CausalLm, DecoderLayer};

/// Rows up to which a product goes through the packed kernel; above, the packed values are
/// decoded to `f32` for the blocked product (its cost is then small beside the product's).
const THIN_ROWS: usize = 64;

/// One decoder layer's projections, packed; the projections that read the same input are
/// stacked into one matrix (one product, one pass of the pool, instead of three or two).
#[derive(Clone)]
pub(crate) struct PackedLayer {
    /// q, k and v, their outputs one after the other.
    pub qkv: PackedMatrix,
    pub o: PackedMatrix,
    /// gate and up, their outputs one after the other.
    pub gate_up: PackedMatrix,
    pub down: PackedMatrix,
}

/// The packed matrices of an acting copy.
#[derive(Clone)]
pub(crate) struct ActingWeights {
    /// The format.
    pub format: RolloutWeights,
    /// Each layer's projections.
    pub layers: Vec<PackedLayer>,
    /// The output layer (`[vocab, d_model]`; the embedding when tied).
    pub output: PackedMatrix,
}

impl std::fmt::Debug for ActingWeights {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ActingWeights({}, {} layers, {} bytes)",
            self.format,
            self.layers.len(),
            self.bytes()
        )
    }
}

impl ActingWeights {
    /// The bytes of every packed matrix.
    pub fn bytes(&self) -> usize {
        let layer = |l: &PackedLayer| {
            [&l.qkv, &l.o, &l.gate_up, &l.down]
                .iter()
                .map(|m| m.bytes())
                .sum::<usize>()
        };
        self.layers.iter().map(layer).sum::<usize>() + self.output.bytes()
    }
}

/// `values` (`[rows, cols]`) packed in `format` (`f32` never gets here: its acting copy is
/// the model itself).
fn pack(format: RolloutWeights, values: &[f32], rows: usize, cols: usize) -> PackedMatrix {
    match format {
        RolloutWeights::Int8 => PackedMatrix::int8(values, rows, cols),
        RolloutWeights::F32 | RolloutWeights::Bf16 => PackedMatrix::bf16(values, rows, cols),
    }
}

/// A tensor's values as `f32`, row-major.
fn host_values<const D: usize>(tensor: Tensor<D>) -> Vec<f32> {
    let data = tensor.into_data();
    if data.dtype() != DType::F32 {
        return data.iter::<f32>().collect();
    }
    // Cannot fail for f32 data; an empty vector would fail the product's length check.
    data.try_into_vec::<f32>().unwrap_or_default()
}

/// `Linear`s of one input size (weights `[in, out]`, adapters merged) stacked output by output
/// (`[Σ out, in]`) and packed.
fn pack_linears(format: RolloutWeights, linears: &[&Linear]) -> PackedMatrix {
    let mut rows = Vec::new();
    let (mut d_out, mut d_in) = (0, 0);
    for linear in linears {
        let weight = linear.weight.val();
        let [input, output] = weight.dims();
        rows.extend(host_values(weight.transpose()));
        (d_in, d_out) = (input, d_out + output);
    }
    pack(format, &rows, d_out, d_in)
}

impl PackedLayer {
    fn of(format: RolloutWeights, layer: &DecoderLayer) -> Self {
        let (a, m) = (&layer.self_attn, &layer.mlp);
        Self {
            qkv: pack_linears(format, &[&a.q_proj, &a.k_proj, &a.v_proj]),
            o: pack_linears(format, &[&a.o_proj]),
            gate_up: pack_linears(format, &[&m.gate_proj, &m.up_proj]),
            down: pack_linears(format, &[&m.down_proj]),
        }
    }
}

impl CausalLm {
    /// Whether [`CausalLm::acting_copy`] can make a `weights` copy of this model, without
    /// making it.
    ///
    /// # Errors
    /// As [`CausalLm::acting_copy`].
    pub fn check_acting_copy(&self, weights: RolloutWeights) -> envrl::Result<()> {
        if weights == RolloutWeights::F32 {
            return Ok(());
        }
        let dtype = self.model.embed_tokens.val().dtype();
        let device = self.device().inner();
        if device != Device::flex() || dtype != DType::F32 {
            return Err(Error::config(
                "rollout_weights",
                format!(
                    "the `{weights}` acting copy needs an f32 model on the CPU backend (flex); \
                     this one is {dtype:?} on {device:?}"
                ),
            ));
        }
        Ok(())
    }

    /// The copy that plays rollouts with its matrices stored as `weights` says (see the
    /// module's documentation); `f32` gives [`Module::valid`].
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] (field `rollout_weights`) for `bf16` or `int8` when the model
    /// is not an `f32` model on the CPU backend (flex), where the packed kernels run.
    pub fn acting_copy(&self, weights: RolloutWeights) -> envrl::Result<Self> {
        self.check_acting_copy(weights)?;
        let mut copy = self.valid();
        if weights == RolloutWeights::F32 {
            return Ok(copy);
        }
        let embedding = copy.model.embed_tokens.val();
        let output = match &copy.lm_head {
            Some(head) => pack_linears(weights, &[head]),
            None => {
                let [vocab, d_model] = embedding.dims();
                pack(weights, &host_values(embedding), vocab, d_model)
            }
        };
        let layers = copy
            .model
            .layers
            .iter()
            .map(|layer| PackedLayer::of(weights, layer))
            .collect();
        copy.acting = Some(Arc::new(ActingWeights {
            format: weights,
            layers,
            output,
        }));
        Ok(copy)
    }

    /// The format of the matrices this model computes with: `f32` unless it is an acting copy.
    pub fn rollout_weights(&self) -> RolloutWeights {
        self.acting
            .as_ref()
            .map_or(RolloutWeights::F32, |a| a.format)
    }

    /// The bytes of the matrices one decoding step reads: the packed matrices of an acting
    /// copy, else every weight but the embedding lookup's (which reads a row per token) at the
    /// model's float size — for a tied model the embedding is the output layer and counts.
    pub fn decoding_bytes(&self) -> usize {
        if let Some(acting) = &self.acting {
            return acting.bytes();
        }
        let embedding = self.model.embed_tokens.val();
        let bytes = embedding.dtype().size();
        let all = self.num_params() * bytes;
        match &self.lm_head {
            Some(_) => all - embedding.shape().num_elements() * bytes,
            None => all,
        }
    }
}

/// `x · W` for `x` `[rows, d_in]` and a packed `W` (`[d_out, d_in]` output by output).
pub(crate) fn packed_product(x: Tensor<2>, weight: &PackedMatrix) -> Tensor<2> {
    let [rows, d_in] = x.dims();
    let device = x.device();
    if rows <= THIN_ROWS {
        let y = weight.matmul_transposed(&host_values(x), rows);
        return Tensor::from_data(TensorData::new(y, [rows, weight.rows()]), &device);
    }
    let decoded = TensorData::new(weight.to_f32(), [weight.rows(), d_in]);
    matmul(x, Tensor::<2>::from_data(decoded, &device).transpose())
}

#[cfg(test)]
mod tests {
    use burn::module::{ModuleMapper, Param};
    use burn::tensor::Device;

    use super::*;
    use crate::runtime::lm::LmConfig;

    /// Rounds every parameter to a bf16 value.
    struct RoundToBf16;

    impl ModuleMapper for RoundToBf16 {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
            let value = param.val();
            let (shape, device) = (value.shape(), value.device());
            let rounded: Vec<f32> = host_values(value)
                .into_iter()
                .map(|v| half::bf16::from_f32(v).to_f32())
                .collect();
            Param::from_tensor(Tensor::from_data(TensorData::new(rounded, shape), &device))
        }
    }

    /// A tiny model whose every weight is a bf16 value, so that its bf16 acting copy holds
    /// exactly its weights.
    fn bf16_exact_model(config: &LmConfig) -> CausalLm {
        config
            .init(&Device::flex(), 5)
            .unwrap()
            .map(&mut RoundToBf16)
    }

    fn max_diff(a: Tensor<3>, b: Tensor<3>) -> f32 {
        (a - b).abs().max().into_scalar()
    }

    #[test]
    fn a_bf16_copy_of_bf16_weights_computes_the_models_logits() {
        for config in [LmConfig::tiny(40), {
            let mut c = LmConfig::tiny(40);
            c.tie_word_embeddings = false;
            c.attention_bias = false;
            c
        }] {
            let model = bf16_exact_model(&config);
            let acting = model.acting_copy(RolloutWeights::Bf16).unwrap();
            assert_eq!(acting.rollout_weights(), RolloutWeights::Bf16);
            // One short row (the packed kernel) and a long batch (the decoded blocked product).
            let short = vec![vec![3, 1, 4]];
            let long: Vec<Vec<u32>> = (0..8)
                .map(|r| (0..12).map(|i| (r * 5 + i) % 40).collect())
                .collect();
            for ids in [short, long] {
                let d = max_diff(model.forward(&ids), acting.forward(&ids));
                assert!(d <= 1e-5, "{d}");
            }
        }
    }

    #[test]
    fn lighter_copies_stay_close_and_read_fewer_bytes() {
        let model = LmConfig::tiny(40).init(&Device::flex(), 6).unwrap();
        let ids = vec![vec![5, 9, 2, 7, 1]];
        let logits = model.forward(&ids);
        let scale: f32 = logits.clone().abs().max().into_scalar();
        let f32_bytes = model.decoding_bytes();
        for (weights, tolerance) in [(RolloutWeights::Bf16, 0.02), (RolloutWeights::Int8, 0.05)] {
            let acting = model.acting_copy(weights).unwrap();
            let d = max_diff(logits.clone(), acting.forward(&ids));
            assert!(d > 0.0 && d <= tolerance * scale.max(1.0), "{weights}: {d}");
            assert!(acting.decoding_bytes() < f32_bytes / 2 + f32_bytes / 16);
        }
        let f32_copy = model.acting_copy(RolloutWeights::F32).unwrap();
        assert_eq!(max_diff(logits, f32_copy.forward(&ids)), 0.0);
        assert_eq!(f32_copy.decoding_bytes(), f32_bytes);
    }

    #[test]
    fn an_acting_copy_generates_what_the_model_generates() {
        let model = bf16_exact_model(&LmConfig::tiny(40));
        let acting = model.acting_copy(RolloutWeights::Bf16).unwrap();
        let prompts: Vec<Vec<u32>> = vec![vec![1, 2, 3], vec![4, 5], vec![1, 2, 3]];
        let params = envrl::SamplingParams {
            temperature: 1.0,
            max_new_tokens: 8,
            ..Default::default()
        };
        let run = |m: &CausalLm| {
            m.generate_batch(&prompts, &[], 0, &params, &mut envrl::row_streams(2, 0..3))
        };
        for (a, b) in run(&model).iter().zip(&run(&acting)) {
            assert_eq!(a.tokens, b.tokens);
            for (x, y) in a.logprobs.iter().zip(&b.logprobs) {
                assert!((x - y).abs() <= 1e-4, "{x} vs {y}");
            }
        }
    }

    #[test]
    fn a_model_on_the_autodiff_device_gives_a_copy_off_the_graph() {
        let model = LmConfig::tiny(30)
            .init(&Device::flex().autodiff(), 1)
            .unwrap();
        let acting = model.acting_copy(RolloutWeights::Int8).unwrap();
        assert!(!acting.device().is_autodiff());
        assert!(acting.forward(&[vec![1, 2]]).dims() == [1, 2, 30]);
    }
}
