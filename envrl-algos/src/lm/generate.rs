//! Batched generation with a KV cache over left-padded prompts.

use envrl::{Generation, SamplingParams};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::lm::qwen2::TokenBatch;
use crate::lm::{CausalLm, KvCache, sample_rows};

impl CausalLm {
    /// Samples a response for each prompt in one batch: the prompts are left-padded, fed once,
    /// then one token per row per step from the KV cache, until every row has produced a stop
    /// token or `max_new_tokens`.
    pub fn generate_batch(
        &self,
        prompts: &[Vec<u32>],
        stop_ids: &[u32],
        pad_id: u32,
        params: &SamplingParams,
        rng: &mut ChaCha8Rng,
    ) -> Vec<Generation> {
        let batch = prompts.len();
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
        let mut ids = Vec::with_capacity(batch * width);
        let mut positions = Vec::with_capacity(batch * width);
        let mut key_valid = Vec::with_capacity(batch);
        let mut next_pos = Vec::with_capacity(batch);
        for prompt in prompts {
            let pad = width - prompt.len();
            ids.extend(std::iter::repeat_n(pad_id, pad).chain(prompt.iter().copied()));
            positions.extend(std::iter::repeat_n(0, pad).chain(0..prompt.len()));
            key_valid.push((0..width).map(|j| j >= pad).collect::<Vec<bool>>());
            next_pos.push(prompt.len());
        }
        let mut cache = KvCache::new(self.num_layers());
        let prefill = TokenBatch {
            ids: &ids,
            batch,
            seq: width,
            positions: &positions,
            key_valid: &key_valid,
        };
        let hidden = self.forward_hidden(&prefill, Some(&mut cache));
        let mut last = self.logits(hidden.narrow(1, width - 1, 1));

        for _ in 0..params.max_new_tokens {
            let [rows, _, vocab] = last.dims();
            // One uniform number per row still generating, drawn in row order.
            let uniforms: Vec<f32> = out
                .iter()
                .map(|g| {
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
}
