//! What each environment brings to a run: prompt and projection, environments, train and eval
//! tasks, expert demonstrations, and a label per task for the evaluation table.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use envrl::{ActionParser, Demonstration, Environment, PromptBuilder, ScoreRow, Tokenizer};
use envrl_envs::PromptStyle;
use envrl_envs::alfworld::{
    AlfWorld, AlfworldData, AlfworldProjection, AlfworldPrompt, Game, GameGenerator, Split,
    TaskType, search_demonstrations,
};
use envrl_envs::keydoor::{KeyDoor, KeyDoorProjection, KeyDoorPrompt};
use envrl_envs::webshop::{
    ScoreLog, WebShop, WebShopData, WebShopProjection, WebShopPrompt, expert_demonstrations,
    split_webshop_task, webshop_task,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::run::config::RunConfig;

/// Records expert demonstrations (`episodes` of them) with a tokenizer.
pub type Demonstrate = Box<dyn Fn(&dyn Tokenizer, usize) -> Vec<Demonstration>>;

/// An environment's side of a run.
pub struct EnvSetup<E: Environment> {
    /// The environment's name in auxiliary prompts.
    pub environment: String,
    /// Builds each step's prompt.
    pub prompt: Box<dyn PromptBuilder>,
    /// Projects responses to actions.
    pub parser: Box<dyn ActionParser>,
    /// Makes one environment.
    pub make_env: Box<dyn Fn() -> E + Send>,
    /// Training task ids.
    pub train_tasks: Vec<u64>,
    /// Held-out evaluation task ids.
    pub eval_tasks: Vec<u64>,
    /// Expert demonstrations in the prompt format.
    pub demonstrate: Demonstrate,
    /// The evaluation-table row of a task (task type, product category).
    pub task_label: Box<dyn Fn(u64) -> String>,
    /// Raw scores of WebShop purchases, by task.
    pub scores: Option<ScoreLog>,
    /// Where the tasks come from, for the report.
    pub source: String,
}

/// ALFWorld: generated games, or the real train games and `tasks.eval_split` (valid_unseen by
/// default) when `ALFWORLD_DATA` is set.
///
/// # Errors
/// When `ALFWORLD_DATA` is set but cannot be read.
pub fn alfworld(config: &RunConfig) -> Result<EnvSetup<AlfWorld>> {
    alfworld_from(config, std::env::var_os("ALFWORLD_DATA").map(PathBuf::from))
}

/// ALFWorld on the data set in `data` (an `ALFWORLD_DATA` directory), or on generated games
/// when `None`.
///
/// # Errors
/// When `data` cannot be read or a task type is unknown.
pub fn alfworld_from(config: &RunConfig, data: Option<PathBuf>) -> Result<EnvSetup<AlfWorld>> {
    let types = config
        .tasks
        .types
        .iter()
        .map(|name| {
            TaskType::from_name(name).with_context(|| {
                format!(
                    "unknown ALFWorld task type `{name}` in tasks.types; expected some of: {}",
                    TaskType::ALL.map(TaskType::short_name).join(", ")
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let (games, train, source): (Vec<Arc<Game>>, usize, String) = match data {
        Some(dir) => {
            let data = AlfworldData::open(&dir)?;
            let mut train = data.games(Split::Train, &types)?;
            train.truncate(config.tasks.train);
            let split = Split::from_folder(&config.tasks.eval_split).with_context(|| {
                format!("unknown tasks.eval_split `{}`", config.tasks.eval_split)
            })?;
            let mut eval = data.games(split, &types)?;
            eval.truncate(config.tasks.eval);
            let n = train.len();
            let mut games = data.load(&train)?;
            games.extend(data.load(&eval)?);
            (
                games,
                n,
                format!(
                    "ALFWORLD_DATA train ({n}) / {} ({})",
                    split.folder(),
                    eval.len()
                ),
            )
        }
        None => {
            let n = (config.tasks.train + config.tasks.eval) as u64;
            let generator = GameGenerator::new(config.trainer.seed);
            let games = generator.generate_many_of_types(&types, n);
            (
                games,
                config.tasks.train,
                format!(
                    "generated games (seed {}{}): {} train, {} held out",
                    config.trainer.seed,
                    if types.is_empty() {
                        String::new()
                    } else {
                        format!(", types {}", config.tasks.types.join(" "))
                    },
                    config.tasks.train,
                    config.tasks.eval
                ),
            )
        }
    };
    let games = Arc::new(games);
    let max_steps = config.trainer.max_steps as u32;
    let seed = config.trainer.seed;
    let env_games = games.clone();
    let demo_games = games.clone();
    let label_games = games.clone();
    let prompt = AlfworldPrompt::with_style(prompt_style(config)?);
    Ok(EnvSetup {
        environment: "ALFRED household".into(),
        prompt: Box::new(prompt),
        parser: Box::new(AlfworldProjection),
        make_env: Box::new(move || AlfWorld::new(env_games.clone()).with_max_steps(max_steps)),
        train_tasks: (0..train as u64).collect(),
        eval_tasks: (train as u64..games.len() as u64).collect(),
        demonstrate: Box::new(move |tokenizer, episodes| {
            search_demonstrations(
                &demo_games,
                0..(episodes.min(train)) as u64,
                &prompt,
                tokenizer,
                max_steps as usize,
                seed,
            )
        }),
        task_label: Box::new(move |task| {
            let game = &label_games[task as usize % label_games.len()];
            game.task_type
                .map_or("unknown", |t| t.short_name())
                .to_string()
        }),
        scores: None,
        source,
    })
}

/// The config's prompt style.
fn prompt_style(config: &RunConfig) -> Result<PromptStyle> {
    PromptStyle::from_name(&config.prompt)
        .with_context(|| format!("unknown prompt `{}`", config.prompt))
}

/// WebShop: `WEBSHOP_DATA` if set, else the generated catalog; train on goals from 500 of the
/// run seed's environment, evaluate on goals 0.. of environment seed `seed + 1000` (the test
/// split).
///
/// # Errors
/// When `WEBSHOP_DATA` is set but cannot be loaded.
pub fn webshop(config: &RunConfig) -> Result<EnvSetup<WebShop>> {
    let from_env = std::env::var_os("WEBSHOP_DATA").is_some();
    let data = WebShopData::from_env_or_generated().context("loading the WebShop catalog")?;
    let seed = config.trainer.seed as u32;
    let eval_seed = seed + 1000;
    let n_goals = data.goals(seed as i64).goals.len();
    let train_goals = 500.min(n_goals / 2)..n_goals;
    let train_tasks: Vec<u64> = train_goals
        .take(config.tasks.train)
        .map(|g| webshop_task(seed, g as u32))
        .collect();
    let eval_tasks: Vec<u64> = (0..config.tasks.eval.min(500))
        .map(|g| webshop_task(eval_seed, g as u32))
        .collect();
    let scores: ScoreLog = Arc::new(Mutex::new(Default::default()));
    let env_data = data.clone();
    let env_scores = scores.clone();
    let demo_data = data.clone();
    let demo_tasks = train_tasks.clone();
    let label_data = data.clone();
    let max_steps = config.trainer.max_steps;
    let prompt = WebShopPrompt::with_style(prompt_style(config)?);
    let source = if from_env {
        "WEBSHOP_DATA".to_string()
    } else {
        format!(
            "generated catalog ({} products)",
            data.catalog.products.len()
        )
    };
    Ok(EnvSetup {
        environment: "WebShop online shopping".into(),
        prompt: Box::new(prompt),
        parser: Box::new(WebShopProjection),
        make_env: Box::new(move || {
            WebShop::new(env_data.clone()).with_score_log(env_scores.clone())
        }),
        train_tasks,
        eval_tasks,
        demonstrate: Box::new(move |tokenizer, episodes| {
            let tasks = demo_tasks.iter().copied().take(episodes);
            expert_demonstrations(&demo_data, tasks, &prompt, tokenizer, max_steps)
        }),
        task_label: Box::new(move |task| {
            let (seed, goal) = split_webshop_task(task);
            label_data.goals(seed as i64).goals[goal as usize]
                .category
                .clone()
        }),
        scores: Some(scores),
        source,
    })
}

/// The key-and-door world; its "expert" is a uniformly random admissible action (format only).
pub fn keydoor(config: &RunConfig) -> EnvSetup<KeyDoor> {
    let rooms = 4;
    let max_steps = config.trainer.max_steps;
    let seed = config.trainer.seed;
    let eval_offset = crate::keydoor::EVAL_TASK_OFFSET;
    EnvSetup {
        environment: "key-and-door".into(),
        prompt: Box::new(KeyDoorPrompt),
        parser: Box::new(KeyDoorProjection),
        make_env: Box::new(move || KeyDoor::new(rooms, max_steps)),
        train_tasks: (0..config.tasks.train as u64).collect(),
        eval_tasks: (eval_offset..eval_offset + config.tasks.eval as u64).collect(),
        demonstrate: Box::new(move |tokenizer, episodes| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed.wrapping_add(1));
            let rows: Vec<ScoreRow> = crate::keydoor::random_policy_examples(
                tokenizer,
                rooms,
                max_steps,
                episodes as u64,
                &mut rng,
            );
            vec![Demonstration { rows, won: false }]
        }),
        task_label: Box::new(|_| "all".into()),
        scores: None,
        source: "generated corridors (4 rooms)".into(),
    }
}
