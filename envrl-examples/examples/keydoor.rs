//! Trains a from-scratch tiny LM with GRPO (or another estimator) on the key-and-door world and
//! prints the success rate on held-out tasks before and after.
//!
//! ```text
//! cargo run --release -p envrl-examples --example keydoor -- [seed] [iterations] [learning-rate] [groups] [grpo|ppo|rloo|gigpo]
//! ```

use std::time::Instant;

use anyhow::{Context, Result};
use burn::tensor::Device;
use envrl_algos::AdvantageConfig;
use envrl_examples::keydoor::{KeyDoorSettings, build};
use envrl_examples::progress::RunProgress;
use envrl_examples::run::{run_dir_named, unix_time};

fn main() -> Result<()> {
    envrl_examples::keep_freed_memory();
    envrl_examples::init_logging();
    let mut args = std::env::args().skip(1);
    let seed: u64 = args
        .next()
        .map(|s| s.parse())
        .transpose()
        .context("seed")?
        .unwrap_or(0);
    let mut settings = KeyDoorSettings::quick(seed);
    if let Some(it) = args.next() {
        settings.trainer.iterations = it.parse().context("iterations")?;
    }
    if let Some(lr) = args.next() {
        settings.trainer.learning_rate = lr.parse().context("learning rate")?;
    }
    if let Some(groups) = args.next() {
        settings.trainer.groups = groups.parse().context("groups")?;
    }
    let algo = args.next().unwrap_or_else(|| "grpo".into());
    settings.algorithm.advantage = AdvantageConfig::from_name(&algo).with_context(|| {
        format!(
            "unknown algorithm `{algo}`; expected one of {}",
            AdvantageConfig::NAMES.join(", ")
        )
    })?;
    if let AdvantageConfig::Ppo(ppo) = &mut settings.algorithm.advantage {
        // The tiny model trains at a high learning rate; the critic keeps pace with it.
        ppo.critic.learning_rate = 3.0 * settings.trainer.learning_rate;
    }
    let dir = run_dir_named(
        "keydoor",
        settings.algorithm.advantage.name(),
        seed,
        unix_time(),
    );
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::write(
        dir.join("config.json"),
        serde_json::to_string_pretty(&settings.trainer)?,
    )?;

    // Build the model and run the format warm start.
    let start = Instant::now();
    let mut run = build(&settings, &Device::flex())?;
    println!(
        "warm start: loss {:.3} -> {:.3} in {:.1}s",
        run.warmup_loss.0,
        run.warmup_loss.1,
        start.elapsed().as_secs_f64()
    );

    // Train, evaluating on held-out tasks every few iterations.
    let episodes = settings.trainer.eval_episodes;
    let before = run.trainer.evaluate(episodes)?.success_rate;
    println!("held-out success before RL: {before:.3}");
    let mut progress = RunProgress::new(settings.trainer.iterations, &dir, false)?;
    run.trainer.run(&mut progress)?;
    progress.finish();
    let after = run.trainer.evaluate(episodes)?.success_rate;
    println!("held-out success after RL:  {after:.3}  ({episodes} episodes)");
    for m in &progress.history {
        println!(
            "iter {:>3}  train success {:.3}  invalid {:.3}  value loss {:.4}  tokens/s {:>7.0}",
            m.iteration,
            m.get("episode/success").unwrap_or(0.0),
            m.get("policy/invalid_action_rate").unwrap_or(0.0),
            m.get("loss/value").unwrap_or(f64::NAN),
            m.get("perf/tokens_per_s").unwrap_or(0.0)
        );
    }
    println!("metrics: {}", dir.join("metrics.jsonl").display());
    Ok(())
}
