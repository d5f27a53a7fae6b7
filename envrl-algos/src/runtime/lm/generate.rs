//! Batched generation with a KV cache over left-padded prompts, prefilled once per distinct
//! prompt in buckets of similar lengths.

use std::collections::HashMap;

use burn::tensor::{Int, Tensor, TensorData};
use envrl::{Generation, SamplingParams};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::runtime::lm::qwen2::TokenBatch;
use crate::runtime::lm::{CausalLm, KvCache, sample_rows};

/// The distinct prompts of a batch: a prompt that repeats an earlier one (a group's copies of a
/// task, before their histories differ) is prefilled once and its key/value cache copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SharedPrompts {
    /// The row of each distinct prompt's first occurrence, in order.
    pub distinct: Vec<usize>,
    /// For each row, the index into `distinct` of its prompt.
    pub source: Vec<usize>,
    /// The distinct prompts (indices into `distinct`) prefilled together, each bucket padded
    /// to its own longest prompt ([`length_buckets`]).
    pub buckets: Vec<Vec<usize>>,
}

/// Padded positions a prefill bucket may add, as a share of its real tokens, before a longer
/// prompt starts a bucket of its own.
const BUCKET_SLACK: f64 = 0.125;

/// The prompts of `lengths` grouped for prefill: sorted by length (ties in order), and a prompt
/// joins the bucket before it unless padding the bucket to it would add more than
/// [`BUCKET_SLACK`] of the bucket's real tokens. One padded batch of prompts of unequal lengths
/// computes every row at the longest length; buckets bound that waste, at the cost of one
/// forward pass per bucket.
pub(crate) fn length_buckets(lengths: &[usize]) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    order.sort_by_key(|&i| lengths[i]);
    let mut buckets: Vec<Vec<usize>> = Vec::new();
    let mut real = 0usize;
    for i in order {
        let len = lengths[i];
        match buckets.last_mut() {
            Some(bucket)
                if ((bucket.len() + 1) * len) as f64
                    <= (1.0 + BUCKET_SLACK) * (real + len) as f64 =>
            {
                bucket.push(i);
                real += len;
            }
            _ => {
                buckets.push(vec![i]);
                real = len;
            }
        }
    }
    buckets
}

impl SharedPrompts {
    pub(crate) fn of(prompts: &[Vec<u32>]) -> Self {
        let mut first: HashMap<&[u32], usize> = HashMap::new();
        let mut distinct = Vec::new();
        let source = prompts
            .iter()
            .enumerate()
            .map(|(row, prompt)| {
                *first.entry(prompt.as_slice()).or_insert_with(|| {
                    distinct.push(row);
                    distinct.len() - 1
                })
            })
            .collect();
        let lengths: Vec<usize> = distinct.iter().map(|&r| prompts[r].len()).collect();
        let buckets = length_buckets(&lengths);
        Self {
            distinct,
            source,
            buckets,
        }
    }

    /// The prompt tokens of the rows that reuse another row's prefill.
    pub(crate) fn tokens_saved(&self, prompts: &[Vec<u32>]) -> usize {
        let total: usize = prompts.iter().map(Vec::len).sum();
        let prefilled: usize = self.distinct.iter().map(|&r| prompts[r].len()).sum();
        total - prefilled
    }
}

impl CausalLm {
    /// Samples a response for each prompt in one batch: the distinct prompts are fed once, in
    /// buckets of similar lengths each left-padded to its longest prompt (a repeated prompt's
    /// key/value cache and first logits are copied to each of its rows; each row draws its own
    /// tokens), then one token per row per step from the KV cache, until every row has produced
    /// a stop token or `max_new_tokens`. Row `i` draws its uniform numbers from `rngs[i]`, so a
    /// row's tokens and log-probabilities are those of the row generated alone with its stream,
    /// the latter up to the last bits (the prefill's products run over other row counts).
    ///
    /// # Panics
    /// Panics if `rngs` and `prompts` differ in length.
    pub fn generate_batch(
        &self,
        prompts: &[Vec<u32>],
        stop_ids: &[u32],
        pad_id: u32,
        params: &SamplingParams,
        rngs: &mut [ChaCha8Rng],
    ) -> Vec<Generation> {
        let shared = SharedPrompts::of(prompts);
        self.generate_sharing(prompts, &shared, stop_ids, pad_id, params, rngs)
    }

