use burn::tensor::Device;
use envrl_algos::AdvantageConfig;
use envrl_examples::keydoor::{KeyDoorSettings, build};

use crate::support::flat_params;

fn settings() -> KeyDoorSettings {
    let mut s = KeyDoorSettings::quick(11);
    s.warmup_steps = 5;
    s.trainer.groups = 2;
    s.trainer.group_size = 4;
    s.trainer.eval_every = 0;
    s.trainer.iterations = 3;
    s.algorithm.loss.kl_coef = 0.01;
    s
}

#[test]
fn save_load_continue_matches_an_uninterrupted_run() {
    save_load_continue_matches(settings);
}

#[test]
fn a_ppo_run_resumes_its_critic_too() {
    save_load_continue_matches(|| {
        let mut s = settings();
        s.algorithm.advantage = AdvantageConfig::from_name("ppo").unwrap();
        s
    });
}

#[test]
fn a_run_with_both_objectives_and_diagnostics_resumes_exactly() {
    save_load_continue_matches(|| {
        let mut s = settings();
        s.algorithm.aux = envrl_examples::keydoor::envrl_objectives();
        s.trainer.grad_diagnostics_every = 2;
        s
    });
}

#[test]
fn a_checkpoint_of_other_objectives_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut plain = build(&settings(), &Device::flex()).unwrap();
    plain.trainer = plain.trainer.with_checkpoint_dir(dir.path());
    let path = plain.trainer.save_checkpoint().unwrap().unwrap();
    let mut s = settings();
    s.algorithm.aux = envrl_examples::keydoor::envrl_objectives();
    let mut with_aux = build(&s, &Device::flex()).unwrap();
    let err = with_aux.trainer.resume(&path).unwrap_err().to_string();
    assert!(
        err.contains("state_prediction") && err.contains("ckpt-"),
        "{err}"
    );
    assert_eq!(with_aux.trainer.iteration(), 0);
}

#[test]
fn a_checkpoint_of_another_seed_or_world_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let mut seed_one = settings();
    seed_one.trainer.seed = 1;
    let mut written = build(&seed_one, &Device::flex()).unwrap();
    written.trainer = written.trainer.with_checkpoint_dir(dir.path());
    let path = written.trainer.save_checkpoint().unwrap().unwrap();
    let mut seed_zero = settings();
    seed_zero.trainer.seed = 0;
    let mut other = build(&seed_zero, &Device::flex()).unwrap();
    let err = other.trainer.resume(&path).unwrap_err().to_string();
    assert!(
        err.contains("seed 1") && err.contains("seed 0") && err.contains("ckpt-"),
        "{err}"
    );
    assert_eq!(other.trainer.iteration(), 0);
    // The world is part of the checkpoint: one written elsewhere is refused by name.
    let mut state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path.join("state.json")).unwrap()).unwrap();
    assert_eq!(state["world"], "keydoor");
    state["world"] = "sokoban".into();
    let moved: envrl::CheckpointState = serde_json::from_value(state).unwrap();
    let reason = moved.foreign_to(1, "keydoor").unwrap();
    assert!(
        reason.contains("sokoban") && reason.contains("keydoor"),
        "{reason}"
    );
    assert_eq!(moved.foreign_to(1, "sokoban"), None);
}

fn save_load_continue_matches(settings: fn() -> KeyDoorSettings) {
    let device = Device::flex();
    let mut straight = build(&settings(), &device).unwrap();
    for _ in 0..3 {
        straight.trainer.train_iteration().unwrap();
    }

    let dir = tempfile::tempdir().unwrap();
    let mut first = build(&settings(), &device).unwrap();
    first.trainer = first.trainer.with_checkpoint_dir(dir.path());
    first.trainer.train_iteration().unwrap();
    let path = first.trainer.save_checkpoint().unwrap().unwrap();
    drop(first);

    let mut resumed = build(&settings(), &device).unwrap();
    resumed.trainer.resume(&path).unwrap();
    assert_eq!(resumed.trainer.iteration(), 1);
    for _ in 0..2 {
        resumed.trainer.train_iteration().unwrap();
    }
    let a = flat_params(straight.trainer.policy());
    let b = flat_params(resumed.trainer.policy());
    assert_eq!(a.len(), b.len());
    let max_diff = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0f32, f32::max);
    assert!(max_diff < 1e-5, "parameters differ by {max_diff}");
    assert_eq!(
        straight.trainer.last_rollout(),
        resumed.trainer.last_rollout(),
        "the last iteration played differently"
    );
}

