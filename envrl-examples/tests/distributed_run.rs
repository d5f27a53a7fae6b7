//! `envrl train` under `mpirun` equals the single-process run: keydoor and ALFWorld (cpu-tiny,
//! three iterations, GRPO + both objectives; ALFWorld with LoRA) on two ranks log the same
//! metrics and evaluation; a killed rank ends the job and the run resumes exactly (on three
//! ranks); a rank with another config is refused; the watchdog names a rank that stopped
//! answering. Needs the `mpi` feature and Open MPI's `mpirun` (`cargo test --release -p
//! envrl-examples --features mpi --test distributed_run`; `.ci/run` installs Open MPI and runs
//! it); skipped otherwise.
#![allow(missing_docs)]

#[cfg(feature = "mpi")]
mod under_mpi {
    use std::path::Path;
    use std::process::{Child, Command, Output, Stdio};
    use std::time::{Duration, Instant};

    /// A short keydoor run with both objectives and the gradient diagnostics.
    const KEYDOOR: &[&str] = &[
        "train",
        "keydoor",
        "--quiet",
        "--set",
        "trainer.groups=4",
        "--set",
        "trainer.group_size=3",
        "--set",
        "trainer.mini_batch_rows=20",
        "--set",
        "trainer.eval_every=2",
        "--set",
        "trainer.eval_episodes=12",
        "--set",
        "tasks.eval=12",
        "--set",
        "warmup.steps=40",
        "--set",
        "trainer.grad_diagnostics_every=2",
        "--aux",
        "state_prediction,inverse_dynamics",
    ];

    /// The same on the embedded ALFWorld games, with LoRA adapters (the ranks exchange the
    /// adapters' gradients only; the frozen base weights have none on any rank).
    const ALFWORLD: &[&str] = &[
        "train",
        "alfworld",
        "--quiet",
        "--set",
        "lora.rank=4",
        "--set",
        "trainer.groups=4",
        "--set",
        "trainer.group_size=3",
        "--set",
        "trainer.eval_every=2",
        "--set",
        "trainer.eval_episodes=8",
        "--set",
        "tasks.eval=8",
        "--set",
        "warmup.steps=40",
        "--aux",
        "state_prediction,inverse_dynamics",
    ];

