//! The statistics of a comparison, as pure functions: seed-level t intervals (the headline),
//! the minimum detectable effect of a design, exact McNemar tests of one seed's paired games,
//! game-level bootstrap intervals (for a single seed), the area under a learning curve, and the
//! paper's sample-efficiency figure.
//!
//! Why seed-level t intervals: the seeds are the independent replicates of a comparison (each
//! trains its own model), and a seed's mean over its held-out games is a noisy estimate of that
//! seed's true success. The spread of those per-seed means across seeds therefore holds both
//! sources of variation — run to run and game to game — and Student's t with `S − 1` degrees of
//! freedom accounts for estimating that spread from `S` seeds. A two-level percentile bootstrap
//! (seeds, then games) does neither: with 3–5 seeds its resampled spread is too small by about
//! `√((S − 1)/S)` and uses normal rather than t quantiles, and it undercovers (85–90 % at nominal
//! 95 % in the simulation of `tests`). Per-seed means of a few hundred binary games are close to
//! normal, which is what the t interval assumes; the coverage test checks it at 3, 5 and 10
//! seeds.

use distrs::StudentsT;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Bootstrap replicates per interval.
pub const BOOTSTRAP_REPLICATES: usize = 4000;

/// A point estimate with a 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The estimate from all the data.
    pub mean: f64,
    /// The 2.5th percentile of the bootstrap replicates.
    pub low: f64,
    /// The 97.5th percentile.
    pub high: f64,
}

/// Mean and sample standard deviation (0 for one value).
pub fn mean_std(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = if values.len() > 1 {
        values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var.sqrt())
}

