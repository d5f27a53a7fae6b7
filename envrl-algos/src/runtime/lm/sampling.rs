//! Token sampling with temperature, top-k and nucleus (top-p) filtering: on the device for a
//! whole batch ([`sample_rows`], what generation uses) and a host reference for one row
//! ([`sample_token`]). Both draw a token by inverting the cumulative distribution at a uniform
//! number from the caller's seeded generator, so the same seed gives the same tokens.

use burn::tensor::activation::log_softmax;
use burn::tensor::{Bool, Int, Tensor, TensorData};
use envrl::SamplingParams;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Draws one token per row of `logits` (`[rows, vocab]`) on their device, from the
/// temperature-scaled distribution restricted to the `top_k` most likely tokens and then to the
/// nucleus of mass `top_p` of those; `uniforms[r]` in [0, 1) picks row `r`'s token by inverse
/// CDF (ignored when greedy). Only the token ids and their log-probabilities leave the device.
///
/// Returns each row's token and its log-probability under the temperature-scaled distribution
/// (before filtering), the quantity the policy-gradient ratio uses (ENVRL.md §3.1). A
/// temperature of 0 is greedy; its log-probability is taken at temperature 1. The tokens are
/// those of [`sample_token`] with the same uniform numbers, up to float rounding at the edges
/// of the cumulative sums.
///
/// # Panics
/// Panics if `uniforms` does not hold one number per row.
pub fn sample_rows(
    logits: Tensor<2>,
    params: &SamplingParams,
    uniforms: &[f32],
) -> Vec<(u32, f32)> {
    let [rows, vocab] = logits.dims();
    assert_eq!(uniforms.len(), rows, "one uniform number per row");
    let device = logits.device();
    let greedy = params.temperature <= 0.0;
    let t = if greedy { 1.0 } else { params.temperature };
    let logp = log_softmax(logits / t, 1);
    let tokens: Tensor<2, Int> = if greedy {
        logp.clone().argmax(1)
    } else {
        let top_k = params.top_k > 0 && params.top_k < vocab;
        let top_p = params.top_p < 1.0;
        // Filtering works on the tokens sorted by probability (ties by id), as the host does.
        let (mut probs, order) = if top_k || top_p {
            let (sorted, order) = logp.clone().sort_descending_with_indices(1);
            (sorted.exp(), Some(order))
        } else {
            (logp.clone().exp(), None)
        };
        let mut kept: Option<Tensor<2, Bool>> = None;
        if top_k {
            let rank = Tensor::<1, Int>::arange(0..vocab as i64, &device)
                .reshape([1, vocab])
                .expand([rows, vocab]);
            let in_top_k = rank.lower_elem(params.top_k as i64);
            probs = probs * in_top_k.clone().float();
            kept = Some(in_top_k);
        }
        if top_p {
            // A token stays while the mass before it is below top_p of the (top-k) mass.
            let mass = probs.clone().sum_dim(1).expand([rows, vocab]);
            let before = probs.clone().cumsum(1) - probs.clone();
            let in_nucleus = before.lower(mass * params.top_p);
            let both = match kept {
                Some(k) => k.bool_and(in_nucleus),
                None => in_nucleus,
            };
            probs = probs * both.clone().float();
            kept = Some(both);
        }
        let cumulative = probs.clone().cumsum(1);
        let mass = probs.sum_dim(1);
        let u = Tensor::<2>::from_data(TensorData::new(uniforms.to_vec(), [rows, 1]), &device);
        let target = (u * mass).expand([rows, vocab]);
        let index = cumulative.lower(target).int().sum_dim(1);
        // Rounding can leave a sliver of mass past the last kept token: take that token.
        let last = match kept {
            Some(k) => k.int().sum_dim(1) - 1,
            None => Tensor::<2, Int>::full([rows, 1], vocab as i64 - 1, &device),
        };
        let index = index.min_pair(last);
        match order {
            Some(order) => order.gather(1, index),
            None => index,
        }
    };
    let logprobs = logp.gather(1, tokens.clone());
    let tokens: Vec<i64> = tokens
        .into_data()
        .convert::<i64>()
        .try_to_vec()
        .unwrap_or_default();
    let logprobs: Vec<f32> = logprobs
        .into_data()
        .convert::<f32>()
        .try_to_vec()
        .unwrap_or_default();
    tokens
        .into_iter()
        .zip(logprobs)
        .map(|(t, l)| (t as u32, l))
        .collect()
}

