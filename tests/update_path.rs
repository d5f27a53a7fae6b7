//! The exact update path, through the public trainer: an optimizer step does not depend on its
//! micro-batching, a placebo objective changes nothing, and runs that differ only in their
//! objectives share their random numbers. (The plan and the step runner are the trainer's
//! internals, tested where they live.)

use burn::tensor::Device;
use envrl::{GradClip, IterationMetrics, LossAggregation, Schedule};
use envrl_algos::AuxConfig;
use envrl_examples::keydoor::{KeyDoorSettings, build, envrl_objectives};

use crate::support::flat_params;

/// Key-and-door settings for three short iterations with KL, entropy and an evaluation.
fn short_run(seed: u64) -> KeyDoorSettings {
    let mut s = KeyDoorSettings::quick(seed);
    s.warmup_steps = 40;
    s.trainer.iterations = 3;
    s.trainer.groups = 4;
    s.trainer.group_size = 4;
    s.trainer.mini_batch_rows = 24;
    s.trainer.eval_every = 2;
    s.trainer.eval_episodes = 16;
    s.algorithm.loss.kl_coef = 0.01;
    s.algorithm.loss.entropy_coef = 0.001;
    s
}

fn with_objectives(mut s: KeyDoorSettings, schedule: Option<Schedule>) -> KeyDoorSettings {
    s.algorithm.aux = envrl_objectives();
    if let Some(schedule) = schedule {
        for aux in &mut s.algorithm.aux {
            match aux {
                AuxConfig::StatePrediction(c) => c.schedule = schedule,
                AuxConfig::InverseDynamics(c) => c.schedule = schedule,
                AuxConfig::StatePredictionInSequence(c) => c.schedule = schedule,
            }
        }
    }
    s
}

/// Runs the settings and returns every iteration's metrics, the tasks each iteration played,
/// the first rollout's responses and the final parameters.
fn run(
    settings: &KeyDoorSettings,
) -> (Vec<IterationMetrics>, Vec<Vec<u64>>, Vec<String>, Vec<f32>) {
    let mut run = build(settings, &Device::flex()).unwrap();
    let mut metrics = Vec::new();
    let mut tasks = Vec::new();
    let mut first_responses = Vec::new();
    for i in 0..settings.trainer.iterations {
        let eval = (i % settings.trainer.eval_every == 0).then(|| {
            run.trainer
                .evaluate(settings.trainer.eval_episodes)
                .unwrap()
                .success_rate
        });
        let mut m = run.trainer.train_iteration().unwrap();
        if let Some(success) = eval {
            m.set("eval/success", success);
        }
        metrics.push(m);
        let batch = run.trainer.last_rollout().unwrap();
        tasks.push(batch.trajectories.iter().map(|t| t.task_id).collect());
        if i == 0 {
            first_responses = batch.rows().map(|r| r.step.response.clone()).collect();
        }
    }
    (
        metrics,
        tasks,
        first_responses,
        flat_params(run.trainer.policy()),
    )
}

