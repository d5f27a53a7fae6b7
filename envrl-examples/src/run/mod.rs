//! `envrl train` and `envrl eval`: a whole run from a [`RunConfig`] — tokenizer, model, SFT warm
//! start on expert demonstrations, RL with the configured estimator and objectives, progress bar,
//! metrics, checkpoints, plots and the evaluation table.
//!
//! One module per step: [`envs`] (each environment's set-up and preset changes), `presets`
//! (the presets as data), `model` (tokenizer and model), `warm_start`, `assemble` (the
//! trainer from its parts, shared with the key-and-door example), `evaluation`, `run_dir`
//! (locks, naming, resume checks) and `report` (tables and plots).

mod assemble;
mod compare;
mod config;
mod corpus;
pub mod envs;
mod evaluation;
mod export;
mod model;
mod presets;
mod report;
mod run_dir;
mod warm_start;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use burn::tensor::Device;
use envrl::{Environment, IterationMetrics, metric_names};
use envrl_algos::recipe::TrainerRecipe;
use indicatif::{ProgressBar, ProgressStyle};

pub use assemble::Reporting;
pub use compare::{FinishedRun, compare, comparison_markdown};
pub use config::{ModelSource, RunConfig, TasksConfig, TinyModelConfig, WarmupConfig, models_dir};
pub use corpus::TextCollector;
pub use envs::alfworld::setup_from as alfworld_from;
pub use envs::{EnvName, EnvSetup, ProgramEnv};
pub use export::{checkpoint_to_export, export_run};
pub use presets::Preset;
pub use report::{
    EpisodeOutcome, EvalRow, episode_outcomes, episode_transcripts, eval_markdown, eval_table,
    plot_history,
};
pub use run_dir::{
    LOCK_FILE, RunLock, check_resume_config, config_changes, default_run_dir, run_dir_named,
    unix_time,
};
pub use warm_start::WARM_START_FILE;

use crate::progress::RunProgress;
use evaluation::{Evaluation, eval_path};
use run_dir::{DirPlan, truncate_metrics};

/// Where and how a run happens.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The run directory (config, metrics, checkpoints, plots, evaluation).
    pub output_dir: PathBuf,
    /// Continue from the latest checkpoint in the run directory.
    pub resume: bool,
    /// Overwrite a run directory that holds another run's checkpoints.
    pub force: bool,
    /// With `resume`: accept settings that change the run (listed in `config-changes.txt`).
    pub allow_config_change: bool,
    /// The device (an autodiff device is made from it).
    pub device: Device,
    /// Hide the progress bars.
    pub quiet: bool,
    /// Everything, only the warm start, or only an evaluation.
    pub mode: RunMode,
    /// Names the evaluation files `eval-<tag>.md`, `.json` and `-episodes.txt` instead of
    /// `eval.md`, … (an evaluation on another split keeps the run's own).
    pub eval_tag: Option<String>,
}

/// How much of a run happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunMode {
    /// Warm start (unless resuming), RL, the final evaluation (`envrl train`).
    Train,
    /// Only the warm start, saved as `warm-start.bpk` for other runs' `warmup.from`
    /// (`envrl train --warm-start-only`): no RL, no evaluation.
    WarmStartOnly,
    /// Only an evaluation of the run directory's latest checkpoint or of the configured
    /// model (`envrl eval`).
    Evaluate,
}

/// The outcome of a run.
#[derive(Debug, Clone)]
pub struct RunSummary {
    /// Held-out success before RL (after the warm start), when it was measured.
    pub before: Option<f64>,
    /// The final evaluation table (last row: all tasks).
    pub table: Vec<EvalRow>,
    /// Seconds from start to end.
    pub wall_s: f64,
}

/// Trains as configured.
///
/// # Errors
/// On unreadable data, a run directory that holds another run's checkpoints (without `resume`
/// or `force`), or a checkpoint that does not fit.
pub fn train(config: &RunConfig, options: &RunOptions) -> Result<RunSummary> {
    if options.mode == RunMode::WarmStartOnly {
        check_warm_start_only(config, options)?;
    }
    config.env.with_setup(config, Run { config, options })
}

/// A warm-start-only run must have a warm start to train.
fn check_warm_start_only(config: &RunConfig, options: &RunOptions) -> Result<()> {
    if options.resume {
        bail!("--warm-start-only trains a new warm start: it cannot --resume a run");
    }
    if let Some(from) = &config.warmup.from {
        bail!(
            "--warm-start-only with warmup.from = {}: that warm start exists already",
            from.display()
        );
    }
    if config.warmup.steps == 0 {
        bail!("--warm-start-only with warmup.steps = 0: there is no warm start to train");
    }
    Ok(())
}

