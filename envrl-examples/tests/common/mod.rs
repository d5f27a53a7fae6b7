//! Helpers shared by the command-line tests.

use std::path::Path;
use std::process::{Command, Stdio};

/// A short keydoor run (warm start, one GRPO iteration of 4 × 8 episodes, 16 held-out
/// episodes) into `dir`, with `extra` arguments.
pub fn short_keydoor_run(dir: &Path, extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_envrl"))
        .args([
            "train",
            "keydoor",
            "--quiet",
            "--iterations",
            "1",
            "--set",
            "trainer.groups=4",
            "--set",
            "trainer.group_size=8",
            "--set",
            "trainer.eval_episodes=16",
            "--set",
            "tasks.eval=16",
            "--set",
            "warmup.steps=100",
        ])
        .arg("--output-dir")
        .arg(dir)
        .args(extra)
        .stdout(Stdio::null())
        .output()
        .unwrap()
}
