//! `envrl train` and `envrl eval`: a whole run from a [`RunConfig`] — tokenizer, model, SFT warm
//! start on expert demonstrations, RL with the configured estimator and objectives, progress bar,
//! metrics, checkpoints, plots and the evaluation table.
//!
//! One module per step: [`envs`] (each environment's set-up and preset changes), `presets`
//! (the presets as data), `model` (tokenizer and model), `warm_start`, `evaluation`, `run_dir`
//! (locks, naming, resume checks) and `report` (tables and plots).

mod compare;
mod config;
mod corpus;
pub mod envs;
mod evaluation;
mod export;
mod model;
mod presets;
mod ranks;
mod report;
mod rollout_config;
mod rollout_server;
mod run_dir;
mod warm_start;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use burn::tensor::Device;
use envrl::{IterationMetrics, metric_names};
use envrl_algos::recipe::TrainerRecipe;
use indicatif::{ProgressBar, ProgressStyle};

pub use compare::{FinishedRun, compare, comparison_markdown};
pub use config::{ModelSource, RunConfig, TinyModelConfig, WarmupConfig, models_dir};
pub use corpus::TextCollector;
pub use envs::alfworld::setup_from as alfworld_from;
pub use envs::{
    EnvConfig, EnvName, EnvSetup, ProgramEnv, Reporting, RunFacts, TaskScores, TasksConfig,
};
pub use export::{checkpoint_to_export, export_pretrained, export_run};
pub use presets::Preset;
pub use ranks::Ranks;
pub use report::{
    EpisodeOutcome, EvalRow, episode_outcomes, episode_transcripts, eval_markdown, eval_table,
    plot_history,
};
pub use rollout_config::RolloutConfig;
pub use run_dir::{
    LOCK_FILE, RunLock, check_resume_config, config_changes, default_run_dir,
    record_config_changes, run_dir_named, unix_time,
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
    /// This process's rank in a data-parallel run ([`Ranks::Single`] alone).
    pub ranks: Ranks,
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
    let ranks = &options.ranks;
    ranks.check_same("config", &config.to_toml()?)?;
    let setup = config.env.setup(&config.facts())?;
    let scratch = ranks.scratch_run(options)?;
    let options = scratch.as_ref().map_or(options, |(_, options)| options);
    Run {
        config,
        options,
        start: Instant::now(),
    }
    .run(setup)
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
        ranks: Ranks::default(),
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
        config.env = config.env.with_eval_split(split)?;
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

/// Where the held-out success before RL comes from.
enum BeforeRl {
    /// Measured after the warm start.
    Measured(f64),
    /// The training loop's first evaluation (the same episodes).
    InTrainingLoop,
    /// Not measured (a resumed run, an evaluation).
    Unknown,
}

/// A whole run as a sequence of named steps: prepare the directory, load the model, warm start,
/// assemble the trainer, measure before RL, train, evaluate, report. An evaluation
/// ([`RunMode::Evaluate`]) takes the same steps; its mode skips the warm start and training.
struct Run<'a> {
    config: &'a RunConfig,
    options: &'a RunOptions,
    start: Instant,
}

