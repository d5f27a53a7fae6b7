//! A training run killed with SIGKILL after a checkpoint and resumed ends exactly where an
//! uninterrupted run ends: same metrics, same evaluation, same parameters, with both EnvRL
//! objectives and the gradient diagnostics on (their random streams and step counter resume too).
//! The fault-injection test kills one run at every step of a checkpoint write (the crash points
//! of `envrl::CHECKPOINT_STEPS`), after an iteration's metrics, and at seeded moments inside
//! its own progress (a fraction of an iteration after its first new record, so that machine
//! load moves no kill out of the run), resuming it each time.
#![allow(missing_docs)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ARGS: &[&str] = &[
    "train",
    "keydoor",
    "--quiet",
    "--set",
    "trainer.checkpoint_every=1",
    "--set",
    "trainer.keep_checkpoints=10",
    "--set",
    "trainer.groups=4",
    "--set",
    "trainer.group_size=4",
    "--set",
    "trainer.eval_every=2",
    "--set",
    "trainer.eval_episodes=16",
    "--set",
    "tasks.eval=16",
    "--set",
    "warmup.steps=20",
    "--set",
    "trainer.grad_diagnostics_every=2",
    "--aux",
    "state_prediction,inverse_dynamics",
];

/// A keydoor run of `iterations` iterations into `dir`.
fn envrl(dir: &Path, iterations: usize, extra: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_envrl"));
    command
        .args(ARGS)
        .args(["--iterations", &iterations.to_string()])
        .arg("--output-dir")
        .arg(dir)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    command
}

/// The last record of each iteration, without timings, and its gradient diagnostics apart.
fn metrics(dir: &Path) -> (Vec<serde_json::Value>, Vec<f64>) {
    let text = std::fs::read_to_string(dir.join("metrics.jsonl")).unwrap();
    let mut by_iteration = std::collections::BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut record: serde_json::Value = serde_json::from_str(line).unwrap();
        let object = record.as_object_mut().unwrap();
        object.retain(|k, _| !k.starts_with("perf/"));
        let diagnostics: Vec<f64> = object
            .iter()
            .filter(|(k, _)| k.starts_with("grad/"))
            .map(|(_, v)| v.as_f64().unwrap())
            .collect();
        object.retain(|k, _| !k.starts_with("grad/"));
        by_iteration.insert(record["iteration"].as_u64().unwrap(), (record, diagnostics));
    }
    let (records, diagnostics): (Vec<_>, Vec<Vec<f64>>) = by_iteration.into_values().unzip();
    (records, diagnostics.concat())
}

/// The gradient diagnostics sum f32 gradients in f64 over every parameter; a fresh process can
/// round a few gradient elements differently in their last bit (parameters stay identical).
fn assert_close(a: &[f64], b: &[f64]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= 1e-9 * y.abs().max(1.0), "{x} vs {y}");
    }
}

#[test]
fn a_killed_and_resumed_run_equals_an_uninterrupted_one() {
    killed_and_resumed_equals_uninterrupted(&[]);
}

/// With `max_staleness` 1 the process is killed while a rollout plays ahead or after; the
/// checkpoint holds the rollout played ahead of its iteration, so the resumed run trains on it.
#[test]
fn a_killed_run_that_plays_ahead_resumes_exactly() {
    killed_and_resumed_equals_uninterrupted(&["--set", "trainer.max_staleness=1"]);
}

