//! The presets `--preset` knows, as data: one TOML table per preset (`<name>.toml` beside this
//! file, every field of a [`RunConfig`](crate::run::RunConfig) but the environment's), over which
//! the environment's module lays its changes
//! ([`ProgramEnv::preset_delta`](crate::run::envs::ProgramEnv::preset_delta)).

use serde::{Deserialize, Serialize};

/// A preset, by its name in configs and on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
pub enum Preset {
    /// A from-scratch tiny LM sized for 2 CPU cores (the default).
    #[serde(rename = "cpu-tiny")]
    #[value(name = "cpu-tiny")]
    CpuTiny,
    /// SmolLM2-135M-Instruct's GGUF at CPU scale.
    #[serde(rename = "smollm2-135m")]
    #[value(name = "smollm2-135m")]
    Smollm2_135m,
    /// The paper's setting, for a GPU.
    #[serde(rename = "paper-1.5b")]
    #[value(name = "paper-1.5b")]
    Paper1_5b,
}

impl Preset {
    /// Every preset.
    pub const ALL: [Preset; 3] = [Preset::CpuTiny, Preset::Smollm2_135m, Preset::Paper1_5b];

    /// The name in configs and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Preset::CpuTiny => "cpu-tiny",
            Preset::Smollm2_135m => "smollm2-135m",
            Preset::Paper1_5b => "paper-1.5b",
        }
    }

    /// The preset's table as written, `{models}` standing for
    /// [`models_dir`](crate::run::models_dir).
    pub fn table(self) -> &'static str {
        match self {
            Preset::CpuTiny => include_str!("cpu-tiny.toml"),
            Preset::Smollm2_135m => include_str!("smollm2-135m.toml"),
            Preset::Paper1_5b => include_str!("paper-1.5b.toml"),
        }
    }
}

impl std::fmt::Display for Preset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
