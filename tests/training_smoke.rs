use std::time::Instant;

use burn::tensor::Device;
use envrl_examples::keydoor::{KeyDoorSettings, build};

#[test]
fn grpo_raises_held_out_success_on_the_key_and_door_world() {
    let start = Instant::now();
    let settings = KeyDoorSettings::quick(0);
    let mut run = build(&settings, &Device::flex()).unwrap();
    let episodes = 128;
    let before = run.trainer.evaluate(episodes).success_rate;
    let mut curve = Vec::new();
    run.trainer
        .run(&mut |m: &envrl::IterationMetrics| curve.push(m.clone()))
        .unwrap();
    let after = run.trainer.evaluate(episodes).success_rate;
    let train: Vec<String> = curve
        .iter()
        .map(|m| format!("{:.2}", m.get("episode/success").unwrap_or(0.0)))
        .collect();
    println!(
        "held-out success {before:.3} -> {after:.3} ({episodes} episodes, seed 0) in {:.0}s; \
         train curve {}",
        start.elapsed().as_secs_f64(),
        train.join(" ")
    );
    assert!(
        after >= before + 0.15,
        "success {before:.3} -> {after:.3}: not clearly better"
    );
}

/// Micro-batching accumulates the gradients of every micro-batch before the one optimizer step:
/// the first update with 4 micro-batches per mini-batch points the same way as the update of the
/// whole mini-batch (they differ only in how tokens are weighted across micro-batches), and the
/// number of optimizer steps is unchanged.
#[test]
fn micro_batches_accumulate_into_the_same_optimizer_step() {
    use crate::support::flat_params;
    let first_update = |micro: usize| {
        let mut settings = KeyDoorSettings::quick(3);
        settings.trainer.iterations = 1;
        settings.trainer.groups = 4;
        settings.trainer.group_size = 4;
        settings.trainer.mini_batch_rows = 1024;
        settings.trainer.micro_batch_rows = micro;
        settings.warmup_steps = 20;
        let mut run = build(&settings, &Device::flex()).unwrap();
        let before = flat_params(run.trainer.policy());
        let metrics = run.trainer.train_iteration();
        let after = flat_params(run.trainer.policy());
        assert_eq!(metrics.get("optim/steps"), Some(1.0));
        assert!(metrics.get("loss/total").is_some_and(f64::is_finite));
        let delta: Vec<f64> = after
            .iter()
            .zip(&before)
            .map(|(a, b)| (a - b) as f64)
            .collect();
        (delta, metrics.get("episode/success"))
    };
    let (whole, success_whole) = first_update(0);
    let (micro, success_micro) = first_update(4);
    // Same rollouts (same seed, same policy before the step).
    assert_eq!(success_whole, success_micro);
    let dot: f64 = whole.iter().zip(&micro).map(|(a, b)| a * b).sum();
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let cosine = dot / (norm(&whole) * norm(&micro));
    println!("cosine between the whole-batch and micro-batched updates: {cosine:.3}");
    assert!(norm(&micro) > 0.0);
    assert!(cosine > 0.9, "cosine {cosine}");
}