impl Run<'_> {
    fn say(&self, line: String) {
        if !self.options.quiet {
            println!("{line}");
        }
    }

    fn trains(&self) -> bool {
        self.options.mode != RunMode::Evaluate
    }

    fn run(&self, setup: EnvSetup) -> Result<RunSummary> {
        let (config, options) = (self.config, self.options);
        let dir = &options.output_dir;
        let _lock = RunLock::acquire(dir)?;
        let mut plan = self.prepare()?;
        // Every rank resumes from the one writer's checkpoint.
        plan.resume_from = options.ranks.from_rank_zero(&plan.resume_from)?;
        self.say(format!("tasks: {}", setup.reporting.source));
        // Everything that can fail on bad input (config, data, model file, memory) is checked
        // by the end of this step: only then does the run touch its directory.
        let loaded = model::load(config, &setup, &self.device(), &|line| self.say(line))?;
        let (served_lm, served_tokenizer) = (loaded.lm.clone(), loaded.hf_tokenizer.clone());
        plan.apply(dir)?;
        let resume_from = plan.resume_from;
        // A fresh run writes its config at once; a resumed one only once it has resumed, so
        // that a resume that fails (a server down, a foreign checkpoint) changes nothing.
        if self.trains() && resume_from.is_none() {
            self.record_config(&[])?;
            loaded.save_tokenizer(dir)?;
        }
        let tokenizer = loaded.tokenizer.clone();
        // An evaluation of a model file (`envrl eval --model`) plays it as loaded; one of a
        // run directory without a checkpoint, its warm start.
        let model = if let Some(path) = &plan.warm_start {
            let model = warm_start::load_warm_start(loaded.model, path)?;
            self.say(format!("evaluating the warm start {}", path.display()));
            model
        } else if resume_from.is_none() && self.trains() {
            let demonstrate = &setup.demonstrate;
            let demonstrations = loaded.demonstrations;
            let model = self.warm_start(loaded.model, &loaded.lm, || {
                demonstrations
                    .unwrap_or_else(|| demonstrate(tokenizer.as_ref(), config.warmup.episodes))
            })?;
            if options.mode == RunMode::WarmStartOnly {
                self.say(format!(
                    "warm start saved in {}",
                    dir.join(WARM_START_FILE).display()
                ));
                return Ok(RunSummary {
                    before: None,
                    table: Vec::new(),
                    wall_s: self.start.elapsed().as_secs_f64(),
                });
            }
            model
        } else {
            loaded.model
        };
        let EnvSetup {
            world, reporting, ..
        } = setup;
        let mut trainer = TrainerRecipe {
            trainer: &config.trainer,
            algorithm: &config.algorithm,
            tokenizer,
            world,
            extra_aux: Vec::new(),
        }
        .build(model)?
        .with_checkpoint_dir(dir.join("checkpoints"))
        .with_collective(options.ranks.collective());
        if let Some(server) = rollout_server::policy_server(config, &served_lm, served_tokenizer)? {
            if let Some(place) = config.rollout.describe() {
                self.say(format!("rollouts sampled by {place}"));
            }
            trainer = trainer.with_boxed_policy_server(server);
        }
        let trainer = &mut trainer;
        let evaluation = Evaluation {
            reporting: &reporting,
            dir,
            tag: options.eval_tag.as_deref(),
        };
        let before = self.before_rl(trainer, &evaluation, resume_from.as_deref())?;
        if self.trains() && resume_from.is_some() {
            self.record_config(&plan.config_changes)?;
        }
        if self.trains() {
            let mut progress = RunProgress::new(config.trainer.iterations, dir, options.quiet)?;
            trainer.run(&mut progress)?;
            progress.finish();
            trainer.save_checkpoint()?;
        }
        let table = evaluation.run(trainer)?;
        self.report(table, before, &evaluation)
    }

    /// Writes the run's `config.toml` and appends `changes` to its `config-changes.txt`.
    fn record_config(&self, changes: &[String]) -> Result<()> {
        let dir = &self.options.output_dir;
        let path = dir.join("config.toml");
        std::fs::write(&path, self.config.to_toml()?)
            .with_context(|| format!("writing {}", path.display()))?;
        record_config_changes(dir, changes)
    }

    /// Decides what happens to the run directory, and checks that a resumed run keeps its
    /// settings.
    fn prepare(&self) -> Result<DirPlan> {
        let mut plan = DirPlan::decide(self.options)?;
        if self.trains() && plan.resume_from.is_some() {
            plan.config_changes = check_resume_config(
                &self.options.output_dir,
                self.config,
                self.options.allow_config_change,
            )?;
        }
        Ok(plan)
    }

    fn device(&self) -> Device {
        let device = self.options.device.clone().autodiff();
        if self.config.gradient_checkpointing {
            device.gradient_checkpointing()
        } else {
            device
        }
    }

    fn warm_start(
        &self,
        model: envrl_algos::CausalLm,
        lm: &envrl_algos::LmConfig,
        demonstrations: impl FnOnce() -> Vec<envrl::Demonstration>,
    ) -> Result<envrl_algos::CausalLm> {
        let warm_start = warm_start::WarmStart {
            config: self.config,
            lm,
            dir: &self.options.output_dir,
            quiet: self.options.quiet,
            start: self.start,
        };
        warm_start.run(model, demonstrations, &|line| self.say(line))
    }

    /// Resumes, or measures the held-out success before RL. The training loop evaluates the
    /// same episodes before its first iteration, so then it is read from its metrics instead of
    /// measured twice ([`Run::report`]).
    fn before_rl(
        &self,
        trainer: &mut envrl::Trainer<envrl_algos::CausalLm>,
        evaluation: &Evaluation,
        resume_from: Option<&Path>,
    ) -> Result<BeforeRl> {
        if let Some(path) = resume_from {
            trainer.resume(path)?;
            if self.trains() {
                truncate_metrics(&self.options.output_dir, trainer.iteration())?;
            }
            self.say(format!(
                "resumed from {} (iteration {})",
                path.display(),
                trainer.iteration()
            ));
            return Ok(BeforeRl::Unknown);
        }
        let t = &self.config.trainer;
        let episodes = trainer.world().eval_tasks.len();
        if self.trains() && t.eval_every > 0 && t.eval_episodes == episodes {
            return Ok(BeforeRl::InTrainingLoop);
        }
        if !self.trains() {
            return Ok(BeforeRl::Unknown);
        }
        let success = evaluation.run(trainer)?.last().map_or(0.0, |r| r.success);
        self.say(format!(
            "held-out success before RL: {success:.3} ({episodes} episodes)"
        ));
        Ok(BeforeRl::Measured(success))
    }

    /// Writes the evaluation table and the plots, and says where everything is.
    fn report(
        &self,
        table: Vec<EvalRow>,
        before: BeforeRl,
        evaluation: &Evaluation,
    ) -> Result<RunSummary> {
        let dir = &self.options.output_dir;
        let markdown = eval_markdown(&table);
        std::fs::write(evaluation.file(".md"), &markdown)?;
        std::fs::write(
            evaluation.file(".json"),
            serde_json::to_string_pretty(&table)?,
        )?;
        let episodes = table.last().map_or(0, |r| r.episodes);
        let history = read_metrics(dir).unwrap_or_default();
        let before = match before {
            BeforeRl::Measured(success) => Some(success),
            BeforeRl::Unknown => None,
            BeforeRl::InTrainingLoop => {
                let success = history
                    .first()
                    .and_then(|m| m.get(metric_names::EVAL_SUCCESS));
                if let Some(success) = success {
                    self.say(format!(
                        "held-out success before RL: {success:.3} ({episodes} episodes)"
                    ));
                }
                success
            }
        };
        let plots = plot_history(&history, dir)?;
        self.say(format!(
            "held-out evaluation after RL ({episodes} episodes):\n{markdown}"
        ));
        self.say(format!(
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
            wall_s: self.start.elapsed().as_secs_f64(),
        })
    }
}
