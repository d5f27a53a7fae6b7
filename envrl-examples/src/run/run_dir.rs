//! Who owns a run directory, and what a resumed run may change.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use envrl::{IterationMetrics, latest_checkpoint};

use super::warm_start::{WARM_START_FILE, WARM_START_PARTIAL};
use super::{RunConfig, RunOptions};

/// The lock file of a run directory.
pub const LOCK_FILE: &str = ".envrl.lock";

/// Settings a resumed run may change without `--allow-config-change`: how long it runs and how
/// often it evaluates and saves, none of which changes what an iteration does (and the preset's
/// name, which only records where the config came from).
const MAY_CHANGE: [&str; 6] = [
    "preset",
    "trainer.iterations",
    "trainer.eval_every",
    "trainer.checkpoint_every",
    "trainer.keep_checkpoints",
    "env.eval_split",
];

/// A fresh run directory's name when none is given: `runs/<env>__<estimator>__<seed>__<time>`,
/// from the resolved config (so a `--config` file's estimator names it, not `--algo`'s
/// default).
pub fn default_run_dir(config: &RunConfig, unix_time: u64) -> PathBuf {
    run_dir_named(
        config.env.name().name(),
        config.algorithm.advantage.name(),
        config.trainer.seed,
        unix_time,
    )
}

/// The one naming rule of fresh run directories: `runs/<env>__<estimator>__<seed>__<time>`.
pub fn run_dir_named(env: &str, estimator: &str, seed: u64, unix_time: u64) -> PathBuf {
    PathBuf::from("runs").join(format!("{env}__{estimator}__{seed}__{unix_time}"))
}

/// Seconds since the Unix epoch (0 if the clock is before it).
pub fn unix_time() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// An advisory lock on a run directory, held while this process lives: a second run, a
/// `--force` or an evaluation on a live directory fails at once, naming the owner.
#[derive(Debug)]
pub struct RunLock {
    _file: File,
    path: PathBuf,
}

impl RunLock {
    /// Creates `dir` if needed and takes its lock, recording this process's PID and host.
    ///
    /// # Errors
    /// When another process holds the lock (the message names its PID and host), or the file
    /// cannot be written.
    pub fn acquire(dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join(LOCK_FILE);
        let mut file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        if file.try_lock().is_err() {
            let owner = std::fs::read_to_string(&path).unwrap_or_default();
            bail!(
                "{} is in use by another envrl process ({}); wait for it to end or choose \
                 another directory",
                dir.display(),
                owner.trim()
            );
        }
        let host = std::fs::read_to_string("/etc/hostname").unwrap_or_else(|_| "?".into());
        file.set_len(0)
            .and_then(|_| write!(file, "pid {} on {}", std::process::id(), host.trim()))
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(Self { _file: file, path })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Every field of a config as a dotted path and its value.
pub(crate) fn flatten(config: &RunConfig) -> BTreeMap<String, String> {
    fn walk(prefix: &str, value: &toml::Value, out: &mut BTreeMap<String, String>) {
        match value {
            toml::Value::Table(table) => {
                for (k, v) in table {
                    let path = match prefix {
                        "" => k.clone(),
                        _ => format!("{prefix}.{k}"),
                    };
                    walk(&path, v, out);
                }
            }
            other => {
                out.insert(prefix.to_string(), other.to_string());
            }
        }
    }
    let mut out = BTreeMap::new();
    if let Ok(value) = toml::Value::try_from(config) {
        walk("", &value, &mut out);
    }
    out
}

/// The fields a resumed run would change, `field: stored -> requested`, besides those a resume
/// may change.
pub fn config_changes(stored: &RunConfig, requested: &RunConfig) -> Vec<String> {
    let (a, b) = (flatten(stored), flatten(requested));
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|k| !MAY_CHANGE.contains(&k.as_str()))
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| {
            let show = |v: Option<&String>| v.cloned().unwrap_or_else(|| "(none)".into());
            format!("{k}: {} -> {}", show(a.get(k)), show(b.get(k)))
        })
        .collect()
}

