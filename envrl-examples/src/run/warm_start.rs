//! The supervised warm start: behaviour cloning on expert demonstrations, or the warm-started
//! model of another run directory (`warmup.from`).

use std::io::IsTerminal;
use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use burn::module::Module;
use burn::store::ModuleRecord;
use envrl::{BehaviourCloning, Demonstration, ScoreRow, available_memory, shortfall};
use envrl_algos::{CausalLm, LmConfig};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::config::RunConfig;
use super::progress_bar;

/// The warm-started model in a run directory (`warmup.from` reads it).
pub const WARM_START_FILE: &str = "warm-start.bpk";
/// The warm start while it is being written.
pub const WARM_START_PARTIAL: &str = "warm-start.bpk.partial";

/// What a fresh run's warm start works with.
pub(crate) struct WarmStart<'a> {
    pub config: &'a RunConfig,
    /// The run directory, which receives `warm-start.bpk`.
    pub dir: &'a Path,
    /// Hides the progress bar and the log lines.
    pub quiet: bool,
    /// When the run started, for the log lines.
    pub start: Instant,
    /// The model's architecture (what a step's activations take).
    pub lm: &'a LmConfig,
}

impl WarmStart<'_> {
    /// Loads `warmup.from`'s warm start into `model`, or trains one on the demonstrations
    /// (recorded with `demonstrate` unless the tiny model's set-up already did) and saves it;
    /// with `warmup.steps = 0` and no `from`, returns `model` as it is.
    ///
    /// # Errors
    /// When the warm start to load does not exist or does not fit the model, or the trained one
    /// cannot be written.
    pub fn run(
        &self,
        model: CausalLm,
        demonstrations: impl FnOnce() -> Vec<Demonstration>,
        say: &dyn Fn(String),
    ) -> Result<CausalLm> {
        let warmup = &self.config.warmup;
        if let Some(from) = &warmup.from {
            let path = from.join(WARM_START_FILE);
            let model = load_warm_start(model, &path)?;
            say(format!("warm start: loaded {}", path.display()));
            return Ok(model);
        }
        if warmup.steps == 0 {
            return Ok(model);
        }
        let demos = demonstrations();
        let won = demos.iter().filter(|d| d.won).count();
        let rows: Vec<ScoreRow> = demos.into_iter().flat_map(|d| d.rows).collect();
        warn_long_responses(&rows, self.config.trainer.sampling.max_new_tokens);
        let longest = rows.iter().map(|r| r.context.len() + r.target.len()).max();
        ensure_warm_start_fits(
            self.lm,
            warmup.batch_size,
            longest.unwrap_or(0),
            available_memory(),
        )?;
        let progress = progress_bar(warmup.steps, self.quiet, "warm start");
        let bc = BehaviourCloning {
            steps: warmup.steps,
            batch_size: warmup.batch_size,
            learning_rate: warmup.learning_rate,
            max_grad_norm: 1.0,
            context_weight: warmup.context_weight,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(self.config.trainer.seed.wrapping_add(1));
        // Without a terminal the bar is not drawn: log a line every tenth of the steps.
        let log_every =
            (!self.quiet && !std::io::stderr().is_terminal()).then(|| warmup.steps.div_ceil(10));
        let (model, losses) = bc.train_with_callback(model, &rows, &mut rng, &mut |step, loss| {
            progress.set_position(step as u64 + 1);
            progress.set_message(format!("loss {loss:.3}"));
            if log_every.is_some_and(|n| (step + 1) % n == 0) {
                eprintln!(
                    "warm start: step {}/{}, loss {loss:.3}, {:.0} s into the run",
                    step + 1,
                    warmup.steps,
                    self.start.elapsed().as_secs_f64()
                );
            }
        });
        progress.finish_and_clear();
        // Written whole under another name and renamed: a run that loads it (`warmup.from`)
        // never reads a half-written file.
        let path = self.dir.join(WARM_START_FILE);
        let partial = self.dir.join(WARM_START_PARTIAL);
        model
            .clone()
            .save_file(&partial)
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", partial.display()))?;
        std::fs::rename(&partial, &path)
            .map_err(|e| anyhow::anyhow!("renaming {} into place: {e}", partial.display()))?;
        say(format!(
            "warm start: {} expert episodes ({won} won), {} rows, loss {:.3} -> {:.3}",
            warmup.episodes,
            rows.len(),
            losses.first().copied().unwrap_or(f32::NAN),
            losses.last().copied().unwrap_or(f32::NAN)
        ));
        Ok(model)
    }
}

/// Refuses a warm start whose steps cannot fit in `available` bytes: a batch of
/// `batch_size` rows padded to the `longest` demonstration row (prompt and reply).
///
/// # Errors
/// Naming `warmup.batch_size`, the longest row and the sizes.
fn ensure_warm_start_fits(
    lm: &LmConfig,
    batch_size: usize,
    longest: usize,
    available: Option<u64>,
) -> Result<()> {
    let what = format!(
        "the warm start's steps (warmup.batch_size = {batch_size} rows of up to {longest} \
         tokens, the longest demonstration's prompt and reply: their attention scores and logits)"
    );
    match shortfall(
        &what,
        lm.training_step_bytes(batch_size, longest),
        available,
    ) {
        Some(reason) => anyhow::bail!(
            "the warm start cannot fit in memory: {reason}; lower warmup.batch_size or shorten \
             the prompts (env.prompt = \"compact\", smaller rooms)"
        ),
        None => Ok(()),
    }
}

/// Loads the warm start saved at `path` into `model`, reading the file whole (a run never
/// depends on another run's file after loading).
///
/// # Errors
/// When the file cannot be read or does not fit the model, naming the file.
pub(crate) fn load_warm_start(model: CausalLm, path: &Path) -> Result<CausalLm> {
    let error = |e: &dyn std::fmt::Display| {
        anyhow::anyhow!("loading the warm start {}: {e}", path.display())
    };
    let bytes = envrl::read_whole(path).map_err(|e| error(&e))?;
    let record = ModuleRecord::from_bytes(bytes).map_err(|e| error(&e))?;
    model.try_load_record(record).map_err(|e| error(&e))
}

/// Expert responses longer than the rollout's token budget teach replies the policy can never
/// finish (a cut reply has no closing tag and is an invalid action): say so.
fn warn_long_responses(rows: &[ScoreRow], max_new_tokens: usize) {
    let longest = rows.iter().map(|r| r.target.len()).max().unwrap_or(0);
    let too_long = rows
        .iter()
        .filter(|r| r.target.len() > max_new_tokens)
        .count();
    if too_long > 0 {
        eprintln!(
            "warning: {too_long} of {} expert responses are longer than \
             trainer.sampling.max_new_tokens = {max_new_tokens} tokens (longest {longest}); \
             the policy cannot finish them",
            rows.len()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_warm_start_whose_steps_cannot_fit_is_refused_naming_the_batch() {
        let config = RunConfig::cpu_tiny(crate::run::envs::EnvName::Sokoban).unwrap();
        let lm = config.tiny.lm_config(200);
        assert!(ensure_warm_start_fits(&lm, 16, 600, Some(24 << 30)).is_ok());
        // A 64×64 room's prompt: tens of thousands of tokens a row.
        let err = ensure_warm_start_fits(&lm, 16, 30_000, Some(24 << 30))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("warmup.batch_size = 16") && err.contains("30000 tokens"),
            "{err}"
        );
        assert!(ensure_warm_start_fits(&lm, 16, 30_000, None).is_ok());
    }
}
