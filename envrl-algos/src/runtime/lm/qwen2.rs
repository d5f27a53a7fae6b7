//! A Qwen2-family decoder-only transformer: RMSNorm, rotary embeddings, grouped-query
//! attention with optional QKV bias, a SwiGLU MLP and optionally tied embeddings. With
//! `attention_bias = false` it is the Llama architecture.
//!
//! Read from the smallest block to the largest: [`RmsNorm`], [`Mlp`], [`Attention`],
//! [`DecoderLayer`], [`Qwen2Model`], [`CausalLm`]. Field names are the Hugging Face tensor names.

use burn::module::{Module, Param};
use burn::nn::Linear;
use burn::tensor::module::embedding;
use burn::tensor::{Device, Int, Tensor, TensorData};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use std::sync::Arc;

use crate::runtime::lm::acting::{ActingWeights, PackedLayer, packed_product};
use crate::runtime::lm::init::{self, normal, param};
use crate::runtime::lm::kernels::packed::PackedMatrix;
use crate::runtime::lm::kernels::{matmul, rms_norm, softmax_rows, swiglu};
use crate::runtime::lm::lora::weight_product;
use crate::runtime::lm::mask::attention_bias;
use crate::runtime::lm::rope::RopeTables;
use crate::runtime::lm::{KvCache, LmConfig};

/// Root-mean-square layer norm: `x / sqrt(mean(x²) + ε) · weight`.
#[derive(Module, Debug)]
pub struct RmsNorm {
    /// Per-channel gain, `[d_model]`.
    pub weight: Param<Tensor<1>>,
    /// ε (`rms_norm_eps`).
    pub eps: f64,
}

impl RmsNorm {
    /// # Shapes
    /// - `x`: `[batch, seq, d_model]`; returns the same shape.
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        rms_norm(x, self.weight.val(), self.eps as f32)
    }
}

/// The SwiGLU feed-forward block: `down(silu(gate(x)) · up(x))`.
#[derive(Module, Debug)]
pub struct Mlp {
    /// `[d_model, intermediate]`.
    pub gate_proj: Linear,
    /// `[d_model, intermediate]`.
    pub up_proj: Linear,
    /// `[intermediate, d_model]`.
    pub down_proj: Linear,
}

impl Mlp {
    /// # Shapes
    /// - `x`: `[batch, seq, d_model]`; returns the same shape.
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        self.forward_with(x, None)
    }

    /// [`Mlp::forward`] with an acting copy's packed matrices when given.
    fn forward_with(&self, x: Tensor<3>, packed: Option<&PackedLayer>) -> Tensor<3> {
        let linears = [&self.gate_proj, &self.up_proj];
        let [gate, up] = match packed {
            Some(p) => project_stacked(&p.gate_up, linears, x),
            None => linears.map(|linear| project(linear, None, x.clone())),
        };
        project(&self.down_proj, packed.map(|p| &p.down), swiglu(gate, up))
    }
}

/// Grouped-query self-attention with rotary embeddings.
#[derive(Module, Debug)]
pub struct Attention {
    /// `[d_model, n_heads·head_dim]`.
    pub q_proj: Linear,
    /// `[d_model, n_kv_heads·head_dim]`.
    pub k_proj: Linear,
    /// `[d_model, n_kv_heads·head_dim]`.
    pub v_proj: Linear,
    /// `[n_heads·head_dim, d_model]`, no bias.
    pub o_proj: Linear,
    /// Query heads.
    pub n_heads: usize,
    /// Key/value heads.
    pub n_kv_heads: usize,
    /// Width of a head.
    pub head_dim: usize,
}

impl Attention {
    /// # Shapes
    /// - `x`: `[batch, seq, d_model]`
    /// - `bias`: `[batch, n_heads, seq, kv_seq]`, 0 where seen and `f32::MIN` where hidden;
    ///   `None` for plain causal
    ///   attention (no cache, right-padded rows)
    /// - returns `[batch, seq, d_model]`
    pub fn forward(
        &self,
        x: Tensor<3>,
        rope: &RopeTables,
        bias: Option<Tensor<4>>,
        cache: Option<(&mut KvCache, usize)>,
    ) -> Tensor<3> {
        self.forward_with(x, rope, bias, cache, None)
    }