/// The mean over seeds of the mean over each seed's episodes, with a two-level bootstrap
/// interval: seeds resampled with replacement, then each drawn seed's episodes. `seeds[s][e]` is
/// the value of episode `e` of seed `s` (for a paired difference, the arm's outcome minus the
/// baseline's on the same task). A seed without episodes is skipped; `None` without any.
pub fn hierarchical_bootstrap(seeds: &[Vec<f64>], seed: u64) -> Option<Estimate> {
    let seeds: Vec<&Vec<f64>> = seeds.iter().filter(|s| !s.is_empty()).collect();
    if seeds.is_empty() {
        return None;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let point = seeds.iter().map(|s| mean(s)).sum::<f64>() / seeds.len() as f64;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut replicates: Vec<f64> = (0..BOOTSTRAP_REPLICATES)
        .map(|_| {
            let mut total = 0.0;
            for _ in 0..seeds.len() {
                let episodes = seeds[rng.random_range(0..seeds.len())];
                let sum: f64 = (0..episodes.len())
                    .map(|_| episodes[rng.random_range(0..episodes.len())])
                    .sum();
                total += sum / episodes.len() as f64;
            }
            total / seeds.len() as f64
        })
        .collect();
    replicates.sort_by(f64::total_cmp);
    let at = |q: f64| replicates[((q * (replicates.len() - 1) as f64).round()) as usize];
    Some(Estimate {
        mean: point,
        low: at(0.025),
        high: at(0.975),
    })
}

/// Student's t quantile `p` with `df` degrees of freedom.
fn t_quantile(p: f64, df: usize) -> f64 {
    StudentsT::ppf(p, df as f64)
}

/// The mean over seeds of `per_seed` values with a 95 % Student-t interval over seeds (`S − 1`
/// degrees of freedom). `None` with fewer than two seeds (no spread to estimate).
pub fn seed_t_interval(per_seed: &[f64]) -> Option<Estimate> {
    if per_seed.len() < 2 {
        return None;
    }
    let (mean, sd) = mean_std(per_seed);
    let half = t_quantile(0.975, per_seed.len() - 1) * sd / (per_seed.len() as f64).sqrt();
    Some(Estimate {
        mean,
        low: mean - half,
        high: mean + half,
    })
}

/// The smallest true difference a paired design of `seeds` seeds detects with 80 % power at a
/// two-sided 5 % level, when per-seed differences spread with standard deviation `sd`:
/// `(t(0.975, S−1) + t(0.80, S−1)) · sd / √S` (the usual t approximation of the noncentral t).
/// `None` with fewer than two seeds.
pub fn minimum_detectable_effect(sd: f64, seeds: usize) -> Option<f64> {
    (seeds >= 2).then(|| {
        let df = seeds - 1;
        (t_quantile(0.975, df) + t_quantile(0.80, df)) * sd / (seeds as f64).sqrt()
    })
}

/// The fewest seeds (up to `max`) whose [`minimum_detectable_effect`] is at most `target` for
/// per-seed differences of standard deviation `sd`; `None` when `max` seeds are not enough.
pub fn seeds_for_effect(sd: f64, target: f64, max: usize) -> Option<usize> {
    (2..=max).find(|&s| minimum_detectable_effect(sd, s).is_some_and(|m| m <= target))
}

/// The exact two-sided McNemar test of one seed's paired games: `arm_only` games won by the arm
/// and lost by the baseline, `baseline_only` the reverse. Under no difference the discordant
/// games split as Binomial(b + c, ½); the p-value is twice the smaller tail, at most 1.
pub fn mcnemar_exact(arm_only: usize, baseline_only: usize) -> f64 {
    let n = arm_only + baseline_only;
    let k = arm_only.min(baseline_only);
    // P(X ≤ k) for X ~ Binomial(n, ½), summed in logs (n may be hundreds).
    let ln_half_n = n as f64 * 0.5f64.ln();
    let mut ln_choose = 0.0; // ln C(n, 0)
    let mut tail = 0.0;
    for i in 0..=k {
        if i > 0 {
            ln_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        tail += (ln_choose + ln_half_n).exp();
    }
    (2.0 * tail).min(1.0)
}

/// The normalised area under a learning curve: the mean of its values (a curve at 1 throughout
/// has area 1). `None` for an empty curve.
pub fn area_under_curve(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// A trailing moving average over `window` values (shorter at the start).
pub fn moving_average(values: &[f64], window: usize) -> Vec<f64> {
    let window = window.max(1);
    (0..values.len())
        .map(|i| {
            let from = (i + 1).saturating_sub(window);
            values[from..=i].iter().sum::<f64>() / (i + 1 - from) as f64
        })
        .collect()
}

/// The paper's sample-efficiency figure: the fraction of the baseline's iterations that an arm
/// needs to reach the baseline's final training success. Both curves are seed means, smoothed
/// over `window` iterations; the target is the baseline's last smoothed value. `None` when the
/// arm never reaches it (or a curve is empty).
pub fn iterations_to_reach(baseline: &[f64], arm: &[f64], window: usize) -> Option<f64> {
    let target = *moving_average(baseline, window).last()?;
    let first = moving_average(arm, window)
        .iter()
        .position(|&v| v >= target)?;
    Some((first + 1) as f64 / baseline.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_sample_standard_deviation() {
        assert_eq!(mean_std(&[0.2, 0.4]).0, 0.30000000000000004);
        assert!((mean_std(&[0.2, 0.4]).1 - 0.141_421_356).abs() < 1e-8);
        assert_eq!(mean_std(&[0.5]), (0.5, 0.0));
    }

    #[test]
    fn the_interval_covers_the_mean_and_shrinks_with_more_data() {
        // Two seeds of Bernoulli outcomes near 0.3 and 0.5.
        let few = vec![
            (0..20).map(|i| f64::from(i % 10 < 3)).collect::<Vec<_>>(),
            (0..20).map(|i| f64::from(i % 2 == 0)).collect(),
        ];
        let many = vec![
            (0..200).map(|i| f64::from(i % 10 < 3)).collect::<Vec<_>>(),
            (0..200).map(|i| f64::from(i % 2 == 0)).collect(),
            (0..200).map(|i| f64::from(i % 10 < 4)).collect(),
            (0..200).map(|i| f64::from(i % 10 < 4)).collect(),
        ];
        let a = hierarchical_bootstrap(&few, 0).unwrap();
        let b = hierarchical_bootstrap(&many, 0).unwrap();
        assert!((a.mean - 0.4).abs() < 1e-12);
        assert!(a.low < a.mean && a.mean < a.high, "{a:?}");
        assert!(b.low <= b.mean && b.mean <= b.high, "{b:?}");
        assert!(b.high - b.low < a.high - a.low, "{a:?} {b:?}");
        // Deterministic for a seed.
        assert_eq!(hierarchical_bootstrap(&few, 0), Some(a));
        assert_eq!(hierarchical_bootstrap(&[vec![]], 0), None);
    }

    #[test]
    fn constant_differences_have_a_zero_width_interval() {
        let d = hierarchical_bootstrap(&[vec![0.1; 5], vec![0.1; 3]], 1).unwrap();
        assert!((d.low - 0.1).abs() < 1e-12 && (d.high - 0.1).abs() < 1e-12);
    }

    #[test]
    fn the_t_interval_and_the_design_s_power_use_t_quantiles() {
        // Three seeds 0.1, 0.2, 0.3: sd 0.1, t(0.975, 2) = 4.303.
        let e = seed_t_interval(&[0.1, 0.2, 0.3]).unwrap();
        assert!((e.mean - 0.2).abs() < 1e-12);
        assert!(
            (e.high - e.mean - 4.302_652_7 * 0.1 / 3f64.sqrt()).abs() < 1e-6,
            "{e:?}"
        );
        assert_eq!(seed_t_interval(&[0.5]), None);
        // (t(0.975, 4) + t(0.8, 4)) / √5 = (2.776 + 0.941) / 2.236.
        let mde = minimum_detectable_effect(0.05, 5).unwrap();
        assert!(
            (mde - (2.776_445 + 0.940_965) * 0.05 / 5f64.sqrt()).abs() < 1e-5,
            "{mde}"
        );
        assert!(minimum_detectable_effect(0.05, 10).unwrap() < mde);
        assert_eq!(seeds_for_effect(0.05, mde, 50), Some(5));
        assert_eq!(seeds_for_effect(0.05, 0.001, 50), None);
    }

    #[test]
    fn mcnemar_is_the_exact_binomial_test_of_the_discordant_games() {
        // 0 against 6: 2 · ½⁶.
        assert!((mcnemar_exact(6, 0) - 2.0 / 64.0).abs() < 1e-12);
        assert_eq!(mcnemar_exact(3, 3), 1.0);
        assert_eq!(mcnemar_exact(0, 0), 1.0);
        // 10 against 2: 2 · (1 + 12 + 66) / 4096 = 0.03857.
        assert!((mcnemar_exact(2, 10) - 0.038_574_2).abs() < 1e-6);
        // Hundreds of discordant games stay finite.
        let p = mcnemar_exact(300, 240);
        assert!(p > 0.0 && p < 0.02, "{p}");
    }

    /// One simulated comparison: `seeds` seeds of `games` paired held-out games under a
    /// hierarchical success model, with true mean difference `delta`. Each seed has its own
    /// level (shared by both arms) and its own effect (`delta` + a seed deviation of sd `tau`);
    /// each game its own difficulty. Returns each seed's paired game differences.
    fn simulated(
        rng: &mut ChaCha8Rng,
        seeds: usize,
        games: usize,
        delta: f64,
        tau: f64,
    ) -> Vec<Vec<f64>> {
        let normal = |rng: &mut ChaCha8Rng| {
            // Box–Muller.
            let (u, v): (f64, f64) = (rng.random_range(f64::EPSILON..1.0), rng.random());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        };
        (0..seeds)
            .map(|_| {
                let level = 0.45 + 0.05 * normal(rng).clamp(-2.0, 2.0);
                // Symmetric clipping keeps the seed deviations' mean at 0.
                let effect = delta + tau * normal(rng).clamp(-3.0, 3.0);
                (0..games)
                    .map(|_| {
                        let base = (level + rng.random_range(-0.3..0.3)).clamp(0.0, 1.0);
                        let arm = (base + effect).clamp(0.0, 1.0);
                        let won = |rng: &mut ChaCha8Rng, p: f64| f64::from(rng.random::<f64>() < p);
                        won(rng, arm) - won(rng, base)
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn seed_level_intervals_cover_the_true_difference_at_the_seed_counts_used() {
        // The ALFWorld grid's scale: 200 games a seed, a paper-sized effect (4.6 points) and
        // run-to-run spread of the effect of 4 points. Levels and effects stay inside (0, 1)
        // (0.45 ± 0.1 ± 0.3 + 0.046 ± 0.12), so the true difference is exactly `delta`.
        let (delta, tau, games, replicates) = (0.046, 0.04, 200, 2000);
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for seeds in [3, 5, 10] {
            let (mut covered, mut games_only) = (0, 0);
            for _ in 0..replicates {
                let pairs = simulated(&mut rng, seeds, games, delta, tau);
                let per_seed: Vec<f64> = pairs.iter().map(|g| mean_std(g).0).collect();
                let e = seed_t_interval(&per_seed).unwrap();
                covered += usize::from(e.low <= delta && delta <= e.high);
                // The interval that ignores the seeds: all games pooled, normal quantiles.
                let all: Vec<f64> = pairs.concat();
                let (m, sd) = mean_std(&all);
                let half = 1.96 * sd / (all.len() as f64).sqrt();
                games_only += usize::from(m - half <= delta && delta <= m + half);
            }
            let coverage = covered as f64 / replicates as f64;
            let pooled = games_only as f64 / replicates as f64;
            println!("{seeds} seeds: t over seeds covers {coverage:.3}, pooled games {pooled:.3}");
            assert!(coverage >= 0.93, "{seeds} seeds: coverage {coverage}");
            // The check can fail: an interval that ignores run-to-run variation does.
            assert!(
                pooled < 0.90,
                "{seeds} seeds: pooled games covered {pooled}"
            );
        }
    }

    #[test]
    fn area_and_smoothing() {
        assert_eq!(area_under_curve(&[0.0, 0.5, 1.0]), Some(0.5));
        assert_eq!(area_under_curve(&[]), None);
        assert_eq!(
            moving_average(&[1.0, 3.0, 5.0, 7.0], 2),
            vec![1.0, 2.0, 4.0, 6.0]
        );
    }

    #[test]
    fn sample_efficiency_is_the_fraction_of_baseline_iterations() {
        let baseline = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];
        let faster = [0.0, 0.3, 0.6, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9];
        // Unsmoothed: the target 0.9 is reached at the 4th of 10 iterations.
        assert_eq!(iterations_to_reach(&baseline, &faster, 1), Some(0.4));
        assert_eq!(iterations_to_reach(&baseline, &baseline, 1), Some(1.0));
        assert_eq!(iterations_to_reach(&baseline, &[0.1; 10], 1), None);
    }
}
