use burn::tensor::{Int, Tensor, TensorData};

/// Keys and values of past positions for every layer, and which cache positions of each row
/// are real tokens (left padding is not).
///
/// Each layer's keys and values live in buffers that may hold more positions than are filled
/// ([`KvCache::reserve`]): a decoding step then writes its position in place instead of
/// copying the whole cache into a new buffer, as concatenating would.
#[derive(Debug, Clone, Default)]
pub struct KvCache {
    /// Per layer: keys and values `[batch, n_kv_heads, capacity, head_dim]`, their first
    /// [`KvCache::len`] positions filled.
    pub(crate) layers: Vec<Option<(Tensor<4>, Tensor<4>)>>,
    /// Per row: whether each cache position holds a real token.
    pub(crate) key_valid: Vec<Vec<bool>>,
}

impl KvCache {
    /// An empty cache for `layers` decoder layers.
    pub fn new(layers: usize) -> Self {
        Self {
            layers: vec![None; layers],
            key_valid: Vec::new(),
        }
    }

    /// The number of cached positions.
    pub fn len(&self) -> usize {
        self.key_valid.first().map_or(0, Vec::len)
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Empties the cache.
    pub fn reset(&mut self) {
        self.layers.iter_mut().for_each(|l| *l = None);
        self.key_valid.clear();
    }

    /// Layer `layer`'s filled keys and values (views of its buffers).
    fn filled_layer(&self, layer: usize) -> Option<(Tensor<4>, Tensor<4>)> {
        let len = self.len();
        self.layers[layer]
            .as_ref()
            .map(|(k, v)| (k.clone().narrow(2, 0, len), v.clone().narrow(2, 0, len)))
    }

    /// Every layer's filled keys and values.
    fn filled(&self) -> impl Iterator<Item = Option<(Tensor<4>, Tensor<4>)>> + '_ {
        (0..self.layers.len()).map(|layer| self.filled_layer(layer))
    }

    /// Room for `extra` more positions in every layer's buffers, so that appending them
    /// writes in place (one copy of the filled positions now, none per step).
    pub fn reserve(&mut self, extra: usize) {
        let len = self.len();
        for (k, v) in self.layers.iter_mut().flatten() {
            if k.dims()[2] < len + extra {
                let room = |t: &Tensor<4>| with_room(t.clone().narrow(2, 0, len), extra);
                (*k, *v) = (room(k), room(v));
            }
        }
    }

    /// The cache of a batch whose row `i` is this cache's row `rows[i]` (rows repeated: the
    /// copies of a shared prompt).
    pub(crate) fn select_rows(&self, rows: &[usize]) -> Self {
        let index: Vec<i64> = rows.iter().map(|&r| r as i64).collect();
        let layers = self
            .filled()
            .map(|layer| {
                layer.map(|(k, v)| {
                    let index = Tensor::<1, Int>::from_data(
                        TensorData::new(index.clone(), [index.len()]),
                        &k.device(),
                    );
                    (k.select(0, index.clone()), v.select(0, index))
                })
            })
            .collect();
        Self {
            layers,
            key_valid: rows.iter().map(|&r| self.key_valid[r].clone()).collect(),
        }
    }

    /// This cache with `width − len` masked positions added on the left of every row (keys and
    /// values zero), so that it lines up with a batch left-padded to `width`.
    pub(crate) fn padded_left(self, width: usize) -> Self {
        let pad = width.saturating_sub(self.len());
        if pad == 0 {
            return self;
        }
        let layers = self
            .filled()
            .map(|layer| {
                layer.map(|(k, v)| {
                    let padded = |t: Tensor<4>| Tensor::cat(vec![zero_positions(&t, pad), t], 2);
                    (padded(k), padded(v))
                })
            })
            .collect();
        let key_valid = self
            .key_valid
            .into_iter()
            .map(|row| std::iter::repeat_n(false, pad).chain(row).collect())
            .collect();
        Self { layers, key_valid }
    }

    /// The rows of `caches` one after the other (caches of the same length and layers).
    pub(crate) fn concat(mut caches: Vec<KvCache>) -> Self {
        if caches.len() == 1 {
            return caches.pop().unwrap_or_default();
        }
        let layers = (0..caches.first().map_or(0, |c| c.layers.len()))
            .map(|i| {
                let parts: Option<Vec<(Tensor<4>, Tensor<4>)>> =
                    caches.iter().map(|c| c.filled_layer(i)).collect();
                parts.map(|parts| {
                    let (ks, vs): (Vec<_>, Vec<_>) = parts.into_iter().unzip();
                    (Tensor::cat(ks, 0), Tensor::cat(vs, 0))
                })
            })
            .collect();
        let key_valid = caches.into_iter().flat_map(|c| c.key_valid).collect();
        Self { layers, key_valid }
    }

