//! The Markdown of a comparison.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use anyhow::Result;
use envrl::metric_names as names;

use super::manipulation::manipulation_check;
use super::stats::{
    Estimate, area_under_curve, hierarchical_bootstrap, iterations_to_reach, mcnemar_exact,
    mean_std, minimum_detectable_effect, seed_t_interval, seeds_for_effect,
};
use super::{Arm, FinishedRun, arms, episode_wins, paired_differences};

/// Iterations averaged for the smoothed curves of the sample-efficiency figure.
const SMOOTHING: usize = 3;
/// The bootstrap's seed (intervals are the same every time a table is rebuilt).
const BOOTSTRAP_SEED: u64 = 0;

fn pct(values: &[f64]) -> String {
    let (m, s) = mean_std(values);
    format!("{:.1} ± {:.1}", 100.0 * m, 100.0 * s)
}

fn interval(e: Option<Estimate>) -> String {
    match e {
        Some(e) => format!(
            "{:.1} [{:.1}, {:.1}]",
            100.0 * e.mean,
            100.0 * e.low,
            100.0 * e.high
        ),
        None => "–".into(),
    }
}

/// Each seed's mean over its games (seeds without games left out).
fn seed_means<'a>(per_seed_games: impl IntoIterator<Item = &'a Vec<f64>>) -> Vec<f64> {
    per_seed_games
        .into_iter()
        .filter(|g| !g.is_empty())
        .map(|g| mean_std(g).0)
        .collect()
}

/// The headline interval of per-seed values: Student's t over seeds; with one seed, the only
/// spread there is, its games' (bootstrap), marked as such.
fn seed_interval(per_seed_games: &[Vec<f64>]) -> String {
    match seed_t_interval(&seed_means(per_seed_games)) {
        Some(e) => interval(Some(e)),
        None => match hierarchical_bootstrap(per_seed_games, BOOTSTRAP_SEED) {
            Some(e) => format!("{} (one seed: games only)", interval(Some(e))),
            None => "–".into(),
        },
    }
}

/// Whether every objective of the arm is measured only (a placebo at weight 0).
fn trains_no_objective(arm: &Arm<'_>) -> bool {
    arm.runs[0]
        .config
        .algorithm
        .aux
        .iter()
        .all(|a| *a.schedule() == envrl::Schedule::None)
}

/// Each of `arm`'s runs paired with the baseline's run of the same seed: (seed, the arm's
/// outcome minus the baseline's on each shared held-out task).
fn paired_seeds(arm: &Arm<'_>, base: &Arm<'_>) -> Vec<(u64, Vec<f64>)> {
    arm.runs
        .iter()
        .filter_map(|r| {
            let twin = base.runs.iter().find(|t| t.seed() == r.seed())?;
            Some((r.seed(), paired_differences(r, twin)))
        })
        .collect()
}

/// The seed-mean of a metric, iteration by iteration, over the iterations every run has.
fn seed_mean_curve(runs: &[&FinishedRun], metric: &str) -> Vec<f64> {
    let curves: Vec<Vec<f64>> = runs.iter().map(|r| r.curve(metric)).collect();
    let len = curves.iter().map(Vec::len).min().unwrap_or(0);
    (0..len)
        .map(|i| curves.iter().map(|c| c[i]).sum::<f64>() / curves.len() as f64)
        .collect()
}

