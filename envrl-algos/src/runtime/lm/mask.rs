//! Attention masks for padded batches with a KV cache, as additive biases.
//!
//! A bias (0 where a key is seen, `f32::MIN` where it is hidden, as Hugging Face does) rather
//! than Burn's boolean mask: every backend applies a bias the same way, whereas libtorch's
//! `scaled_dot_product_attention`, which burn-tch 0.22 hands the boolean mask to unchanged,
//! reads `true` as "attend" where Burn means "hide".

use burn::tensor::{Device, Tensor, TensorData};

/// An additive attention bias `[batch, heads, seq, kv_len]` (0 = seen, `f32::MIN` = hidden) for
/// queries at cache positions `past..past + seq` over keys `0..kv_len`: a key is hidden when it
/// is padding or in the future. A query always sees itself, so no row is fully hidden.
pub fn attention_bias(
    key_valid: &[Vec<bool>],
    past: usize,
    seq: usize,
    heads: usize,
    device: &Device,
) -> Tensor<4> {
    let batch = key_valid.len();
    let kv_len = past + seq;
    let mut data = Vec::with_capacity(batch * seq * kv_len);
    for valid in key_valid {
        for i in 0..seq {
            let q = past + i;
            for (j, &v) in valid.iter().enumerate().take(kv_len) {
                let hidden = j != q && (j > q || !v);
                data.push(if hidden { f32::MIN } else { 0.0 });
            }
        }
    }
    Tensor::<3>::from_data(TensorData::new(data, [batch, seq, kv_len]), device)
        .unsqueeze_dim::<4>(1)
        .expand([batch, heads, seq, kv_len])
}