/// The metrics a placebo must leave unchanged: all but the objectives' own and the timings.
fn shared_metrics(m: &IterationMetrics) -> Vec<(String, f64)> {
    m.values
        .iter()
        .filter(|(k, _)| {
            !(k.starts_with("aux/")
                || k.starts_with("loss/aux/")
                || k.starts_with("grad/aux")
                || k.starts_with("perf/"))
        })
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

#[test]
fn a_placebo_objective_changes_nothing_else() {
    let (grpo, grpo_tasks, _, grpo_params) = run(&short_run(4));
    let placebo = with_objectives(short_run(4), Some(Schedule::None));
    let (with, with_tasks, _, with_params) = run(&placebo);
    assert_eq!(grpo_tasks, with_tasks);
    for (a, b) in grpo.iter().zip(&with) {
        assert_eq!(a.iteration, b.iteration);
        assert_eq!(a.env_steps, b.env_steps);
        assert_eq!(
            shared_metrics(a),
            shared_metrics(b),
            "iteration {}",
            a.iteration
        );
        // The placebo's examples are built and measured, at weight 0.
        assert_eq!(b.get("aux/lambda/state_prediction"), Some(0.0));
        assert!(b.get("aux/examples/state_prediction").unwrap() > 0.0);
        assert!(
            b.get("loss/aux/state_prediction")
                .is_some_and(f64::is_finite)
        );
    }
    assert_eq!(grpo_params, with_params, "the placebo moved the parameters");
}

#[test]
fn runs_that_differ_only_in_their_objectives_share_tasks_and_the_first_rollout() {
    let (grpo, grpo_tasks, grpo_first, grpo_params) = run(&short_run(6));
    let (both, both_tasks, both_first, both_params) = run(&with_objectives(short_run(6), None));
    assert_eq!(grpo_tasks, both_tasks, "different tasks");
    assert_eq!(grpo_first, both_first, "different first rollouts");
    assert_eq!(
        grpo[0].get("episode/success"),
        both[0].get("episode/success")
    );
    // The objectives are really on (λ0 0.2) and change the training.
    assert!(both[0].get("aux/lambda/inverse_dynamics").unwrap() > 0.1);
    assert_ne!(grpo_params, both_params);
}

fn relative_difference(a: &[f32], b: &[f32]) -> f64 {
    let num: f64 = a.iter().zip(b).map(|(x, y)| ((x - y) as f64).powi(2)).sum();
    let den: f64 = b.iter().map(|y| (*y as f64).powi(2)).sum();
    (num / den).sqrt()
}

/// The parameters after the first iteration's one optimizer step (KL, entropy and both
/// objectives on), its batch cut into micro-batches of `micro` rows (0: whole).
fn first_update(micro: usize, aggregation: LossAggregation) -> (Vec<f32>, IterationMetrics) {
    let mut settings = with_objectives(short_run(3), None);
    settings.trainer.iterations = 1;
    settings.trainer.mini_batch_rows = 1024;
    settings.trainer.micro_batch_rows = micro;
    settings.trainer.loss_aggregation = aggregation;
    let mut run = build(&settings, &Device::flex()).unwrap();
    let metrics = run.trainer.train_iteration().unwrap();
    assert_eq!(metrics.get("optim/steps"), Some(1.0));
    (flat_params(run.trainer.policy()), metrics)
}

#[test]
fn micro_batching_a_training_iteration_leaves_its_update_unchanged() {
    let (whole, m) = first_update(0, LossAggregation::TokenMean);
    assert!(m.get("aux/examples/state_prediction").unwrap() > 0.0);
    let loss = |m: &IterationMetrics| m.get("loss/total").unwrap();
    // Micro-batches of 4 rows, and of 1 (so most hold no auxiliary example at all).
    for micro in [4, 1] {
        let (parts, m_parts) = first_update(micro, LossAggregation::TokenMean);
        let diff = relative_difference(&parts, &whole);
        println!("micro-batches of {micro} rows: relative parameter difference {diff:.2e}");
        assert!(diff <= 1e-5, "micro {micro}: {diff}");
        assert!((loss(&m_parts) - loss(&m)).abs() <= 1e-5 * loss(&m).abs().max(1.0));
    }
    // The same holds for the per-sequence mean.
    let (whole, _) = first_update(0, LossAggregation::SeqMeanTokenMean);
    let (single, _) = first_update(1, LossAggregation::SeqMeanTokenMean);
    assert!(relative_difference(&single, &whole) <= 1e-5);
}

/// Two iterations of both objectives under `clip` with bound `max_norm`, micro-batches of
/// `micro` rows, gradient diagnostics every `diagnose` steps.
fn clipped_run(
    clip: GradClip,
    max_norm: f64,
    micro: usize,
    diagnose: usize,
) -> (Vec<f32>, Vec<IterationMetrics>) {
    clipped_run_of(
        with_objectives(short_run(5), None),
        clip,
        max_norm,
        micro,
        diagnose,
    )
}

fn clipped_run_of(
    mut settings: KeyDoorSettings,
    clip: GradClip,
    max_norm: f64,
    micro: usize,
    diagnose: usize,
) -> (Vec<f32>, Vec<IterationMetrics>) {
    settings.trainer.iterations = 2;
    settings.trainer.eval_every = 0;
    settings.trainer.mini_batch_rows = 1024;
    settings.trainer.clip = clip;
    settings.trainer.max_grad_norm = max_norm;
    settings.trainer.micro_batch_rows = micro;
    settings.trainer.grad_diagnostics_every = diagnose;
    let mut run = build(&settings, &Device::flex()).unwrap();
    let metrics = (0..2)
        .map(|_| run.trainer.train_iteration().unwrap())
        .collect();
    (flat_params(run.trainer.policy()), metrics)
}

#[test]
fn the_shuffled_control_never_trains_on_a_real_target() {
    let mut settings = short_run(7);
    let control = |c: AuxConfig| c.shuffled().unwrap();
    let measured = |c: AuxConfig| c.with_lambda0(0.0);
    settings.algorithm.aux = envrl_objectives().into_iter().map(control).collect();
    settings
        .algorithm
        .aux
        .extend(envrl_objectives().into_iter().map(measured));
    let (metrics, ..) = run(&settings);
    for m in &metrics {
        for name in ["state_prediction", "inverse_dynamics"] {
            let share = |n: &str| m.get(&format!("aux/real_target_share/{n}")).unwrap();
            assert_eq!(share(&format!("{name}_shuffled")), 0.0, "{name}");
            assert_eq!(share(name), 1.0, "{name}");
            assert!(m.get(&format!("aux/examples/{name}_shuffled")).unwrap() > 0.0);
        }
    }
}

#[test]
fn clip_modes_equal_the_global_clip_bit_for_bit_where_nothing_binds() {
    // A bound no norm reaches, with and without the diagnostics (which sum the parts apart).
    for diagnose in [0, 1] {
        let (global, gm) = clipped_run(GradClip::Global, 1e6, 0, diagnose);
        for clip in [GradClip::PerLoss, GradClip::AuxRatio(1e6)] {
            let (other, om) = clipped_run(clip, 1e6, 0, diagnose);
            assert_eq!(global, other, "{clip:?}, diagnostics every {diagnose}");
            for (a, b) in gm.iter().zip(&om) {
                assert_eq!(shared_metrics(a), shared_metrics(b), "{clip:?}");
                assert_eq!(b.get("optim/clip_bound"), Some(0.0));
                assert_eq!(b.get("optim/actor_grad_factor"), Some(1.0));
            }
        }
    }
}

#[test]
fn without_a_trained_objective_every_clip_is_the_global_clip_bit_for_bit() {
    // Placebo objectives (measured, no gradient) and a bound that binds on every step.
    let placebos = || {
        let mut settings = with_objectives(short_run(5), None);
        for aux in &mut settings.algorithm.aux {
            *aux = aux.clone().with_lambda0(0.0);
        }
        settings
    };
    let bound = 0.01;
    let (global, gm) = clipped_run_of(placebos(), GradClip::Global, bound, 0, 0);
    assert!(gm.iter().all(|m| m.get("optim/clip_bound") == Some(1.0)));
    for clip in [GradClip::default(), GradClip::PerLoss] {
        let (other, om) = clipped_run_of(placebos(), clip, bound, 0, 0);
        assert_eq!(global, other, "{clip:?}");
        for (a, b) in gm.iter().zip(&om) {
            assert_eq!(shared_metrics(a), shared_metrics(b), "{clip:?}");
        }
    }
}

#[test]
fn the_per_loss_clip_spares_the_policy_what_the_global_clip_takes() {
    let bound = 0.05;
    let (global, gm) = clipped_run(GradClip::Global, bound, 0, 1);
    let (per_loss, pm) = clipped_run(GradClip::PerLoss, bound, 0, 1);
    assert_ne!(global, per_loss);
    let get = |m: &IterationMetrics, k: &str| m.get(k).unwrap();
    // One optimizer step an iteration: the factors follow from the norms the run logged.
    for (g, p) in gm.iter().zip(&pm) {
        assert_eq!(get(g, "optim/steps"), 1.0);
        let norm = get(g, "optim/grad_norm");
        assert!(norm > bound, "the global clip must bind: {norm}");
        assert_eq!(get(g, "optim/clip_bound"), 1.0);
        let global_factor = get(g, "optim/actor_grad_factor");
        assert!(
            (global_factor - bound / (norm + 1e-6)).abs() < 1e-9,
            "{global_factor}"
        );
        let actor = get(p, "grad/actor_norm");
        let expected = if actor > bound {
            bound / (actor + 1e-6)
        } else {
            1.0
        };
        let factor = get(p, "optim/actor_grad_factor");
        assert!(
            (factor - expected).abs() < 1e-6 * expected,
            "{factor} vs {expected}"
        );
        assert!(factor > global_factor, "the policy's step is shrunk less");
        // Each part within the bound, so their sum within the parts' count times it.
        assert!(get(p, "optim/grad_norm") <= 3.0 * bound + 1e-6);
    }
    // Micro-batches of 4 and 1 rows clip the same parts to the same update.
    for micro in [4, 1] {
        let (parts, _) = clipped_run(GradClip::PerLoss, bound, micro, 1);
        let diff = relative_difference(&parts, &per_loss);
        assert!(diff <= 1e-5, "micro {micro}: {diff}");
    }
    let (without_diagnostics, _) = clipped_run(GradClip::PerLoss, bound, 0, 0);
    assert!(relative_difference(&without_diagnostics, &per_loss) <= 1e-6);
}

#[test]
fn the_reference_mean_of_micro_batch_means_does_depend_on_them() {
    // The test above can fail: the weighting that verl-agent uses moves the step.
    let (whole, _) = first_update(0, LossAggregation::MicroBatchTokenMean);
    let (single, _) = first_update(1, LossAggregation::MicroBatchTokenMean);
    let diff = relative_difference(&single, &whole);
    assert!(diff > 1e-4, "{diff}");
}

#[test]
fn gradient_diagnostics_measure_each_source_apart() {
    let mut settings = with_objectives(short_run(2), None);
    settings.trainer.iterations = 1;
    settings.trainer.grad_diagnostics_every = 1;
    let mut run = build(&settings, &Device::flex()).unwrap();
    let m = run.trainer.train_iteration().unwrap();
    let actor = m.get("grad/actor_norm").expect("grad/actor_norm");
    let mut sum = actor;
    for name in ["state_prediction", "inverse_dynamics"] {
        let norm = m.get(&format!("grad/aux_norm/{name}")).unwrap();
        let cos = m.get(&format!("grad/aux_cos/{name}")).unwrap();
        assert!(
            norm > 0.0 && (-1.0..=1.0).contains(&cos),
            "{name}: {norm} {cos}"
        );
        sum += norm;
    }
    // The step's gradient is the sum of the parts (triangle inequality, mean over steps).
    let total = m.get("optim/grad_norm").unwrap();
    assert!(
        actor > 0.0 && total <= sum * (1.0 + 1e-4),
        "{total} > {sum}"
    );
    // Off by default.
    let mut plain = build(&with_objectives(short_run(2), None), &Device::flex()).unwrap();
    assert!(
        plain
            .trainer
            .train_iteration()
            .unwrap()
            .get("grad/actor_norm")
            .is_none()
    );
}

#[test]
fn the_metrics_page_lists_every_metric_name() {
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/metrics.md"))
        .unwrap();
    let prefixes = envrl::metric_names::AUX_PREFIXES.map(|p| format!("{p}<name>"));
    for name in envrl::metric_names::ALL
        .iter()
        .copied()
        .chain(prefixes.iter().map(String::as_str))
    {
        assert!(
            page.contains(&format!("`{name}`")),
            "docs/metrics.md lacks `{name}`"
        );
    }
}
