use burn::optim::{AdamWConfig, GradientsParams};
use burn::tensor::Device;
use envrl::{AuxObjective, Policy, RolloutBatch, Step, Tokenizer, Trajectory, WorldInfo};
use envrl_algos::{InverseDynamics, LmConfig, StatePrediction, WordTokenizer};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// A batch of key-and-door-like transitions.
fn batch() -> RolloutBatch {
    let rooms = ["garden", "kitchen", "hall", "study"];
    let steps = (0..3)
        .map(|t| Step {
            t,
            prompt_ids: vec![1],
            response_ids: vec![1],
            old_logprobs: vec![0.0],
            observation: format!("you are in the {} .", rooms[t]),
            admissible: vec![],
            next_observation: format!("you are in the {} .", rooms[t + 1]),
            response: String::new(),
            action: format!("go {}", rooms[t + 1]),
            reward: 0.0,
            valid: true,
            done: false,
            won: false,
        })
        .collect();
    RolloutBatch {
        trajectories: vec![Trajectory {
            group_id: 0,
            traj_id: 0,
            task: "walk east".into(),
            task_id: 0,
            steps,
            policy_version: 0,
        }],
    }
}

/// The world the batch comes from, as the objectives see it.
fn world() -> WorldInfo {
    WorldInfo {
        description: "ALFRED household".into(),
        ..Default::default()
    }
}

fn corpus() -> WordTokenizer {
    let texts = [
        envrl_algos::state_prediction_prompt(
            "ALFRED household",
            "walk east",
            "you are in the garden kitchen hall study .",
            "go",
        ),
        envrl_algos::inverse_dynamics_prompt("ALFRED household", "walk east", "x", "y", None),
        "<action>go kitchen</action> hall</action> study</action>".to_string(),
    ];
    WordTokenizer::from_corpus(texts.iter().map(String::as_str))
}

/// Trains the tiny LM on one objective's examples alone and returns the first and last loss.
fn train_alone(objective: &dyn AuxObjective) -> (f32, f32) {
    let tok = corpus();
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let examples = objective.examples(&batch(), &world(), &tok, &mut rng);
    assert_eq!(examples.len(), 3);
    let rows: Vec<_> = examples.into_iter().map(|e| e.row).collect();
    let mut model = LmConfig::tiny(tok.vocab_size())
        .init(&Device::flex().autodiff(), 0)
        .unwrap();
    let mut optim = AdamWConfig::new().init();
    let mut losses = Vec::new();
    for _ in 0..40 {
        let scores = model.score(&rows, false);
        let loss = envrl_algos::token_mean(objective.token_losses(&scores), scores.mask);
        losses.push(loss.clone().into_scalar::<f32>());
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(3e-3, model, grads);
    }
    (losses[0], *losses.last().unwrap())
}

#[test]
fn state_prediction_loss_falls_when_trained_alone() {
    let (first, last) = train_alone(&StatePrediction::default());
    assert!(last < 0.3 * first, "{first} -> {last}");
}

#[test]
fn inverse_dynamics_loss_falls_when_trained_alone() {
    let (first, last) = train_alone(&InverseDynamics::default());
    assert!(last < 0.3 * first, "{first} -> {last}");
}

#[test]
fn inverse_dynamics_targets_are_the_tagged_actions() {
    let tok = corpus();
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let examples = InverseDynamics::default().examples(&batch(), &world(), &tok, &mut rng);
    let targets: Vec<String> = examples.iter().map(|e| tok.decode(&e.row.target)).collect();
    // The word tokenizer splits on spaces: "<action>go kitchen</action>" has unknown words.
    assert_eq!(targets.len(), 3);
    assert!(
        examples
            .iter()
            .all(|e| e.row.target.last() == Some(&tok.eos_id()))
    );
}

#[test]
fn the_composed_objective_trains_with_every_part_on() {
    use envrl_examples::keydoor::{KeyDoorSettings, build};
    // The default warm start, so that responses are valid and transitions eligible.
    let mut settings = KeyDoorSettings::quick(5);
    settings.trainer.groups = 2;
    settings.trainer.group_size = 4;
    settings.trainer.eval_every = 0;
    settings.algorithm.loss.kl_coef = 0.01;
    settings.algorithm.loss.entropy_coef = 0.001;
    settings.algorithm.aux = envrl_examples::keydoor::envrl_objectives();
    let mut run = build(&settings, &Device::flex()).unwrap();
    for _ in 0..2 {
        let m = run.trainer.train_iteration().unwrap();
        for name in [
            "loss/policy",
            "loss/kl",
            "loss/entropy",
            "loss/aux/state_prediction",
            "loss/aux/inverse_dynamics",
        ] {
            let v = m
                .get(name)
                .unwrap_or_else(|| panic!("{name} missing: {:?}", m.values.keys()));
            assert!(v.is_finite(), "{name} = {v}");
        }
        assert_eq!(m.get("optim/skipped_steps"), Some(0.0));
        assert!(m.get("aux/examples/inverse_dynamics").unwrap() > 0.0);
        assert!((m.get("aux/lambda/state_prediction").unwrap() - 0.2).abs() < 0.05);
    }
}
