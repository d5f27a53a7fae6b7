//! `envrl compare`: runs of several methods and seeds side by side — the final held-out
//! evaluation as mean ± standard deviation over seeds, per method and per task type, and the
//! learning curves averaged over seeds.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use envrl::IterationMetrics;

use super::report::{Curve, EvalRow, write_plot};
use super::{RunConfig, read_metrics};

/// What `envrl train` leaves in a run directory besides checkpoints, as read back.
#[derive(Debug, Clone)]
pub struct FinishedRun {
    /// The run directory.
    pub dir: PathBuf,
    /// The config it ran with.
    pub config: RunConfig,
    /// The final evaluation table (last row: all tasks).
    pub eval: Vec<EvalRow>,
    /// Per-iteration metrics.
    pub history: Vec<IterationMetrics>,
}

impl FinishedRun {
    /// Reads `config.toml`, `eval.json` (`eval-<split>.json` with `split`, written by
    /// `envrl eval --split`) and `metrics.jsonl` of a run directory.
    ///
    /// # Errors
    /// When a file is missing or malformed (a run that has not finished has no `eval.json`).
    pub fn load(dir: &Path, split: Option<&str>) -> Result<Self> {
        let config = RunConfig::from_toml_file(&dir.join("config.toml"))?;
        let eval_path = super::eval_path(dir, split, ".json");
        let eval: Vec<EvalRow> =
            serde_json::from_str(&std::fs::read_to_string(&eval_path).with_context(|| {
                format!("reading {} (has the run finished?)", eval_path.display())
            })?)
            .with_context(|| format!("parsing {}", eval_path.display()))?;
        if eval.is_empty() {
            bail!("{} has no rows", eval_path.display());
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            history: read_metrics(dir)?,
            config,
            eval,
        })
    }

    /// The method: estimator and objectives, e.g. `grpo + state-prediction`.
    pub fn method(&self) -> String {
        self.config.algorithm.label()
    }

    /// Seconds spent in training iterations (rollouts and updates).
    pub fn train_seconds(&self) -> f64 {
        self.history
            .iter()
            .filter_map(|m| m.get("perf/wall_s"))
            .sum()
    }

    fn overall(&self) -> &EvalRow {
        &self.eval[self.eval.len() - 1]
    }
}

/// Mean and sample standard deviation.
fn mean_std(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = if values.len() > 1 {
        values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var.sqrt())
}

fn pct(values: &[f64]) -> String {
    let (m, s) = mean_std(values);
    format!("{:.1} ± {:.1}", 100.0 * m, 100.0 * s)
}

/// The runs grouped by method: fewer objectives first, then by name.
fn by_method(runs: &[FinishedRun]) -> Vec<(String, Vec<&FinishedRun>)> {
    let mut groups: Vec<(String, Vec<&FinishedRun>)> = Vec::new();
    for run in runs {
        let method = run.method();
        match groups.iter_mut().find(|(m, _)| *m == method) {
            Some((_, members)) => members.push(run),
            None => groups.push((method, vec![run])),
        }
    }
    groups.sort_by_key(|(method, _)| (method.matches(" + ").count(), method.clone()));
    groups
}