/// Draws one token from a row of logits on the host, as [`sample_rows`] does on the device:
/// temperature, then the `top_k` most likely tokens, then the nucleus of mass `top_p` of
/// those, one uniform number from `rng` (none when greedy).
///
/// Returns the token and its log-probability under the temperature-scaled distribution
/// (before filtering). A temperature of 0 is greedy; its log-probability is taken at
/// temperature 1.
pub fn sample_token(logits: &[f32], params: &SamplingParams, rng: &mut ChaCha8Rng) -> (u32, f32) {
    let t = if params.temperature > 0.0 {
        params.temperature
    } else {
        1.0
    };
    let scaled: Vec<f32> = logits.iter().map(|&l| l / t).collect();
    let max = scaled.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let log_z = max + scaled.iter().map(|&l| (l - max).exp()).sum::<f32>().ln();
    let logprob = |i: usize| scaled[i] - log_z;

    if params.temperature <= 0.0 {
        let best = argmax(&scaled);
        return (best as u32, logprob(best));
    }
    let mut order: Vec<usize> = (0..scaled.len()).collect();
    let mut keep = scaled.len();
    let top_k = params.top_k > 0 && params.top_k < scaled.len();
    if top_k || params.top_p < 1.0 {
        order.sort_by(|&a, &b| scaled[b].total_cmp(&scaled[a]).then(a.cmp(&b)));
    }
    if top_k {
        keep = params.top_k;
    }
    if params.top_p < 1.0 {
        let mass: f32 = order[..keep].iter().map(|&i| logprob(i).exp()).sum();
        let mut before = 0.0f32;
        for (k, &i) in order[..keep].iter().enumerate() {
            if before >= params.top_p * mass {
                keep = k;
                break;
            }
            before += logprob(i).exp();
        }
    }
    let kept = &order[..keep];
    let mass: f32 = kept.iter().map(|&i| logprob(i).exp()).sum();
    let target = rng.random::<f32>() * mass;
    let mut cumulative = 0.0f32;
    for &i in kept {
        cumulative += logprob(i).exp();
        if cumulative >= target {
            return (i as u32, logprob(i));
        }
    }
    let last = kept[kept.len() - 1];
    (last as u32, logprob(last))
}

fn argmax(values: &[f32]) -> usize {
    let mut best = 0;
    for (i, v) in values.iter().enumerate() {
        if *v > values[best] {
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::Device;
    use rand::SeedableRng;

    fn params(temperature: f32, top_p: f32, top_k: usize) -> SamplingParams {
        SamplingParams {
            temperature,
            top_p,
            top_k,
            max_new_tokens: 1,
        }
    }

    #[test]
    fn greedy_picks_the_largest_logit_with_its_logprob() {
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let (tok, lp) = sample_token(&[0.0, 2.0, 1.0], &params(0.0, 1.0, 0), &mut rng);
        assert_eq!(tok, 1);
        let z = (0f32.exp() + 2f32.exp() + 1f32.exp()).ln();
        assert!((lp - (2.0 - z)).abs() < 1e-6);
    }

    #[test]
    fn top_p_never_samples_outside_the_nucleus() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        // p ≈ [0.84, 0.11, 0.04, 0.01]: top-p 0.8 keeps only token 0.
        for _ in 0..200 {
            let (tok, _) = sample_token(&[4.0, 2.0, 1.0, -0.5], &params(1.0, 0.8, 0), &mut rng);
            assert_eq!(tok, 0);
        }
    }

    #[test]
    fn sampling_frequencies_follow_the_softmax() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let logits = [0.0f32, (3.0f32).ln()]; // p = [0.25, 0.75]
        let ones = (0..4000)
            .filter(|_| sample_token(&logits, &params(1.0, 1.0, 0), &mut rng).0 == 1)
            .count();
        let freq = ones as f64 / 4000.0;
        assert!((freq - 0.75).abs() < 0.03, "{freq}");
    }

    #[test]
    fn top_k_never_samples_outside_the_k_most_likely() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let logits = [0.0f32, 3.0, 1.0, 2.9, -1.0];
        for _ in 0..300 {
            let (tok, _) = sample_token(&logits, &params(2.0, 1.0, 2), &mut rng);
            assert!(tok == 1 || tok == 3, "{tok}");
        }
    }

    #[test]
    fn the_device_sampler_draws_the_host_samplers_tokens() {
        let (rows, vocab) = (8, 300);
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let device = Device::flex();
        for p in [
            params(1.0, 1.0, 0),
            params(0.7, 0.9, 0),
            params(1.3, 1.0, 20),
            params(1.0, 0.8, 50),
            params(0.0, 1.0, 0),
        ] {
            for _ in 0..10 {
                let logits: Vec<f32> = (0..rows * vocab)
                    .map(|_| rng.random::<f32>() * 8.0 - 4.0)
                    .collect();
                let seed = rng.random::<u64>();
                let mut host_rng = ChaCha8Rng::seed_from_u64(seed);
                let host: Vec<(u32, f32)> = logits
                    .chunks(vocab)
                    .map(|row| sample_token(row, &p, &mut host_rng))
                    .collect();
                let mut device_rng = ChaCha8Rng::seed_from_u64(seed);
                let uniforms: Vec<f32> = (0..rows)
                    .map(|_| {
                        if p.temperature > 0.0 {
                            device_rng.random()
                        } else {
                            0.0
                        }
                    })
                    .collect();
                let tensor =
                    Tensor::<2>::from_data(TensorData::new(logits, [rows, vocab]), &device);
                let ours = sample_rows(tensor, &p, &uniforms);
                for ((ht, hl), (dt, dl)) in host.iter().zip(&ours) {
                    assert_eq!(ht, dt, "{p:?}");
                    assert!((hl - dl).abs() < 1e-5, "{hl} vs {dl}");
                }
            }
        }
    }
}