/// Refuses to resume with a config that changes the run, unless `allow`; with `allow` the
/// changes are printed and returned, for [`record_config_changes`] once the resumed run has
/// started (a resume that fails leaves the run's files as they were). Writes nothing.
///
/// # Errors
/// When the stored config cannot be read, or it differs and `allow` is false.
pub fn check_resume_config(dir: &Path, requested: &RunConfig, allow: bool) -> Result<Vec<String>> {
    let path = dir.join("config.toml");
    let stored = RunConfig::from_toml_file(&path)
        .with_context(|| format!("--resume: reading the run's own {}", path.display()))?;
    let changes = config_changes(&stored, requested);
    if changes.is_empty() {
        return Ok(changes);
    }
    if !allow {
        // A run recorded before `{ aux_ratio = 1.0 }` became the default ran the global clip,
        // which its own config file (read over a preset) no longer implies.
        let hint = match stored.trainer.clip != requested.trainer.clip
            && stored.trainer.clip.is_global()
        {
            true => {
                "\nthe run ran the global clip (the default before December 2026): add \
                 --set trainer.clip=global"
            }
            false => "",
        };
        bail!(
            "--resume with settings that change the run ({} differs from the request):\n  {}\n\
             resume with the run's own config (--config {}), or pass --allow-config-change{hint}",
            path.display(),
            changes.join("\n  "),
            path.display()
        );
    }
    eprintln!(
        "resuming with changed settings:\n  {}",
        changes.join("\n  ")
    );
    Ok(changes)
}

/// Appends a resumed run's setting changes to `config-changes.txt` in its directory.
///
/// # Errors
/// When the file cannot be written.
pub fn record_config_changes(dir: &Path, changes: &[String]) -> Result<()> {
    if changes.is_empty() {
        return Ok(());
    }
    let log = dir.join("config-changes.txt");
    let mut file = File::options()
        .create(true)
        .append(true)
        .open(&log)
        .with_context(|| format!("opening {}", log.display()))?;
    writeln!(file, "{}", changes.join("\n")).with_context(|| format!("writing {}", log.display()))
}

/// Keeps only the complete metrics records of iterations before `iteration` (a killed run may
/// have recorded later iterations, or half a line, after its last checkpoint), one per
/// iteration; says so when the file held an iteration twice or lacks one.
pub(crate) fn truncate_metrics(dir: &Path, iteration: usize) -> Result<()> {
    let path = dir.join("metrics.jsonl");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(());
    };
    let kept = metrics_before(&text, iteration);
    let list = |v: &[usize]| {
        v.iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !kept.repeated.is_empty() {
        log::warn!(
            "{} held iteration(s) {} more than once: kept the last record of each",
            path.display(),
            list(&kept.repeated)
        );
    }
    if !kept.missing.is_empty() {
        log::warn!(
            "{} lacks iteration(s) {} before the checkpoint: the resumed run's metrics have a \
             gap there",
            path.display(),
            list(&kept.missing)
        );
    }
    std::fs::write(&path, kept.text).with_context(|| format!("rewriting {}", path.display()))
}

/// The metrics a resumed run continues: the last complete record of each iteration before
/// the checkpoint's, in order, and what the file repeated or lacked.
#[derive(Debug, PartialEq)]
pub(crate) struct KeptMetrics {
    /// The records kept, one line each.
    pub text: String,
    /// Iterations recorded more than once.
    pub repeated: Vec<usize>,
    /// Iterations before the checkpoint's without a record.
    pub missing: Vec<usize>,
}