    /// Appends `k`, `v` to layer `layer` after its [`KvCache::len`] filled positions (the key
    /// validity grows once every layer has appended) and returns the filled keys and values.
    /// Within the buffers' capacity the new positions are written in place; beyond it the
    /// buffers grow by half.
    pub(crate) fn append(
        &mut self,
        layer: usize,
        k: Tensor<4>,
        v: Tensor<4>,
    ) -> (Tensor<4>, Tensor<4>) {
        let past = self.len();
        let seq = k.dims()[2];
        let write = |buffer: Tensor<4>, new: Tensor<4>| {
            let buffer = if past + seq <= buffer.dims()[2] {
                buffer
            } else {
                with_room(buffer.narrow(2, 0, past), seq + (past + seq) / 2)
            };
            let [b, h, _, d] = new.dims();
            buffer.slice_assign([0..b, 0..h, past..past + seq, 0..d], new)
        };
        let (k, v) = match self.layers[layer].take() {
            Some((pk, pv)) => (write(pk, k), write(pv, v)),
            None => (k, v),
        };
        let filled = (
            k.clone().narrow(2, 0, past + seq),
            v.clone().narrow(2, 0, past + seq),
        );
        self.layers[layer] = Some((k, v));
        filled
    }
}

/// `filled` (`[batch, heads, len, head_dim]`) in a new buffer with room for `extra` more
/// positions (zeros).
fn with_room(filled: Tensor<4>, extra: usize) -> Tensor<4> {
    let zeros = zero_positions(&filled, extra);
    Tensor::cat(vec![filled, zeros], 2)
}

/// `positions` zero positions shaped like `like`'s (`[batch, heads, positions, head_dim]`).
fn zero_positions(like: &Tensor<4>, positions: usize) -> Tensor<4> {
    let [b, h, _, d] = like.dims();
    Tensor::<4>::zeros([b, h, positions, d], &like.device())
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Device, Tensor, TensorData};

    use super::*;

    /// `[batch 2, heads 1, seq, head_dim 3]` keys whose values say their position: row `r`,
    /// position `p`, component `c` holds `100·r + 10·p + c`.
    fn positions(from: usize, seq: usize, device: &Device) -> Tensor<4> {
        let data: Vec<f32> = (0..2)
            .flat_map(|r| {
                (from..from + seq)
                    .flat_map(move |p| (0..3).map(move |c| (100 * r + 10 * p + c) as f32))
            })
            .collect();
        Tensor::from_data(TensorData::new(data, [2, 1, seq, 3]), device)
    }

    /// Appends `seq` positions to every layer and marks them valid, as a forward pass does.
    fn step(cache: &mut KvCache, seq: usize, device: &Device) -> Vec<f32> {
        let from = cache.len();
        let (keys, _) = cache.append(
            0,
            positions(from, seq, device),
            positions(from, seq, device),
        );
        for valid in cache.key_valid.iter_mut() {
            valid.extend(std::iter::repeat_n(true, seq));
        }
        if cache.key_valid.is_empty() {
            cache.key_valid = vec![vec![true; seq]; 2];
        }
        keys.into_data().try_to_vec::<f32>().unwrap()
    }

    #[test]
    fn appended_positions_read_back_in_order_in_place_or_grown() {
        let device = Device::flex();
        for reserve in [0, 2, 16] {
            let mut cache = KvCache::new(1);
            step(&mut cache, 4, &device);
            cache.reserve(reserve);
            for _ in 0..6 {
                let keys = step(&mut cache, 1, &device);
                let len = cache.len();
                let expected: Vec<f32> = positions(0, len, &device)
                    .into_data()
                    .try_to_vec::<f32>()
                    .unwrap();
                assert_eq!(keys, expected, "reserve {reserve}, {len} positions");
            }
            // Rows selected, padded and joined carry the filled positions only.
            let picked = cache.select_rows(&[1, 1]).padded_left(12);
            let joined = KvCache::concat(vec![picked, cache.clone().padded_left(12)]);
            let (keys, _) = joined.filled_layer(0).unwrap();
            assert_eq!(keys.dims(), [4, 1, 12, 3]);
            let keys: Vec<f32> = keys.into_data().try_to_vec::<f32>().unwrap();
            let row = |r: usize| &keys[r * 36..(r + 1) * 36];
            assert_eq!(row(0), row(1));
            assert_eq!(row(0), row(3));
            assert_eq!(&row(0)[..6], &[0.0; 6], "two positions of left padding");
            assert_eq!(&row(2)[6..9], &[0.0, 1.0, 2.0]);
        }
    }
}
