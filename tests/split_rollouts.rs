//! Data-parallel acting without MPI: ranks as threads of one process ([`ThreadRank`]) each
//! play their share of the groups and of the evaluation, gather the trajectories and train a
//! keydoor run to the single process's episodes, metrics and parameters. Every trajectory
//! samples from its own stream, so the episodes do not depend on how many ranks played them.
//! With PPO, the critic's values and steps are split between the ranks too; with
//! `max_staleness` 1, each rank plays its share of the next rollout during the update.

use burn::tensor::Device;
use envrl::distributed::{Collective, SingleProcess};
use envrl_algos::AdvantageConfig;
use envrl_examples::keydoor::{KeyDoorSettings, build, envrl_objectives};

use crate::support::{ThreadRank, flat_params};

/// 5 groups of 3 (uneven over 2 and 3 ranks), both objectives, two iterations and a 7-episode
/// evaluation before and after.
fn grpo_both_objectives() -> KeyDoorSettings {
    let mut s = KeyDoorSettings::quick(5);
    s.warmup_steps = 30;
    s.trainer.iterations = 2;
    s.trainer.groups = 5;
    s.trainer.group_size = 3;
    s.trainer.mini_batch_rows = 16;
    s.trainer.eval_every = 0;
    s.algorithm.aux = envrl_objectives();
    s
}

/// The same with PPO instead of GRPO (a critic, no objectives), three iterations so that the
/// critic's trained values reach the advantages of two of them.
fn ppo() -> KeyDoorSettings {
    let mut s = grpo_both_objectives();
    s.algorithm.aux = Vec::new();
    s.algorithm.advantage = AdvantageConfig::from_name("ppo").unwrap();
    s.trainer.iterations = 3;
    s
}

/// What one rank saw: each evaluation's and iteration's episodes (responses), the acting
/// copy's log-probabilities of the training rollouts, the metrics that do not measure the work,
/// and the trained parameters.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    episodes: Vec<Vec<String>>,
    logprobs: Vec<f32>,
    metrics: Vec<Vec<(String, f64)>>,
    params: Vec<f32>,
    /// Prompt tokens the training rollouts did not prefill because a row beside them shared
    /// them (which depends on which rows are sampled together).
    prefill_saved: f64,
}

fn responses(batch: &envrl::RolloutBatch) -> Vec<String> {
    batch.rows().map(|r| r.step.response.clone()).collect()
}

fn train(s: &KeyDoorSettings, sync: impl Collective + 'static) -> Seen {
    let run = build(s, &Device::flex()).unwrap();
    let mut trainer = run.trainer.with_collective(sync);
    let mut seen = Seen {
        episodes: vec![responses(&trainer.evaluate(7).unwrap().batch)],
        logprobs: Vec::new(),
        metrics: Vec::new(),
        params: Vec::new(),
        prefill_saved: 0.0,
    };
    for _ in 0..s.trainer.iterations {
        let metrics = trainer.train_iteration().unwrap();
        seen.prefill_saved += metrics
            .get(envrl::metric_names::PREFILL_TOKENS_SAVED)
            .unwrap();
        seen.metrics.push(
            metrics
                .values
                .into_iter()
                .filter(|(name, _)| !envrl::metric_names::measures_the_work(name))
                .collect(),
        );
        let batch = trainer.last_rollout().unwrap();
        seen.episodes.push(responses(batch));
        seen.logprobs
            .extend(batch.rows().flat_map(|r| r.step.old_logprobs.clone()));
    }
    seen.episodes
        .push(responses(&trainer.evaluate(7).unwrap().batch));
    seen.params = flat_params(trainer.policy());
    seen
}

#[test]
fn ranks_that_split_the_rollouts_train_as_one_process() {
    ranks_train_as_one_process(&grpo_both_objectives());
}

#[test]
fn ranks_that_split_the_critic_train_as_one_process() {
    ranks_train_as_one_process(&ppo());
}

/// `trainer.max_generation_rows` samples a turn's rows in chunks (here 4 of the 15 training
/// slots and of the 7 evaluation episodes) and trains as one call per turn.
#[test]
fn rows_sampled_in_chunks_train_as_one_call_per_turn() {
    let whole = grpo_both_objectives();
    let mut chunked = whole.clone();
    chunked.trainer.max_generation_rows = 4;
    let (chunked, whole) = (train(&chunked, SingleProcess), train(&whole, SingleProcess));
    assert_trains_alike("chunks of 4 rows", &chunked, &whole);
    // Groups of 3 cut by chunks of 4 share fewer prompts: the chunks were sampled apart.
    assert!(
        chunked.prefill_saved < whole.prefill_saved,
        "{} vs {} prompt tokens shared",
        chunked.prefill_saved,
        whole.prefill_saved
    );
}

#[test]
fn ranks_that_play_the_next_rollout_ahead_train_as_one_process() {
    let mut s = grpo_both_objectives();
    s.trainer.iterations = 3;
    s.trainer.max_staleness = 1;
    ranks_train_as_one_process(&s);
}

fn ranks_train_as_one_process(s: &KeyDoorSettings) {
    let single = train(s, SingleProcess);
    let ppo = s.algorithm.advantage.build().needs_values();
    assert_eq!(
        single.metrics[0].iter().any(|(n, _)| n == "loss/value"),
        ppo,
        "a critic's step logs loss/value"
    );
    for size in [2, 3] {
        let ranks: Vec<Seen> = std::thread::scope(|scope| {
            let handles: Vec<_> = ThreadRank::group(size)
                .into_iter()
                .map(|rank| scope.spawn(move || train(s, rank)))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (rank, seen) in ranks.iter().enumerate() {
            assert_trains_alike(&format!("rank {rank} of {size}"), seen, &single);
        }
    }
}

/// `seen` played the same episodes as `single` and trained to the same metrics and parameters,
/// up to the last bits of batched products.
fn assert_trains_alike(label: &str, seen: &Seen, single: &Seen) {
    assert_eq!(seen.episodes, single.episodes, "{label}: other episodes");
    // The same tokens from batches of other rows: their log-probabilities agree up to
    // the last bits of the batched products, an error that grows with the value (a
    // log-probability of −12 carries about 1e-6 of relative rounding; which bits differ
    // depends on the CPU's kernels: 1.6e-5 absolute on an AVX-512 machine).
    let worst = seen
        .logprobs
        .iter()
        .zip(&single.logprobs)
        .map(|(a, b)| (a - b).abs() / (1.0 + b.abs()))
        .fold(0.0f32, f32::max);
    eprintln!(
        "{label}: old log-probabilities within {worst:.1e} (relative to 1 + |value|) of \
         one process's"
    );
    assert!(
        worst <= 1e-5,
        "{label}: log-probabilities differ by {worst:e} relative to 1 + |value|"
    );
    for (i, (a, b)) in single.metrics.iter().zip(&seen.metrics).enumerate() {
        assert_eq!(
            a.len(),
            b.len(),
            "{label}: iteration {i} logs other metrics"
        );
        for ((name, x), (other, y)) in a.iter().zip(b) {
            assert_eq!(name, other);
            assert!(
                envrl::metric_names::agree_within_rounding(name, *x, *y),
                "{label}: iteration {i}: {name} {x} vs {y}"
            );
        }
    }
    let (num, den) = seen
        .params
        .iter()
        .zip(&single.params)
        .fold((0.0, 0.0), |(n, d), (a, b)| {
            (n + ((a - b) as f64).powi(2), d + (*b as f64).powi(2))
        });
    let diff = (num / den).sqrt();
    assert!(diff <= 1e-5, "{label}: parameters differ by {diff:e}");
}
