use burn::tensor::{Int, Tensor, TensorData};

/// Keys and values of past positions for every layer, and which cache positions of each row
/// are real tokens (left padding is not).
#[derive(Debug, Clone, Default)]
pub struct KvCache {
    /// Per layer: keys and values `[batch, n_kv_heads, kv_seq, head_dim]`.
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

    /// The cache of a batch whose row `i` is this cache's row `rows[i]` (rows repeated: the
    /// copies of a shared prompt).
    pub(crate) fn select_rows(&self, rows: &[usize]) -> Self {
        let index: Vec<i64> = rows.iter().map(|&r| r as i64).collect();
        let layers = self
            .layers
            .iter()
            .map(|layer| {
                layer.as_ref().map(|(k, v)| {
                    let index = Tensor::<1, Int>::from_data(
                        TensorData::new(index.clone(), [index.len()]),
                        &k.device(),
                    );
                    (
                        k.clone().select(0, index.clone()),
                        v.clone().select(0, index),
                    )
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
            .layers
            .into_iter()
            .map(|layer| {
                layer.map(|(k, v)| {
                    let zeros = |t: &Tensor<4>| {
                        let [b, h, _, d] = t.dims();
                        Tensor::<4>::zeros([b, h, pad, d], &t.device())
                    };
                    let (zk, zv) = (zeros(&k), zeros(&v));
                    (Tensor::cat(vec![zk, k], 2), Tensor::cat(vec![zv, v], 2))
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
                    caches.iter().map(|c| c.layers[i].clone()).collect();
                parts.map(|parts| {
                    let (ks, vs): (Vec<_>, Vec<_>) = parts.into_iter().unzip();
                    (Tensor::cat(ks, 0), Tensor::cat(vs, 0))
                })
            })
            .collect();
        let key_valid = caches.into_iter().flat_map(|c| c.key_valid).collect();
        Self { layers, key_valid }
    }

    /// Appends `k`, `v` to layer `layer` and returns the full keys and values.
    pub(crate) fn append(
        &mut self,
        layer: usize,
        k: Tensor<4>,
        v: Tensor<4>,
    ) -> (Tensor<4>, Tensor<4>) {
        let (k, v) = match self.layers[layer].take() {
            Some((pk, pv)) => (Tensor::cat(vec![pk, k], 2), Tensor::cat(vec![pv, v], 2)),
            None => (k, v),
        };
        self.layers[layer] = Some((k.clone(), v.clone()));
        (k, v)
    }
}
