//! `envrl compare`: the arms of an ablation side by side. Runs are grouped by their whole
//! algorithm (estimator, and each objective with its schedule); for each arm the final
//! held-out success with a 95% bootstrap interval over seeds × evaluation episodes, the paired
//! difference to a baseline arm (same seeds, same held-out tasks), the area under the
//! training-success curve and the paper's sample-efficiency figure; the per-task-type table;
//! the gradient diagnostics early and late; and the curves with a band over seeds.

mod manipulation;
mod stats;
mod tables;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use envrl::IterationMetrics;

use super::report::{Band, Curve, EpisodeOutcome, EvalRow, write_plot};
use super::{RunConfig, read_metrics};
use stats::mean_std;
pub use tables::comparison_markdown;

/// What `envrl train` leaves in a run directory besides checkpoints, as read back.
#[derive(Debug, Clone)]
pub struct FinishedRun {
    /// The run directory.
    pub dir: PathBuf,
    /// The config it ran with.
    pub config: RunConfig,
    /// The final evaluation table (last row: all tasks).
    pub eval: Vec<EvalRow>,
    /// Every episode of the final evaluation (`eval-outcomes.json`), when the run wrote it.
    pub outcomes: Option<Vec<EpisodeOutcome>>,
    /// Per-iteration metrics.
    pub history: Vec<IterationMetrics>,
}

impl FinishedRun {
    /// Reads `config.toml`, `eval.json` (`eval-<split>.json` with `split`, written by
    /// `envrl eval --split`), `eval-outcomes.json` when present and `metrics.jsonl` of a run
    /// directory.
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
        let outcomes_path = super::eval_path(dir, split, "-outcomes.json");
        let outcomes = match std::fs::read_to_string(&outcomes_path) {
            Ok(text) => Some(
                serde_json::from_str(&text)
                    .with_context(|| format!("parsing {}", outcomes_path.display()))?,
            ),
            Err(_) => None,
        };
        let history = read_metrics(dir)?;
        if history.is_empty() {
            bail!(
                "{} has no iterations (has the run trained?)",
                dir.join("metrics.jsonl").display()
            );
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            history,
            config,
            eval,
            outcomes,
        })
    }

    /// The arm: the whole algorithm, e.g. `grpo + state_prediction(cosine 0.2)`, and how its
    /// gradient is clipped when an objective trains and the clip is not the global one
    /// (`…, clip per_loss`; without a trained objective every clip is the global one).
    pub fn method(&self) -> String {
        let algorithm = &self.config.algorithm;
        let label = algorithm.label();
        match self.config.trainer.clip {
            clip if !clip.is_global() && algorithm.trains_an_objective() => {
                format!("{label}, clip {}", clip.label())
            }
            _ => label,
        }
    }

    /// The run's seed.
    pub fn seed(&self) -> u64 {
        self.config.trainer.seed
    }

    /// Seconds spent in training iterations (rollouts and updates).
    pub fn train_seconds(&self) -> f64 {
        self.history
            .iter()
            .filter_map(|m| m.get(envrl::metric_names::WALL_S))
            .sum()
    }

    /// The final held-out success over all tasks.
    pub fn success(&self) -> f64 {
        self.overall().success
    }

    fn overall(&self) -> &EvalRow {
        &self.eval[self.eval.len() - 1]
    }

    /// `metric` by iteration, with the environment steps at that iteration (non-finite values
    /// skipped).
    fn points(&self, metric: &str) -> BTreeMap<usize, (f64, f64)> {
        self.history
            .iter()
            .filter_map(|m| {
                m.get(metric)
                    .map(|v| (m.iteration, (m.env_steps as f64, v)))
            })
            .filter(|(_, (_, v))| v.is_finite())
            .collect()
    }

    /// Held-out success by iteration: the evaluations made during training and, after the last
    /// iteration at the run's final environment steps, the final one (`eval.json`).
    fn held_out_points(&self) -> BTreeMap<usize, (f64, f64)> {
        let mut points = self.points(envrl::metric_names::EVAL_SUCCESS);
        if let Some(last) = self.history.last() {
            points.insert(last.iteration + 1, (last.env_steps as f64, self.success()));
        }
        points
    }

    /// A metric iteration by iteration (missing iterations skipped).
    fn curve(&self, metric: &str) -> Vec<f64> {
        self.history
            .iter()
            .filter_map(|m| m.get(metric))
            .filter(|v| v.is_finite())
            .collect()
    }
}

