//! `warmup.from`: a run that loads another run's warm-started model plays its first rollout
//! exactly as that run did (same model, same seed), though it trains with another objective; a
//! missing warm start is an error naming the file. `--warm-start-only` saves the same warm start
//! as a whole run and stops.
#![allow(missing_docs)]

use std::path::Path;

mod common;
use common::short_keydoor_run as train;

/// The first iteration's rollout statistics.
fn first_rollout(dir: &Path) -> Vec<f64> {
    let text = std::fs::read_to_string(dir.join("metrics.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    [
        "episode/return",
        "episode/length",
        "episode/success",
        "policy/invalid_action_rate",
    ]
    .iter()
    .map(|k| first[k].as_f64().unwrap())
    .collect()
}

#[test]
fn a_shared_warm_start_gives_the_same_first_rollout() {
    let root = tempfile::tempdir().unwrap();
    let (a, b, c) = (
        root.path().join("a"),
        root.path().join("b"),
        root.path().join("c"),
    );
    assert!(train(&a, &["--aux", "none"]).status.success());
    assert!(a.join("warm-start.bpk").exists());
    let from = format!("warmup.from={}", a.display());
    let shared = train(&b, &["--aux", "state_prediction", "--set", &from]);
    assert!(shared.status.success(), "{shared:?}");
    assert_eq!(first_rollout(&a), first_rollout(&b));
    // Without it the same run starts from another model (no warm start at all).
    assert!(
        train(&c, &["--aux", "none", "--set", "warmup.steps=0"])
            .status
            .success()
    );
    assert_ne!(first_rollout(&a), first_rollout(&c));

    let missing = format!("warmup.from={}", root.path().join("nowhere").display());
    let failed = train(&root.path().join("d"), &["--set", &missing]);
    assert!(!failed.status.success());
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(stderr.contains("nowhere/warm-start.bpk"), "{stderr}");
}

/// The tensors of a run's warm-start file, by name, as stored (the file's metadata also holds
/// parameter ids, which are random: two saves of the same weights differ there).
fn tensors(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let reader = burn_pack::Reader::from_file(dir.join("warm-start.bpk")).unwrap();
    let names = reader.tensor_names();
    names
        .iter()
        .map(|&name| (name.to_string(), reader.tensor_data(name).unwrap()))
        .collect()
}

#[test]
fn a_warm_start_alone_is_the_one_a_whole_run_saves() {
    let root = tempfile::tempdir().unwrap();
    let (whole, alone) = (root.path().join("whole"), root.path().join("alone"));
    assert!(train(&whole, &["--aux", "none"]).status.success());
    let out = train(&alone, &["--aux", "none", "--warm-start-only"]);
    assert!(out.status.success(), "{out:?}");
    let (whole_tensors, alone_tensors) = (tensors(&whole), tensors(&alone));
    assert!(!whole_tensors.is_empty());
    assert!(whole_tensors == alone_tensors, "the two warm starts differ");
    // It stopped there: no RL, no evaluation.
    for file in ["metrics.jsonl", "eval.json", "checkpoints"] {
        assert!(!alone.join(file).exists(), "{file} was written");
    }
    // `envrl eval` of the directory evaluates that warm start: the whole run's evaluation
    // before RL, game for game.
    let eval = std::process::Command::new(env!("CARGO_BIN_EXE_envrl"))
        .args(["eval", "keydoor", "--quiet", "--output-dir"])
        .arg(&alone)
        .output()
        .unwrap();
    assert!(eval.status.success(), "{eval:?}");
    let success = |path: &Path| -> f64 {
        let rows: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        rows.as_array().unwrap().last().unwrap()["success"]
            .as_f64()
            .unwrap()
    };
    let metrics = std::fs::read_to_string(whole.join("metrics.jsonl")).unwrap();
    let before: serde_json::Value = serde_json::from_str(metrics.lines().next().unwrap()).unwrap();
    assert_eq!(
        success(&alone.join("eval.json")),
        before["eval/success"].as_f64().unwrap()
    );
    // Nothing to train is refused, saying why.
    let from = format!("warmup.from={}", whole.display());
    for extra in [["--set", from.as_str()], ["--set", "warmup.steps=0"]] {
        let args = [&["--warm-start-only"][..], &extra[..]].concat();
        let refused = train(&root.path().join("refused"), &args);
        assert!(!refused.status.success());
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(
            stderr.contains("--warm-start-only with warmup."),
            "{stderr}"
        );
    }
}
