//! Sokoban in `envrl train`: verl-agent's rooms (6×6, one box by default), its prompt and
//! projection, and the breadth-first expert's demonstrations.

use anyhow::{Result, bail};
use envrl::World;
use envrl_envs::PromptStyle;
use envrl_envs::sokoban::{
    Sokoban, SokobanConfig, SokobanProjection, SokobanPrompt, expert_demonstrations,
};
use serde::{Deserialize, Serialize};

use super::{EnvSetup, ProgramEnv, Reporting, RunFacts};
use crate::run::presets::Preset;

/// Sokoban's settings: `[env] name = "sokoban"`; the rooms are verl-agent's by default (6×6,
/// one box, reverse play 30 deep). The step limit is `trainer.max_steps`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SokobanSettings {
    /// The prompt's wording: `verl-agent-2025-10` (verl-agent's current templates, the
    /// default), `verl-agent` (before its 2025-10-02 fix of "observaitons", for reproducing
    /// older runs) or `compact`.
    pub prompt: PromptStyle,
    /// Rows of a room, walls included.
    pub rows: usize,
    /// Columns of a room, walls included.
    pub cols: usize,
    /// Boxes (and targets).
    pub boxes: usize,
    /// How deep the room generator's reverse play searches.
    pub search_depth: u32,
}

impl Default for SokobanSettings {
    fn default() -> Self {
        let rooms = SokobanConfig::default();
        Self {
            prompt: SokobanPrompt::default().style,
            rows: rooms.rows,
            cols: rooms.cols,
            boxes: rooms.boxes,
            search_depth: rooms.search_depth,
        }
    }
}

impl SokobanSettings {
    /// The rooms these settings and the run's step limit describe.
    fn rooms(&self, run: &RunFacts) -> SokobanConfig {
        SokobanConfig {
            rows: self.rows,
            cols: self.cols,
            boxes: self.boxes,
            max_steps: u32::try_from(run.max_steps).unwrap_or(u32::MAX),
            search_depth: self.search_depth,
        }
    }
}

/// Sokoban's registration ([`ProgramEnv`]).
pub struct SokobanProgram;

/// Held-out rooms are seeds from here on, far from the training seeds `0..tasks.train`
/// (verl-agent validates on seeds from 2¹⁶).
pub const EVAL_SEED_OFFSET: u64 = 1 << 16;

impl ProgramEnv for SokobanProgram {
    type Settings = SokobanSettings;

    /// The rooms can be generated, and the training seeds stay below the held-out ones.
    fn check(settings: &SokobanSettings, run: &RunFacts) -> Result<()> {
        settings.rooms(run).validate()?;
        let train = run.tasks.train as u64;
        if train > EVAL_SEED_OFFSET {
            bail!("sokoban tasks.train = {train}: at most {EVAL_SEED_OFFSET} training rooms");
        }
        Ok(())
    }

    fn setup(settings: &SokobanSettings, run: &RunFacts) -> Result<EnvSetup> {
        Self::check(settings, run)?;
        let rooms = settings.rooms(run);
        let train = run.tasks.train as u64;
        let eval = run.tasks.eval as u64;
        let prompt = SokobanPrompt::with_style(settings.prompt);
        let world = World::new(move || Sokoban::new(rooms), prompt, SokobanProjection)
            .with_tasks((0..train).collect(), (EVAL_SEED_OFFSET..EVAL_SEED_OFFSET + eval).collect());
        let max_steps = run.max_steps;
        Ok(EnvSetup {
            world,
            demonstrate: Box::new(move |tokenizer, episodes| {
                let mut env = Sokoban::new(rooms);
                let tasks = 0..(episodes as u64).min(train);
                expert_demonstrations(&mut env, tasks, &prompt, tokenizer, max_steps)
            }),
            reporting: Reporting {
                task_label: Box::new(move |_| format!("{}x{} rooms", rooms.rows, rooms.cols)),
                scores: None,
                source: format!(
                    "generated {}x{} rooms, {} box{} (seeds 0..{train}, held out from {EVAL_SEED_OFFSET})",
                    rooms.rows,
                    rooms.cols,
                    rooms.boxes,
                    if rooms.boxes == 1 { "" } else { "es" }
                ),
            },
        })
    }

    fn preset_delta(preset: Preset) -> &'static str {
        match preset {
            // verl-agent's 15 moves; the compact prompt (the verl-agent one is mostly
            // instructions a from-scratch model cannot read); short replies; the key-and-door
            // world's batch and learning rate (GRPO moves a 71 % warm start to 79 % on seed 0
            // in 30 iterations; 8 iterations of the base preset's batch changed nothing).
            Preset::CpuTiny => {
                "[env]\nprompt = \"compact\"\n\
                 [warmup]\nepisodes = 400\n\
                 [tasks]\ntrain = 2000\neval = 100\n\
                 [trainer]\niterations = 30\ngroups = 16\ngroup_size = 8\nmax_steps = 15\n\
                 mini_batch_rows = 256\nlearning_rate = 0.0003\neval_every = 10\n\
                 eval_episodes = 100\ncheckpoint_every = 10\n\
                 [trainer.sampling]\nmax_new_tokens = 16\n\
                 [trainer.eval_sampling]\nmax_new_tokens = 16\n"
            }
            Preset::Smollm2_135m | Preset::Paper1_5b => "[trainer]\nmax_steps = 15\n",
        }
    }
}