    /// [`Attention::forward`] with an acting copy's packed matrices when given.
    fn forward_with(
        &self,
        x: Tensor<3>,
        rope: &RopeTables,
        bias: Option<Tensor<4>>,
        cache: Option<(&mut KvCache, usize)>,
        packed: Option<&PackedLayer>,
    ) -> Tensor<3> {
        let [batch, seq, _] = x.dims();
        let (h, kvh, hd) = (self.n_heads, self.n_kv_heads, self.head_dim);
        let linears = [&self.q_proj, &self.k_proj, &self.v_proj];
        let [q, k, v] = match packed {
            Some(p) => project_stacked(&p.qkv, linears, x),
            None => linears.map(|linear| project(linear, None, x.clone())),
        };
        let q = q.reshape([batch, seq, h, hd]).swap_dims(1, 2);
        let k = k.reshape([batch, seq, kvh, hd]).swap_dims(1, 2);
        let v = v.reshape([batch, seq, kvh, hd]).swap_dims(1, 2);
        let q = rope.apply(q);
        let k = rope.apply(k);
        let (k, v) = match cache {
            // Decoding and prefill: the cache's keys and values as they are (views of its
            // buffers), each shared by its group of query heads.
            Some((cache, layer)) => cache.append(layer, k, v),
            // Scoring and training: repeated for each query head, as before grouping was
            // introduced, so that their results and gradients stay what they were.
            None => (repeat_kv(k, h / kvh), repeat_kv(v, h / kvh)),
        };
        let out = scaled_dot_product(q, k, v, bias);
        project(
            &self.o_proj,
            packed.map(|p| &p.o),
            out.swap_dims(1, 2).reshape([batch, seq, h * hd]),
        )
    }
}

/// `softmax(q·kᵀ / √d + bias) · v` as two products around the fused softmax kernel, whose
/// backward pass keeps only the probabilities. (Burn's `attention` op records a dozen
/// element-wise steps under autodiff, and its flex kernel for inference calls a scalar `exp`:
/// this is 1.2× faster at a 512-token prefill.) With fewer key/value heads than query heads,
/// each key/value head's group of query heads are the rows of one product: the keys and values
/// are not repeated.
///
/// # Shapes
/// - `q`: `[batch, heads, seq, head_dim]`, `k` and `v`: `[batch, kv_heads, kv_seq, head_dim]`
/// - `bias`: as in [`Attention::forward`]; `None` for causal attention
fn scaled_dot_product(
    q: Tensor<4>,
    k: Tensor<4>,
    v: Tensor<4>,
    bias: Option<Tensor<4>>,
) -> Tensor<4> {
    let [_, heads, _, head_dim] = q.dims();
    let kv_heads = k.dims()[1];
    let scale = 1.0 / (head_dim as f32).sqrt();
    let scores = ungrouped(matmul(grouped(q, kv_heads), k.transpose()), heads);
    let probs = match bias {
        Some(bias) => softmax_rows(scores * scale + bias, 1.0, false),
        None => softmax_rows(scores, scale, true),
    };
    ungrouped(matmul(grouped(probs, kv_heads), v), heads)
}

/// `[batch, heads, rows, cols]` → `[batch, groups, heads / groups · rows, cols]`: each group of
/// heads as one matrix (unchanged with one head per group).
fn grouped(x: Tensor<4>, groups: usize) -> Tensor<4> {
    let [batch, heads, rows, cols] = x.dims();
    if heads == groups {
        return x;
    }
    x.reshape([batch, groups, heads / groups * rows, cols])
}

/// The inverse of [`grouped`] for `heads` heads.
fn ungrouped(x: Tensor<4>, heads: usize) -> Tensor<4> {
    let [batch, groups, rows, cols] = x.dims();
    if heads == groups {
        return x;
    }
    x.reshape([batch, heads, rows / (heads / groups), cols])
}

/// `x · W + b` for `x` of `[batch, seq, d_in]`, as one 2-D product over all `batch · seq` rows,
/// with `packed` in place of `W` when given (an acting copy).
/// `Linear::forward` broadcasts the weight over the batch instead, which runs one product per
/// row and, in decoding (one position per row), streams the whole weight matrix once per row.
pub(crate) fn project(linear: &Linear, packed: Option<&PackedMatrix>, x: Tensor<3>) -> Tensor<3> {
    let [batch, seq, d_in] = x.dims();
    let x = x.reshape([batch * seq, d_in]);
    let y = match packed {
        Some(packed) => packed_product(x, packed),
        None => weight_product(x, &linear.weight),
    };
    let d_out = y.dims()[1];
    with_bias(linear, y).reshape([batch, seq, d_out])
}

