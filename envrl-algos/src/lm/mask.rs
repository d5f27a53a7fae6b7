//! Attention masks for padded batches with a KV cache.

use burn::tensor::{Bool, Device, Tensor, TensorData};

/// A boolean mask `[batch, heads, seq, kv_len]` (true = hidden) for queries at cache
/// positions `past..past + seq` over keys `0..kv_len`: a key is hidden when it is padding or in
/// the future. A query always sees itself, so no row is fully masked (which would give NaN).
pub fn attention_mask(
    key_valid: &[Vec<bool>],
    past: usize,
    seq: usize,
    heads: usize,
    device: &Device,
) -> Tensor<4, Bool> {
    let batch = key_valid.len();
    let kv_len = past + seq;
    let mut data = Vec::with_capacity(batch * seq * kv_len);
    for valid in key_valid {
        for i in 0..seq {
            let q = past + i;
            for (j, &v) in valid.iter().enumerate().take(kv_len) {
                data.push(j != q && (j > q || !v));
            }
        }
    }
    Tensor::<3, Bool>::from_data(TensorData::new(data, [batch, seq, kv_len]), device)
        .unsqueeze_dim::<4>(1)
        .expand([batch, heads, seq, kv_len])
}
