//! A policy server plugged into the trainer ([`Trainer::with_policy_server`]): the trainer
//! publishes each iteration's policy before its rollout (and again after a resume), the
//! rollouts come from the server, and the old log-probabilities are recomputed by the learner.
//! The server here samples with a published copy of the policy in this process, so the run
//! must equal the trainer's own: the same episodes and parameters, published at versions 0, 1,
//! 2. A server that fails stops the iteration with its error. A server one version behind is
//! measured (`rollout/logprob_kl`) and, with `trainer.rollout_is_cap`, corrected.

use std::sync::{Arc, Mutex};

use burn::module::Module;
use burn::tensor::Device;
use envrl::{Generation, Policy, PolicyServer, Sampler, SamplingParams};
use envrl_algos::CausalLm;
use envrl_examples::keydoor::{KeyDoorSettings, build};
use rand_chacha::ChaCha8Rng;

use crate::support::flat_params;

/// Samples with the last policy published to it, or fails every request when `broken`.
pub(crate) struct InProcessServer {
    published: Option<CausalLm>,
    versions: Arc<Mutex<Vec<usize>>>,
    broken: bool,
}

impl InProcessServer {
    /// A server that records each published version into `versions` (and refuses every
    /// request when `broken`).
    pub(crate) fn new(versions: &Arc<Mutex<Vec<usize>>>, broken: bool) -> Self {
        Self {
            published: None,
            versions: Arc::clone(versions),
            broken,
        }
    }
}

impl Sampler for InProcessServer {
    fn sample(
        &self,
        prompts: &[Vec<u32>],
        stop_ids: &[u32],
        params: &SamplingParams,
        rngs: &mut [ChaCha8Rng],
    ) -> envrl::Result<Vec<Generation>> {
        match (&self.published, self.broken) {
            (Some(policy), false) => Ok(policy.generate(prompts, stop_ids, params, rngs)),
            _ => Err(envrl::Error::RolloutServer {
                server: "in-process".into(),
                reason: "refused".into(),
            }),
        }
    }
}

impl PolicyServer<CausalLm> for InProcessServer {
    fn publish(&mut self, policy: &CausalLm, version: usize) -> envrl::Result<()> {
        self.published = Some(policy.valid());
        self.versions.lock().unwrap().push(version);
        Ok(())
    }
}

pub(crate) fn settings() -> KeyDoorSettings {
    let mut s = KeyDoorSettings::quick(3);
    s.warmup_steps = 20;
    s.trainer.iterations = 3;
    s.trainer.eval_every = 0;
    s
}

pub(crate) fn episodes(trainer: &envrl::Trainer<CausalLm>) -> Vec<String> {
    let batch = trainer.last_rollout().unwrap();
    batch.rows().map(|r| r.step.response.clone()).collect()
}

#[test]
fn a_policy_server_samples_the_rollouts_of_each_published_policy() {
    let s = settings();
    let mut own = build(&s, &Device::flex()).unwrap().trainer;
    let versions = Arc::new(Mutex::new(Vec::new()));
    let server = InProcessServer::new(&versions, false);
    let mut served = build(&s, &Device::flex())
        .unwrap()
        .trainer
        .with_policy_server(server);
    for iteration in 0..s.trainer.iterations {
        own.train_iteration().unwrap();
        let metrics = served.train_iteration().unwrap();
        assert_eq!(episodes(&own), episodes(&served));
        // Every trajectory records the policy version that played it.
        let rollout = served.last_rollout().unwrap();
        assert!(
            rollout
                .trajectories
                .iter()
                .all(|t| t.policy_version == iteration)
        );
        // The server sampled with the learner's own weights: the recompute agrees.
        let mismatch = metrics.values[envrl::metric_names::LOGPROB_MISMATCH];
        assert!(mismatch < 1e-5, "log-prob mismatch {mismatch}");
    }
    assert_eq!(*versions.lock().unwrap(), vec![0, 1, 2]);
    let (a, b) = (flat_params(own.policy()), flat_params(served.policy()));
    let worst = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0f32, f32::max);
    assert!(worst <= 1e-5, "parameters differ by {worst}");
}