/// The projections `linears` of one input `x` (`[batch, seq, d_in]`) as one product with
/// `stacked`, their weights stacked output by output; each output gets its own bias.
fn project_stacked<const N: usize>(
    stacked: &PackedMatrix,
    linears: [&Linear; N],
    x: Tensor<3>,
) -> [Tensor<3>; N] {
    let [batch, seq, d_in] = x.dims();
    let y = packed_product(x.reshape([batch * seq, d_in]), stacked);
    let mut start = 0;
    linears.map(|linear| {
        let d_out = linear.weight.lazy_shape()[1];
        let part = y.clone().narrow(1, start, d_out);
        start += d_out;
        with_bias(linear, part).reshape([batch, seq, d_out])
    })
}

/// `y + b` for `y` `[rows, d_out]` when `linear` has a bias.
fn with_bias(linear: &Linear, y: Tensor<2>) -> Tensor<2> {
    match &linear.bias {
        Some(bias) => y + bias.val().unsqueeze::<2>(),
        None => y,
    }
}

/// Repeats each key/value head `n_rep` times: `[b, kvh, s, d]` → `[b, kvh·n_rep, s, d]`.
fn repeat_kv(x: Tensor<4>, n_rep: usize) -> Tensor<4> {
    if n_rep == 1 {
        return x;
    }
    let [b, kvh, s, d] = x.dims();
    x.unsqueeze_dim::<5>(2)
        .expand([b, kvh, n_rep, s, d])
        .reshape([b, kvh * n_rep, s, d])
}

/// Pre-norm decoder layer: `x + attn(norm(x))`, then `x + mlp(norm(x))`.
#[derive(Module, Debug)]
pub struct DecoderLayer {
    /// Self-attention.
    pub self_attn: Attention,
    /// Feed-forward block.
    pub mlp: Mlp,
    /// Norm before attention.
    pub input_layernorm: RmsNorm,
    /// Norm before the MLP.
    pub post_attention_layernorm: RmsNorm,
}

impl DecoderLayer {
    fn forward(
        &self,
        x: Tensor<3>,
        rope: &RopeTables,
        bias: Option<Tensor<4>>,
        cache: Option<(&mut KvCache, usize)>,
        packed: Option<&PackedLayer>,
    ) -> Tensor<3> {
        let normed = self.input_layernorm.forward(x.clone());
        let x = x + self
            .self_attn
            .forward_with(normed, rope, bias, cache, packed);
        let normed = self.post_attention_layernorm.forward(x.clone());
        x + self.mlp.forward_with(normed, packed)
    }
}

/// The token embedding, the decoder stack and the final norm.
#[derive(Module, Debug)]
pub struct Qwen2Model {
    /// `[vocab, d_model]`.
    pub embed_tokens: Param<Tensor<2>>,
    /// The decoder layers.
    pub layers: Vec<DecoderLayer>,
    /// Final norm.
    pub norm: RmsNorm,
}

/// A batch of token rows prepared on the host: ids, positions and key validity.
#[derive(Debug, Clone)]
pub struct TokenBatch<'a> {
    /// Row-major `[batch, seq]` token ids.
    pub ids: &'a [u32],
    /// Rows.
    pub batch: usize,
    /// Columns.
    pub seq: usize,
    /// Row-major `[batch, seq]` RoPE positions.
    pub positions: &'a [usize],
    /// Per row: whether each position (cached ones first, then these) is a real token.
    pub key_valid: &'a [Vec<bool>],
}

/// The causal language model: [`Qwen2Model`] plus the output layer.
#[derive(Module, Debug)]
pub struct CausalLm {
    /// The transformer.
    pub model: Qwen2Model,
    /// The output layer `[d_model, vocab]`; `None` when tied to the embedding.
    pub lm_head: Option<Linear>,
    /// RoPE base θ.
    pub rope_theta: f64,
    /// The packed matrices of an acting copy ([`CausalLm::acting_copy`]); `None` for a model
    /// that computes with its own weights.
    #[module(skip)]
    pub(crate) acting: Option<Arc<ActingWeights>>,
}