pub(crate) fn metrics_before(text: &str, iteration: usize) -> KeptMetrics {
    let mut by_iteration: BTreeMap<usize, &str> = BTreeMap::new();
    let mut repeated = BTreeSet::new();
    for line in text.lines() {
        let Ok(record) = serde_json::from_str::<IterationMetrics>(line) else {
            continue;
        };
        if record.iteration < iteration && by_iteration.insert(record.iteration, line).is_some() {
            repeated.insert(record.iteration);
        }
    }
    let repeated = repeated.into_iter().collect();
    let missing = (0..iteration)
        .filter(|i| !by_iteration.contains_key(i))
        .collect();
    let text = by_iteration.values().map(|l| format!("{l}\n")).collect();
    KeptMetrics {
        text,
        repeated,
        missing,
    }
}

/// Whether `name` is something envrl writes into a run directory.
fn is_run_file(name: &str) -> bool {
    const FILES: [&str; 9] = [
        "config.toml",
        "tokenizer.json",
        "metrics.jsonl",
        WARM_START_FILE,
        WARM_START_PARTIAL,
        "checkpoints",
        "config-changes.txt",
        LOCK_FILE,
        "comparison",
    ];
    const PLOTS: [&str; 3] = ["success", "return", "losses"];
    FILES.contains(&name)
        || (name.starts_with("eval") && [".md", ".json", ".txt"].iter().any(|e| name.ends_with(e)))
        || PLOTS
            .iter()
            .any(|p| name == format!("{p}.svg") || name == format!("{p}.png"))
}

/// What a directory holds that envrl did not write there.
fn foreign_files(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !is_run_file(n))
        .collect();
    names.sort();
    names
}

/// Removes what envrl wrote into `dir` (and in `checkpoints/` only its `ckpt-*` folders),
/// leaving anything else.
fn remove_run_files(dir: &Path) -> Result<()> {
    let checkpoints = dir.join("checkpoints");
    if let Ok(entries) = std::fs::read_dir(&checkpoints) {
        for entry in entries.filter_map(|e| e.ok()) {
            if entry.file_name().to_string_lossy().starts_with("ckpt-") {
                let path = entry.path();
                std::fs::remove_dir_all(&path)
                    .with_context(|| format!("removing {}", path.display()))?;
            }
        }
        let _ = std::fs::remove_dir(&checkpoints); // only when nothing else is in it
    }
    for stale in [
        "metrics.jsonl",
        WARM_START_FILE,
        WARM_START_PARTIAL,
        "config-changes.txt",
    ] {
        let path = dir.join(stale);
        if path.exists() {
            std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
        }
    }
    Ok(())
}

/// The names of the finished checkpoint directories (`ckpt-N`, not a save's `.tmp` or `.old`)
/// in `dir`, sorted.
fn finished_checkpoints(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| {
            n.strip_prefix("ckpt-")
                .is_some_and(|d| d.parse::<u64>().is_ok())
        })
        .collect();
    names.sort();
    names
}

/// What a run will do with its directory, decided before anything is written.
#[derive(Debug)]
pub(crate) struct DirPlan {
    /// The checkpoint to resume from.
    pub resume_from: Option<PathBuf>,
    /// The warm start to evaluate: `envrl eval` of a run directory that holds a warm start
    /// (`--warm-start-only`) and no checkpoint.
    pub warm_start: Option<PathBuf>,
    /// Whether a previous run's files are removed (a fresh start or `--force`).
    clear: bool,
    /// The settings a resume changes (`--allow-config-change`), recorded once it has started.
    pub config_changes: Vec<String>,
}

