//! `trainer.max_staleness = 1`: the next iteration's rollout plays on another thread while this
//! iteration's update runs, by the policy as it was before the update. Such a run plays exactly
//! what a synchronous run plays with a server one version behind (same tasks, streams and
//! policies), stamps each trajectory with the version that played it, publishes each version
//! to a server once, resumes exactly from a checkpoint (which keeps the rollout played ahead),
//! and stops, asking for a resume, when the rollout playing ahead fails.

use std::sync::{Arc, Mutex};

use burn::module::Module;
use burn::tensor::Device;
use envrl::metric_names::{LOGPROB_KL, ROLLOUT_WAIT_S, STALENESS};
use envrl::{Generation, Policy, PolicyServer, Sampler, SamplingParams};
use envrl_algos::CausalLm;
use envrl_examples::keydoor::{KeyDoorSettings, build};
use rand_chacha::ChaCha8Rng;

use crate::policy_server::{InProcessServer, LaggingServer, episodes, settings};
use crate::support::flat_params;

fn ahead() -> KeyDoorSettings {
    let mut s = settings();
    s.trainer.max_staleness = 1;
    s
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0f32, f32::max)
}

#[test]
fn playing_ahead_plays_what_a_server_one_version_behind_plays() {
    let s = ahead();
    let mut ahead = build(&s, &Device::flex()).unwrap().trainer;
    let mut lagging = build(&settings(), &Device::flex())
        .unwrap()
        .trainer
        .with_policy_server(LaggingServer::default());
    for iteration in 0..s.trainer.iterations {
        let metrics = ahead.train_iteration().unwrap();
        let lagged = lagging.train_iteration().unwrap();
        assert_eq!(
            episodes(&ahead),
            episodes(&lagging),
            "iteration {iteration}"
        );
        let played_by = iteration.saturating_sub(1);
        let rollout = ahead.last_rollout().unwrap();
        assert!(
            rollout
                .trajectories
                .iter()
                .all(|t| t.policy_version == played_by)
        );
        assert_eq!(metrics.values[STALENESS], (iteration - played_by) as f64);
        // The learner recomputes the old log-probabilities: the lag is measured as the
        // server's is.
        let (kl, lagged_kl) = (metrics.values[LOGPROB_KL], lagged.values[LOGPROB_KL]);
        assert!((kl - lagged_kl).abs() <= 1e-6, "{kl} vs {lagged_kl}");
        let last = iteration + 1 == s.trainer.iterations;
        assert_eq!(metrics.values.contains_key(ROLLOUT_WAIT_S), !last);
    }
    let worst = max_diff(&flat_params(ahead.policy()), &flat_params(lagging.policy()));
    assert!(worst <= 1e-5, "parameters differ by {worst}");
    // And it is not the synchronous run: from the second iteration the policy is a version
    // behind.
    let mut synchronous = build(&settings(), &Device::flex()).unwrap().trainer;
    for _ in 0..s.trainer.iterations {
        synchronous.train_iteration().unwrap();
    }
    assert_ne!(episodes(&synchronous), episodes(&ahead));
}

#[test]
fn a_served_run_that_plays_ahead_publishes_each_version_once() {
    let s = ahead();
    let versions = Arc::new(Mutex::new(Vec::new()));
    let server = InProcessServer::new(&versions, false);
    let mut trainer = build(&s, &Device::flex())
        .unwrap()
        .trainer
        .with_policy_server(server);
    let mut played_by = Vec::new();
    for _ in 0..s.trainer.iterations {
        trainer.train_iteration().unwrap();
        let rollout = trainer.last_rollout().unwrap();
        played_by.push(rollout.trajectories[0].policy_version);
    }
    // Version 0 plays iterations 0 and 1, version 1 plays iteration 2; the last iteration
    // plays nothing ahead.
    assert_eq!(played_by, vec![0, 0, 1]);
    assert_eq!(*versions.lock().unwrap(), vec![0, 1]);
}

#[test]
fn a_run_that_plays_ahead_resumes_exactly() {
    let device = Device::flex();
    let mut straight = build(&ahead(), &device).unwrap().trainer;
    for _ in 0..3 {
        straight.train_iteration().unwrap();
    }

    let dir = tempfile::tempdir().unwrap();
    let mut first = build(&ahead(), &device)
        .unwrap()
        .trainer
        .with_checkpoint_dir(dir.path());
    first.train_iteration().unwrap();
    let path = first.save_checkpoint().unwrap().unwrap();
    assert!(path.join(envrl::PENDING_ROLLOUT_FILE).is_file());
    drop(first);

    let mut resumed = build(&ahead(), &device).unwrap().trainer;
    resumed.resume(&path).unwrap();
    for _ in 0..2 {
        resumed.train_iteration().unwrap();
    }
    assert_eq!(straight.last_rollout(), resumed.last_rollout());
    let worst = max_diff(
        &flat_params(straight.policy()),
        &flat_params(resumed.policy()),
    );
    assert!(worst <= 1e-5, "parameters differ by {worst}");
}

/// Samples with the published policy until version `fails_from` is published, then refuses.
struct FailsFrom {
    published: Option<CausalLm>,
    version: usize,
    fails_from: usize,
}

impl Sampler for FailsFrom {
    fn sample(
        &self,
        prompts: &[Vec<u32>],
        stop_ids: &[u32],
        params: &SamplingParams,
        rngs: &mut [ChaCha8Rng],
    ) -> envrl::Result<Vec<Generation>> {
        match &self.published {
            Some(policy) if self.version < self.fails_from => {
                Ok(policy.generate(prompts, stop_ids, params, rngs))
            }
            _ => Err(envrl::Error::RolloutServer {
                server: "flaky".into(),
                reason: format!("version {} refused", self.version),
            }),
        }
    }
}

impl PolicyServer<CausalLm> for FailsFrom {
    fn publish(&mut self, policy: &CausalLm, version: usize) -> envrl::Result<()> {
        self.published = Some(policy.valid());
        self.version = version;
        Ok(())
    }
}

#[test]
fn a_rollout_failing_while_it_plays_ahead_stops_the_trainer_until_a_resume() {
    let dir = tempfile::tempdir().unwrap();
    let server = FailsFrom {
        published: None,
        version: 0,
        fails_from: 1,
    };
    let mut trainer = build(&ahead(), &Device::flex())
        .unwrap()
        .trainer
        .with_policy_server(server)
        .with_checkpoint_dir(dir.path());
    trainer.train_iteration().unwrap();
    let saved = trainer.save_checkpoint().unwrap().unwrap();
    // Iteration 1 publishes version 1 for the rollout it plays ahead, which the server refuses
    // after the update has moved the weights.
    let err = trainer.train_iteration().unwrap_err().to_string();
    assert!(
        err.contains("rollout server flaky: version 1 refused"),
        "{err}"
    );
    for err in [
        trainer.train_iteration().unwrap_err().to_string(),
        trainer.save_checkpoint().unwrap_err().to_string(),
    ] {
        assert!(
            err.contains("the trainer stopped") && err.contains("resume"),
            "{err}"
        );
    }
    // A resume from the last checkpoint goes on (here as far as the server allows: iteration 1
    // trains on the rollout version 0 played ahead).
    trainer.resume(&saved).unwrap();
    assert_eq!(trainer.iteration(), 1);
    assert!(trainer.train_iteration().is_err());
}
