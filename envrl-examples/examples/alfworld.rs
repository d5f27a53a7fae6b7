//! The ALFWorld agent on the embedded default: generated games (or `ALFWORLD_DATA`), a
//! from-scratch tiny LM warm-started on planner walkthroughs, then GRPO + EnvRL (state prediction
//! and inverse dynamics), with a progress bar, plots and a per-task-type evaluation table.
//!
//! ```text
//! cargo run --release -p envrl-examples --example alfworld -- [seed]
//! ```
//! The same run, with every option: `envrl train alfworld --help`.

fn main() -> anyhow::Result<()> {
    envrl_examples::keep_freed_memory();
    envrl_examples::init_logging();
    envrl_examples::run::run_example(envrl_examples::run::EnvName::Alfworld)
}
