//! What a run directory guarantees: a fresh start never continues stale metrics, the last
//! checkpoint is written once, and a corrupt newest checkpoint falls back to the previous one.
#![allow(missing_docs)]

use std::process::{Command, Output, Stdio};

/// A short keydoor run of `iterations` iterations into `dir`.
fn train(dir: &std::path::Path, iterations: usize, extra: &[&str]) -> Output {
    let sets = [
        format!("trainer.iterations={iterations}"),
        "trainer.groups=4".into(),
        "trainer.group_size=8".into(),
        "trainer.eval_episodes=16".into(),
        "tasks.eval=16".into(),
        "warmup.steps=50".into(),
        "trainer.checkpoint_every=2".into(),
    ];
    let mut command = Command::new(env!("CARGO_BIN_EXE_envrl"));
    command
        .args(["train", "keydoor", "--quiet", "--output-dir"])
        .arg(dir);
    for set in &sets {
        command.args(["--set", set]);
    }
    command.args(extra).stdout(Stdio::null()).output().unwrap()
}

/// The metrics records of a run without their timings (`perf/…`).
fn records(dir: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v.as_object_mut()
                .unwrap()
                .retain(|k, _| !k.starts_with("perf/"));
            v
        })
        .collect()
}

fn iterations(dir: &std::path::Path) -> Vec<u64> {
    std::fs::read_to_string(dir.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["iteration"]
                .as_u64()
                .unwrap()
        })
        .collect()
}

