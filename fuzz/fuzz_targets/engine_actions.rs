//! Arbitrary action strings (one per line) sent to the engine of a generated game: every step
//! answers, none panics, and invalid commands leave the state unchanged.
#![no_main]

use std::sync::{Arc, OnceLock};

use envrl_envs::alfworld::{AlfEngine, Game, GameGenerator, MAX_STEPS, NOTHING_HAPPENS, TaskType, Wording};
use libfuzzer_sys::fuzz_target;

fn games() -> &'static Vec<Arc<Game>> {
    static GAMES: OnceLock<Vec<Arc<Game>>> = OnceLock::new();
    GAMES.get_or_init(|| {
        let generator = GameGenerator::new(1);
        TaskType::ALL.iter().map(|&t| Arc::new(generator.generate_of_type(t, 0))).collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else { return };
    let game = games()[first as usize % games().len()].clone();
    let mut engine = AlfEngine::new(game, Wording::V212, MAX_STEPS);
    let text = String::from_utf8_lossy(rest);
    for action in text.split('\n') {
        let before = engine.state().clone();
        let step = engine.step(action);
        if step.observation == NOTHING_HAPPENS && !step.done {
            assert_eq!(engine.state().location, before.location);
            assert_eq!(engine.state().held, before.held);
        }
    }
});
