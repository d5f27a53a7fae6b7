//! WebShop in `envrl train`: the generated catalog, or the real one under `WEBSHOP_DATA`.

use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use envrl::World;
use envrl_envs::PromptStyle;
use envrl_envs::webshop::{
    EXAMPLE_BUDGETS, ScoreLog, WebShop, WebShopData, WebShopProjection, WebShopPrompt,
    expert_demonstrations, split_webshop_task, webshop_task,
};
use serde::{Deserialize, Serialize};

use super::{EnvSetup, ProgramEnv, Reporting, RunFacts};
use crate::run::presets::Preset;

/// WebShop's settings: `[env] name = "webshop"`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebShopSettings {
    /// The prompt's wording: `verl-agent` (the paper's template, the default) or `compact`.
    pub prompt: PromptStyle,
}

/// WebShop's registration ([`ProgramEnv`]).
pub struct WebShopProgram;

impl ProgramEnv for WebShopProgram {
    type Settings = WebShopSettings;

    fn setup(settings: &WebShopSettings, run: &RunFacts) -> Result<EnvSetup> {
        setup(settings, run)
    }

    fn preset_delta(preset: Preset) -> &'static str {
        match preset {
            // Episodes are short (~6 steps), so an iteration costs ~10 s and the warm start
            // dominates: more iterations for the same budget; searches need longer replies.
            Preset::CpuTiny => {
                "[env]\nprompt = \"compact\"\n\
                 [trainer]\niterations = 20\nmax_steps = 15\neval_every = 5\ncheckpoint_every = 5\n\
                 [trainer.sampling]\nmax_new_tokens = 64\n\
                 [trainer.eval_sampling]\nmax_new_tokens = 64\n"
            }
            Preset::Smollm2_135m => "[trainer]\nmax_steps = 15\ncheckpoint_every = 5\n",
            // ENVRL.md: 15 steps, mini-batches of 64, the 500 test goals.
            Preset::Paper1_5b => {
                "[trainer]\nmax_steps = 15\nmini_batch_rows = 64\neval_episodes = 500\n"
            }
        }
    }
}

/// WebShop: `WEBSHOP_DATA` if set, else the generated catalog; train on goals from 500 of the
/// run seed's environment, evaluate on goals 0.. of environment seed `seed + 1000` (the test
/// split). Its pages are longer, so the objectives' examples get WebShop's budgets
/// ([`EXAMPLE_BUDGETS`]: 2048 / 768 tokens, ENVRL.md §4).
///
/// # Errors
/// When `WEBSHOP_DATA` is set but cannot be loaded.
pub fn setup(settings: &WebShopSettings, run: &RunFacts) -> Result<EnvSetup> {
    let from_env = std::env::var_os("WEBSHOP_DATA").is_some();
    let data = WebShopData::from_env_or_generated().context("loading the WebShop catalog")?;
    let seed = run.seed as u32;
    let eval_seed = seed + 1000;
    let n_goals = data.goals(seed as i64).goals.len();
    let train_goals = 500.min(n_goals / 2)..n_goals;
    let train_tasks: Vec<u64> = train_goals
        .take(run.tasks.train)
        .map(|g| webshop_task(seed, g as u32))
        .collect();
    let eval_tasks: Vec<u64> = (0..run.tasks.eval.min(500))
        .map(|g| webshop_task(eval_seed, g as u32))
        .collect();
    let scores: ScoreLog = Arc::new(Mutex::new(Default::default()));
    let env_data = data.clone();
    let env_scores = scores.clone();
    let demo_data = data.clone();
    let demo_tasks = train_tasks.clone();
    let label_data = data.clone();
    let max_steps = run.max_steps;
    let prompt = WebShopPrompt::with_style(settings.prompt);
    let source = if from_env {
        "WEBSHOP_DATA".to_string()
    } else {
        format!(
            "generated catalog ({} products)",
            data.catalog.products.len()
        )
    };
    let make_env = move || WebShop::new(env_data.clone()).with_score_log(env_scores.clone());
    let world = World::new(make_env, prompt, WebShopProjection)
        .with_tasks(train_tasks, eval_tasks)
        .with_example_budgets(EXAMPLE_BUDGETS);
    Ok(EnvSetup {
        world,
        demonstrate: Box::new(move |tokenizer, episodes| {
            let tasks = demo_tasks.iter().copied().take(episodes);
            expert_demonstrations(&demo_data, tasks, &prompt, tokenizer, max_steps)
        }),
        reporting: Reporting {
            task_label: Box::new(move |task| {
                let (seed, goal) = split_webshop_task(task);
                label_data.goals(seed as i64).goals[goal as usize]
                    .category
                    .clone()
            }),
            scores: Some(scores),
            source,
        },
    })
}