    /// [`CausalLm::generate_batch`] with the prefills `shared` says.
    fn generate_sharing(
        &self,
        prompts: &[Vec<u32>],
        shared: &SharedPrompts,
        stop_ids: &[u32],
        pad_id: u32,
        params: &SamplingParams,
        rngs: &mut [ChaCha8Rng],
    ) -> Vec<Generation> {
        let batch = prompts.len();
        assert_eq!(rngs.len(), batch, "one random stream per prompt");
        let mut out: Vec<Generation> = (0..batch)
            .map(|_| Generation {
                tokens: Vec::new(),
                logprobs: Vec::new(),
                stopped: false,
            })
            .collect();
        if batch == 0 || params.max_new_tokens == 0 {
            return out;
        }
        let width = prompts.iter().map(Vec::len).max().unwrap_or(0).max(1);
        let mut next_pos: Vec<usize> = prompts.iter().map(Vec::len).collect();
        let (mut cache, mut last) = self.prefill(prompts, shared, width, pad_id);
        cache.reserve(params.max_new_tokens);

        for _ in 0..params.max_new_tokens {
            let [rows, _, vocab] = last.dims();
            // One uniform number per row still generating, from the row's own stream.
            let uniforms: Vec<f32> = out
                .iter()
                .zip(rngs.iter_mut())
                .map(|(g, rng)| {
                    if !g.stopped && params.temperature > 0.0 {
                        rng.random()
                    } else {
                        0.0
                    }
                })
                .collect();
            let drawn = sample_rows(last.reshape([rows, vocab]), params, &uniforms);
            let mut step_ids = Vec::with_capacity(batch);
            for (generation, &(token, logprob)) in out.iter_mut().zip(&drawn) {
                if generation.stopped {
                    step_ids.push(pad_id);
                    continue;
                }
                generation.tokens.push(token);
                generation.logprobs.push(logprob);
                generation.stopped = stop_ids.contains(&token);
                step_ids.push(token);
            }
            if out
                .iter()
                .all(|g| g.stopped || g.tokens.len() >= params.max_new_tokens)
            {
                break;
            }
            let step_positions: Vec<usize> = next_pos
                .iter_mut()
                .map(|p| {
                    *p += 1;
                    *p - 1
                })
                .collect();
            let mut valid = cache.key_valid.clone();
            for (row, v) in valid.iter_mut().enumerate() {
                v.push(!out[row].stopped);
            }
            let step = TokenBatch {
                ids: &step_ids,
                batch,
                seq: 1,
                positions: &step_positions,
                key_valid: &valid,
            };
            last = self.logits(self.forward_hidden(&step, Some(&mut cache)));
        }
        out
    }

    /// The key/value cache and last-position logits of every row of `prompts`, left-padded to
    /// `width`: each bucket of distinct prompts of `shared` is fed as one batch padded to its
    /// own longest prompt, its cache padded on the left to `width`, and each row takes its
    /// prompt's cache and logits. Padding is masked, so a row's values do not depend on its
    /// bucket (up to the products' blocking over other row counts).
    fn prefill(
        &self,
        prompts: &[Vec<u32>],
        shared: &SharedPrompts,
        width: usize,
        pad_id: u32,
    ) -> (KvCache, Tensor<3>) {
        let mut caches = Vec::with_capacity(shared.buckets.len());
        let mut logits = Vec::with_capacity(shared.buckets.len());
        for bucket in &shared.buckets {
            let rows: Vec<&[u32]> = bucket
                .iter()
                .map(|&d| prompts[shared.distinct[d]].as_slice())
                .collect();
            let bucket_width = rows.iter().map(|r| r.len()).max().unwrap_or(0).max(1);
            let mut ids = Vec::with_capacity(rows.len() * bucket_width);
            let mut positions = Vec::with_capacity(rows.len() * bucket_width);
            let mut key_valid = Vec::with_capacity(rows.len());
            for prompt in &rows {
                let pad = bucket_width - prompt.len();
                ids.extend(std::iter::repeat_n(pad_id, pad).chain(prompt.iter().copied()));
                positions.extend(std::iter::repeat_n(0, pad).chain(0..prompt.len()));
                key_valid.push((0..bucket_width).map(|j| j >= pad).collect::<Vec<bool>>());
            }
            let mut cache = KvCache::new(self.num_layers());
            let batch = TokenBatch {
                ids: &ids,
                batch: rows.len(),
                seq: bucket_width,
                positions: &positions,
                key_valid: &key_valid,
            };
            let hidden = self.forward_hidden(&batch, Some(&mut cache));
            logits.push(self.logits(hidden.narrow(1, bucket_width - 1, 1)));
            caches.push(cache.padded_left(width));
        }
        // The position of each distinct prompt in the buckets' concatenation.
        let mut placed = vec![0usize; shared.distinct.len()];
        for (position, &d) in shared.buckets.iter().flatten().enumerate() {
            placed[d] = position;
        }
        let source: Vec<usize> = shared.source.iter().map(|&d| placed[d]).collect();
        let cache = KvCache::concat(caches);
        let last = Tensor::cat(logits, 0);
        let identity = source.iter().enumerate().all(|(i, &s)| i == s);
        if identity && source.len() == cache.key_valid.len() {
            return (cache, last);
        }
        let index: Vec<i64> = source.iter().map(|&r| r as i64).collect();
        let index =
            Tensor::<1, Int>::from_data(TensorData::new(index, [source.len()]), &last.device());
        (cache.select_rows(&source), last.select(0, index))
    }
}