/// The comparison as Markdown: the arms' final held-out results with intervals and paired
/// differences to the baseline, per task type, and the gradient diagnostics.
///
/// # Errors
/// When two runs of one arm share a seed.
pub fn comparison_markdown(runs: &[FinishedRun], baseline: Option<&str>) -> Result<String> {
    let arms = arms(runs)?;
    let base = match baseline {
        Some(label) => arms.iter().find(|a| a.label == label),
        // The arm that trains no objective: plain, else one that only measures them.
        None => arms
            .iter()
            .find(|a| !a.label.contains(" + "))
            .or_else(|| arms.iter().find(|a| trains_no_objective(a))),
    };
    let scored = runs.iter().any(|r| r.overall().score.is_some());
    let mut out = manipulation_check(runs, &arms);
    out.push_str(
        "| arm | seeds | held-out success (%) [95% CI] | Δ vs baseline (points) [95% CI] | \
         MDE (points) |",
    );
    if scored {
        out.push_str(" held-out score (%) |");
    }
    out.push_str(
        " train success AUC (%) | iterations to the baseline's final train success (%) | \
         train success, last 3 iterations (%) | env steps | train time per run (min) |\n\
         |---|---|---|---|---|",
    );
    if scored {
        out.push_str("---|");
    }
    out.push_str("---|---|---|---|---|\n");
    let base_curve = base.map(|b| seed_mean_curve(&b.runs, names::EPISODE_SUCCESS));
    for arm in &arms {
        let wins: Vec<Vec<f64>> = arm.runs.iter().map(|r| episode_wins(r)).collect();
        let (delta, mde) = match base {
            Some(b) if b.label == arm.label => ("baseline".to_string(), "–".to_string()),
            Some(b) => {
                let pairs: Vec<Vec<f64>> =
                    paired_seeds(arm, b).into_iter().map(|(_, d)| d).collect();
                let per_seed = seed_means(&pairs);
                let mde = minimum_detectable_effect(mean_std(&per_seed).1, per_seed.len())
                    .map_or("–".into(), |m| format!("{:.1}", 100.0 * m));
                match pairs.len() {
                    0 => ("no shared seed".into(), mde),
                    n => (format!("{} ({n} paired seeds)", seed_interval(&pairs)), mde),
                }
            }
            None => ("–".into(), "–".into()),
        };
        let _ = write!(
            out,
            "| {} | {} | {} | {delta} | {mde} |",
            arm.label,
            arm.runs.len(),
            seed_interval(&wins)
        );
        if scored {
            let scores: Vec<f64> = arm
                .runs
                .iter()
                .map(|r| r.overall().score.unwrap_or(f64::NAN))
                .collect();
            let _ = write!(out, " {} |", pct(&scores));
        }
        let auc: Vec<f64> = arm
            .runs
            .iter()
            .filter_map(|r| area_under_curve(&r.curve(names::EPISODE_SUCCESS)))
            .collect();
        let reach = base_curve.as_ref().map(|b| {
            let curve = seed_mean_curve(&arm.runs, names::EPISODE_SUCCESS);
            iterations_to_reach(b, &curve, SMOOTHING)
        });
        let reach = match reach {
            Some(Some(f)) => format!("{:.0}", 100.0 * f),
            Some(None) => "not reached".into(),
            None => "–".into(),
        };
        let late: Vec<f64> = arm
            .runs
            .iter()
            .map(|r| {
                let curve = r.curve(names::EPISODE_SUCCESS);
                let tail = &curve[curve.len().saturating_sub(3)..];
                mean_std(tail).0
            })
            .collect();
        let steps: Vec<f64> = arm
            .runs
            .iter()
            .map(|r| r.history.last().map_or(0.0, |m| m.env_steps as f64))
            .collect();
        let minutes: Vec<f64> = arm.runs.iter().map(|r| r.train_seconds() / 60.0).collect();
        let _ = writeln!(
            out,
            " {} | {reach} | {} | {:.0} | {:.1} |",
            pct(&auc),
            pct(&late),
            mean_std(&steps).0,
            mean_std(&minutes).0
        );
    }
    out.push_str(&footnotes(runs, base));
    if let Some(b) = base {
        out.push_str(&power(&arms, b));
        out.push_str(&per_seed(&arms, b));
    }
    out.push_str(&per_task_type(runs, &arms));
    out.push_str(&gradient_diagnostics(&arms));
    out.push_str(&clip_effects(&arms));
    Ok(out)
}