#[test]
fn a_failing_policy_server_stops_the_iteration_with_its_error() {
    let server = InProcessServer::new(&Arc::default(), true);
    let mut trainer = build(&settings(), &Device::flex())
        .unwrap()
        .trainer
        .with_policy_server(server);
    let err = trainer.train_iteration().unwrap_err().to_string();
    assert!(err.contains("rollout server in-process: refused"), "{err}");
    assert_eq!(trainer.iteration(), 0);
}

/// Samples with the policy published before the last one: one version behind the learner.
#[derive(Default)]
pub(crate) struct LaggingServer {
    current: Option<CausalLm>,
    previous: Option<CausalLm>,
}

impl Sampler for LaggingServer {
    fn sample(
        &self,
        prompts: &[Vec<u32>],
        stop_ids: &[u32],
        params: &SamplingParams,
        rngs: &mut [ChaCha8Rng],
    ) -> envrl::Result<Vec<Generation>> {
        let policy = self.previous.as_ref().or(self.current.as_ref()).unwrap();
        Ok(policy.generate(prompts, stop_ids, params, rngs))
    }
}

impl PolicyServer<CausalLm> for LaggingServer {
    fn publish(&mut self, policy: &CausalLm, _version: usize) -> envrl::Result<()> {
        self.previous = self.current.replace(policy.valid());
        Ok(())
    }
}

#[test]
fn truncated_importance_sampling_is_a_no_op_in_step_and_corrects_a_stale_server() {
    use envrl::metric_names::{IS_CAPPED, IS_WEIGHT, LOGPROB_KL};
    let mut s = settings();
    let mut own = build(&s, &Device::flex()).unwrap().trainer;
    s.trainer.rollout_is_cap = Some(2.0);
    let server = InProcessServer::new(&Arc::default(), false);
    let mut in_step = build(&s, &Device::flex())
        .unwrap()
        .trainer
        .with_policy_server(server);
    for _ in 0..s.trainer.iterations {
        own.train_iteration().unwrap();
        let metrics = in_step.train_iteration().unwrap();
        let weight = metrics.values[IS_WEIGHT];
        assert!((weight - 1.0).abs() < 1e-5, "importance weight {weight}");
        assert_eq!(metrics.values[IS_CAPPED], 0.0);
    }
    let worst = flat_params(own.policy())
        .iter()
        .zip(&flat_params(in_step.policy()))
        .map(|(x, y)| (x - y).abs())
        .fold(0.0f32, f32::max);
    assert!(worst <= 1e-5, "parameters differ by {worst}");

    // One version behind: from the second iteration the server samples an older policy.
    let stale_run = |cap: Option<f64>| {
        let mut s = settings();
        s.trainer.rollout_is_cap = cap;
        let mut trainer = build(&s, &Device::flex())
            .unwrap()
            .trainer
            .with_policy_server(LaggingServer::default());
        let metrics: Vec<_> = (0..s.trainer.iterations)
            .map(|_| trainer.train_iteration().unwrap().values)
            .collect();
        (metrics, flat_params(trainer.policy()))
    };
    let (plain, plain_params) = stale_run(None);
    let (corrected, corrected_params) = stale_run(Some(1.5));
    let last = plain.len() - 1;
    assert!(
        plain[last][LOGPROB_KL] > 1e-6,
        "{}",
        plain[last][LOGPROB_KL]
    );
    assert!(!plain[last].contains_key(IS_WEIGHT));
    let weight = corrected[last][IS_WEIGHT];
    let capped = corrected[last][IS_CAPPED];
    assert!(
        weight > 0.0 && weight <= 1.5 && (weight - 1.0).abs() > 1e-6,
        "{weight}"
    );
    assert!((0.0..=1.0).contains(&capped), "{capped}");
    let moved = plain_params
        .iter()
        .zip(&corrected_params)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0f32, f32::max);
    assert!(moved > 1e-6, "the correction changed nothing ({moved})");
}
