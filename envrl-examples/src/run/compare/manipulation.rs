//! The manipulation check: before a comparison can say whether learning the environment's
//! dynamics helps, the arm that trains an objective must have learned the real targets clearly
//! better than the arm that trains the objective's shuffled-target control. Every arm scores the
//! real objectives (at weight 0 where it does not train them), so their cross-entropy on the
//! real targets is in every run's metrics.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use envrl::metric_names as names;
use envrl::{IterationMetrics, Schedule};

use super::stats::{mean_std, seed_t_interval};
use super::{Arm, FinishedRun};

/// Iterations at the end of each run whose real-target cross-entropy is averaged.
const LAST_ITERATIONS: usize = 3;

/// The check passes for an objective when the trained arm's real-target cross-entropy is at
/// most this fraction of the control's: the upper end of the 95% interval of their paired
/// ratio (geometric mean over seeds) below it.
pub const MAX_RATIO: f64 = 0.5;

/// What an arm does with an objective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Trains it on its own targets.
    Trains,
    /// Trains its shuffled-target control.
    Control,
}

/// The arm's role for objective `name`, if it trains the objective or its control.
fn role(arm: &Arm<'_>, name: &str) -> Option<Role> {
    let aux = &arm.runs[0].config.algorithm.aux;
    aux.iter()
        .filter(|a| a.name() == name && *a.schedule() != Schedule::None)
        .map(|a| match a.targets().is_own() {
            true => Role::Trains,
            false => Role::Control,
        })
        .next()
}

/// The real objectives any run scores (`loss/aux/<name>` of an objective, not of a control).
fn real_objectives(runs: &[FinishedRun]) -> BTreeSet<String> {
    runs.iter()
        .flat_map(|r| r.history.iter().flat_map(|m| m.values.keys()))
        .filter_map(|k| k.strip_prefix("loss/aux/"))
        .filter(|n| !n.contains("_shuffled"))
        .map(str::to_string)
        .collect()
}

/// A run's real-target cross-entropy of objective `name`: the mean over its last iterations
/// that scored it.
fn late_cross_entropy(run: &FinishedRun, name: &str) -> Option<f64> {
    let metric = names::aux_loss(name);
    let values: Vec<f64> = run
        .history
        .iter()
        .filter_map(|m: &IterationMetrics| m.get(&metric))
        .filter(|v| v.is_finite())
        .collect();
    let tail = &values[values.len().saturating_sub(LAST_ITERATIONS)..];
    (!tail.is_empty()).then(|| mean_std(tail).0)
}

/// One trained arm against one control arm on objective `name`, paired by seed.
struct Pair {
    differences: Vec<f64>,
    log_ratios: Vec<f64>,
}

impl Pair {
    fn new(trained: &Arm<'_>, control: &Arm<'_>, name: &str) -> Self {
        let mut pair = Self {
            differences: Vec::new(),
            log_ratios: Vec::new(),
        };
        for run in &trained.runs {
            let Some(twin) = control.runs.iter().find(|t| t.seed() == run.seed()) else {
                continue;
            };
            if let (Some(a), Some(b)) = (
                late_cross_entropy(run, name),
                late_cross_entropy(twin, name),
            ) && a > 0.0
                && b > 0.0
            {
                pair.differences.push(a - b);
                pair.log_ratios.push((a / b).ln());
            }
        }
        pair
    }

    /// The paired difference with its t interval, e.g. `-0.138 [-0.160, -0.116]`.
    fn difference(&self) -> String {
        match seed_t_interval(&self.differences) {
            Some(e) => format!("{:+.3} [{:+.3}, {:+.3}]", e.mean, e.low, e.high),
            None => format!(
                "{:+.3} (one seed: no interval)",
                mean_std(&self.differences).0
            ),
        }
    }

    /// The geometric-mean ratio with its t interval, and whether the check passes.
    fn ratio(&self) -> (String, bool) {
        match seed_t_interval(&self.log_ratios) {
            Some(e) => (
                format!(
                    "{:.2} [{:.2}, {:.2}]",
                    e.mean.exp(),
                    e.low.exp(),
                    e.high.exp()
                ),
                e.high.exp() < MAX_RATIO,
            ),
            None => (
                format!(
                    "{:.2} (one seed: no interval)",
                    mean_std(&self.log_ratios).0.exp()
                ),
                false,
            ),
        }
    }
}