impl CausalLm {
    pub(crate) fn init(config: &LmConfig, device: &Device, seed: u64) -> Self {
        let mut source = RandomInit {
            rng: ChaCha8Rng::seed_from_u64(seed),
            std: config.initializer_range,
            device: device.clone(),
        };
        match Self::build(config, &mut source) {
            Ok(model) => model,
            Err(never) => match never {},
        }
    }

    /// Assembles a model from `source`, asking for every parameter by its Hugging Face name,
    /// in a fixed order (embedding, then each layer's q, k, v, o, gate, up, down and norms, the
    /// final norm, and the output layer when untied).
    pub(crate) fn build<S: ParamSource>(
        config: &LmConfig,
        source: &mut S,
    ) -> std::result::Result<Self, S::Error> {
        let (d, hd) = (config.hidden_size, config.head_dim());
        let (h, kvh) = (config.num_attention_heads, config.num_key_value_heads);
        let ffn = config.intermediate_size;
        let bias = config.attention_bias;
        let embed_tokens = source.matrix("model.embed_tokens.weight", config.vocab_size, d)?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let name = |part: &str| format!("model.layers.{i}.{part}");
            let self_attn = Attention {
                q_proj: source.linear(&name("self_attn.q_proj"), d, h * hd, bias)?,
                k_proj: source.linear(&name("self_attn.k_proj"), d, kvh * hd, bias)?,
                v_proj: source.linear(&name("self_attn.v_proj"), d, kvh * hd, bias)?,
                o_proj: source.linear(&name("self_attn.o_proj"), h * hd, d, false)?,
                n_heads: h,
                n_kv_heads: kvh,
                head_dim: hd,
            };
            let mlp = Mlp {
                gate_proj: source.linear(&name("mlp.gate_proj"), d, ffn, false)?,
                up_proj: source.linear(&name("mlp.up_proj"), d, ffn, false)?,
                down_proj: source.linear(&name("mlp.down_proj"), ffn, d, false)?,
            };
            layers.push(DecoderLayer {
                self_attn,
                mlp,
                input_layernorm: RmsNorm {
                    weight: source.vector(&name("input_layernorm.weight"), d)?,
                    eps: config.rms_norm_eps,
                },
                post_attention_layernorm: RmsNorm {
                    weight: source.vector(&name("post_attention_layernorm.weight"), d)?,
                    eps: config.rms_norm_eps,
                },
            });
        }
        let norm = RmsNorm {
            weight: source.vector("model.norm.weight", d)?,
            eps: config.rms_norm_eps,
        };
        let lm_head = if config.tie_word_embeddings {
            None
        } else {
            Some(source.linear("lm_head", d, config.vocab_size, false)?)
        };
        Ok(CausalLm {
            model: Qwen2Model {
                embed_tokens,
                layers,
                norm,
            },
            lm_head,
            rope_theta: config.rope_theta,
            acting: None,
        })
    }

    /// The device the weights live on.
    pub fn device(&self) -> Device {
        self.model.embed_tokens.val().device()
    }

    /// The vocabulary size.
    pub fn vocab_size(&self) -> usize {
        self.model.embed_tokens.val().dims()[0]
    }

    /// The number of decoder layers.
    pub fn num_layers(&self) -> usize {
        self.model.layers.len()
    }

    /// Final hidden states of a batch; appends to `cache` when given.
    ///
    /// # Shapes
    /// - returns `[batch, seq, d_model]`
    pub fn forward_hidden(
        &self,
        batch: &TokenBatch<'_>,
        mut cache: Option<&mut KvCache>,
    ) -> Tensor<3> {
        let device = self.device();
        let (b, s) = (batch.batch, batch.seq);
        let ids: Vec<i64> = batch.ids.iter().map(|&i| i as i64).collect();
        let ids = Tensor::<2, Int>::from_data(TensorData::new(ids, [b, s]), &device);
        let first = &self.model.layers[0].self_attn;
        let (heads, head_dim) = (first.n_heads, first.head_dim);
        let past = cache.as_ref().map_or(0, |c| c.len());
        let rope = RopeTables::new(batch.positions, b, s, head_dim, self.rope_theta, &device);
        // Right-padded rows without a cache need only the causal mask: real tokens never see
        // the padding after them, and padded positions are never read.
        let right_padded = batch
            .key_valid
            .iter()
            .all(|v| v.windows(2).all(|w| w[0] || !w[1]));
        let bias = (past > 0 || !right_padded)
            .then(|| attention_bias(batch.key_valid, past, s, heads, &device));
        let mut x = embedding(self.model.embed_tokens.val(), ids);
        for (i, layer) in self.model.layers.iter().enumerate() {
            let layer_cache = cache.as_deref_mut().map(|c| (c, i));
            let packed = self.acting.as_ref().map(|a| &a.layers[i]);
            x = layer.forward(x, &rope, bias.clone(), layer_cache, packed);
        }
        if let Some(cache) = cache {
            cache.key_valid = batch.key_valid.to_vec();
        }
        self.model.norm.forward(x)
    }

    /// Output logits of hidden states.
    ///
    /// # Shapes
    /// - `hidden`: `[batch, seq, d_model]`; returns `[batch, seq, vocab]`
    pub fn logits(&self, hidden: Tensor<3>) -> Tensor<3> {
        if let Some(acting) = &self.acting {
            let [batch, seq, d_model] = hidden.dims();
            let vocab = acting.output.rows();
            return packed_product(hidden.reshape([batch * seq, d_model]), &acting.output)
                .reshape([batch, seq, vocab]);
        }
        match &self.lm_head {
            Some(head) => project(head, None, hidden),
            None => {
                // One 2-D product with the transposed embedding as a strided view: going
                // through `linear` would unsqueeze the transpose, which copies the whole
                // `[vocab, d_model]` matrix on every call.
                let [batch, seq, d_model] = hidden.dims();
                let embedding = self.model.embed_tokens.val();
                let vocab = embedding.dims()[0];
                matmul(
                    hidden.reshape([batch * seq, d_model]),
                    embedding.transpose(),
                )
                .reshape([batch, seq, vocab])
            }
        }
    }

    /// Logits of unpadded rows of equal length, positions `0..seq`.
    ///
    /// # Shapes
    /// - `ids`: `batch` rows of `seq` ids; returns `[batch, seq, vocab]`
    pub fn forward(&self, ids: &[Vec<u32>]) -> Tensor<3> {
        let batch = ids.len();
        let seq = ids.first().map_or(0, Vec::len);
        let flat: Vec<u32> = ids.concat();
        let positions: Vec<usize> = (0..batch).flat_map(|_| 0..seq).collect();
        let key_valid = vec![vec![true; seq]; batch];
        let tb = TokenBatch {
            ids: &flat,
            batch,
            seq,
            positions: &positions,
            key_valid: &key_valid,
        };
        self.logits(self.forward_hidden(&tb, None))
    }
}