/// The runs of one arm.
pub struct Arm<'a> {
    /// The arm's label ([`FinishedRun::method`]).
    pub label: String,
    /// Its runs, one per seed.
    pub runs: Vec<&'a FinishedRun>,
}

/// The runs grouped by arm (fewer objectives first, then by label), each arm's runs by seed.
///
/// # Errors
/// When two runs of one arm share a seed (the same run given twice, or a repeated run).
pub fn arms(runs: &[FinishedRun]) -> Result<Vec<Arm<'_>>> {
    let mut groups: Vec<Arm<'_>> = Vec::new();
    for run in runs {
        let label = run.method();
        match groups.iter_mut().find(|a| a.label == label) {
            Some(arm) => {
                if let Some(twin) = arm.runs.iter().find(|r| r.seed() == run.seed()) {
                    bail!(
                        "{} and {} are both `{label}` with seed {}: give each seed once",
                        twin.dir.display(),
                        run.dir.display(),
                        run.seed()
                    );
                }
                arm.runs.push(run);
            }
            None => groups.push(Arm {
                label,
                runs: vec![run],
            }),
        }
    }
    groups.sort_by_key(|a| (a.label.matches(" + ").count(), a.label.clone()));
    // Seed order, so that the tables (and their bootstrap draws) do not depend on the order the
    // directories were given in.
    for arm in &mut groups {
        arm.runs.sort_by_key(|r| r.seed());
    }
    Ok(groups)
}

/// Each episode's win (1) or loss (0) of a run, or its overall success when it has no
/// outcomes file.
fn episode_wins(run: &FinishedRun) -> Vec<f64> {
    match &run.outcomes {
        Some(outcomes) => outcomes.iter().map(|o| f64::from(o.won)).collect(),
        None => vec![run.success()],
    }
}

/// The arm's outcome minus the baseline's, episode by episode on the same tasks (each task's
/// first occurrences paired in order), or the difference of overall successes when a run has
/// no outcomes file.
fn paired_differences(arm: &FinishedRun, baseline: &FinishedRun) -> Vec<f64> {
    let (Some(a), Some(b)) = (&arm.outcomes, &baseline.outcomes) else {
        return vec![arm.success() - baseline.success()];
    };
    let mut by_task: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for o in b {
        by_task.entry(o.task).or_default().push(f64::from(o.won));
    }
    let mut used: BTreeMap<u64, usize> = BTreeMap::new();
    a.iter()
        .filter_map(|o| {
            let k = used.entry(o.task).or_default();
            let base = by_task.get(&o.task)?.get(*k)?;
            *k += 1;
            Some(f64::from(o.won) - base)
        })
        .collect()
}

/// Settings whose difference makes runs incomparable as seeds and pairs: the model, the
/// environment and its held-out set, and the samplers (dotted config paths or their prefixes).
const POOLING_FIELDS: [&str; 9] = [
    "model",
    "tiny.",
    "lora.",
    "dtype",
    "env.",
    "tasks.eval",
    "trainer.eval_episodes",
    "trainer.sampling.",
    "trainer.eval_sampling.",
];

