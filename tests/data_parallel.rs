//! Data-parallel learners under MPI equal one process: `mpirun -np 2` and `-np 3`
//! (oversubscribed on two cores) play their shares of the groups (4 groups: 2+2 and 1+1+2) and
//! train a keydoor run to the single process's episodes, parameters and metrics within float
//! rounding, with GRPO + both objectives + gradient diagnostics and with PPO (a critic), in steps
//! whose rows and examples do not divide evenly between the ranks.
//!
//! Each test launches itself under `mpirun` (the ranks run only that test, told so by
//! [`CHILD_VAR`]); rank 0 writes what it trained to a file the test compares. Built with the
//! `mpi` feature (`cargo test -p envrl-tests --features mpi --test data_parallel`), with Open
//! MPI's `mpirun` on the path; skipped with the reason otherwise, and failed under `CI=true`.
#![allow(missing_docs)]

#[path = "support.rs"]
#[allow(dead_code)]
mod support;

#[cfg(feature = "mpi")]
mod under_mpi {
    use std::path::Path;
    use std::process::Command;

    use burn::tensor::Device;
    use envrl::distributed::{Collective, Mpi, SingleProcess};
    use envrl::metric_names;
    use envrl_algos::AdvantageConfig;
    use envrl_examples::keydoor::{KeyDoorSettings, build, envrl_objectives};
    use serde::{Deserialize, Serialize};

    use crate::support::flat_params;

    /// Set in the ranks' environment: the file rank 0 writes its report to.
    const CHILD_VAR: &str = "ENVRL_DATA_PARALLEL_REPORT";

    /// What a run trained: every iteration's metrics, the episodes it played and the weights.
    #[derive(Debug, Serialize, Deserialize)]
    struct Report {
        metrics: Vec<Vec<(String, f64)>>,
        episodes: Vec<Vec<String>>,
        params: Vec<f32>,
    }

    /// Three iterations; 4 groups × 3 episodes and 20-row optimizer steps, so neither the
    /// steps' rows nor the objectives' examples divide evenly by 2 or 3 ranks.
    fn settings() -> KeyDoorSettings {
        let mut s = KeyDoorSettings::quick(11);
        s.warmup_steps = 40;
        s.trainer.iterations = 3;
        s.trainer.groups = 4;
        s.trainer.group_size = 3;
        s.trainer.mini_batch_rows = 20;
        s.trainer.micro_batch_rows = 7;
        s.trainer.eval_every = 0;
        s
    }

    fn grpo_both_objectives() -> KeyDoorSettings {
        let mut s = settings();
        s.algorithm.aux = envrl_objectives();
        s.trainer.grad_diagnostics_every = 2;
        s
    }

    /// Both objectives with each loss's gradient clipped apart, to a bound that binds.
    fn grpo_per_loss_clip() -> KeyDoorSettings {
        let mut s = grpo_both_objectives();
        s.trainer.clip = envrl::GradClip::PerLoss;
        s.trainer.max_grad_norm = CLIP_THAT_BINDS;
        s
    }

    /// A bound below the keydoor objectives' gradient norms early in training.
    const CLIP_THAT_BINDS: f64 = 0.05;

    fn ppo() -> KeyDoorSettings {
        let mut s = settings();
        s.algorithm.advantage = AdvantageConfig::from_name("ppo").unwrap();
        s
    }

    fn train(settings: &KeyDoorSettings, sync: impl Collective + 'static) -> Report {
        let run = build(settings, &Device::flex()).unwrap();
        let mut trainer = run.trainer.with_collective(sync);
        let mut report = Report {
            metrics: Vec::new(),
            episodes: Vec::new(),
            params: Vec::new(),
        };
        for _ in 0..settings.trainer.iterations {
            let metrics = trainer.train_iteration().unwrap();
            report.metrics.push(
                metrics
                    .values
                    .into_iter()
                    .filter(|(name, _)| !metric_names::measures_the_work(name))
                    .collect(),
            );
            let batch = trainer.last_rollout().unwrap();
            report
                .episodes
                .push(batch.rows().map(|r| r.step.response.clone()).collect());
        }
        report.params = flat_params(trainer.policy());
        report
    }

    /// In a rank: trains and, on rank 0, writes the report.
    fn as_rank(settings: &KeyDoorSettings, out: &Path) {
        let mpi = Mpi::init().unwrap();
        let rank = mpi.rank();
        let report = train(settings, mpi);
        if rank == 0 {
            std::fs::write(out, serde_json::to_vec(&report).unwrap()).unwrap();
        }
    }

