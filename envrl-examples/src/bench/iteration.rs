//! `envrl bench iteration`: what one training iteration of a run's config costs, and where the
//! time goes (rollout, update), from the run's own metrics.

use anyhow::{Result, bail};
use envrl::{IterationMetrics, metric_names as names};

use crate::run::{RunConfig, RunMode, RunOptions, read_metrics};

/// The timings of one iteration, from its metrics.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IterationCost {
    /// Seconds of the whole iteration.
    pub wall_s: f64,
    /// Seconds of the rollout (generation and environment steps).
    pub rollout_s: f64,
    /// Seconds of the recompute of the old log-probabilities (0 when they were not).
    pub recompute_s: f64,
    /// Seconds of the update (scoring, backward, optimizer steps, objectives).
    pub update_s: f64,
    /// Generated tokens per second of the rollout.
    pub gen_tokens_per_s: f64,
    /// Trained tokens per second of the update.
    pub train_tokens_per_s: f64,
    /// Environment steps of the iteration.
    pub env_steps: f64,
    /// Prompt tokens not prefilled because another row shared them (0 when the metric is
    /// absent: runs of builds before it).
    pub prefill_tokens_saved: f64,
    /// Mean absolute log-probability difference per token between the acting copy and the
    /// learner (`None` when not recomputed).
    pub logprob_mismatch: Option<f64>,
}

impl IterationCost {
    /// Reads the timings of `m` (`perf/…`).
    ///
    /// # Errors
    /// When a timing is missing.
    pub fn of(m: &IterationMetrics) -> envrl::Result<Self> {
        Ok(Self {
            wall_s: m.value(names::WALL_S)?,
            rollout_s: m.value(names::ROLLOUT_S)?,
            recompute_s: m.get(names::RECOMPUTE_S).unwrap_or(0.0),
            update_s: m.value(names::UPDATE_S)?,
            gen_tokens_per_s: m.value(names::GEN_TOKENS_PER_S)?,
            train_tokens_per_s: m.value(names::TRAIN_TOKENS_PER_S)?,
            env_steps: m.value(names::ENV_STEPS_PER_S)? * m.value(names::ROLLOUT_S)?,
            prefill_tokens_saved: m.get(names::PREFILL_TOKENS_SAVED).unwrap_or(0.0),
            logprob_mismatch: m.get(names::LOGPROB_MISMATCH),
        })
    }

    /// The table row of iteration `label`.
    pub fn row(&self, label: &str) -> String {
        let share = |s: f64| 100.0 * s / self.wall_s.max(1e-9);
        let mismatch = self
            .logprob_mismatch
            .map_or("—".to_string(), |m| format!("{m:.1e}"));
        format!(
            "| {label} | {:.2} | {:.2} ({:.0} %) | {:.2} ({:.0} %) | {:.2} ({:.0} %) | {:.0} | \
             {:.0} | {:.0} | {:.0} | {mismatch} |",
            self.wall_s,
            self.rollout_s,
            share(self.rollout_s),
            self.recompute_s,
            share(self.recompute_s),
            self.update_s,
            share(self.update_s),
            self.env_steps,
            self.gen_tokens_per_s,
            self.prefill_tokens_saved,
            self.train_tokens_per_s
        )
    }
}

/// Runs `iterations` iterations of `config` into `options.output_dir` (without evaluations or
/// checkpoints) and prints each iteration's breakdown and their mean.
///
/// # Errors
/// As `envrl train`, or when the metrics lack a timing.
pub fn bench_iteration(
    mut config: RunConfig,
    mut options: RunOptions,
    iterations: usize,
) -> Result<()> {
    if options.mode != RunMode::Train {
        bail!("`envrl bench iteration` times RL iterations: --warm-start-only does not apply");
    }
    config.trainer.iterations = iterations;
    config.trainer.eval_every = 0;
    config.trainer.checkpoint_every = 0;
    config.tasks.eval = 1;
    options.quiet = true;
    let started = std::time::Instant::now();
    crate::run::train(&config, &options)?;
    let costs = read_metrics(&options.output_dir)?
        .iter()
        .map(IterationCost::of)
        .collect::<envrl::Result<Vec<_>>>()?;
    println!(
        "{} on {}, model {}, {} groups × {} episodes of ≤ {} steps, {} threads (whole command \
         {:.0} s, warm start and 2 one-episode evaluations included)",
        config.algorithm.label(),
        config.env,
        String::from(config.model.clone()),
        config.trainer.groups,
        config.trainer.group_size,
        config.trainer.max_steps,
        rayon::current_num_threads(),
        started.elapsed().as_secs_f64()
    );
    println!();
    println!("rollout weights: {}", config.trainer.rollout_weights);
    println!();
    println!(
        "| iteration | wall s | rollout s | old-log-prob recompute s | update s | env steps | \
         generated tokens/s | prefill tokens shared | trained tokens/s | log-prob mismatch |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (i, cost) in costs.iter().enumerate() {
        println!("{}", cost.row(&i.to_string()));
    }
    if let Some(mean) = mean(&costs) {
        println!("{}", mean.row("mean"));
    }
    Ok(())
}

/// The field-wise mean of `costs`.
fn mean(costs: &[IterationCost]) -> Option<IterationCost> {
    let n = costs.len() as f64;
    let avg = |f: fn(&IterationCost) -> f64| costs.iter().map(f).sum::<f64>() / n;
    (!costs.is_empty()).then(|| IterationCost {
        wall_s: avg(|c| c.wall_s),
        rollout_s: avg(|c| c.rollout_s),
        recompute_s: avg(|c| c.recompute_s),
        update_s: avg(|c| c.update_s),
        gen_tokens_per_s: avg(|c| c.gen_tokens_per_s),
        train_tokens_per_s: avg(|c| c.train_tokens_per_s),
        env_steps: avg(|c| c.env_steps),
        prefill_tokens_saved: avg(|c| c.prefill_tokens_saved),
        logprob_mismatch: {
            let m: Vec<f64> = costs.iter().filter_map(|c| c.logprob_mismatch).collect();
            (!m.is_empty()).then(|| m.iter().sum::<f64>() / m.len() as f64)
        },
    })
}
