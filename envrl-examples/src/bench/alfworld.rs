//! `envrl bench alfworld`: engine speed next to the Python reference (ALFWORLD.md §12).

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use envrl_envs::alfworld::{AlfEngine, AlfworldData, Game, MAX_STEPS, Split, Wording};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The Python engine's figures: steps/s per core, seconds per reset, seconds per game load.
pub const REFERENCE_STEPS_PER_S: f64 = 16.0;
/// Seconds per reset of the Python engine.
pub const REFERENCE_RESET_S: f64 = 0.85;
/// Seconds per game load of the Python engine.
pub const REFERENCE_LOAD_S: f64 = 0.89;

/// Random admissible actions over `games` for about `seconds`; returns steps per second.
fn random_steps(games: &[Arc<Game>], seconds: f64, seed: u64) -> f64 {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let start = Instant::now();
    let mut steps = 0u64;
    let mut g = seed as usize;
    while start.elapsed().as_secs_f64() < seconds {
        let mut engine = AlfEngine::new(games[g % games.len()].clone(), Wording::V212, MAX_STEPS);
        g += 1;
        loop {
            let commands: Vec<&str> = engine.admissible_commands().collect();
            let pick = commands[rng.random_range(0..commands.len())].to_string();
            steps += 1;
            if engine.step(&pick).done {
                break;
            }
        }
    }
    steps as f64 / start.elapsed().as_secs_f64()
}

/// Runs the benchmark over the valid_unseen games of `data` and prints a table.
///
/// # Errors
/// When the data directory or a game cannot be read.
pub fn bench_alfworld(data: &Path, seconds: f64) -> Result<()> {
    let data = AlfworldData::open(data)?;
    let paths = data.games(Split::ValidUnseen, &[])?;
    let start = Instant::now();
    let games = data.load(&paths)?;
    let load_s = start.elapsed().as_secs_f64() / games.len() as f64;

    let mut engines: Vec<AlfEngine> = games
        .iter()
        .map(|g| AlfEngine::new(g.clone(), Wording::V212, MAX_STEPS))
        .collect();
    let rounds = 200;
    let start = Instant::now();
    for _ in 0..rounds {
        for e in &mut engines {
            std::hint::black_box(e.reset());
        }
    }
    let reset_s = start.elapsed().as_secs_f64() / (rounds * engines.len()) as f64;

    let one = random_steps(&games, seconds, 1);
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let parallel: f64 = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let games = &games;
                scope.spawn(move || random_steps(games, seconds, 100 + t as u64))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or(0.0)).sum()
    });

    println!(
        "ALFWorld engine, {} valid_unseen games, random admissible actions",
        games.len()
    );
    println!("| measure | envrl | Python reference | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| steps/s, 1 thread | {one:.0} | {REFERENCE_STEPS_PER_S:.0} | {:.0}× |",
        one / REFERENCE_STEPS_PER_S
    );
    println!(
        "| steps/s, {threads} threads | {parallel:.0} | – | {:.2}× of 1 thread |",
        parallel / one
    );
    println!(
        "| reset | {:.2} µs | {REFERENCE_RESET_S} s | {:.0}× |",
        reset_s * 1e6,
        REFERENCE_RESET_S / reset_s
    );
    println!(
        "| game load | {:.2} ms | {REFERENCE_LOAD_S} s | {:.0}× |",
        load_s * 1e3,
        REFERENCE_LOAD_S / load_s
    );
    Ok(())
}