fn killed_and_resumed_equals_uninterrupted(extra: &[&str]) {
    let root = tempfile::tempdir().unwrap();
    let (straight, killed) = (root.path().join("straight"), root.path().join("killed"));
    assert!(envrl(&straight, 5, extra).status().unwrap().success());

    let mut child = envrl(&killed, 5, extra).spawn().unwrap();
    let checkpoint = killed.join("checkpoints/ckpt-000002");
    let start = Instant::now();
    while !checkpoint.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "no checkpoint appeared"
        );
        if child.try_wait().unwrap().is_some() {
            panic!("the run ended before it could be killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL on Unix
    child.wait().unwrap();
    assert!(
        !killed.join("checkpoints/ckpt-000005").exists(),
        "the run finished before the kill"
    );

    // Without --resume the directory is refused, so nothing is overwritten by mistake.
    let refused = envrl(&killed, 5, extra)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--resume"));

    assert!(
        envrl(&killed, 5, &[extra, &["--resume"]].concat())
            .status()
            .unwrap()
            .success()
    );
    let ((killed_metrics, killed_diag), (straight_metrics, straight_diag)) =
        (metrics(&killed), metrics(&straight));
    assert_eq!(killed_metrics, straight_metrics);
    assert!(!straight_diag.is_empty());
    assert_close(&killed_diag, &straight_diag);
    let read = |dir: &Path, file: &str| std::fs::read(dir.join(file)).unwrap();
    assert_eq!(read(&killed, "eval.json"), read(&straight, "eval.json"));
    assert_eq!(final_parameters(&killed, 5), final_parameters(&straight, 5));
}

/// How one attempt of the fault-injection run is stopped.
#[derive(Debug, Clone, Copy)]
enum Kill {
    /// Aborted (as by SIGKILL) on the `visit`-th time it reaches a crash point.
    At(&'static str, usize),
    /// SIGKILLed once it has recorded its first iteration past its checkpoint, this fraction
    /// of an iteration later: a moment inside the run's own progress, however long it took to
    /// start on a loaded machine.
    During(f64),
}

/// The iteration of the newest record in `dir`'s metrics (`None` before the first).
fn newest_iteration(dir: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(dir.join("metrics.jsonl")).ok()?;
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|r| r["iteration"].as_u64())
        .max()
}

/// The iteration the newest good checkpoint in `dir` continues from (0 without one).
fn resumes_at(dir: &Path) -> u64 {
    envrl::latest_checkpoint(&dir.join("checkpoints"))
        .and_then(|p| p.file_name()?.to_str()?.strip_prefix("ckpt-")?.parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_run_killed_at_every_step_of_a_checkpoint_write_and_at_seeded_moments_equals_an_uninterrupted_one()
 {
    use rand::{Rng, SeedableRng};
    use std::os::unix::process::ExitStatusExt;

    const ITERATIONS: usize = 16;
    // Two kept checkpoints, so that pruning happens (and can be interrupted) too.
    let keep = ["--set", "trainer.keep_checkpoints=2"];
    let root = tempfile::tempdir().unwrap();
    let (straight, killed) = (root.path().join("straight"), root.path().join("killed"));
    let start = Instant::now();
    assert!(
        envrl(&straight, ITERATIONS, &keep)
            .status()
            .unwrap()
            .success()
    );
    let run_time = start.elapsed();

    // Every crash point a run reaches (a checkpoint is never saved over an existing one, so
    // `checkpoint-old-moved-aside` is not), each on its first visit so that the run advances at
    // most one checkpoint per kill; then SIGKILLs at seeded random moments.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(21);
    let mut kills: Vec<Kill> = envrl::CHECKPOINT_STEPS
        .iter()
        .copied()
        .filter(|&point| point != "checkpoint-old-moved-aside")
        .chain(["metrics-recorded"])
        .map(|point| Kill::At(point, 1))
        .collect();
    let crash_points = kills.len();
    kills.extend((0..6).map(|_| Kill::During(rng.random_range(0.0..0.8))));
    let iteration_time = run_time / ITERATIONS as u32;

    let (mut delivered, mut resumes) = (0, 0);
    for kill in kills {
        // Continue from the newest good checkpoint; before the first one there is nothing to
        // resume, and the run starts afresh (its warm start is deterministic).
        let has_checkpoint = envrl::latest_checkpoint(&killed.join("checkpoints")).is_some();
        let mode: &[&str] = if has_checkpoint {
            &["--resume"]
        } else {
            &["--force"]
        };
        resumes += usize::from(has_checkpoint);
        let mut command = envrl(&killed, ITERATIONS, &keep);
        command.args(mode);
        let status = match kill {
            Kill::At(point, visit) => command
                .env(envrl::CRASH_AT_VAR, format!("{point}:{visit}"))
                .status()
                .unwrap(),
            Kill::During(fraction) => {
                // Only where at least four iterations remain: the kill then lands in the run.
                let from = resumes_at(&killed);
                if from + 4 > ITERATIONS as u64 {
                    break;
                }
                let mut child = command.spawn().unwrap();
                let waited = Instant::now();
                // First the run cuts its metrics back to the checkpoint (records a killed run
                // wrote after it go), then it records the checkpoint's iteration anew.
                let phases: [&dyn Fn(Option<u64>) -> bool; 2] =
                    [&|newest| newest.is_none_or(|i| i < from), &|newest| {
                        newest.is_some_and(|i| i >= from)
                    }];
                for reached in phases {
                    while !reached(newest_iteration(&killed)) && child.try_wait().unwrap().is_none()
                    {
                        assert!(waited.elapsed() < Duration::from_secs(600), "no progress");
                        std::thread::sleep(Duration::from_millis(5));
                    }
                }
                std::thread::sleep(iteration_time.mul_f64(fraction));
                let _ = child.kill(); // SIGKILL; fails only when the run already ended
                child.wait().unwrap()
            }
        };
        eprintln!(
            "{kill:?}: {status}, newest checkpoint {:?}",
            envrl::latest_checkpoint(&killed.join("checkpoints"))
        );
        match status.signal() {
            Some(_) => delivered += 1,
            // The run ended before the kill: nothing left to interrupt.
            None if status.success() && killed.join("eval.json").exists() => break,
            None => panic!("{kill:?}: the run failed with {status}"),
        }
    }
    if !killed.join("eval.json").exists() {
        resumes += 1;
        assert!(
            envrl(&killed, ITERATIONS, &keep)
                .arg("--resume")
                .status()
                .unwrap()
                .success()
        );
    }
    eprintln!(
        "fault injection: {delivered} kills, {resumes} resumes; comparing with an uninterrupted run"
    );
    // Every crash point fires (the run is far from its end), and most random moments land.
    assert!(
        delivered >= crash_points + 3,
        "only {delivered} of {} kills landed",
        crash_points + 6
    );

    // Resumed runs cut metrics.jsonl back to their checkpoint: one line per iteration.
    let lines = std::fs::read_to_string(killed.join("metrics.jsonl")).unwrap();
    assert_eq!(
        lines.lines().filter(|l| !l.trim().is_empty()).count(),
        ITERATIONS
    );
    let ((killed_metrics, killed_diag), (straight_metrics, straight_diag)) =
        (metrics(&killed), metrics(&straight));
    assert_eq!(killed_metrics, straight_metrics);
    assert_close(&killed_diag, &straight_diag);
    let read = |dir: &Path, file: &str| std::fs::read(dir.join(file)).unwrap();
    assert_eq!(read(&killed, "eval.json"), read(&straight, "eval.json"));
    assert_eq!(
        final_parameters(&killed, ITERATIONS),
        final_parameters(&straight, ITERATIONS)
    );
}

/// The parameters of the run's checkpoint after `iteration` (the files also hold random
/// parameter ids, so they are compared by value).
fn final_parameters(dir: &Path, iteration: usize) -> Vec<f32> {
    use burn::module::{Module, ModuleVisitor, Param};
    use burn::tensor::{Device, Tensor};
    struct Flatten(Vec<f32>);
    impl ModuleVisitor for Flatten {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            let data = param.val().into_data().convert::<f32>();
            self.0.extend(data.try_to_vec::<f32>().unwrap());
        }
    }
    let config = envrl_examples::run::RunConfig::from_toml_file(&dir.join("config.toml")).unwrap();
    let tokenizer = envrl_algos::WordTokenizer::load(dir.join("tokenizer.json")).unwrap();
    let model = config
        .tiny
        .lm_config(envrl::Tokenizer::vocab_size(&tokenizer))
        .init(&Device::flex().autodiff(), 0)
        .unwrap();
    let optimizer = burn::optim::AdamWConfig::new().init();
    let loaded = envrl::load_checkpoint(
        &dir.join("checkpoints")
            .join(envrl::checkpoint_name(iteration)),
        model,
        optimizer,
    )
    .unwrap();
    let mut flat = Flatten(Vec::new());
    loaded.model.visit(&mut flat);
    assert!(!flat.0.is_empty());
    flat.0
}