#[test]
fn a_fresh_start_after_a_kill_before_the_first_checkpoint_starts_new_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    // What a run killed at iteration 2, before any checkpoint, leaves.
    let stale: Vec<String> = (0..3)
        .map(|i| format!(r#"{{"iteration":{i},"env_steps":1}}"#))
        .collect();
    std::fs::write(run.join("metrics.jsonl"), stale.join("\n")).unwrap();
    let out = train(&run, 2, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(iterations(&run), vec![0, 1]);
}

#[test]
fn the_last_checkpoint_is_written_once_and_a_corrupt_one_is_skipped_on_resume() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    assert!(train(&run, 4, &[]).status.success());
    let checkpoints = run.join("checkpoints");
    let manifest = checkpoints.join("ckpt-000004/manifest.json");
    // Complete checkpoints only (a second save of iteration 4 is skipped: see
    // tests/checkpoint_resume.rs).
    let names: Vec<String> = std::fs::read_dir(&checkpoints)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names
            .iter()
            .any(|n| n.ends_with(".tmp") || n.ends_with(".old")),
        "{names:?}"
    );
    assert!(manifest.exists());

    // Flip a byte of the newest model: --resume continues from ckpt-2 instead, with a warning,
    // and ends where an uninterrupted run ends.
    let model = checkpoints.join("ckpt-000004/model.bpk");
    let mut bytes = std::fs::read(&model).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    std::fs::write(&model, bytes).unwrap();
    let out = train(&run, 4, &["--resume"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(iterations(&run), vec![0, 1, 2, 3]);
    let straight = dir.path().join("straight");
    assert!(train(&straight, 4, &[]).status.success());
    assert_eq!(records(&run), records(&straight));
}

#[test]
fn a_live_run_directory_refuses_a_second_run_and_force() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let mut live = Command::new(env!("CARGO_BIN_EXE_envrl"))
        .args(["train", "keydoor", "--quiet", "--output-dir"])
        .arg(&run)
        .args([
            "--set",
            "trainer.iterations=1000",
            "--set",
            "warmup.steps=20000",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lock = run.join(".envrl.lock");
    let start = std::time::Instant::now();
    while std::fs::read_to_string(&lock).map_or(true, |t| t.is_empty()) {
        assert!(
            start.elapsed().as_secs() < 60,
            "the first run never took its lock"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for extra in [&[][..], &["--force"][..]] {
        let second = train(&run, 1, extra);
        let stderr = String::from_utf8_lossy(&second.stderr);
        assert!(!second.status.success());
        assert!(
            stderr.contains("in use by another envrl process") && stderr.contains("pid"),
            "{stderr}"
        );
    }
    live.kill().unwrap();
    live.wait().unwrap();
}

#[test]
fn a_resume_that_changes_the_run_is_refused_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    assert!(train(&run, 2, &[]).status.success());
    let config = std::fs::read_to_string(run.join("config.toml")).unwrap();
    let changed = train(&run, 4, &["--resume", "--set", "trainer.learning_rate=0.5"]);
    let stderr = String::from_utf8_lossy(&changed.stderr);
    assert!(!changed.status.success());
    assert!(
        stderr.contains("trainer.learning_rate") && stderr.contains("--allow-config-change"),
        "{stderr}"
    );
    // Nothing was written.
    assert_eq!(
        std::fs::read_to_string(run.join("config.toml")).unwrap(),
        config
    );
    // More iterations are fine; with the flag the change is accepted and recorded.
    assert!(train(&run, 4, &["--resume"]).status.success());
    let allowed = train(
        &run,
        6,
        &[
            "--resume",
            "--set",
            "trainer.learning_rate=0.5",
            "--allow-config-change",
        ],
    );
    assert!(
        allowed.status.success(),
        "{}",
        String::from_utf8_lossy(&allowed.stderr)
    );
    let log = std::fs::read_to_string(run.join("config-changes.txt")).unwrap();
    assert!(log.contains("trainer.learning_rate"), "{log}");
}

#[test]
fn a_directory_that_is_not_a_run_is_refused_and_force_keeps_what_is_not_envrls() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("mine");
    std::fs::create_dir_all(run.join("checkpoints")).unwrap();
    std::fs::write(run.join("notes.txt"), "my notes").unwrap();
    std::fs::write(run.join("checkpoints/keep.txt"), "mine too").unwrap();
    let refused = train(&run, 1, &[]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        stderr.contains("not a run directory") && stderr.contains("notes.txt"),
        "{stderr}"
    );
    assert!(!run.join("config.toml").exists(), "something was written");
    let forced = train(&run, 2, &["--force"]);
    assert!(
        forced.status.success(),
        "{}",
        String::from_utf8_lossy(&forced.stderr)
    );
    // A second --force over the finished run removes its checkpoints and metrics, not the user's files.
    assert!(train(&run, 2, &["--force"]).status.success());
    assert_eq!(
        std::fs::read_to_string(run.join("notes.txt")).unwrap(),
        "my notes"
    );
    assert_eq!(
        std::fs::read_to_string(run.join("checkpoints/keep.txt")).unwrap(),
        "mine too"
    );
    assert_eq!(iterations(&run), vec![0, 1]);
}

/// The names of a directory's entries, sorted.
fn listing(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn force_with_a_bad_model_or_impossible_sizes_leaves_the_old_run_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    assert!(train(&run, 2, &[]).status.success());
    let before = (listing(&run), listing(&run.join("checkpoints")));
    let metrics = std::fs::read(run.join("metrics.jsonl")).unwrap();
    let garbage = dir.path().join("garbage.gguf");
    std::fs::write(&garbage, "not a model").unwrap();
    let garbage = garbage.to_str().unwrap();
    let attempts: [&[&str]; 4] = [
        &["--force", "--model", garbage],
        &["--force", "--set", "tiny.layers=1000000000"],
        &[
            "--force",
            "--set",
            "trainer.sampling.max_new_tokens=1000000000",
        ],
        &["--force", "--set", "trainer.group_size=4000000000"],
    ];
    for extra in attempts {
        let out = train(&run, 2, extra);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{extra:?} was accepted");
        let (names, sizes) = match extra[2] {
            s if s.starts_with("tiny.") => ("num_hidden_layers", "GiB"),
            s if s.starts_with("trainer.sampling") => ("sampling.max_new_tokens", "GiB"),
            s if s.starts_with("trainer.group_size") => ("groups × group_size", "at most"),
            _ => ("garbage.gguf", ""),
        };
        assert!(
            stderr.contains(names) && stderr.contains(sizes),
            "{extra:?}: {stderr}"
        );
        assert_eq!(
            (listing(&run), listing(&run.join("checkpoints"))),
            before,
            "{extra:?} changed the run directory"
        );
        assert_eq!(std::fs::read(run.join("metrics.jsonl")).unwrap(), metrics);
    }
}

#[test]
fn an_unusable_rollout_server_is_refused_before_anything_is_loaded_or_written() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    assert!(train(&run, 2, &[]).status.success());
    let before = (listing(&run), listing(&run.join("checkpoints")));
    let metrics = std::fs::read(run.join("metrics.jsonl")).unwrap();
    let settings = [
        ("rollout.server=spawn:sglang", "envrl starts"),
        ("rollout.server=localhost:8000", "neither"),
        (
            "rollout.server=http://localhost:8000",
            "set rollout.policy_dir",
        ),
    ];
    for (setting, says) in settings {
        // Over a finished run with --force, and into a directory that does not exist yet.
        let fresh = dir.path().join("fresh");
        for (target, extra) in [(&run, &["--force"][..]), (&fresh, &[][..])] {
            let out = train(target, 2, &[extra, &["--set", setting]].concat());
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{setting} was accepted");
            assert!(stderr.contains(says), "{setting}: {stderr}");
        }
        assert!(!fresh.exists(), "{setting} created the run directory");
        assert_eq!(
            (listing(&run), listing(&run.join("checkpoints"))),
            before,
            "{setting} changed the run directory"
        );
        assert_eq!(std::fs::read(run.join("metrics.jsonl")).unwrap(), metrics);
    }
}

#[test]
fn a_resume_that_fails_changes_nothing_and_a_foreign_checkpoint_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    assert!(train(&run, 2, &[]).status.success());
    let config = std::fs::read(run.join("config.toml")).unwrap();
    let metrics = std::fs::read(run.join("metrics.jsonl")).unwrap();
    // The run's checkpoints replaced by those of a run of another seed.
    let other = dir.path().join("other");
    assert!(train(&other, 2, &["--seed", "1"]).status.success());
    let checkpoints = run.join("checkpoints");
    std::fs::remove_dir_all(&checkpoints).unwrap();
    let copy = Command::new("cp")
        .arg("-r")
        .arg(other.join("checkpoints"))
        .arg(&checkpoints)
        .status()
        .unwrap();
    assert!(copy.success());
    // Refused by name, plainly and with an allowed change: the config, its change log and the
    // metrics are as they were (a changed resume writes them only once it has resumed).
    let changed = [
        "--resume",
        "--allow-config-change",
        "--set",
        "trainer.learning_rate=0.5",
    ];
    for extra in [&["--resume"][..], &changed[..]] {
        let out = train(&run, 4, extra);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "a foreign checkpoint resumed");
        assert!(
            stderr.contains("seed 1")
                && stderr.contains("seed 0")
                && stderr.contains("ckpt-000002"),
            "{stderr}"
        );
        assert_eq!(std::fs::read(run.join("config.toml")).unwrap(), config);
        assert!(!run.join("config-changes.txt").exists());
        assert_eq!(std::fs::read(run.join("metrics.jsonl")).unwrap(), metrics);
    }
}

