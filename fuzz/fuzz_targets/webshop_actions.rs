//! Arbitrary action strings (one per line, split on `\r` so that actions may hold `\n`) sent to
//! WebShop on a generated catalog: every step answers, none panics, and a no-op leaves the page
//! and the admissible actions unchanged.
#![no_main]

use std::sync::{Arc, OnceLock};

use envrl_envs::webshop::{ObservationMode, WebShopData, WebShopEngine};
use libfuzzer_sys::fuzz_target;

fn data() -> &'static Arc<WebShopData> {
    static DATA: OnceLock<Arc<WebShopData>> = OnceLock::new();
    DATA.get_or_init(|| WebShopData::generated(3, 200))
}

fuzz_target!(|bytes: &[u8]| {
    let Some((&first, rest)) = bytes.split_first() else { return };
    let mode = if first & 1 == 0 { ObservationMode::Text } else { ObservationMode::TextRich };
    let mut engine = WebShopEngine::new(data().clone(), (first >> 1) as i64, mode);
    let goals = engine.goals().goals.len();
    engine.reset(Some(first as usize % goals));
    let text = String::from_utf8_lossy(rest);
    for action in text.split('\r') {
        let before = (engine.observation(), engine.available_actions());
        let step = engine.step(action);
        if step.noop {
            assert_eq!(step.reward, 0.0);
            assert!(!step.done);
            assert_eq!((engine.observation(), engine.available_actions()), before);
        }
    }
});