/// Refuses runs that differ in a [`POOLING_FIELDS`] setting, naming the field, two runs and
/// their values.
fn refuse_mixed_runs(runs: &[FinishedRun]) -> Result<()> {
    let flat: Vec<BTreeMap<String, String>> = runs
        .iter()
        .map(|r| super::run_dir::flatten(&r.config))
        .collect();
    let keys: std::collections::BTreeSet<&String> = flat.iter().flat_map(|m| m.keys()).collect();
    for key in keys {
        let pooled = POOLING_FIELDS
            .iter()
            .any(|f| key == f.trim_end_matches('.') || (f.ends_with('.') && key.starts_with(f)));
        if !pooled {
            continue;
        }
        let value = |i: usize| flat[i].get(key).map_or("(unset)", String::as_str);
        if let Some(other) = (1..runs.len()).find(|&i| value(i) != value(0)) {
            bail!(
                "{} and {} differ in `{key}` ({} and {}): runs of another model, held-out set or \
                 sampler are neither seeds of one arm nor pairs of a comparison; compare them \
                 separately",
                runs[0].dir.display(),
                runs[other].dir.display(),
                value(0),
                value(other)
            );
        }
    }
    Ok(())
}

/// A run's curve: iteration → (environment steps, value).
type RunPoints<'a> = dyn Fn(&FinishedRun) -> BTreeMap<usize, (f64, f64)> + 'a;

/// A per-run curve averaged over an arm's seeds, iteration by iteration (as far as every seed
/// got), against the mean environment steps, with a band of ± one standard error over seeds.
fn mean_curve(
    runs: &[&FinishedRun],
    points: impl Fn(&FinishedRun) -> BTreeMap<usize, (f64, f64)>,
) -> (Vec<(f64, f64)>, Band) {
    let per_run: Vec<BTreeMap<usize, (f64, f64)>> = runs.iter().map(|r| points(r)).collect();
    let Some(first) = per_run.first() else {
        return (Vec::new(), Vec::new());
    };
    let points: Vec<(f64, f64, f64)> = first
        .keys()
        .filter_map(|it| {
            let points: Vec<(f64, f64)> = per_run
                .iter()
                .map(|c| c.get(it).copied())
                .collect::<Option<_>>()?;
            let steps: Vec<f64> = points.iter().map(|p| p.0).collect();
            let values: Vec<f64> = points.iter().map(|p| p.1).collect();
            let (mean, std) = mean_std(&values);
            let se = std / (values.len() as f64).sqrt();
            Some((mean_std(&steps).0, mean, se))
        })
        .collect();
    let curve = points.iter().map(|&(x, m, _)| (x, m)).collect();
    let band = points
        .iter()
        .map(|&(x, m, se)| (x, m - se, m + se))
        .collect();
    (curve, band)
}