impl DirPlan {
    /// Decides what the run does with `options.output_dir`: refuses to overwrite another run's
    /// checkpoints (without `resume` or `force`) or a directory that envrl did not write, and
    /// finds the checkpoint to resume from. Writes nothing: the run validates its model and data
    /// first and then calls [`DirPlan::apply`].
    pub(crate) fn decide(options: &RunOptions) -> Result<Self> {
        let dir = &options.output_dir;
        let checkpoints = dir.join("checkpoints");
        if options.resume && options.force {
            bail!(
                "--resume and --force contradict each other: --resume continues the run in {}, \
                 --force removes it and starts over; pass one",
                dir.display()
            );
        }
        let existing = latest_checkpoint(&checkpoints);
        let clear = match (&existing, options.resume, options.force) {
            (Some(_), false, false) => bail!(
                "{} already holds a run's checkpoints; pass --resume to continue it or --force \
                 to overwrite it",
                dir.display()
            ),
            (_, false, true) => true,
            (None, true, _) if options.mode == super::RunMode::Evaluate => {
                let warm_start = dir.join(WARM_START_FILE);
                if !warm_start.is_file() {
                    bail!(
                        "nothing to evaluate: {} holds no complete checkpoint (a checkpoint that \
                         was cut short or fails its checksums is skipped) and {} no warm start",
                        checkpoints.display(),
                        dir.display()
                    );
                }
                return Ok(DirPlan {
                    resume_from: None,
                    warm_start: Some(warm_start),
                    clear: false,
                    config_changes: Vec::new(),
                });
            }
            (None, true, _) => bail!("--resume: no checkpoint in {}", checkpoints.display()),
            // A run's finished checkpoints that fail their checksums are still its record: a
            // fresh start must not delete them unasked.
            (None, false, false) if !finished_checkpoints(&checkpoints).is_empty() => bail!(
                "{} holds checkpoints that fail their checksums ({}); a fresh start would delete \
                 them: repair or move them, or pass --force to overwrite the run",
                dir.display(),
                finished_checkpoints(&checkpoints).join(", ")
            ),
            // A fresh start: only in a directory that holds nothing but (a killed run's) envrl
            // files, whose stale metrics must not be continued.
            (None, false, false) => {
                let foreign = foreign_files(dir);
                if !foreign.is_empty() {
                    bail!(
                        "{} is not a run directory: it holds {}; choose another directory or \
                         pass --force (which removes only what envrl writes)",
                        dir.display(),
                        foreign
                            .iter()
                            .take(5)
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                }
                true
            }
            (Some(_), true, _) => false,
        };
        Ok(DirPlan {
            resume_from: if options.resume { existing } else { None },
            warm_start: None,
            clear,
            config_changes: Vec::new(),
        })
    }

    /// Makes the directory ready: removes a previous run's files when starting afresh, and
    /// creates it.
    pub(crate) fn apply(&self, dir: &Path) -> Result<()> {
        if self.clear {
            remove_run_files(dir)?;
        }
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resuming_a_run_recorded_before_the_clip_default_names_the_setting_to_add() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = RunConfig::cpu_tiny(super::super::EnvName::Keydoor).unwrap();
        let recorded = fresh
            .to_toml()
            .unwrap()
            .replace("[trainer.clip]\naux_ratio = 1.0\n", "");
        std::fs::write(dir.path().join("config.toml"), recorded).unwrap();
        let err = check_resume_config(dir.path(), &fresh, false).unwrap_err();
        let message = format!("{err:#}");
        assert!(message.contains("trainer.clip"), "{message}");
        assert!(
            message.contains("add --set trainer.clip=global"),
            "{message}"
        );
        let mut global = fresh.clone();
        global.trainer.clip = envrl::GradClip::Global;
        check_resume_config(dir.path(), &global, false).unwrap();
    }

    #[test]
    fn an_evaluation_without_a_good_checkpoint_says_so_without_naming_a_train_flag() {
        let dir = tempfile::tempdir().unwrap();
        let options = |mode| super::super::RunOptions {
            output_dir: dir.path().to_path_buf(),
            resume: true,
            force: false,
            allow_config_change: false,
            device: burn::tensor::Device::flex(),
            quiet: true,
            ranks: Default::default(),
            mode,
            eval_tag: None,
        };
        let err = DirPlan::decide(&options(super::super::RunMode::Evaluate))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("nothing to evaluate") && !err.contains("--resume"),
            "{err}"
        );
        let err = DirPlan::decide(&options(super::super::RunMode::Train))
            .unwrap_err()
            .to_string();
        assert!(err.contains("--resume: no checkpoint"), "{err}");
        let both = super::super::RunOptions {
            force: true,
            ..options(super::super::RunMode::Train)
        };
        let err = DirPlan::decide(&both).unwrap_err().to_string();
        assert!(err.contains("contradict"), "{err}");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "nothing written"
        );
        // A finished checkpoint that fails its checksums: a fresh start refuses, naming it.
        let corrupt = dir.path().join("checkpoints/ckpt-000004");
        std::fs::create_dir_all(&corrupt).unwrap();
        std::fs::write(corrupt.join("model.bpk"), b"not a checkpoint").unwrap();
        let fresh = super::super::RunOptions {
            resume: false,
            ..options(super::super::RunMode::Train)
        };
        let err = DirPlan::decide(&fresh).unwrap_err().to_string();
        assert!(
            err.contains("ckpt-000004") && err.contains("--force"),
            "{err}"
        );
        assert!(corrupt.join("model.bpk").exists());
        let forced = super::super::RunOptions {
            force: true,
            ..fresh
        };
        assert!(DirPlan::decide(&forced).is_ok());
    }

    #[test]
    fn resumed_metrics_keep_one_record_per_iteration_and_name_gaps() {
        let record = |i: usize, loss: f64| {
            let m = IterationMetrics {
                iteration: i,
                env_steps: i,
                values: [("loss".to_string(), loss)].into(),
            };
            serde_json::to_string(&m).unwrap()
        };
        let text = [
            record(0, 1.0),
            record(2, 2.0),
            record(2, 3.0),
            "{\"iteration\": 3, \"half".to_string(),
            record(4, 4.0),
        ]
        .join("\n");
        let kept = metrics_before(&text, 4);
        assert_eq!(kept.repeated, [2]);
        assert_eq!(kept.missing, [1, 3]);
        assert_eq!(
            kept.text,
            format!("{}\n{}\n", record(0, 1.0), record(2, 3.0))
        );
        let clean = [record(0, 1.0), record(1, 1.0)].join("\n");
        let kept = metrics_before(&clean, 2);
        assert!(kept.repeated.is_empty() && kept.missing.is_empty());
        assert_eq!(metrics_before("", 0).text, "");
    }

    #[test]
    fn a_second_lock_on_a_directory_is_refused_naming_the_owner() {
        let dir = tempfile::tempdir().unwrap();
        let first = RunLock::acquire(dir.path()).unwrap();
        let err = RunLock::acquire(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("in use") && err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        drop(first);
        assert!(RunLock::acquire(dir.path()).is_ok());
    }

    #[test]
    fn changes_that_alter_the_run_are_listed_and_longer_runs_allowed() {
        let stored = RunConfig::cpu_tiny(crate::run::EnvName::Keydoor).unwrap();
        let mut longer = stored.clone();
        longer.trainer.iterations += 10;
        assert!(config_changes(&stored, &longer).is_empty());
        let mut other = stored.clone();
        other.trainer.learning_rate *= 2.0;
        other.trainer.group_size = 2;
        let changes = config_changes(&stored, &other);
        assert_eq!(changes.len(), 2, "{changes:?}");
        assert!(
            changes[0].starts_with("trainer.group_size: 8 -> 2"),
            "{changes:?}"
        );
        assert!(
            changes[1].starts_with("trainer.learning_rate"),
            "{changes:?}"
        );
    }

    #[test]
    fn a_fresh_run_directory_is_named_after_the_resolved_estimator() {
        // The config says GiGPO (as a `--config gigpo.toml` without `--algo` does).
        let config = RunConfig::cpu_tiny(crate::run::EnvName::Alfworld)
            .unwrap()
            .with_algorithm(Some("gigpo"), None)
            .unwrap()
            .with_overrides(&["trainer.seed=4".into()])
            .unwrap();
        assert_eq!(
            default_run_dir(&config, 17),
            Path::new("runs/alfworld__gigpo__4__17")
        );
    }
}