    /// `mpirun -np ranks` of this test binary, running only `test`; its rank 0's report.
    fn launch(ranks: usize, test: &str) -> Option<Report> {
        let Ok(found) = Command::new("mpirun").arg("--version").output() else {
            let reason = "no `mpirun` on the path (install Open MPI: apt-get install openmpi-bin libopenmpi-dev)";
            assert!(std::env::var("CI").as_deref() != Ok("true"), "{reason}");
            eprintln!("skipped: {reason}");
            return None;
        };
        assert!(found.status.success(), "mpirun --version failed");
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("report.json");
        let status = Command::new("mpirun")
            .args(["--oversubscribe", "-np", &ranks.to_string()])
            .arg(std::env::current_exe().unwrap())
            .args(["--exact", test, "--test-threads=1", "--nocapture"])
            .env(CHILD_VAR, &out)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
            .env("RAYON_NUM_THREADS", "1")
            .status()
            .unwrap();
        assert!(status.success(), "mpirun -np {ranks} {test}: {status}");
        Some(serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap())
    }

    fn relative_difference(a: &[f32], b: &[f32]) -> f64 {
        let num: f64 = a.iter().zip(b).map(|(x, y)| ((x - y) as f64).powi(2)).sum();
        let den: f64 = b.iter().map(|y| (*y as f64).powi(2)).sum();
        (num / den).sqrt()
    }

    /// The ranks' run equals the single process's: the same episodes, every metric and the
    /// parameters within 1e-5 relative.
    fn check(single: &Report, ranks: &Report, label: &str) {
        assert_eq!(
            single.episodes, ranks.episodes,
            "{label}: different episodes"
        );
        for (i, (a, b)) in single.metrics.iter().zip(&ranks.metrics).enumerate() {
            let names = |m: &[(String, f64)]| m.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
            let (mut na, mut nb) = (names(a), names(b));
            na.sort();
            nb.sort();
            assert_eq!(na, nb, "{label}: iteration {i} logs other metrics");
            for (name, value) in a {
                let other = b.iter().find(|(n, _)| n == name).unwrap().1;
                assert!(
                    metric_names::agree_within_rounding(name, *value, other),
                    "{label}: iteration {i}: {name} {value} vs {other}"
                );
            }
        }
        let diff = relative_difference(&ranks.params, &single.params);
        assert!(diff <= 1e-5, "{label}: parameters differ by {diff:e}");
        eprintln!(
            "{label}: the same episodes, metrics within 1e-5, parameters within {diff:.1e} \
             (relative) of one process's"
        );
    }

    fn equal_on_one_two_and_three_ranks(test: &str, settings: fn() -> KeyDoorSettings) {
        if let Some(out) = std::env::var_os(CHILD_VAR) {
            return as_rank(&settings(), Path::new(&out));
        }
        let single = train(&settings(), SingleProcess);
        assert!(
            single.metrics[0]
                .iter()
                .any(|(n, _)| n == metric_names::GRAD_NORM)
        );
        if settings().trainer.max_grad_norm == CLIP_THAT_BINDS {
            let bound = |m: &Vec<(String, f64)>| {
                m.iter()
                    .any(|(n, v)| n == metric_names::CLIP_BOUND && *v > 0.0)
            };
            assert!(single.metrics.iter().any(bound), "the clip never bound");
        }
        for ranks in [2, 3] {
            let Some(report) = launch(ranks, test) else {
                return;
            };
            check(&single, &report, &format!("{test} on {ranks} ranks"));
        }
    }

    #[test]
    fn grpo_with_both_objectives_trains_the_same_on_one_two_and_three_ranks() {
        equal_on_one_two_and_three_ranks(
            "under_mpi::grpo_with_both_objectives_trains_the_same_on_one_two_and_three_ranks",
            grpo_both_objectives,
        );
    }

    #[test]
    fn per_loss_clipping_trains_the_same_on_one_two_and_three_ranks() {
        equal_on_one_two_and_three_ranks(
            "under_mpi::per_loss_clipping_trains_the_same_on_one_two_and_three_ranks",
            grpo_per_loss_clip,
        );
    }

    #[test]
    fn ppo_trains_the_same_on_one_two_and_three_ranks() {
        equal_on_one_two_and_three_ranks(
            "under_mpi::ppo_trains_the_same_on_one_two_and_three_ranks",
            ppo,
        );
    }
}

#[cfg(not(feature = "mpi"))]
#[test]
fn data_parallel_tests_need_the_mpi_feature() {
    // `.ci/run` runs them with the feature, after installing Open MPI.
    eprintln!(
        "skipped: built without the `mpi` feature; run \
         `cargo test --release -p envrl-tests --features mpi --test data_parallel`"
    );
}
