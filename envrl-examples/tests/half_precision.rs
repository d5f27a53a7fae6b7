//! `dtype = "bf16"`: a whole run (warm start, GRPO, checkpoint, evaluation) trains with
//! half-precision weights, and its checkpoint holds half as many bytes as the f32 run's.
#![allow(missing_docs)]

use std::path::Path;
use std::process::Command;

mod common;

fn train(dir: &Path, dtype: &str) {
    let out = common::short_keydoor_run(dir, &["--set", &format!("dtype={dtype}")]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn model_bytes(dir: &Path) -> u64 {
    let checkpoints = dir.join("checkpoints");
    let latest = std::fs::read_dir(&checkpoints)
        .unwrap()
        .map(|e| e.unwrap().path())
        .max()
        .unwrap();
    std::fs::metadata(latest.join("model.bpk")).unwrap().len()
}

#[test]
fn a_bf16_run_trains_and_stores_half_precision_weights() {
    let root = tempfile::tempdir().unwrap();
    let (full, half) = (root.path().join("f32"), root.path().join("bf16"));
    train(&full, "f32");
    train(&half, "bf16");
    let eval: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(half.join("eval.json")).unwrap()).unwrap();
    assert_eq!(eval.as_array().unwrap().last().unwrap()["episodes"], 16);
    let (f, h) = (model_bytes(&full), model_bytes(&half));
    assert!(
        (h as f64) < 0.6 * f as f64,
        "bf16 checkpoint {h} bytes, f32 {f} bytes"
    );
    let bad = Command::new(env!("CARGO_BIN_EXE_envrl"))
        .args(["train", "keydoor", "--set", "dtype=f8"])
        .arg("--output-dir")
        .arg(root.path().join("bad"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("`f32`, `bf16`, `f16`"), "{stderr}");
}

#[test]
fn a_lighter_acting_copy_of_a_bf16_model_is_refused_by_name() {
    let root = tempfile::tempdir().unwrap();
    let out = common::short_keydoor_run(
        root.path(),
        &[
            "--set",
            "dtype=bf16",
            "--set",
            "trainer.rollout_weights=int8",
        ],
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("rollout_weights") && stderr.contains("f32 model"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}
