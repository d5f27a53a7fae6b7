//! The supervised warm start: behaviour cloning on expert demonstrations, or the warm-started
//! model of another run directory (`warmup.from`).

use std::io::IsTerminal;
use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use burn::module::Module;
use burn::store::ModuleRecord;
use envrl::{BehaviourCloning, Demonstration, ScoreRow};
use envrl_algos::CausalLm;
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