/// The manipulation check's section: every arm's real-target cross-entropy per objective, each
/// trained arm against each control arm, and the verdict (empty when no run scores an
/// objective).
pub fn manipulation_check(runs: &[FinishedRun], arms: &[Arm<'_>]) -> String {
    let objectives = real_objectives(runs);
    if objectives.is_empty() {
        return String::new();
    }
    let mut levels = String::new();
    let mut checks = String::new();
    let (mut passed, mut checked) = (Vec::new(), Vec::new());
    for name in &objectives {
        for arm in arms {
            let values: Vec<f64> = arm
                .runs
                .iter()
                .filter_map(|r| late_cross_entropy(r, name))
                .collect();
            if values.is_empty() {
                continue;
            }
            let (mean, sd) = mean_std(&values);
            let role = match role(arm, name) {
                Some(Role::Trains) => "trains it",
                Some(Role::Control) => "trains its control",
                None => "measures it",
            };
            let _ = writeln!(
                levels,
                "| {name} | {} | {role} | {} | {mean:.3} ± {sd:.3} |",
                arm.label,
                values.len()
            );
        }
        let with = |r: Role| arms.iter().filter(move |a| role(a, name) == Some(r));
        for trained in with(Role::Trains) {
            for control in with(Role::Control) {
                let pair = Pair::new(trained, control, name);
                if pair.differences.is_empty() {
                    continue;
                }
                let (ratio, pass) = pair.ratio();
                let _ = writeln!(
                    checks,
                    "| {name} | {} | {} | {} | {} | {ratio} | {} |",
                    trained.label,
                    control.label,
                    pair.differences.len(),
                    pair.difference(),
                    if pass { "yes" } else { "no" }
                );
                checked.push(name.clone());
                if pass {
                    passed.push(name.clone());
                }
            }
        }
    }
    let mut out = format!(
        "Manipulation check: each objective's cross-entropy on the real targets (nats per \
         token; each run's mean over its last {LAST_ITERATIONS} iterations, then mean ± sd \
         over seeds), in every arm that scores it — trained, or measured at weight 0.\n\n\
         | objective | arm | the arm | seeds | real-target cross-entropy |\n\
         |---|---|---|---|---|\n{levels}"
    );
    if checks.is_empty() {
        out.push_str(
            "\nNo arm trains a shuffled-target control of these objectives: nothing to check \
             their learning against, so the comparison below cannot tell learning the dynamics \
             from training any extra loss.\n\n",
        );
        return out;
    }
    let _ = write!(
        out,
        "\nEach arm that trains an objective against each arm that trains its control, paired \
         by seed: the difference and the ratio (geometric mean) of their real-target \
         cross-entropies, with 95% Student-t intervals over the paired seeds. The objective was \
         learned beyond the control when the whole interval of the ratio lies below \
         {MAX_RATIO}: the trained arm predicts the real targets with at most half the control's \
         cross-entropy.\n\n\
         | objective | trained | control | paired seeds | trained − control (nats) [95% CI] | \
         trained / control [95% CI] | learned beyond the control? |\n\
         |---|---|---|---|---|---|---|\n{checks}\n"
    );
    let _ = writeln!(out, "{}\n", verdict(&passed, &checked));
    out
}

/// The verdict line over the objectives checked.
fn verdict(passed: &[String], checked: &[String]) -> String {
    let failed: BTreeSet<&String> = checked.iter().filter(|n| !passed.contains(n)).collect();
    let passed: BTreeSet<&String> = passed.iter().collect();
    let list = |names: &BTreeSet<&String>| {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if passed.is_empty() {
        return format!(
            "**Manipulation check: failed.** No objective ({}) was learned clearly better than \
             its shuffled-target control: the arms learned about the same of the dynamics, so \
             this design **cannot test** whether learning the dynamics helps. The held-out \
             success below compares arms that differ in an extra loss, not in what they learned.",
            list(&failed)
        );
    }
    let rest = match failed.is_empty() {
        true => String::new(),
        false => format!(" It failed for {}.", list(&failed)),
    };
    format!(
        "**Manipulation check: passed** for {}: the trained arm learned the real targets clearly \
         better than its control, so the held-out success below tests whether learning them \
         helps.{rest}",
        list(&passed)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_names_what_passed_and_what_failed() {
        let s = |v: &[&str]| v.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let failed = verdict(&[], &s(&["a", "b"]));
        assert!(
            failed.contains("failed.** No objective (`a`, `b`)"),
            "{failed}"
        );
        assert!(failed.contains("cannot test"));
        let some = verdict(&s(&["b"]), &s(&["a", "b"]));
        assert!(
            some.contains("passed** for `b`") && some.contains("failed for `a`"),
            "{some}"
        );
        let all = verdict(&s(&["a"]), &s(&["a"]));
        assert!(!all.contains("failed"), "{all}");
    }
}