#[cfg(test)]
mod tests {
    use burn::tensor::Device;
    use envrl::row_streams;

    use super::*;
    use crate::runtime::lm::LmConfig;

    /// Every row prefilled in one batch padded to the longest prompt: no sharing, no buckets.
    fn unshared(n: usize) -> SharedPrompts {
        SharedPrompts {
            distinct: (0..n).collect(),
            source: (0..n).collect(),
            buckets: vec![(0..n).collect()],
        }
    }

    #[test]
    fn prompts_are_bucketed_by_length_with_bounded_padding() {
        assert_eq!(
            length_buckets(&[10, 100, 11, 12, 95, 50]),
            vec![vec![0, 2, 3], vec![5], vec![4, 1]]
        );
        // Equal lengths never pad: one bucket, in order.
        assert_eq!(length_buckets(&[7, 7, 7]), vec![vec![0, 1, 2]]);
        assert!(length_buckets(&[]).is_empty());
    }

    #[test]
    fn a_bucketed_prefill_gives_each_row_its_tokens_and_logprobs_generated_alone() {
        let model = LmConfig::tiny(50).init(&Device::flex(), 5).unwrap();
        let prompts: Vec<Vec<u32>> = [3, 40, 4, 38, 17, 3]
            .iter()
            .enumerate()
            .map(|(row, &len)| {
                (0..len)
                    .map(|i| ((5 * row + 3 * i) % 47 + 2) as u32)
                    .collect()
            })
            .collect();
        let shared = SharedPrompts::of(&prompts);
        assert!(shared.buckets.len() > 1, "{:?}", shared.buckets);
        for temperature in [0.0, 1.0] {
            let params = SamplingParams {
                temperature,
                max_new_tokens: 8,
                ..Default::default()
            };
            let rows = prompts.len() as u64;
            let batched =
                model.generate_batch(&prompts, &[1], 0, &params, &mut row_streams(0, 0..rows));
            for ((row, prompt), ours) in (0..).zip(&prompts).zip(&batched) {
                let mut own = row_streams(0, [row]);
                let alone =
                    model.generate_batch(std::slice::from_ref(prompt), &[1], 0, &params, &mut own);
                assert_eq!(ours.tokens, alone[0].tokens, "temperature {temperature}");
                for (x, y) in ours.logprobs.iter().zip(&alone[0].logprobs) {
                    assert!((x - y).abs() <= 1e-5, "{x} vs {y}");
                }
            }
        }
    }

    #[test]
    fn repeated_prompts_are_found_with_the_tokens_they_save() {
        let prompts = vec![vec![1, 2, 3], vec![4], vec![1, 2, 3], vec![1, 2], vec![4]];
        let shared = SharedPrompts::of(&prompts);
        assert_eq!(shared.distinct, vec![0, 1, 3]);
        assert_eq!(shared.source, vec![0, 1, 0, 2, 1]);
        assert_eq!(shared.tokens_saved(&prompts), 4);
        assert_eq!(
            SharedPrompts::of(&prompts[..2]).tokens_saved(&prompts[..2]),
            0
        );
    }

    #[test]
    fn a_shared_prefill_gives_the_tokens_and_logprobs_of_every_row_computed_alone() {
        let model = LmConfig::tiny(50).init(&Device::flex(), 4).unwrap();
        // Three tasks of different lengths, in groups of copies, interleaved.
        let prompts: Vec<Vec<u32>> = [0, 1, 0, 2, 1, 0, 2, 1]
            .iter()
            .map(|&task| {
                (0..5 + 3 * task)
                    .map(|i| (7 * task + i) as u32 % 50)
                    .collect()
            })
            .collect();
        let shared = SharedPrompts::of(&prompts);
        assert_eq!(shared.distinct.len(), 3);
        for temperature in [0.0, 1.0] {
            let params = SamplingParams {
                temperature,
                max_new_tokens: 10,
                ..Default::default()
            };
            let run = |sharing: &SharedPrompts| {
                let mut rngs = row_streams(9, 0..prompts.len() as u64);
                model.generate_sharing(&prompts, sharing, &[1], 0, &params, &mut rngs)
            };
            let (ours, alone) = (run(&shared), run(&unshared(prompts.len())));
            // The same tokens; the log-probabilities to the last bits, which the matrix
            // products' blocking over fewer prefill rows may change.
            for (a, b) in ours.iter().zip(&alone) {
                assert_eq!(a.tokens, b.tokens, "temperature {temperature}");
                assert_eq!(a.stopped, b.stopped);
                for (x, y) in a.logprobs.iter().zip(&b.logprobs) {
                    assert!(
                        (x - y).abs() <= 1e-5,
                        "temperature {temperature}: {x} vs {y}"
                    );
                }
            }
            if temperature > 0.0 {
                // The copies of a task drew different responses from the shared prefill.
                assert_ne!(ours[0].tokens, ours[2].tokens);
            }
        }
    }
}