/// Writes the comparison as `file_name` (`comparison.md` for the runs' own) and the curves with
/// their bands (`compare-success`, `compare-eval`, `compare-aux-loss`, SVG and PNG) into `out`;
/// returns the Markdown. The final held-out results come from each run's `eval.json` and
/// `eval-outcomes.json`, or `eval-<split>.json` with `split`. Paired differences are taken
/// against the arm labelled `baseline`, by default the one that trains no objective.
///
/// # Errors
/// When a run directory cannot be read, the baseline is not among the arms, or a file cannot be
/// written.
pub fn compare(
    dirs: &[PathBuf],
    out: &Path,
    split: Option<&str>,
    baseline: Option<&str>,
    file_name: &str,
) -> Result<String> {
    if dirs.is_empty() {
        bail!("no run directories given");
    }
    if out.join("config.toml").exists() || dirs.iter().any(|d| d == out) {
        bail!(
            "--output {}: that is a run directory; the comparison's files would mix with the \
             run's (choose another folder)",
            out.display()
        );
    }
    let runs: Vec<FinishedRun> = dirs
        .iter()
        .map(|d| FinishedRun::load(d, split))
        .collect::<Result<_>>()?;
    if let Some(other) = runs
        .iter()
        .find(|r| r.config.env.name() != runs[0].config.env.name())
    {
        bail!(
            "{} is a {} run and {} a {} run: compare runs of one environment at a time",
            runs[0].dir.display(),
            runs[0].config.env,
            other.dir.display(),
            other.config.env
        );
    }
    refuse_mixed_runs(&runs)?;
    let arms = arms(&runs)?;
    if let Some(label) = baseline
        && !arms.iter().any(|a| a.label == label)
    {
        let labels: Vec<&str> = arms.iter().map(|a| a.label.as_str()).collect();
        bail!(
            "no arm `{label}` among the runs; the arms are: {}",
            labels.join("; ")
        );
    }
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let markdown = comparison_markdown(&runs, baseline)?;
    // The final evaluation joins the held-out curve unless it is another split's.
    let held_out = |r: &FinishedRun| match split {
        None => r.held_out_points(),
        Some(_) => r.points(envrl::metric_names::EVAL_SUCCESS),
    };
    let training = |r: &FinishedRun| r.points(envrl::metric_names::EPISODE_SUCCESS);
    let plots: [(&str, &str, &RunPoints); 2] = [
        (
            "compare-success",
            "Training success rate (mean over seeds, band ± 1 s.e.)",
            &training,
        ),
        (
            "compare-eval",
            "Held-out success rate (mean over seeds, band ± 1 s.e.)",
            &held_out,
        ),
    ];
    for (file, title, points) in plots {
        let (curves, bands): (Vec<Curve>, Vec<Band>) = arms
            .iter()
            .map(|arm| {
                let (curve, band) = mean_curve(&arm.runs, points);
                ((arm.label.clone(), curve), band)
            })
            .filter(|((_, c), _)| !c.is_empty())
            .unzip();
        if !curves.is_empty() {
            write_plot(out, file, title, &curves, &bands)?;
        }
    }
    let aux_losses: Vec<String> = runs
        .iter()
        .flat_map(|r| r.history.iter().flat_map(|m| m.values.keys()))
        .filter(|k| k.starts_with("loss/aux/"))
        .cloned()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let (curves, bands): (Vec<Curve>, Vec<Band>) = arms
        .iter()
        .flat_map(|arm| aux_losses.iter().map(move |metric| (arm, metric)))
        .map(|(arm, metric)| {
            let (curve, band) = mean_curve(&arm.runs, |r| r.points(metric));
            let name = metric.trim_start_matches("loss/aux/");
            ((format!("{name}: {}", arm.label), curve), band)
        })
        .filter(|((_, c), _)| !c.is_empty())
        .unzip();
    if !curves.is_empty() {
        let title = "Objectives' losses (placebos measured, not trained)";
        write_plot(out, "compare-aux-loss", title, &curves, &bands)?;
    }
    let path = out.join(file_name);
    std::fs::write(&path, &markdown).with_context(|| format!("writing {}", path.display()))?;
    Ok(markdown)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A finished run of `aux` at `seed` whose held-out episodes are `wins` (tasks 0, 1, …).
    fn fake_run(root: &Path, aux: &str, seed: u64, wins: &[bool]) -> PathBuf {
        let dir = root.join(format!("{aux}-{seed}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut config = RunConfig::cpu_tiny(crate::run::EnvName::Alfworld)
            .unwrap()
            .with_algorithm(Some("grpo"), Some(aux))
            .unwrap();
        config.trainer.seed = seed;
        std::fs::write(dir.join("config.toml"), config.to_toml().unwrap()).unwrap();
        let success = wins.iter().filter(|&&w| w).count() as f64 / wins.len() as f64;
        let eval = vec![
            EvalRow {
                label: "pick".into(),
                episodes: wins.len(),
                success,
                score: None,
            },
            EvalRow {
                label: "look".into(),
                episodes: 0,
                success: 0.0,
                score: None,
            },
            EvalRow {
                label: "all".into(),
                episodes: wins.len(),
                success,
                score: None,
            },
        ];
        std::fs::write(dir.join("eval.json"), serde_json::to_string(&eval).unwrap()).unwrap();
        let outcomes: Vec<EpisodeOutcome> = wins
            .iter()
            .enumerate()
            .map(|(task, &won)| EpisodeOutcome {
                task: task as u64,
                won,
                episode_return: if won { 10.0 } else { 0.0 },
                score: None,
            })
            .collect();
        let outcomes = serde_json::to_string(&outcomes).unwrap();
        std::fs::write(dir.join("eval-outcomes.json"), outcomes).unwrap();
        let lines: Vec<String> = (0..4)
            .map(|i| {
                format!(
                    r#"{{"iteration":{i},"env_steps":{},"episode/success":{},"perf/wall_s":30.0,"grad/actor_norm":2.0,"grad/aux_norm/state_prediction":1.0,"grad/aux_cos/state_prediction":-0.5}}"#,
                    100 * (i + 1),
                    0.1 * i as f64
                )
            })
            .collect();
        std::fs::write(dir.join("metrics.jsonl"), lines.join("\n")).unwrap();
        dir
    }

    #[test]
    fn arms_with_intervals_paired_differences_and_diagnostics() {
        let root = tempfile::tempdir().unwrap();
        let (t, f) = (true, false);
        let dirs = vec![
            fake_run(root.path(), "none", 0, &[t, f, f, f]),
            fake_run(root.path(), "none", 1, &[t, t, f, f]),
            fake_run(root.path(), "state_prediction", 0, &[t, t, f, f]),
            fake_run(root.path(), "state_prediction", 1, &[t, t, t, f]),
        ];
        let markdown =
            compare(&dirs, &root.path().join("out"), None, None, "comparison.md").unwrap();
        println!("{markdown}");
        // GRPO: 25 % and 50 %, mean 37.5 %; the objective wins one more task per seed, so every
        // paired difference is +25 points or 0 and the mean is +25.
        assert!(markdown.contains("| grpo | 2 | 37.5 ["), "{markdown}");
        assert!(markdown.contains("| baseline |"), "{markdown}");
        assert!(
            markdown
                .contains("| grpo + state_prediction(cosine 0.2), clip aux_ratio 1 | 2 | 62.5 ["),
            "{markdown}"
        );
        // +25 points on both seeds: a t interval of zero width, and an MDE of 0.
        assert!(
            markdown.contains("| 25.0 [25.0, 25.0] (2 paired seeds) | 0.0 |"),
            "{markdown}"
        );
        // Per seed: one discordant game, won by the arm; McNemar cannot reject with one.
        assert!(
            markdown.contains(
                "| grpo + state_prediction(cosine 0.2), clip aux_ratio 1 | 1 | 4 | +25.0 | 1 / 0 | 1.000 |"
            ),
            "{markdown}"
        );
        // Same training curves: AUC 15 %, the baseline's final success reached at its end.
        assert!(
            markdown.contains("| 15.0 ± 0.0 | 100 | 20.0 ± 0.0 | 400 | 2.0 |"),
            "{markdown}"
        );
        // Diagnostics: ratio 0.5, cosine -0.5, early and late.
        assert!(
            markdown
                .contains("| state_prediction | 0.500 ± 0.000 | 0.500 ± 0.000 | -0.500 ± 0.000 |"),
            "{markdown}"
        );
        assert!(root.path().join("out/comparison.md").exists());

        // The paired interval is exactly the +25 points when the difference is the same on
        // every seed and task.
        let same = vec![
            fake_run(root.path(), "none", 2, &[f, f]),
            fake_run(root.path(), "state_prediction", 2, &[t, t]),
        ];
        let markdown = compare(
            &same,
            &root.path().join("same"),
            None,
            None,
            "comparison.md",
        )
        .unwrap();
        // One seed: the only spread is its games', and the table says so.
        assert!(
            markdown
                .contains("| 100.0 [100.0, 100.0] (one seed: games only) (1 paired seeds) | – |"),
            "{markdown}"
        );

        let err = compare(&dirs, root.path(), None, Some("ppo"), "comparison.md").unwrap_err();
        assert!(format!("{err:#}").contains("no arm `ppo`"), "{err:#}");
        let twice = vec![dirs[0].clone(), dirs[0].clone()];
        let err = compare(&twice, root.path(), None, None, "comparison.md").unwrap_err();
        assert!(
            format!("{err:#}").contains("give each seed once"),
            "{err:#}"
        );
        let missing = compare(
            &[root.path().join("nothing")],
            root.path(),
            None,
            None,
            "comparison.md",
        );
        assert!(format!("{:#}", missing.unwrap_err()).contains("nothing"));
    }

    #[test]
    fn runs_that_must_not_be_pooled_and_outputs_into_runs_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let (t, f) = (true, false);
        let a = fake_run(root.path(), "none", 0, &[t, f]);
        let b = fake_run(root.path(), "none", 1, &[t, t]);
        // Another environment's run is not a seed of the same arm.
        let mut config = RunConfig::from_toml_file(&b.join("config.toml")).unwrap();
        config.env = crate::run::EnvName::Webshop.default_config();
        std::fs::write(b.join("config.toml"), config.to_toml().unwrap()).unwrap();
        let out = root.path().join("out");
        let err = compare(&[a.clone(), b.clone()], &out, None, None, "comparison.md").unwrap_err();
        assert!(
            format!("{err:#}").contains("one environment at a time"),
            "{err:#}"
        );
        // Runs of another held-out set, model or sampler are refused by name.
        for (field, value) in [
            ("tasks.eval", "tasks.eval = 7"),
            (
                "trainer.eval_sampling.temperature",
                "trainer.eval_sampling.temperature = 0.9",
            ),
            ("lora.rank", "lora.rank = 4"),
        ] {
            let d = fake_run(root.path(), "none", 5, &[t, f]);
            let config = RunConfig::from_toml_file(&d.join("config.toml")).unwrap();
            let changed = config.with_overrides(&[value.replace(" = ", "=")]).unwrap();
            std::fs::write(d.join("config.toml"), changed.to_toml().unwrap()).unwrap();
            let err = compare(&[a.clone(), d], &out, None, None, "comparison.md").unwrap_err();
            assert!(
                format!("{err:#}").contains(&format!("`{field}`")),
                "{err:#}"
            );
        }
        // A run with no iterations gives no NaN table.
        let c = fake_run(root.path(), "none", 2, &[t, f]);
        std::fs::write(c.join("metrics.jsonl"), "").unwrap();
        let err = compare(&[a.clone(), c], &out, None, None, "comparison.md").unwrap_err();
        assert!(format!("{err:#}").contains("no iterations"), "{err:#}");
        // The comparison is not written into a run directory.
        let err = compare(std::slice::from_ref(&a), &a, None, None, "comparison.md").unwrap_err();
        assert!(format!("{err:#}").contains("run directory"), "{err:#}");
        assert!(!a.join("comparison.md").exists());
    }

    /// Gives a run's every iteration a real-target cross-entropy of `ce` for state prediction.
    fn with_cross_entropy(dir: &Path, ce: f64) {
        let metrics = std::fs::read_to_string(dir.join("metrics.jsonl")).unwrap();
        let metrics = metrics.replace(
            r#""perf/wall_s""#,
            &format!(r#""loss/aux/state_prediction":{ce},"loss/aux/state_prediction_shuffled":9.0,"perf/wall_s""#),
        );
        std::fs::write(dir.join("metrics.jsonl"), metrics).unwrap();
    }

    #[test]
    fn the_manipulation_check_comes_first_and_says_whether_the_design_can_test() {
        let root = tempfile::tempdir().unwrap();
        let (t, f) = (true, false);
        let control = "state_prediction:shuffled,state_prediction=0";
        // Per seed, the trained arm's cross-entropy and the control's.
        let grid = |trained: [f64; 3], controls: [f64; 3]| -> Vec<PathBuf> {
            let mut dirs = Vec::new();
            for seed in 0..3u64 {
                let i = seed as usize;
                let a = fake_run(root.path(), "state_prediction", seed, &[t, f]);
                with_cross_entropy(&a, trained[i]);
                let b = fake_run(root.path(), control, seed, &[f, f]);
                with_cross_entropy(&b, controls[i]);
                dirs.extend([a, b]);
            }
            dirs
        };
        let out = root.path().join("out");
        // The control learns almost as much: ratios 0.9, 0.95, 0.85.
        let same = grid([0.9, 0.95, 0.85], [1.0, 1.0, 1.0]);
        let markdown = compare(&same, &out, None, None, "comparison.md").unwrap();
        println!("{markdown}");
        assert!(markdown.starts_with("Manipulation check:"), "{markdown}");
        assert!(markdown.contains("| state_prediction | grpo + state_prediction(cosine 0.2), clip aux_ratio 1 | trains it | 3 | 0.900 ± 0.050 |"), "{markdown}");
        assert!(
            markdown.contains("trains its control | 3 | 1.000 ± 0.000 |"),
            "{markdown}"
        );
        assert!(
            markdown.contains("| 3 | -0.100 [-0.224, +0.024] |"),
            "{markdown}"
        );
        assert!(markdown.contains("| no |"), "{markdown}");
        assert!(
            markdown.contains("**Manipulation check: failed.**"),
            "{markdown}"
        );
        // The trained arm's cross-entropy a fifth of the control's on every seed: passed.
        let apart = grid([0.2, 0.21, 0.19], [1.0, 1.0, 1.0]);
        let markdown = compare(&apart, &out, None, None, "comparison.md").unwrap();
        assert!(
            markdown.contains("**Manipulation check: passed** for `state_prediction`"),
            "{markdown}"
        );
        assert!(markdown.contains("| yes |"), "{markdown}");
        // Without a control arm there is nothing to check against, and the section says so.
        let alone: Vec<PathBuf> = apart.iter().step_by(2).cloned().collect();
        let markdown = compare(&alone, &out, None, None, "comparison.md").unwrap();
        assert!(
            markdown.contains("No arm trains a shuffled-target control"),
            "{markdown}"
        );
    }

    #[test]
    fn the_held_out_curve_ends_with_the_final_evaluation() {
        let root = tempfile::tempdir().unwrap();
        let dir = fake_run(root.path(), "none", 0, &[true, false, false, false]);
        // An evaluation logged before iteration 0's training, as `eval_every` does.
        let metrics = std::fs::read_to_string(dir.join("metrics.jsonl")).unwrap();
        let metrics =
            metrics.replacen(r#""perf/wall_s""#, r#""eval/success":0.5,"perf/wall_s""#, 1);
        std::fs::write(dir.join("metrics.jsonl"), metrics).unwrap();
        let run = FinishedRun::load(&dir, None).unwrap();
        let points: Vec<(usize, (f64, f64))> = run.held_out_points().into_iter().collect();
        // Iterations 0–3 at 100–400 environment steps; the final 25 % after the last.
        assert_eq!(points, vec![(0, (100.0, 0.5)), (4, (400.0, 0.25))]);
    }

    #[test]
    fn another_splits_evaluation_replaces_the_runs_own() {
        let root = tempfile::tempdir().unwrap();
        let dirs = vec![
            fake_run(root.path(), "none", 0, &[true, false]),
            fake_run(root.path(), "none", 1, &[true, true]),
        ];
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
        let markdown = compare(&dirs, &out, Some("valid_seen"), None, "comparison.md").unwrap();
        // No per-episode outcomes for that split: intervals over seeds only, and said so.
        assert!(
            markdown.contains("| grpo | 2 | 80.0 [80.0, 80.0] |"),
            "{markdown}"
        );
        assert!(
            markdown.contains("Without eval-outcomes.json"),
            "{markdown}"
        );
        let missing =
            compare(&dirs, &out, Some("valid_unseen"), None, "comparison.md").unwrap_err();
        assert!(
            format!("{missing:#}").contains("eval-valid_unseen.json"),
            "{missing:#}"
        );
    }
}