    fn mpirun_found() -> bool {
        let found = Command::new("mpirun")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            let reason = "no `mpirun` on the path (apt-get install openmpi-bin libopenmpi-dev)";
            assert!(std::env::var("CI").as_deref() != Ok("true"), "{reason}");
            eprintln!("skipped: {reason}");
        }
        found
    }

    /// `envrl ARGS --iterations N --output-dir DIR EXTRA`, alone or as `ranks` MPI ranks.
    fn envrl(
        ranks: usize,
        args: &[&str],
        iterations: usize,
        dir: &Path,
        extra: &[&str],
    ) -> Command {
        let mut command = match ranks {
            1 => Command::new(env!("CARGO_BIN_EXE_envrl")),
            n => {
                let mut c = Command::new("mpirun");
                c.args(["--oversubscribe", "-np", &n.to_string()])
                    .arg(env!("CARGO_BIN_EXE_envrl"));
                c
            }
        };
        command
            .args(args)
            .args(["--iterations", &iterations.to_string()])
            .arg("--output-dir")
            .arg(dir)
            .args(extra)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("RAYON_NUM_THREADS", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        command
    }

    fn finished(command: &mut Command) -> Output {
        let output = command.output().unwrap();
        assert!(
            output.status.success(),
            "{command:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    /// Every iteration's metrics without those that measure the work (the last record of each, as a resumed run
    /// rewrites the iterations after its checkpoint).
    fn metrics(dir: &Path) -> Vec<serde_json::Map<String, serde_json::Value>> {
        let text = std::fs::read_to_string(dir.join("metrics.jsonl")).unwrap();
        let mut by_iteration = std::collections::BTreeMap::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let mut record: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(line).unwrap();
            record.retain(|k, _| !envrl::metric_names::measures_the_work(k));
            by_iteration.insert(record["iteration"].as_u64().unwrap(), record);
        }
        by_iteration.into_values().collect()
    }

    /// The same metrics within float rounding ([`envrl::metric_names::agree_within_rounding`]:
    /// 1e-5 relative) and the same evaluation.
    fn assert_same_run(single: &Path, ranks: &Path, label: &str) {
        let (a, b) = (metrics(single), metrics(ranks));
        assert_eq!(a.len(), b.len(), "{label}: iterations");
        for (x, y) in a.iter().zip(&b) {
            let mut keys: Vec<&String> = x.keys().collect();
            let mut other: Vec<&String> = y.keys().collect();
            keys.sort();
            other.sort();
            assert_eq!(keys, other, "{label}: other metrics at {}", x["iteration"]);
            for (k, v) in x {
                let (p, q) = (v.as_f64().unwrap(), y[k].as_f64().unwrap());
                assert!(
                    envrl::metric_names::agree_within_rounding(k, p, q),
                    "{label}: iteration {}: {k} {p} vs {q}",
                    x["iteration"]
                );
            }
        }
        let eval = |dir: &Path| std::fs::read_to_string(dir.join("eval.json")).unwrap();
        assert_eq!(eval(single), eval(ranks), "{label}: evaluation");
    }

    #[test]
    fn keydoor_and_alfworld_on_two_ranks_equal_one_process() {
        if !mpirun_found() {
            return;
        }
        for (label, args) in [("keydoor", KEYDOOR), ("alfworld", ALFWORLD)] {
            let dir = tempfile::tempdir().unwrap();
            let (single, two) = (dir.path().join("single"), dir.path().join("two"));
            finished(&mut envrl(1, args, 3, &single, &[]));
            finished(&mut envrl(2, args, 3, &two, &[]));
            assert_same_run(&single, &two, label);
            // One writer: rank 1 left nothing beside rank 0's files.
            assert!(two.join("checkpoints").is_dir());
        }
    }

    /// The processes of this test's job whose MPI rank is `rank`.
    fn rank_pids(marker: &str, rank: usize) -> Vec<u32> {
        let wanted = [
            format!("ENVRL_TEST_JOB={marker}"),
            format!("OMPI_COMM_WORLD_RANK={rank}"),
        ];
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
                    return false;
                };
                let vars: Vec<&[u8]> = environ.split(|&b| b == 0).collect();
                wanted.iter().all(|w| vars.contains(&w.as_bytes()))
            })
            .collect()
    }

    fn signal(pids: &[u32], name: &str) {
        for pid in pids {
            let _ = Command::new("kill").args([name, &pid.to_string()]).status();
        }
    }

    /// Waits until `dir`'s metrics hold `lines` records.
    fn wait_for_metrics(child: &mut Child, dir: &Path, lines: usize) {
        let start = Instant::now();
        loop {
            let n = std::fs::read_to_string(dir.join("metrics.jsonl"))
                .map(|t| t.lines().count())
                .unwrap_or(0);
            if n >= lines {
                return;
            }
            assert!(child.try_wait().unwrap().is_none(), "the job ended early");
            assert!(start.elapsed() < Duration::from_secs(600), "no progress");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for the job to end within `limit` and returns its standard error.
    fn ended_within(mut child: Child, limit: Duration) -> (bool, String) {
        let start = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if start.elapsed() > limit {
                let _ = child.kill();
                panic!("the job did not end within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let output = child.wait_with_output().unwrap();
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    #[test]
    fn a_killed_rank_ends_the_job_and_the_run_resumes_exactly() {
        if !mpirun_found() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let (straight, killed) = (dir.path().join("straight"), dir.path().join("killed"));
        let every = ["--set", "trainer.checkpoint_every=1"];
        finished(&mut envrl(1, KEYDOOR, 4, &straight, &every));
        let marker = format!("killed-{}", std::process::id());
        let mut child = envrl(2, KEYDOOR, 4, &killed, &every)
            .env("ENVRL_TEST_JOB", &marker)
            .spawn()
            .unwrap();
        wait_for_metrics(&mut child, &killed, 2);
        signal(&rank_pids(&marker, 1), "-KILL");
        let (ok, stderr) = ended_within(child, Duration::from_secs(60));
        assert!(!ok, "the job survived a killed rank");
        assert!(
            stderr.contains("rank 1"),
            "the error does not name rank 1: {stderr}"
        );
        finished(&mut envrl(
            2,
            KEYDOOR,
            4,
            &killed,
            &[&every[..], &["--resume"]].concat(),
        ));
        assert_same_run(&straight, &killed, "killed and resumed");
    }

    #[test]
    fn a_rank_with_another_config_is_refused_before_training() {
        if !mpirun_found() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        let exe = env!("CARGO_BIN_EXE_envrl");
        // Two programs in one job: rank 1 asks for another seed.
        let mut command = Command::new("mpirun");
        command.args(["--oversubscribe", "-np", "1", exe]);
        command.args(KEYDOOR).arg("--output-dir").arg(&out);
        command.args([":", "-np", "1", exe]);
        command.args(KEYDOOR).arg("--output-dir").arg(&out);
        command.args(["--seed", "7"]);
        let output = command
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .stdout(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success());
        assert!(
            stderr.contains("rank(s) [1] have another config than rank 0"),
            "{stderr}"
        );
        assert!(!out.join("metrics.jsonl").exists(), "it trained");
    }

    #[test]
    fn the_watchdog_names_a_rank_that_stopped_answering() {
        if !mpirun_found() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        let marker = format!("stopped-{}", std::process::id());
        let mut child = envrl(2, KEYDOOR, 4, &out, &[])
            .env("ENVRL_TEST_JOB", &marker)
            .env("ENVRL_MPI_TIMEOUT_S", "5")
            .spawn()
            .unwrap();
        wait_for_metrics(&mut child, &out, 1);
        let stopped = rank_pids(&marker, 1);
        signal(&stopped, "-STOP");
        let (ok, stderr) = ended_within(child, Duration::from_secs(120));
        signal(&stopped, "-KILL");
        assert!(!ok);
        assert!(
            stderr.contains("watchdog") && stderr.contains("rank(s) [1] did not arrive"),
            "{stderr}"
        );
    }
}

#[cfg(not(feature = "mpi"))]
#[test]
fn distributed_runs_need_the_mpi_feature() {
    eprintln!(
        "skipped: built without the `mpi` feature; run \
         `cargo test --release -p envrl-examples --features mpi --test distributed_run`"
    );
}
