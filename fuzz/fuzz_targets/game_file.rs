//! Arbitrary bytes as a `game.tw-pddl` file: an error or a game, never a panic.
#![no_main]

use std::path::Path;

use envrl_envs::alfworld::{Game, GameFile};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let path = Path::new("fuzz/game.tw-pddl");
    if let Ok(file) = GameFile::parse(text, path) {
        let _ = Game::from_game_file(file, path);
    }
    // PDDL text on its own, too.
    let _ = envrl_envs::alfworld::Problem::parse(text, path);
});
