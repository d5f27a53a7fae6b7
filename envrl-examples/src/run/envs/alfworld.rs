//! ALFWorld in `envrl train`: generated games, or the real data set under `ALFWORLD_DATA`.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use envrl::World;
use envrl_envs::PromptStyle;
use envrl_envs::alfworld::{
    AlfWorld, AlfworldData, AlfworldProjection, AlfworldPrompt, Game, GameGenerator, Split,
    TaskType, search_demonstrations,
};
use serde::{Deserialize, Serialize};

use super::{EnvSetup, ProgramEnv, Reporting, RunFacts};
use crate::run::presets::Preset;

/// The held-out splits `eval_split` accepts.
pub const EVAL_SPLITS: [&str; 2] = ["valid_unseen", "valid_seen"];

/// The memory one generated game takes (33 KB measured over 20,000 games, with a margin).
const GENERATED_GAME_BYTES: u128 = 40 << 10;

/// ALFWorld's settings: `[env] name = "alfworld"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AlfworldSettings {
    /// The prompt's wording: `verl-agent` (the paper's template, the default) or `compact`
    /// (the same facts in fewer tokens, for the from-scratch model).
    pub prompt: PromptStyle,
    /// Task types to train and evaluate on, by short name (`pick`, `look`, `clean`, `heat`,
    /// `cool`, `pick2`); empty for all six.
    pub types: Vec<String>,
    /// The held-out split when `ALFWORLD_DATA` is set: `valid_unseen` (the default, the
    /// paper's) or `valid_seen`.
    pub eval_split: String,
}

impl Default for AlfworldSettings {
    fn default() -> Self {
        Self {
            prompt: PromptStyle::default(),
            types: Vec::new(),
            eval_split: EVAL_SPLITS[0].to_string(),
        }
    }
}

impl AlfworldSettings {
    /// The task types, parsed.
    ///
    /// # Errors
    /// When a type is unknown, naming the known ones.
    pub fn task_types(&self) -> Result<Vec<TaskType>> {
        self.types
            .iter()
            .map(|name| {
                TaskType::from_name(name).with_context(|| {
                    format!(
                        "unknown ALFWorld task type `{name}` in env.types; expected some of: {}",
                        TaskType::ALL.map(TaskType::short_name).join(", ")
                    )
                })
            })
            .collect()
    }
}

/// ALFWorld's registration ([`ProgramEnv`]).
pub struct AlfworldProgram;

impl ProgramEnv for AlfworldProgram {
    type Settings = AlfworldSettings;

    fn setup(settings: &AlfworldSettings, run: &RunFacts) -> Result<EnvSetup> {
        setup_from(
            settings,
            run,
            std::env::var_os("ALFWORLD_DATA").map(PathBuf::from),
        )
    }

    /// `eval_split` names one of ALFWorld's held-out splits, `types` known task types, and
    /// generated games fit in memory.
    fn check(settings: &AlfworldSettings, run: &RunFacts) -> Result<()> {
        if std::env::var_os("ALFWORLD_DATA").is_none() {
            let games = run.tasks.train as u128 + run.tasks.eval as u128;
            let needed = games * GENERATED_GAME_BYTES;
            let what = format!("{games} generated ALFWorld games (tasks.train + tasks.eval)");
            if let Some(why) = envrl::shortfall(&what, needed, envrl::available_memory()) {
                bail!("{why}: ask for fewer tasks");
            }
        }
        let split = &settings.eval_split;
        if !EVAL_SPLITS.contains(&split.as_str()) {
            bail!(
                "unknown env.eval_split `{split}`; expected one of: {}",
                EVAL_SPLITS.join(", ")
            );
        }
        settings.task_types().map(drop)
    }

    /// `valid_seen` or `valid_unseen` of the real data set (`ALFWORLD_DATA`).
    fn with_eval_split(settings: AlfworldSettings, split: &str) -> Result<AlfworldSettings> {
        if std::env::var_os("ALFWORLD_DATA").is_none() {
            bail!("--split chooses among ALFWorld's real splits: it needs ALFWORLD_DATA");
        }
        let settings = AlfworldSettings {
            eval_split: split.to_string(),
            ..settings
        };
        Self::check(&settings, &RunFacts::default()).map(|()| settings)
    }

    fn preset_delta(preset: Preset) -> &'static str {
        match preset {
            // The from-scratch model plays `pick` games (the other five types need more skills
            // each), with the compact prompt.
            Preset::CpuTiny => "[env]\nprompt = \"compact\"\ntypes = [\"pick\"]\n",
            Preset::Smollm2_135m | Preset::Paper1_5b => "",
        }
    }
}

/// ALFWorld on the data set in `data` (an `ALFWORLD_DATA` directory: its train games and
/// `eval_split`), or on generated games when `None`.
///
/// # Errors
/// When `data` cannot be read or a task type is unknown.
pub fn setup_from(
    settings: &AlfworldSettings,
    run: &RunFacts,
    data: Option<PathBuf>,
) -> Result<EnvSetup> {
    let types = settings.task_types()?;
    let (games, names, train, source): (Vec<Arc<Game>>, Vec<String>, usize, String) = match data {
        Some(dir) => {
            let data = AlfworldData::open(&dir)?;
            let mut train = data.games(Split::Train, &types)?;
            train.truncate(run.tasks.train);
            let split = Split::from_folder(&settings.eval_split).with_context(|| {
                format!("unknown env.eval_split `{}`", settings.eval_split)
            })?;
            let mut eval = data.games(split, &types)?;
            eval.truncate(run.tasks.eval);
            let n = train.len();
            let mut games = data.load(&train)?;
            games.extend(data.load(&eval)?);
            let names = train.iter().chain(&eval).map(|path| game_name(path)).collect();
            (
                games,
                names,
                n,
                format!(
                    "ALFWORLD_DATA train ({n}) / {} ({})",
                    split.folder(),
                    eval.len()
                ),
            )
        }
        None => {
            let n = (run.tasks.train + run.tasks.eval) as u64;
            let generator = GameGenerator::new(run.seed);
            let games = generator.generate_many_of_types(&types, n);
            (
                games,
                Vec::new(),
                run.tasks.train,
                format!(
                    "generated games (seed {}{}): {} train, {} held out",
                    run.seed,
                    if types.is_empty() {
                        String::new()
                    } else {
                        format!(", types {}", settings.types.join(" "))
                    },
                    run.tasks.train,
                    run.tasks.eval
                ),
            )
        }
    };
    let games = Arc::new(games);
    let max_steps = run.max_steps as u32;
    let seed = run.seed;
    let env_games = games.clone();
    let demo_games = games.clone();
    let label_games = games.clone();
    let prompt = AlfworldPrompt::with_style(settings.prompt);
    let make_env = move || AlfWorld::new(env_games.clone()).with_max_steps(max_steps);
    let world = World::new(make_env, prompt, AlfworldProjection)
        .with_tasks(
            (0..train as u64).collect(),
            (train as u64..games.len() as u64).collect(),
        )
        .with_task_names((0..).zip(names));
    Ok(EnvSetup {
        world,
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
        reporting: Reporting {
            task_label: Box::new(move |task| {
                let game = &label_games[task as usize % label_games.len()];
                game.task_type
                    .map_or("unknown", |t| t.short_name())
                    .to_string()
            }),
            scores: None,
            source,
        },
    })
}

/// A game's name: its path under the data set's `json_2.1.1/`, with `/` separators
/// (`valid_unseen/look_at_obj_in_light-…/trial_…/game.tw-pddl`, as ALFWorld's logs name it).
fn game_name(relative: &std::path::Path) -> String {
    relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}
