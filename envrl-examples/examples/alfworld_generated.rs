//! Prints a few generated ALFWorld games: the reset text and the planner's walkthrough played
//! through the engine.
//!
//! ```text
//! cargo run --release -p envrl-examples --example alfworld_generated -- [seed] [games]
//! ```

use std::sync::Arc;

use anyhow::{Context, Result};
use envrl_envs::alfworld::{AlfEngine, GameGenerator, MAX_STEPS, Wording};

fn main() -> Result<()> {
    envrl_examples::keep_freed_memory();
    envrl_examples::init_logging();
    let mut args = std::env::args().skip(1);
    let seed: u64 = args
        .next()
        .map(|s| s.parse())
        .transpose()
        .context("seed")?
        .unwrap_or(0);
    let games: u64 = args
        .next()
        .map(|s| s.parse())
        .transpose()
        .context("games")?
        .unwrap_or(3);
    let generator = GameGenerator::new(seed);
    for index in 0..games {
        let game = Arc::new(generator.generate(index));
        let mut engine = AlfEngine::new(game.clone(), Wording::V212, MAX_STEPS);
        println!(
            "=== game {index} ({:?})\n{}\n",
            game.task_type,
            engine.reset().observation
        );
        for command in &game.walkthrough {
            let step = engine.step(command);
            println!("> {command}\n{}", step.observation);
        }
        println!();
    }
    Ok(())
}