/// The comparison as Markdown: one table of the final held-out results per method, one of
/// held-out success per task type.
pub fn comparison_markdown(runs: &[FinishedRun]) -> String {
    let groups = by_method(runs);
    let scored = runs.iter().any(|r| r.overall().score.is_some());
    let mut out = String::new();
    out.push_str("| method | seeds | held-out success (%) |");
    if scored {
        out.push_str(" held-out score (%) |");
    }
    out.push_str(" train success, last 3 iterations (%) | env steps | train time per run (min) |\n|---|---|---|");
    if scored {
        out.push_str("---|");
    }
    out.push_str("---|---|---|\n");
    for (method, members) in &groups {
        let success: Vec<f64> = members.iter().map(|r| r.overall().success).collect();
        let late: Vec<f64> = members
            .iter()
            .map(|r| {
                let tail: Vec<f64> = r
                    .history
                    .iter()
                    .rev()
                    .take(3)
                    .filter_map(|m| m.get("episode/success"))
                    .collect();
                mean_std(&tail).0
            })
            .collect();
        let steps: Vec<f64> = members
            .iter()
            .map(|r| r.history.last().map_or(0.0, |m| m.env_steps as f64))
            .collect();
        let minutes: Vec<f64> = members.iter().map(|r| r.train_seconds() / 60.0).collect();
        let _ = write!(out, "| {method} | {} | {} |", members.len(), pct(&success));
        if scored {
            let scores: Vec<f64> = members
                .iter()
                .map(|r| r.overall().score.unwrap_or(f64::NAN))
                .collect();
            let _ = write!(out, " {} |", pct(&scores));
        }
        let _ = writeln!(
            out,
            " {} | {:.0} | {:.1} |",
            pct(&late),
            mean_std(&steps).0,
            mean_std(&minutes).0
        );
    }

    let labels: Vec<String> = runs[0].eval.iter().map(|r| r.label.clone()).collect();
    if labels.len() > 1 {
        out.push_str("\nHeld-out success (%) per task type, mean ± std over seeds:\n\n| method |");
        for label in &labels {
            let _ = write!(out, " {label} |");
        }
        out.push_str("\n|---|");
        out.push_str(&"---|".repeat(labels.len()));
        out.push('\n');
        for (method, members) in &groups {
            let _ = write!(out, "| {method} |");
            for label in &labels {
                let values: Vec<f64> = members
                    .iter()
                    .filter_map(|r| r.eval.iter().find(|e| &e.label == label))
                    .map(|e| e.success)
                    .collect();
                let _ = write!(out, " {} |", pct(&values));
            }
            out.push('\n');
        }
    }
    out
}

/// A metric averaged over a method's seeds, iteration by iteration (as far as every seed got),
/// against the mean environment steps.
fn mean_curve(members: &[&FinishedRun], metric: &str) -> Vec<(f64, f64)> {
    let per_run: Vec<BTreeMap<usize, (f64, f64)>> = members
        .iter()
        .map(|r| {
            r.history
                .iter()
                .filter_map(|m| {
                    m.get(metric)
                        .map(|v| (m.iteration, (m.env_steps as f64, v)))
                })
                .filter(|(_, (_, v))| v.is_finite())
                .collect()
        })
        .collect();
    let Some(first) = per_run.first() else {
        return Vec::new();
    };
    first
        .keys()
        .filter_map(|it| {
            let points: Vec<(f64, f64)> = per_run
                .iter()
                .map(|c| c.get(it).copied())
                .collect::<Option<_>>()?;
            let n = points.len() as f64;
            Some((
                points.iter().map(|p| p.0).sum::<f64>() / n,
                points.iter().map(|p| p.1).sum::<f64>() / n,
            ))
        })
        .collect()
}

