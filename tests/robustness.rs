//! Bad input to the learning side: non-finite rewards, empty and all-invalid trajectories,
//! auxiliary examples longer than the context, a PPO run without a critic.

use std::sync::Arc;

use burn::tensor::Device;
use envrl::distributed::SingleProcess;
use envrl::{
    Critic, Environment, Observation, RolloutBatch, ScoreRow, Step, StepOutcome, Tokenizer,
    Trainer, TrainerConfig, TrainerParts, Trajectory, ValueStep, World,
};
use envrl_algos::{
    AdvantageConfig, AlgorithmConfig, AuxConfig, CriticConfig, LmConfig, LmCritic, WordTokenizer,
};
use envrl_envs::keydoor::{KeyDoor, KeyDoorProjection, KeyDoorPrompt};
use envrl_examples::keydoor::{KeyDoorSettings, build, envrl_objectives};

use crate::support::flat_params;

/// The key-and-door world whose rewards are NaN on even tasks.
struct NanRewards {
    inner: KeyDoor,
    poisoned: bool,
}

impl Environment for NanRewards {
    fn reset(&mut self, task: u64) -> Observation {
        self.poisoned = task.is_multiple_of(2);
        self.inner.reset(task)
    }

    fn step(&mut self, action: &str) -> StepOutcome {
        let mut outcome = self.inner.step(action);
        if self.poisoned {
            outcome.reward = f32::NAN;
        }
        outcome
    }

    fn name(&self) -> &str {
        "nan-keydoor"
    }
}

fn small_config() -> TrainerConfig {
    TrainerConfig::builder()
        .with_iterations(2)
        .with_groups(2)
        .with_group_size(4)
        .with_max_steps(6)
        .with_learning_rate(1e-3)
        .with_eval_every(0)
        .with_sampling(envrl::SamplingParams {
            max_new_tokens: 4,
            ..Default::default()
        })
        .build()
        .unwrap()
}

fn nan_trainer(algorithm: &AlgorithmConfig) -> Trainer<envrl_algos::CausalLm> {
    let tokenizer = Arc::new(WordTokenizer::from_corpus(
        KeyDoor::corpus().iter().map(String::as_str),
    ));
    let device = Device::flex().autodiff();
    let model = LmConfig::tiny(tokenizer.vocab_size())
        .init(&device, 3)
        .unwrap();
    let parts = algorithm.build();
    let critic = algorithm.build_critic(&model);
    let make_env = || NanRewards {
        inner: KeyDoor::new(3, 6),
        poisoned: false,
    };
    let parts = TrainerParts {
        world: World::new(make_env, KeyDoorPrompt, KeyDoorProjection)
            .with_tasks((0..4).collect(), Vec::new()),
        tokenizer,
        advantage: parts.advantage,
        loss: parts.loss,
        critic,
        aux: parts.aux,
    };
    Trainer::new(small_config(), model, parts).unwrap()
}

#[test]
fn non_finite_rewards_are_counted_and_never_reach_the_parameters() {
    for name in AdvantageConfig::NAMES {
        let algorithm = AlgorithmConfig {
            advantage: AdvantageConfig::from_name(name).unwrap(),
            ..Default::default()
        };
        let mut trainer = nan_trainer(&algorithm);
        let metrics = trainer.train_iteration().unwrap();
        let poisoned = metrics.values["advantage/nonfinite_rows"];
        assert!(poisoned > 0.0, "{name}: {:?}", metrics.values);
        assert!(
            flat_params(trainer.policy()).iter().all(|p| p.is_finite()),
            "{name}: non-finite parameters"
        );
        assert!(metrics.values["loss/total"].is_finite(), "{name}");
    }
}

#[test]
fn a_critic_based_estimator_without_a_critic_is_a_config_error() {
    let tokenizer = Arc::new(WordTokenizer::from_corpus(["go"]));
    let model = LmConfig::tiny(tokenizer.vocab_size())
        .init(&Device::flex().autodiff(), 0)
        .unwrap();
    let algorithm = AlgorithmConfig {
        advantage: AdvantageConfig::from_name("ppo").unwrap(),
        ..Default::default()
    }
    .build();
    let parts = TrainerParts {
        world: World::new(|| KeyDoor::new(3, 6), KeyDoorPrompt, KeyDoorProjection)
            .with_tasks((0..4).collect(), Vec::new()),
        tokenizer,
        advantage: algorithm.advantage,
        loss: algorithm.loss,
        critic: None,
        aux: Vec::new(),
    };
    let err = Trainer::new(small_config(), model, parts)
        .err()
        .expect("PPO without a critic must be refused")
        .to_string();
    assert!(err.contains("critic"), "{err}");
}

fn step(valid: bool, reward: f32, tokens: usize) -> Step {
    Step {
        t: 0,
        prompt_ids: vec![1],
        response_ids: vec![2; tokens],
        old_logprobs: vec![0.0; tokens],
        observation: "o".into(),
        admissible: Vec::new(),
        next_observation: "o".into(),
        response: String::new(),
        action: String::new(),
        reward,
        valid,
        done: true,
        won: false,
    }
}

