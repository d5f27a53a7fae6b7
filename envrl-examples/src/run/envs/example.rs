//! The listing of docs/custom-environment.md's "Adding it to `envrl train`", compiled (a
//! test checks that the chapter shows this file's text after this comment).

use anyhow::{Result, bail};
use envrl::{ActionForm, World};
use envrl_envs::keydoor::{KeyDoor, KeyDoorProjection, KeyDoorPrompt};
use serde::{Deserialize, Serialize};

use super::{EnvSetup, ProgramEnv, Reporting, RunFacts};
use crate::run::presets::Preset;

/// The world's own settings: the `[env]` table of a run's config (`name = "lamps"`, `rooms = 4`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LampsSettings {
    /// Rooms in the corridor.
    pub rooms: usize,
}

impl Default for LampsSettings {
    fn default() -> Self {
        Self { rooms: 3 }
    }
}

/// The world's registration.
pub struct LampsProgram;

impl ProgramEnv for LampsProgram {
    type Settings = LampsSettings;

    fn setup(settings: &LampsSettings, run: &RunFacts) -> Result<EnvSetup> {
        let (rooms, max_steps) = (settings.rooms, run.max_steps);
        // Your `Environment`, prompt and parser; replies are bare actions, so objectives that
        // predict actions predict them bare too.
        let world = World::new(
            move || KeyDoor::new(rooms, max_steps),
            KeyDoorPrompt,
            KeyDoorProjection,
        )
        .with_tasks(
            (0..run.tasks.train as u64).collect(),
            (1_000_000..1_000_000 + run.tasks.eval as u64).collect(),
        )
        .with_actions(ActionForm::Bare);
        Ok(EnvSetup {
            world,
            // The warm start's examples; none here (set warmup.steps = 0).
            demonstrate: Box::new(|_, _| Vec::new()),
            reporting: Reporting {
                task_label: Box::new(|_| "all".into()),
                scores: None,
                source: format!("{rooms}-room corridors"),
            },
        })
    }

    fn check(settings: &LampsSettings, _run: &RunFacts) -> Result<()> {
        if !(2..=6).contains(&settings.rooms) {
            bail!(
                "env.rooms = {}: a corridor has 2 to 6 rooms",
                settings.rooms
            );
        }
        Ok(())
    }

    fn preset_delta(preset: Preset) -> &'static str {
        match preset {
            Preset::CpuTiny => "[warmup]\nsteps = 0\n[trainer]\nmax_steps = 6\n",
            Preset::Smollm2_135m | Preset::Paper1_5b => "",
        }
    }
}