#[test]
fn the_model_flag_counts_when_a_server_setting_is_checked() {
    // `--model` comes after `--set` on the command line's way into the config: a server
    // setting that needs a pretrained model sees it (the model file is then what fails).
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.gguf");
    std::fs::write(&garbage, "not a model").unwrap();
    let out = train(
        &dir.path().join("run"),
        1,
        &[
            "--model",
            garbage.to_str().unwrap(),
            "--set",
            "rollout.server=spawn:llama-cpp",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("garbage.gguf") && !stderr.contains("needs a pretrained model"),
        "{stderr}"
    );
}

/// A small tmpfs mounted for the test's lifetime (root on Linux only).
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `size` (as `mount -o size=` takes it) at `dir`, or says why not.
    fn mount(dir: &std::path::Path, size: &str) -> Result<Self, String> {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        Ok(Tmpfs(dir.to_path_buf()))
    }

    fn resize(&self, size: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .unwrap();
        assert!(status.success(), "remount failed");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_stops_the_run_naming_the_file_and_resume_recovers_it() {
    let root = tempfile::tempdir().unwrap();
    // Room for the warm start and one checkpoint (about 1 MB each) but not for the second.
    let disk = match Tmpfs::mount(&root.path().join("disk"), "2m") {
        Ok(disk) => disk,
        Err(why) => {
            eprintln!("skipping the disk-full test: cannot mount a tmpfs ({why})");
            return;
        }
    };
    let extra = [
        "--set",
        "trainer.checkpoint_every=1",
        "--set",
        "trainer.keep_checkpoints=2",
    ];
    let straight = root.path().join("straight");
    assert!(train(&straight, 4, &extra).status.success());

    let run = disk.0.join("run");
    let full = train(&run, 4, &extra);
    let stderr = String::from_utf8_lossy(&full.stderr);
    assert!(!full.status.success(), "the run fit on the small disk");
    assert!(
        stderr.contains("No space left on device") && stderr.contains(run.to_str().unwrap()),
        "the error names neither the problem nor the file: {stderr}"
    );
    let last_good = envrl::latest_checkpoint(&run.join("checkpoints")).expect("no checkpoint");
    envrl::verify_checkpoint(&last_good).unwrap();
    let left = listing(&run.join("checkpoints"));
    assert!(
        !left.iter().any(|n| n.ends_with(".tmp")),
        "a partial checkpoint still takes space: {left:?}"
    );

    disk.resize("64m");
    let resumed = train(&run, 4, &[&extra[..], &["--resume"]].concat());
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    assert_eq!(iterations(&run), vec![0, 1, 2, 3]);
    assert_eq!(records(&run), records(&straight));
    assert_eq!(
        std::fs::read(run.join("eval.json")).unwrap(),
        std::fs::read(straight.join("eval.json")).unwrap()
    );
}