#[test]
fn every_estimator_handles_empty_and_all_invalid_trajectories() {
    let trajectory = |group_id, traj_id, steps| Trajectory {
        group_id,
        traj_id,
        task_id: group_id as u64,
        task: String::new(),
        steps,
        policy_version: 0,
    };
    let batch = RolloutBatch {
        trajectories: vec![
            // A trajectory without steps, next to one with a single all-invalid step.
            trajectory(0, 0, Vec::new()),
            trajectory(0, 1, vec![step(false, 0.0, 3)]),
            // A group whose rows are all invalid, with identical scores.
            trajectory(1, 2, vec![step(false, 0.0, 2), step(false, 0.0, 1)]),
            trajectory(1, 3, vec![step(false, 0.0, 2)]),
        ],
    };
    for name in AdvantageConfig::NAMES {
        let estimator = AdvantageConfig::from_name(name).unwrap().build();
        let values: Vec<Vec<f32>> = batch
            .rows()
            .map(|r| vec![0.25; r.step.response_ids.len()])
            .collect();
        let out = estimator.compute_tokens(&batch, Some(&values));
        let lengths: Vec<usize> = out.advantages.iter().map(Vec::len).collect();
        assert_eq!(lengths, vec![3, 2, 1, 2], "{name}");
        assert!(
            out.advantages.iter().flatten().all(|a| a.is_finite()),
            "{name}: {:?}",
            out.advantages
        );
        let empty = estimator.compute_tokens(&RolloutBatch::default(), Some(&[]));
        assert!(empty.advantages.is_empty(), "{name}");
    }
}

#[test]
fn auxiliary_examples_longer_than_the_limit_are_dropped_and_counted() {
    let mut settings = KeyDoorSettings::quick(5);
    settings.warmup_steps = 2;
    settings.trainer.groups = 2;
    settings.trainer.group_size = 2;
    settings.trainer.eval_every = 0;
    settings.trainer.max_aux_tokens = 8;
    settings.algorithm.aux = envrl_objectives();
    // The barely warmed-up policy acts invalidly; keep those transitions so there are examples.
    for aux in &mut settings.algorithm.aux {
        match aux {
            AuxConfig::StatePrediction(c) => c.transitions.drop_invalid = false,
            AuxConfig::InverseDynamics(c) => c.transitions.drop_invalid = false,
            AuxConfig::StatePredictionInSequence(_) => {}
        }
    }
    let mut run = build(&settings, &Device::flex()).unwrap();
    let metrics = run.trainer.train_iteration().unwrap();
    for name in ["state_prediction", "inverse_dynamics"] {
        let dropped = metrics.values[&format!("aux/dropped/{name}")];
        assert!(dropped > 0.0, "{name}: {:?}", metrics.values);
        assert_eq!(metrics.values[&format!("aux/examples/{name}")], 0.0);
    }
}

#[test]
fn the_critic_fits_fixed_value_targets() {
    let tokenizer = WordTokenizer::from_corpus(["go north", "go south", "you win"]);
    let device = Device::flex().autodiff();
    let policy = LmConfig::tiny(tokenizer.vocab_size())
        .init(&device, 1)
        .unwrap();
    let mut critic = LmCritic::new(
        &policy,
        CriticConfig {
            learning_rate: 3e-3,
            value_clip: 10.0,
            ..Default::default()
        },
    );
    let rows = vec![
        ScoreRow {
            context: tokenizer.encode("go north"),
            target: tokenizer.encode("you win"),
        },
        ScoreRow {
            context: tokenizer.encode("go south"),
            target: tokenizer.encode("go"),
        },
    ];
    let returns = vec![vec![1.0, 1.0], vec![-0.5]];
    let loss = |critic: &mut LmCritic| {
        let old = critic.values(&rows);
        let step = ValueStep {
            rows: &rows,
            old_values: &old,
            returns: &returns,
            step_tokens: 3,
        };
        critic.update(step, &SingleProcess).unwrap().stats[0].1
    };
    let first = loss(&mut critic);
    let mut last = first;
    for _ in 0..60 {
        last = loss(&mut critic);
    }
    assert!(last < 0.1 * first, "value loss {first} → {last}");
    let values = critic.values(&rows);
    assert!((values[1][0] + 0.5).abs() < 0.2, "{values:?}");
}

/// A metrics sink that cannot keep what it is given (a full disk).
struct FailingSink;

impl envrl::MetricsSink for FailingSink {
    fn record(&mut self, _: &envrl::IterationMetrics) -> envrl::Result<()> {
        Err(envrl::Error::io(
            "metrics.jsonl",
            std::io::Error::other("No space left on device"),
        ))
    }
}

#[test]
fn a_run_whose_metrics_cannot_be_written_stops_with_the_error() {
    let mut settings = envrl_examples::keydoor::KeyDoorSettings::quick(1);
    settings.warmup_steps = 5;
    settings.trainer.groups = 2;
    settings.trainer.group_size = 2;
    settings.trainer.iterations = 3;
    settings.trainer.eval_every = 0;
    let mut run = envrl_examples::keydoor::build(&settings, &burn::tensor::Device::flex()).unwrap();
    let err = run.trainer.run(&mut FailingSink).unwrap_err().to_string();
    assert!(
        err.contains("metrics.jsonl") && err.contains("No space"),
        "{err}"
    );
    assert_eq!(
        run.trainer.iteration(),
        1,
        "the run went on after losing its metrics"
    );
}
