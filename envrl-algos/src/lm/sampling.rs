use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Draws one token from a row of logits with temperature and nucleus (top-p) sampling.
///
/// Returns the token and its log-probability under the temperature-scaled distribution
/// (before top-p truncation), the quantity the policy-gradient ratio uses (ENVRL.md §3.1).
/// A temperature of 0 is greedy; its log-probability is taken at temperature 1.
pub fn sample_token(
    logits: &[f32],
    temperature: f32,
    top_p: f32,
    rng: &mut ChaCha8Rng,
) -> (u32, f32) {
    let t = if temperature > 0.0 { temperature } else { 1.0 };
    let scaled: Vec<f32> = logits.iter().map(|&l| l / t).collect();
    let max = scaled.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let log_z = max + scaled.iter().map(|&l| (l - max).exp()).sum::<f32>().ln();
    let logprob = |i: usize| scaled[i] - log_z;

    if temperature <= 0.0 {
        let best = argmax(&scaled);
        return (best as u32, logprob(best));
    }
    let mut order: Vec<usize> = (0..scaled.len()).collect();
    let mut keep = scaled.len();
    if top_p < 1.0 {
        order.sort_unstable_by(|&a, &b| scaled[b].total_cmp(&scaled[a]).then(a.cmp(&b)));
        let mut cumulative = 0.0f32;
        for (k, &i) in order.iter().enumerate() {
            cumulative += logprob(i).exp();
            if cumulative >= top_p {
                keep = k + 1;
                break;
            }
        }
    }
    let kept = &order[..keep];
    let mass: f32 = kept.iter().map(|&i| logprob(i).exp()).sum();
    let mut u = rng.random::<f32>() * mass;
    for &i in kept {
        u -= logprob(i).exp();
        if u <= 0.0 {
            return (i as u32, logprob(i));
        }
    }
    // Rounding left a sliver of mass: take the last kept token.
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
    use rand::SeedableRng;

    #[test]
    fn greedy_picks_the_largest_logit_with_its_logprob() {
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let (tok, lp) = sample_token(&[0.0, 2.0, 1.0], 0.0, 1.0, &mut rng);
        assert_eq!(tok, 1);
        let z = (0f32.exp() + 2f32.exp() + 1f32.exp()).ln();
        assert!((lp - (2.0 - z)).abs() < 1e-6);
    }

    #[test]
    fn top_p_never_samples_outside_the_nucleus() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        // p ≈ [0.84, 0.11, 0.04, 0.01]: top-p 0.8 keeps only token 0.
        for _ in 0..200 {
            let (tok, _) = sample_token(&[4.0, 2.0, 1.0, -0.5], 1.0, 0.8, &mut rng);
            assert_eq!(tok, 0);
        }
    }

    #[test]
    fn sampling_frequencies_follow_the_softmax() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let logits = [0.0f32, (3.0f32).ln()]; // p = [0.25, 0.75]
        let ones = (0..4000)
            .filter(|_| sample_token(&logits, 1.0, 1.0, &mut rng).0 == 1)
            .count();
        let freq = ones as f64 / 4000.0;
        assert!((freq - 0.75).abs() < 0.03, "{freq}");
    }
}
