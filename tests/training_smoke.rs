use std::time::Instant;

use burn::tensor::Device;
use envrl::RolloutWeights;
use envrl::metric_names as names;
use envrl_examples::keydoor::{KeyDoorSettings, build};

/// Held-out success before and after the quick key-and-door run with these acting weights, and
/// the mean logged log-probability mismatch (0 when not recomputed).
fn quick_run(weights: RolloutWeights) -> (f64, f64, f64) {
    let start = Instant::now();
    let mut settings = KeyDoorSettings::quick(0);
    settings.trainer.rollout_weights = weights;
    let mut run = build(&settings, &Device::flex()).unwrap();
    let episodes = 128;
    let before = run.trainer.evaluate(episodes).unwrap().success_rate;
    let mut curve = Vec::new();
    run.trainer
        .run(&mut |m: &envrl::IterationMetrics| curve.push(m.clone()))
        .unwrap();
    let after = run.trainer.evaluate(episodes).unwrap().success_rate;
    let train: Vec<String> = curve
        .iter()
        .map(|m| format!("{:.2}", m.get(names::EPISODE_SUCCESS).unwrap_or(0.0)))
        .collect();
    let mismatches: Vec<f64> = curve
        .iter()
        .filter_map(|m| m.get(names::LOGPROB_MISMATCH))
        .collect();
    let mismatch = if mismatches.is_empty() {
        0.0
    } else {
        mismatches.iter().sum::<f64>() / mismatches.len() as f64
    };
    println!(
        "{weights} acting weights: held-out success {before:.3} -> {after:.3} ({episodes} \
         episodes, seed 0) in {:.0}s; train curve {}; mean log-prob mismatch {mismatch:.2e}",
        start.elapsed().as_secs_f64(),
        train.join(" ")
    );
    (before, after, mismatch)
}

#[test]
fn grpo_raises_held_out_success_on_the_key_and_door_world() {
    let (before, after, mismatch) = quick_run(RolloutWeights::F32);
    assert!(
        after >= before + 0.15,
        "success {before:.3} -> {after:.3}: not clearly better"
    );
    assert_eq!(mismatch, 0.0, "f32 rollouts recompute nothing by default");
}

#[test]
fn grpo_learns_as_well_with_a_bf16_acting_copy() {
    let (before, after, mismatch) = quick_run(RolloutWeights::Bf16);
    assert!(
        after >= before + 0.15,
        "success {before:.3} -> {after:.3}: not clearly better"
    );
    assert!(
        mismatch > 0.0 && mismatch < 0.02,
        "mean log-prob mismatch {mismatch}"
    );
}

#[test]
fn recomputed_old_logprobs_are_the_rollouts_when_the_acting_copy_is_the_learner() {
    let mut settings = KeyDoorSettings::quick(1);
    settings.trainer.iterations = 1;
    settings.trainer.recompute_old_logprobs = Some(true);
    let mut run = build(&settings, &Device::flex()).unwrap();
    let metrics = run.trainer.train_iteration().unwrap();
    let mismatch = metrics.get(names::LOGPROB_MISMATCH).unwrap();
    // The same weights score what they sampled: only the batch's float order differs.
    assert!(mismatch < 1e-5, "{mismatch}");
    assert!(metrics.get(names::RECOMPUTE_S).unwrap() > 0.0);
}