#[test]
fn an_iteration_already_saved_is_not_written_again() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let mut run = build(&settings(), &Device::flex()).unwrap();
    run.trainer = run.trainer.with_checkpoint_dir(dir.path());
    run.trainer.train_iteration().unwrap();
    let path = run.trainer.save_checkpoint().unwrap().unwrap();
    let inode = |p: &std::path::Path| std::fs::metadata(p.join("model.bpk")).unwrap().ino();
    let first = inode(&path);
    assert_eq!(run.trainer.save_checkpoint().unwrap().unwrap(), path);
    assert_eq!(inode(&path), first, "the checkpoint was rewritten");
    // Resuming from it counts as saved too.
    let mut resumed = build(&settings(), &Device::flex()).unwrap();
    resumed.trainer = resumed.trainer.with_checkpoint_dir(dir.path());
    resumed.trainer.resume(&path).unwrap();
    resumed.trainer.save_checkpoint().unwrap();
    assert_eq!(inode(&path), first);
}

#[test]
fn a_truncated_model_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut run = build(&settings(), &Device::flex()).unwrap();
    run.trainer = run.trainer.with_checkpoint_dir(dir.path());
    let path = run.trainer.save_checkpoint().unwrap().unwrap();
    let model = path.join("model.bpk");
    let bytes = std::fs::read(&model).unwrap();
    std::fs::write(&model, &bytes[..bytes.len() / 2]).unwrap();
    let err = run.trainer.resume(&path).unwrap_err().to_string();
    assert!(err.contains("model.bpk"), "{err}");
}

/// Sets every element of the first float parameter to NaN.
struct Poison(bool);

impl burn::module::ModuleMapper for Poison {
    fn map_float<const D: usize>(
        &mut self,
        param: burn::module::Param<burn::tensor::Tensor<D>>,
    ) -> burn::module::Param<burn::tensor::Tensor<D>> {
        if std::mem::replace(&mut self.0, true) {
            return param;
        }
        burn::module::Param::from_tensor(param.val().mul_scalar(f32::NAN).detach())
    }
}

#[test]
fn a_checkpoint_with_non_finite_weights_is_refused_naming_the_tensor() {
    use burn::module::Module;
    let dir = tempfile::tempdir().unwrap();
    let run = build(&settings(), &Device::flex()).unwrap();
    let clean = run.trainer.policy().clone();
    let poisoned = clean.clone().map(&mut Poison(false));
    let which = envrl::first_non_finite(&poisoned).expect("poisoned");
    let state = envrl::CheckpointState {
        format: envrl::CHECKPOINT_FORMAT,
        iteration: 1,
        env_steps: 0,
        optimizer_steps: 0,
        streams: envrl::RunStreams::new(0, std::iter::empty()),
        config: serde_json::Value::Null,
        world: None,
        files: Default::default(),
    };
    let optimizer = envrl::FusedAdamW::new(1e-8, 0.0).init();
    let path =
        envrl::save_checkpoint(dir.path(), &state, &poisoned, None, &optimizer, None).unwrap();
    let err = envrl::load_checkpoint_model(&path, clean)
        .expect_err("a checkpoint of NaN weights must be refused")
        .to_string();
    assert!(
        err.contains(&which) && err.contains("model.bpk") && err.contains("corrupt"),
        "{err}"
    );
}
