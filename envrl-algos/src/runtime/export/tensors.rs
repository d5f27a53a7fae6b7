//! A model's weights as host values under Hugging Face names and layouts (`[out, in]`
//! projections), with LoRA adapters merged, or the adapters alone under PEFT's names.

use burn::tensor::Tensor;

use crate::error::{Error, Result};
use crate::runtime::lm::{CausalLm, HfParam};

/// One tensor on the host: its name, shape (outermost first) and f32 values.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NamedTensor {
    pub name: String,
    pub shape: Vec<usize>,
    pub values: Vec<f32>,
}

fn host<const D: usize>(tensor: Tensor<D>) -> Result<Vec<f32>> {
    tensor
        .into_data()
        .try_into_vec_as::<f32>()
        .map_err(|e| Error::Export {
            path: Default::default(),
            reason: format!("reading a weight: {e:?}"),
        })
}

/// `[rows, cols]` → `[cols, rows]`.
fn transposed<const D: usize>(name: String, tensor: Tensor<D>) -> Result<NamedTensor> {
    let dims = tensor.dims();
    let (rows, cols) = (dims[0], dims[1]);
    let values = crate::runtime::lm::init::transpose(&host(tensor)?, rows, cols);
    Ok(NamedTensor {
        name,
        shape: vec![cols, rows],
        values,
    })
}

fn plain<const D: usize>(name: String, tensor: Tensor<D>) -> Result<NamedTensor> {
    let shape = tensor.dims().to_vec();
    Ok(NamedTensor {
        name,
        shape,
        values: host(tensor)?,
    })
}

/// Every weight under its Hugging Face name and layout, in the order of a Hugging Face
/// checkpoint ([`CausalLm::hf_parameters`]), LoRA adapters merged: what the model computes with.
pub(crate) fn hf_tensors(model: &CausalLm) -> Result<Vec<NamedTensor>> {
    model
        .hf_parameters()
        .into_iter()
        .map(|(name, param)| match param {
            HfParam::Matrix(p, true) => transposed(name, p.val()),
            HfParam::Matrix(p, false) => plain(name, p.val()),
            HfParam::Vector(p) => plain(name, p.val()),
        })
        .collect()
}

/// Gives a tied model's tensors an output layer of their own: `lm_head.weight`, a copy of the
/// token embedding (both `[vocab, hidden]` in Hugging Face's layout), last as transformers
/// writes it. Does nothing when there is no embedding or already an output layer.
pub(crate) fn untie(tensors: &mut Vec<NamedTensor>) {
    const EMBEDDING: &str = "model.embed_tokens.weight";
    if tensors.iter().any(|t| t.name == "lm_head.weight") {
        return;
    }
    if let Some(embedding) = tensors.iter().find(|t| t.name == EMBEDDING) {
        let head = NamedTensor {
            name: "lm_head.weight".into(),
            ..embedding.clone()
        };
        tensors.push(head);
    }
}

/// A model's LoRA adapters: their rank, `alpha` (scale × rank) and the projections they adapt.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Adapters {
    pub rank: usize,
    pub alpha: f64,
    /// `q_proj`, `k_proj`, … (PEFT's `target_modules`).
    pub targets: Vec<String>,
    /// `lora_A` (`[rank, in]`) and `lora_B` (`[out, rank]`) of every adapted projection, under
    /// PEFT's names (`base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight`).
    pub tensors: Vec<NamedTensor>,
}

/// The adapters of a LoRA model in PEFT's layout; `None` without adapters. Burn's adapter holds
/// `a: [in, rank]`, `b: [rank, out]` with `W' = W + scale·a·b` in `[in, out]` layout; PEFT's
/// `lora_A = aᵀ`, `lora_B = bᵀ` give `W'ᵀ = Wᵀ + scale·lora_B·lora_A`.
pub(crate) fn peft_adapters(model: &CausalLm) -> Result<Option<Adapters>> {
    let mut tensors = Vec::new();
    let mut targets: Vec<String> = Vec::new();
    let mut shape = None;
    for (name, linear) in model.named_projections() {
        let Some(adapter) = linear.weight.adapter() else {
            continue;
        };
        let rank = adapter.a.lazy_shape().dims::<2>()[1];
        shape = Some((rank, adapter.scale * rank as f64));
        let module = name.rsplit('.').next().unwrap_or_default().to_string();
        if !targets.contains(&module) {
            targets.push(module);
        }
        let peft = format!("base_model.model.{name}");
        tensors.push(transposed(
            format!("{peft}.lora_A.weight"),
            adapter.a.val(),
        )?);
        tensors.push(transposed(
            format!("{peft}.lora_B.weight"),
            adapter.b.val(),
        )?);
    }
    Ok(shape.map(|(rank, alpha)| Adapters {
        rank,
        alpha,
        targets,
        tensors,
    }))
}
