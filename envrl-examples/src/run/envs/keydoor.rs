//! The key-and-door world in `envrl train`: a corridor of rooms, a key and a door.

use anyhow::{Result, bail};
use envrl::{ActionForm, Demonstration, ScoreRow, World};
use envrl_envs::keydoor::{KeyDoor, KeyDoorProjection, KeyDoorPrompt};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::{EnvSetup, ProgramEnv, Reporting, RunFacts};
use crate::run::presets::Preset;

/// The key-and-door world's settings: `[env] name = "keydoor"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KeyDoorSettings {
    /// Rooms in the corridor (2 to 6).
    pub rooms: usize,
}

impl Default for KeyDoorSettings {
    fn default() -> Self {
        Self { rooms: 4 }
    }
}

/// Evaluation tasks start here, far from the training ids (held-out seeds).
pub const EVAL_TASK_OFFSET: u64 = 1_000_000;

/// The key-and-door world's registration ([`ProgramEnv`]).
pub struct KeyDoorProgram;

/// The corridor's own task counts and episode length, for the pretrained models' presets.
const SMALL_WORLD: &str = "[tasks]\ntrain = 1000\neval = 1000\n[trainer]\nmax_steps = 12\ncheckpoint_every = 5\n";

impl ProgramEnv for KeyDoorProgram {
    type Settings = KeyDoorSettings;

    fn setup(settings: &KeyDoorSettings, run: &RunFacts) -> Result<EnvSetup> {
        Self::check(settings, run)?;
        Ok(corridor(Corridor {
            rooms: settings.rooms,
            max_steps: run.max_steps,
            seed: run.seed,
            train_tasks: run.tasks.train as u64,
            eval_tasks: run.tasks.eval as u64,
        }))
    }

    fn check(settings: &KeyDoorSettings, _run: &RunFacts) -> Result<()> {
        if !(2..=6).contains(&settings.rooms) {
            bail!("env.rooms = {}: a corridor has 2 to 6 rooms", settings.rooms);
        }
        Ok(())
    }

    fn preset_delta(preset: Preset) -> &'static str {
        match preset {
            Preset::CpuTiny => {
                "[warmup]\nepisodes = 100\nsteps = 150\ncontext_weight = 0.0\n\
                 [tasks]\ntrain = 1000\neval = 1000\n\
                 [trainer]\niterations = 30\ngroups = 16\ngroup_size = 8\nmax_steps = 12\n\
                 mini_batch_rows = 256\nlearning_rate = 0.0003\neval_every = 5\neval_episodes = 64\n\
                 checkpoint_every = 5\n\
                 [trainer.sampling]\nmax_new_tokens = 4\n\
                 [trainer.eval_sampling]\nmax_new_tokens = 4\ntemperature = 1.0\n"
            }
            Preset::Smollm2_135m => SMALL_WORLD,
            Preset::Paper1_5b => {
                "[warmup]\nepisodes = 100\ncontext_weight = 0.0\n[tasks]\ntrain = 1000\neval = 1000\n"
            }
        }
    }
}

/// The sizes of a key-and-door set-up.
#[derive(Debug, Clone, Copy)]
pub struct Corridor {
    /// Rooms in the corridor.
    pub rooms: usize,
    /// Steps per episode.
    pub max_steps: usize,
    /// Seed of the random "expert".
    pub seed: u64,
    /// Training tasks `0..train_tasks`.
    pub train_tasks: u64,
    /// Held-out tasks from [`EVAL_TASK_OFFSET`].
    pub eval_tasks: u64,
}

/// The key-and-door set-up of any size (the `keydoor` example's and `envrl train`'s). Its
/// replies are bare actions (no `<action>` tags), so inverse dynamics predicts bare actions too:
/// tagged targets would be 60 % unknown words to the tiny tokenizer built from the world's texts
/// (`aux/unk_rate/inverse_dynamics` = 0.6 measured).
pub fn corridor(c: Corridor) -> EnvSetup {
    let Corridor {
        rooms,
        max_steps,
        seed,
        ..
    } = c;
    let eval_offset = EVAL_TASK_OFFSET;
    let world = World::new(
        move || KeyDoor::new(rooms, max_steps),
        KeyDoorPrompt,
        KeyDoorProjection,
    )
    .with_tasks(
        (0..c.train_tasks).collect(),
        (eval_offset..eval_offset + c.eval_tasks).collect(),
    )
    .with_actions(ActionForm::Bare);
    EnvSetup {
        world,
        demonstrate: Box::new(move |tokenizer, episodes| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed.wrapping_add(1));
            let rows: Vec<ScoreRow> = envrl_envs::keydoor::random_agent_rows(
                tokenizer,
                rooms,
                max_steps,
                episodes as u64,
                &mut rng,
            );
            vec![Demonstration { rows, won: false }]
        }),
        reporting: Reporting {
            task_label: Box::new(|_| "all".into()),
            scores: None,
            source: format!("generated corridors ({rooms} rooms)"),
        },
    }
}
