//! Arbitrary bytes as a WebShop products file: loading returns a catalog or an error naming the
//! file, and never panics.
#![no_main]

use std::sync::OnceLock;

use envrl_envs::webshop::{Catalog, INSTRUCTIONS_FILE, PRODUCTS_FILE, TITLE_NOUNS_FILE};
use libfuzzer_sys::fuzz_target;

fn dir() -> &'static std::path::Path {
    static DIR: OnceLock<std::path::PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("envrl-fuzz-webshop-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(INSTRUCTIONS_FILE), r#"{"B000000001": {"attributes": ["a"], "instruction": "Find me a mug", "instruction_attributes": ["a"]}}"#).unwrap();
        std::fs::write(dir.join(TITLE_NOUNS_FILE), "{}").unwrap();
        dir
    })
}

fuzz_target!(|bytes: &[u8]| {
    let path = dir().join(PRODUCTS_FILE);
    std::fs::write(&path, bytes).unwrap();
    match Catalog::open(dir()) {
        Ok(catalog) => {
            let goals = envrl_envs::webshop::GoalSet::new(&catalog, 1);
            assert!(goals.goals.len() <= 1_000_000);
        }
        Err(e) => assert!(e.to_string().contains(PRODUCTS_FILE) || e.to_string().contains("json")),
    }
});