/// Where [`CausalLm::build`] gets its parameters: a seeded initialisation or a weight file.
pub(crate) trait ParamSource {
    /// Why a parameter is unavailable.
    type Error;
    /// A `[rows, cols]` matrix (the token embedding).
    fn matrix(
        &mut self,
        name: &str,
        rows: usize,
        cols: usize,
    ) -> std::result::Result<Param<Tensor<2>>, Self::Error>;
    /// A `Linear` of Burn's `[d_input, d_output]` layout; `name` without `.weight`.
    fn linear(
        &mut self,
        name: &str,
        d_input: usize,
        d_output: usize,
        bias: bool,
    ) -> std::result::Result<Linear, Self::Error>;
    /// A norm weight.
    fn vector(
        &mut self,
        name: &str,
        len: usize,
    ) -> std::result::Result<Param<Tensor<1>>, Self::Error>;
}

/// The seeded host-side initialisation: N(0, std²) matrices, zero biases, unit norms.
struct RandomInit {
    rng: ChaCha8Rng,
    std: f64,
    device: Device,
}

impl ParamSource for RandomInit {
    type Error = std::convert::Infallible;

    fn matrix(
        &mut self,
        _name: &str,
        rows: usize,
        cols: usize,
    ) -> std::result::Result<Param<Tensor<2>>, Self::Error> {
        Ok(param(
            normal(&mut self.rng, rows * cols, self.std),
            [rows, cols],
            &self.device,
        ))
    }

    fn linear(
        &mut self,
        _name: &str,
        d_input: usize,
        d_output: usize,
        bias: bool,
    ) -> std::result::Result<Linear, Self::Error> {
        Ok(init::linear(
            &mut self.rng,
            d_input,
            d_output,
            bias,
            self.std,
            &self.device,
        ))
    }

    fn vector(
        &mut self,
        _name: &str,
        len: usize,
    ) -> std::result::Result<Param<Tensor<1>>, Self::Error> {
        Ok(param(vec![1.0; len], [len], &self.device))
    }
}