/// The effects this grid's spread lets a design see: per arm, the standard deviation of the
/// per-seed Δ and the paired seeds that would detect 3, 5 and 10 points with 80 % power.
fn power(arms: &[Arm<'_>], base: &Arm<'_>) -> String {
    let mut rows = String::new();
    for arm in arms.iter().filter(|a| a.label != base.label) {
        let pairs = paired_seeds(arm, base);
        let per_seed = seed_means(pairs.iter().map(|(_, d)| d));
        if per_seed.len() < 2 {
            continue;
        }
        let sd = mean_std(&per_seed).1;
        let seeds = [0.03, 0.05, 0.10].map(|target| {
            seeds_for_effect(sd, target, 1000).map_or("> 1000".into(), |n| n.to_string())
        });
        let _ = writeln!(
            rows,
            "| {} | {:.1} | {} | {} | {} |",
            arm.label,
            100.0 * sd,
            seeds[0],
            seeds[1],
            seeds[2]
        );
    }
    if rows.is_empty() {
        return rows;
    }
    format!(
        "\nPower: the standard deviation of the per-seed Δ across this grid's paired seeds, and the \
         paired seeds a grid with that spread needs to detect a true Δ of 3, 5 or 10 points \
         with 80% power (two-sided 5% level).\n\n\
         | arm | sd of per-seed Δ (points) | seeds for 3 points | 5 points | 10 points |\n\
         |---|---|---|---|---|\n{rows}"
    )
}

/// Each paired seed against the baseline: the difference in points and the exact McNemar test
/// of its discordant held-out games.
fn per_seed(arms: &[Arm<'_>], base: &Arm<'_>) -> String {
    let mut rows = String::new();
    for arm in arms.iter().filter(|a| a.label != base.label) {
        for (seed, diffs) in paired_seeds(arm, base) {
            let arm_only = diffs.iter().filter(|&&d| d > 0.0).count();
            let base_only = diffs.iter().filter(|&&d| d < 0.0).count();
            let _ = writeln!(
                rows,
                "| {} | {seed} | {} | {:+.1} | {arm_only} / {base_only} | {:.3} |",
                arm.label,
                diffs.len(),
                100.0 * mean_std(&diffs).0,
                mcnemar_exact(arm_only, base_only)
            );
        }
    }
    if rows.is_empty() {
        return rows;
    }
    format!(
        "\nPer seed, against the baseline's run of the same seed on the same held-out tasks: the \
         difference, the games only the arm won / only the baseline won, and the exact McNemar \
         p-value of that split (a test within one seed: it says nothing about other seeds).\n\n\
         | arm | seed | paired games | Δ (points) | arm only / baseline only | McNemar p |\n\
         |---|---|---|---|---|---|\n{rows}"
    )
}

fn footnotes(runs: &[FinishedRun], base: Option<&Arm<'_>>) -> String {
    let mut out = String::from(
        "\nHeld-out success: mean over seeds of each seed's success, with a 95% Student-t \
         interval over seeds (each seed's success is its mean over its held-out games, so the \
         spread across seeds holds both run-to-run and game-to-game variation; with one seed \
         only the games' bootstrap interval, marked). Δ: the arm's outcome minus the \
         baseline's on the same held-out task of the same seed, averaged per seed, with the \
         same t interval over the paired seeds. MDE: the smallest true Δ this design (its \
         number of paired seeds and the spread of their Δ) detects with 80% power at a \
         two-sided 5% level. AUC: the mean training success over all iterations (± std \
         over seeds). Iterations to the baseline's final train success: the first iteration at \
         which the arm's seed-mean training success (smoothed over 3 iterations) reaches the \
         baseline's last smoothed value, as a fraction of the baseline's iterations.\n",
    );
    if let Some(b) = base {
        let _ = writeln!(out, "\nBaseline: `{}`.", b.label);
    }
    let seed_sets: std::collections::BTreeSet<Vec<u64>> = arms(runs)
        .unwrap_or_default()
        .iter()
        .map(|a| {
            let mut seeds: Vec<u64> = a.runs.iter().map(|r| r.seed()).collect();
            seeds.sort_unstable();
            seeds
        })
        .collect();
    if seed_sets.len() > 1 {
        out.push_str(
            "\nThe arms were run on different sets of seeds: each arm's held-out success is over its \
             own seeds, so compare arms by Δ, which pairs each run with the baseline's run of the \
             same seed.\n",
        );
    }
    let without: Vec<String> = runs
        .iter()
        .filter(|r| r.outcomes.is_none())
        .map(|r| {
            let name = r.dir.file_name().unwrap_or(r.dir.as_os_str());
            name.to_string_lossy().into_owned()
        })
        .collect();
    if !without.is_empty() {
        let _ = writeln!(
            out,
            "\nWithout eval-outcomes.json (intervals over seeds only): {}.",
            without.join(", ")
        );
    }
    let differing = differing_settings(runs);
    if !differing.is_empty() {
        let _ = writeln!(
            out,
            "\nSettings that differ between runs besides the algorithm and the seed: {}.",
            differing.join(", ")
        );
    }
    out
}

fn per_task_type(runs: &[FinishedRun], arms: &[Arm<'_>]) -> String {
    let mut out = String::new();
    let labels: Vec<String> = runs[0].eval.iter().map(|r| r.label.clone()).collect();
    if labels.len() <= 1 {
        return out;
    }
    out.push_str("\nHeld-out success (%) per task type, mean ± std over seeds:\n\n| arm |");
    for label in &labels {
        let _ = write!(out, " {label} |");
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(labels.len()));
    out.push('\n');
    for arm in arms {
        let _ = write!(out, "| {} |", arm.label);
        for label in &labels {
            let values: Vec<f64> = arm
                .runs
                .iter()
                .filter_map(|r| r.eval.iter().find(|e| &e.label == label))
                .map(|e| e.success)
                .collect();
            let _ = write!(out, " {} |", pct(&values));
        }
        out.push('\n');
    }
    out
}

/// A run's mean of `value(metrics)` over the iterations in the first or last third.
fn third_mean(
    run: &FinishedRun,
    late: bool,
    value: &dyn Fn(&envrl::IterationMetrics) -> Option<f64>,
) -> Option<f64> {
    let n = run.history.len();
    let values: Vec<f64> = run
        .history
        .iter()
        .enumerate()
        .filter(|(i, _)| if late { 3 * i >= 2 * n } else { 3 * i < n })
        .filter_map(|(_, m)| value(m))
        .filter(|v| v.is_finite())
        .collect();
    (!values.is_empty()).then(|| mean_std(&values).0)
}

/// An arm's per-seed means of `value` over the first (or last) third of the iterations, as
/// "mean ± std" over seeds; "–" when no run logged it.
fn third_cell(
    arm: &Arm<'_>,
    late: bool,
    value: &dyn Fn(&envrl::IterationMetrics) -> Option<f64>,
) -> String {
    let per_seed: Vec<f64> = arm
        .runs
        .iter()
        .filter_map(|r| third_mean(r, late, value))
        .collect();
    if per_seed.is_empty() {
        return "–".to_string();
    }
    let (m, s) = mean_std(&per_seed);
    format!("{m:.3} ± {s:.3}")
}

/// How often the gradient clip bound and how much it scaled the policy's own gradient, per arm
/// (`optim/clip_bound`, `optim/actor_grad_factor`), in the first and last third of the
/// iterations; empty when no run logged them.
fn clip_effects(arms: &[Arm<'_>]) -> String {
    let logged = |arm: &Arm<'_>| {
        arm.runs
            .iter()
            .any(|r| r.history.iter().any(|m| m.get(names::CLIP_BOUND).is_some()))
    };
    let rows: Vec<String> = arms
        .iter()
        .filter(|arm| logged(arm))
        .map(|arm| {
            let bound = |m: &envrl::IterationMetrics| m.get(names::CLIP_BOUND);
            let factor = |m: &envrl::IterationMetrics| m.get(names::ACTOR_GRAD_FACTOR);
            format!(
                "| {} | {} | {} | {} | {} |\n",
                arm.label,
                third_cell(arm, false, &bound),
                third_cell(arm, true, &bound),
                third_cell(arm, false, &factor),
                third_cell(arm, true, &factor)
            )
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\nThe gradient clip (`trainer.clip`, `trainer.max_grad_norm`): the share of optimizer \
         steps whose gradient the clip scaled down in any part, and the factor it multiplied the \
         policy's own gradient by (1: untouched), in the first and last third of the iterations \
         (mean ± std over seeds):\n\n\
         | arm | steps clipped early | late | policy gradient factor early | late |\n\
         |---|---|---|---|---|\n",
    );
    out.extend(rows);
    out
}

fn gradient_diagnostics(arms: &[Arm<'_>]) -> String {
    let mut out = String::new();
    let mut rows = Vec::new();
    for arm in arms {
        let objectives: BTreeSet<String> = arm
            .runs
            .iter()
            .flat_map(|r| r.history.iter().flat_map(|m| m.values.keys()))
            .filter_map(|k| k.strip_prefix("grad/aux_norm/"))
            .map(str::to_string)
            .collect();
        for objective in objectives {
            let norm = names::aux_grad_norm(&objective);
            let cos = names::aux_grad_cos(&objective);
            let ratio =
                |m: &envrl::IterationMetrics| Some(m.get(&norm)? / m.get(names::GRAD_ACTOR_NORM)?);
            let cosine = |m: &envrl::IterationMetrics| m.get(&cos);
            let cell = |value: &dyn Fn(&envrl::IterationMetrics) -> Option<f64>, late| {
                third_cell(arm, late, value)
            };
            rows.push(format!(
                "| {} | {objective} | {} | {} | {} | {} |",
                arm.label,
                cell(&ratio, false),
                cell(&ratio, true),
                cell(&cosine, false),
                cell(&cosine, true)
            ));
        }
    }
    if rows.is_empty() {
        return out;
    }
    out.push_str(
        "\nGradient diagnostics (`trainer.grad_diagnostics_every`): the objective's weighted \
         gradient norm relative to the actor's, and the cosine between them, in the first and \
         last third of the iterations (mean ± std over seeds):\n\n\
         | arm | objective | ‖λ∇aux‖/‖∇actor‖ early | late | cosine early | late |\n\
         |---|---|---|---|---|---|\n",
    );
    for row in rows {
        out.push_str(&row);
        out.push('\n');
    }
    out
}

/// Config fields (dotted paths) whose values differ between runs, besides those of the arm (the
/// algorithm and the clip), the seed and the warm start's source.
fn differing_settings(runs: &[FinishedRun]) -> Vec<String> {
    let flat: Vec<BTreeMap<String, String>> = runs
        .iter()
        .map(|r| super::super::run_dir::flatten(&r.config))
        .collect();
    let keys: BTreeSet<&String> = flat.iter().flat_map(|m| m.keys()).collect();
    keys.into_iter()
        .filter(|k| {
            let arm = k.starts_with("algorithm") || k.starts_with("trainer.clip");
            !(arm || *k == "trainer.seed" || *k == "warmup.from")
        })
        .filter(|k| {
            let values: BTreeSet<Option<&String>> = flat.iter().map(|m| m.get(*k)).collect();
            values.len() > 1
        })
        .map(|k| format!("`{k}`"))
        .collect()
}