/// The `alfworld` and `webshop` examples: the `cpu-tiny` preset with GRPO + state prediction +
/// inverse dynamics, seed from the first argument, in `runs/<env>__grpo-envrl__<seed>`.
///
/// # Errors
/// As [`train`], or when the seed argument is not a number.
pub fn run_example(env: EnvName) -> Result<()> {
    let seed: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()
        .context("seed")?
        .unwrap_or(0);
    let config = RunConfig::cpu_tiny(env)?
        .with_algorithm(Some("grpo"), Some("state_prediction,inverse_dynamics"))?
        .with_overrides(&[format!("trainer.seed={seed}")])?;
    let options = RunOptions {
        output_dir: format!("runs/{env}__grpo-envrl__{seed}").into(),
        resume: false,
        force: true,
        allow_config_change: false,
        device: Device::flex(),
        quiet: false,
        mode: RunMode::Train,
        eval_tag: None,
    };
    let summary = train(&config, &options)?;
    let after = summary.table.last().map_or(0.0, |r| r.success);
    println!(
        "held-out success: {:.3} -> {after:.3} in {:.0} s",
        summary.before.unwrap_or(f64::NAN),
        summary.wall_s
    );
    Ok(())
}

/// Evaluates the latest checkpoint of the run in `options.output_dir`, whose `config.toml` is
/// `config`, on the held-out tasks and writes `eval.md` and `eval.json`; with `split` (ALFWorld's
/// `valid_seen` or `valid_unseen`), on that split instead, into `eval-<split>.md` and
/// `eval-<split>.json`.
///
/// # Errors
/// When the run directory has no checkpoint, or it does not fit, or the split is unknown or the
/// run is not an ALFWorld run on `ALFWORLD_DATA`.
pub fn evaluate(
    mut config: RunConfig,
    options: &RunOptions,
    split: Option<&str>,
) -> Result<RunSummary> {
    if let Some(split) = split {
        if config.env != EnvName::Alfworld || std::env::var_os("ALFWORLD_DATA").is_none() {
            bail!(
                "--split chooses among ALFWorld's real splits: it needs an alfworld run and \
                 ALFWORLD_DATA"
            );
        }
        config = config.with_overrides(&[format!("tasks.eval_split={split}")])?;
    }
    let options = RunOptions {
        resume: true,
        force: false,
        allow_config_change: false,
        mode: RunMode::Evaluate,
        eval_tag: split.map(str::to_string),
        ..options.clone()
    };
    train(&config, &options)
}

/// Evaluates the model of `config.model` as it is (no warm start, no training) on the held-out
/// tasks of `config`, writing `eval.md`, `eval.json` and the episodes into
/// `options.output_dir`: a pretrained model, or an export of a trained one.
///
/// # Errors
/// As [`train`].
pub fn evaluate_model(config: &RunConfig, options: &RunOptions) -> Result<RunSummary> {
    let options = RunOptions {
        resume: false,
        allow_config_change: false,
        mode: RunMode::Evaluate,
        ..options.clone()
    };
    train(config, &options)
}

/// The metrics of a run directory, in order.
///
/// # Errors
/// When the file cannot be read or a line is not a metrics record.
pub fn read_metrics(dir: &Path) -> Result<Vec<IterationMetrics>> {
    let path = dir.join("metrics.jsonl");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).with_context(|| format!("a line of {}", path.display())))
        .collect()
}

/// A progress bar of `len` steps (hidden when `quiet`).
pub(crate) fn progress_bar(len: usize, quiet: bool, what: &str) -> ProgressBar {
    let bar = if quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(len as u64)
    };
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{what} {{elapsed_precise}} [{{bar:30}}] {{pos}}/{{len}} {{msg}}"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar
}

/// A whole run on one environment's set-up ([`envs::WithSetup`]).
struct Run<'a> {
    config: &'a RunConfig,
    options: &'a RunOptions,
}