/// Writes `comparison.md` and the seed-averaged curves (`compare-success`, `compare-eval`,
/// SVG and PNG) into `out`; returns the Markdown. The final held-out results come from each
/// run's `eval.json`, or `eval-<split>.json` with `split`.
///
/// # Errors
/// When a run directory cannot be read or a file cannot be written.
pub fn compare(dirs: &[PathBuf], out: &Path, split: Option<&str>) -> Result<String> {
    if dirs.is_empty() {
        bail!("no run directories given");
    }
    let runs: Vec<FinishedRun> = dirs
        .iter()
        .map(|d| FinishedRun::load(d, split))
        .collect::<Result<_>>()?;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let markdown = comparison_markdown(&runs);
    let groups = by_method(&runs);
    for (file, title, metric) in [
        (
            "compare-success",
            "Training success rate (mean over seeds)",
            "episode/success",
        ),
        (
            "compare-eval",
            "Held-out success rate (mean over seeds)",
            "eval/success",
        ),
    ] {
        let curves: Vec<Curve> = groups
            .iter()
            .map(|(method, members)| (method.clone(), mean_curve(members, metric)))
            .filter(|(_, c)| !c.is_empty())
            .collect();
        if !curves.is_empty() {
            write_plot(out, file, title, &curves)?;
        }
    }
    let path = out.join("comparison.md");
    std::fs::write(&path, &markdown).with_context(|| format!("writing {}", path.display()))?;
    Ok(markdown)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_run(root: &Path, aux: &str, seed: u64, success: f64) -> PathBuf {
        let dir = root.join(format!("{aux}-{seed}"));
        std::fs::create_dir_all(&dir).unwrap();
        let config = RunConfig::cpu_tiny("alfworld")
            .unwrap()
            .with_algorithm(Some("grpo"), Some(aux))
            .unwrap();
        std::fs::write(dir.join("config.toml"), config.to_toml().unwrap()).unwrap();
        let eval = vec![
            EvalRow {
                label: "pick".into(),
                episodes: 2,
                success: success * 2.0,
                score: None,
            },
            EvalRow {
                label: "all".into(),
                episodes: 4,
                success,
                score: None,
            },
        ];
        std::fs::write(dir.join("eval.json"), serde_json::to_string(&eval).unwrap()).unwrap();
        let lines: Vec<String> = (0..4)
            .map(|i| {
                format!(
                    r#"{{"iteration":{i},"env_steps":{},"episode/success":{},"perf/wall_s":30.0}}"#,
                    100 * (i + 1),
                    0.1 * i as f64
                )
            })
            .collect();
        std::fs::write(dir.join("metrics.jsonl"), lines.join("\n")).unwrap();
        dir
    }

    #[test]
    fn runs_are_grouped_by_method_with_mean_and_std_over_seeds() {
        let root = tempfile::tempdir().unwrap();
        let dirs = vec![
            fake_run(root.path(), "none", 0, 0.2),
            fake_run(root.path(), "none", 1, 0.4),
            fake_run(root.path(), "state-prediction", 0, 0.5),
        ];
        let markdown = compare(&dirs, &root.path().join("out"), None).unwrap();
        // grpo: mean 30 %, sample std 14.1 %; training success of the last 3 iterations 20 %.
        assert!(
            markdown.contains("| grpo | 2 | 30.0 ± 14.1 | 20.0 ± 0.0 | 400 | 2.0 |"),
            "{markdown}"
        );
        assert!(
            markdown.contains("| grpo + state-prediction | 1 | 50.0 ± 0.0 |"),
            "{markdown}"
        );
        assert!(
            markdown.contains("| grpo | 60.0 ± 28.3 | 30.0 ± 14.1 |"),
            "{markdown}"
        );
        assert!(root.path().join("out/comparison.md").exists());
        let missing = compare(&[root.path().join("nothing")], root.path(), None).unwrap_err();
        assert!(format!("{missing:#}").contains("nothing"), "{missing:#}");

        // Another split's evaluation (`envrl eval --split`) replaces the run's own.
        let other = vec![EvalRow {
            label: "all".into(),
            episodes: 5,
            success: 0.8,
            score: None,
        }];
        for dir in &dirs {
            std::fs::write(
                dir.join("eval-valid_seen.json"),
                serde_json::to_string(&other).unwrap(),
            )
            .unwrap();
        }
        let out = root.path().join("seen");
        let markdown = compare(&dirs, &out, Some("valid_seen")).unwrap();
        assert!(
            markdown.contains("| grpo | 2 | 80.0 ± 0.0 | 20.0 ± 0.0 | 400 | 2.0 |"),
            "{markdown}"
        );
        let missing = compare(&dirs, &out, Some("valid_unseen")).unwrap_err();
        assert!(
            format!("{missing:#}").contains("eval-valid_unseen.json"),
            "{missing:#}"
        );
    }
}