impl envs::WithSetup for Run<'_> {
    type Output = RunSummary;

    fn call<E: Environment + 'static>(self, setup: EnvSetup<E>) -> Result<RunSummary> {
        let Run { config, options } = self;
        let start = Instant::now();
        let dir = &options.output_dir;
        let _lock = RunLock::acquire(dir)?;
        let plan = DirPlan::decide(options)?;
        let resume_from = plan.resume_from.clone();
        // The objectives are set up for the world (its description in their prompts, its no-op
        // observations); the written config says so too.
        let config = &RunConfig {
            algorithm: config.algorithm.clone().for_world(&(setup.make_env)()),
            ..config.clone()
        };
        if options.mode != RunMode::Evaluate && resume_from.is_some() {
            check_resume_config(dir, config, options.allow_config_change)?;
        }
        let say = |line: String| {
            if !options.quiet {
                println!("{line}");
            }
        };
        say(format!("tasks: {}", setup.source));
        let mut device = options.device.clone().autodiff();
        if config.gradient_checkpointing {
            device = device.gradient_checkpointing();
        }
        // Everything that can fail on bad input (config, data, model file, memory) has been
        // checked by now: only here does the run touch its directory.
        let loaded = model::load(config, &setup, &device, &say)?;
        plan.apply(dir)?;
        if options.mode != RunMode::Evaluate {
            let path = dir.join("config.toml");
            std::fs::write(&path, config.to_toml()?)
                .with_context(|| format!("writing {}", path.display()))?;
            loaded.save_tokenizer(dir)?;
        }
        let mut model = loaded.model;
        // An evaluation of a model file (`envrl eval --model`) plays it as loaded.
        if resume_from.is_none() && options.mode != RunMode::Evaluate {
            let warm_start = warm_start::WarmStart {
                config,
                dir,
                quiet: options.quiet,
                start,
            };
            let tokenizer = loaded.tokenizer.as_ref();
            let demonstrate = &setup.demonstrate;
            model = warm_start.run(
                model,
                || {
                    loaded
                        .demonstrations
                        .unwrap_or_else(|| demonstrate(tokenizer, config.warmup.episodes))
                },
                &say,
            )?;
            if options.mode == RunMode::WarmStartOnly {
                say(format!(
                    "warm start saved in {}",
                    dir.join(WARM_START_FILE).display()
                ));
                return Ok(RunSummary {
                    before: None,
                    table: Vec::new(),
                    wall_s: start.elapsed().as_secs_f64(),
                });
            }
        }
        let (env, reporting) = setup.split();
        let trainer = TrainerRecipe {
            trainer: &config.trainer,
            algorithm: &config.algorithm,
            tokenizer: loaded.tokenizer.clone(),
            env,
            extra_aux: Vec::new(),
        }
        .build(model)?;
        let mut trainer = trainer.with_checkpoint_dir(dir.join("checkpoints"));
        let trainer = &mut trainer;
        let evaluation = Evaluation {
            reporting: &reporting,
            dir,
            tag: options.eval_tag.as_deref(),
        };
        let eval_episodes = reporting.eval_tasks.len();
        // The training loop evaluates the same episodes before its first iteration: measure
        // the held-out success before RL there instead of twice.
        let loop_measures_before = options.mode != RunMode::Evaluate
            && config.trainer.eval_every > 0
            && config.trainer.eval_episodes == eval_episodes;
        let before = match &resume_from {
            Some(path) => {
                trainer.resume(path)?;
                if options.mode != RunMode::Evaluate {
                    truncate_metrics(dir, trainer.iteration())?;
                }
                say(format!(
                    "resumed from {} (iteration {})",
                    path.display(),
                    trainer.iteration()
                ));
                None
            }
            None if loop_measures_before || options.mode == RunMode::Evaluate => None,
            None => {
                let success = evaluation.run(trainer).last().map_or(0.0, |r| r.success);
                say(format!(
                    "held-out success before RL: {success:.3} ({eval_episodes} episodes)"
                ));
                Some(success)
            }
        };
        if options.mode != RunMode::Evaluate {
            let mut progress = RunProgress::new(config.trainer.iterations, dir, options.quiet)?;
            trainer.run(&mut progress)?;
            progress.finish();
            trainer.save_checkpoint()?;
        }
        let table = evaluation.run(trainer);
        let markdown = eval_markdown(&table);
        std::fs::write(evaluation.file(".md"), &markdown)?;
        std::fs::write(
            evaluation.file(".json"),
            serde_json::to_string_pretty(&table)?,
        )?;
        let history = read_metrics(dir).unwrap_or_default();
        let before = match before {
            None if loop_measures_before && resume_from.is_none() => {
                let success = history
                    .first()
                    .and_then(|m| m.get(metric_names::EVAL_SUCCESS));
                if let Some(success) = success {
                    say(format!(
                        "held-out success before RL: {success:.3} ({eval_episodes} episodes)"
                    ));
                }
                success
            }
            before => before,
        };
        let plots = plot_history(&history, dir)?;
        say(format!(
            "held-out evaluation after RL ({eval_episodes} episodes):\n{markdown}"
        ));
        say(format!(
            "run directory: {} (config.toml, metrics.jsonl, {}, {} plots, checkpoints/)",
            dir.display(),
            evaluation
                .file(".md")
                .file_name()
                .unwrap_or_default()
                .display(),
            plots.len()
        ));
        Ok(RunSummary {
            before,
            table,
            wall_s: start.elapsed().as_secs_f64(),
        })
    }
}
