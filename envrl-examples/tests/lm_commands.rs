//! `envrl lm logits` and `envrl lm generate` on the tiny Qwen2 reference: the transformers
//! logits and greedy tokens come back through the command line.
#![allow(missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// `shared/models/tiny-qwen2`, or `None` after a skip notice (a failure under `CI=true`).
fn tiny_qwen2() -> Option<PathBuf> {
    let shared = std::env::var_os("ENVRL_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
    let dir = shared.join("models/tiny-qwen2");
    if dir.exists() {
        return Some(dir);
    }
    let message = format!(
        "lm commands: skipped, {} not found (set ENVRL_SHARED)",
        dir.display()
    );
    assert!(
        std::env::var("CI").map_or(true, |v| v != "true"),
        "{message}"
    );
    eprintln!("{message}");
    None
}

/// The model directory's `reference.json` (transformers' logits and greedy tokens).
fn reference(model: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(model.join("reference.json")).unwrap()).unwrap()
}

/// The relative L2 error of `envrl lm logits --dtype DTYPE` against the reference logits.
fn logits_error(model: &Path, reference: &serde_json::Value, dtype: &str) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let (input, output) = (dir.path().join("ids.json"), dir.path().join("logits.json"));
    std::fs::write(&input, reference["input_ids"].to_string()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_envrl"))
        .args(["lm", "logits", "--dtype", dtype, "--model"])
        .arg(model)
        .arg("--input")
        .arg(&input)
        .arg("--output")
        .arg(&output)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ours: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&output).unwrap()).unwrap();
    let flat = |v: &serde_json::Value| -> Vec<f64> {
        let rows: Vec<Vec<Vec<f64>>> = serde_json::from_value(v.clone()).unwrap();
        rows.into_iter().flatten().flatten().collect()
    };
    let (a, b) = (flat(&ours["logits"]), flat(&reference["logits"]));
    assert_eq!(a.len(), b.len());
    let num: f64 = a.iter().zip(&b).map(|(x, y)| (x - y).powi(2)).sum();
    let den: f64 = b.iter().map(|y| y * y).sum();
    (num / den).sqrt()
}

/// Half-precision weights and activations: the logits move by about bf16's / f16's rounding
/// (so the half type was used) and stay close to the f32 reference; greedy generation runs.
#[test]
fn half_precision_logits_stay_near_the_reference() {
    let Some(model) = tiny_qwen2() else {
        return;
    };
    let reference = reference(&model);
    for (dtype, low, high) in [("bf16", 1e-4, 3e-2), ("f16", 1e-5, 5e-3)] {
        let error = logits_error(&model, &reference, dtype);
        assert!(
            error > low && error < high,
            "{dtype}: relative error {error}"
        );
    }
    let out = Command::new(env!("CARGO_BIN_EXE_envrl"))
        .args([
            "lm", "generate", "--dtype", "bf16", "--ids", "1,2,3", "--model",
        ])
        .arg(&model)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bad = Command::new(env!("CARGO_BIN_EXE_envrl"))
        .args(["lm", "generate", "--dtype", "f8", "--ids", "1", "--model"])
        .arg(&model)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        !bad.status.success() && stderr.contains("f32, bf16, f16"),
        "{stderr}"
    );
}

#[test]
fn logits_and_greedy_generation_match_the_reference() {
    let Some(model) = tiny_qwen2() else {
        return;
    };
    let reference = reference(&model);
    assert!(logits_error(&model, &reference, "f32") < 1e-4);

    let prompt = &reference["greedy"]["prompt"][0];
    let ids: Vec<String> = prompt
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.to_string())
        .collect();
    let out = Command::new(env!("CARGO_BIN_EXE_envrl"))
        .args(["lm", "generate", "--model"])
        .arg(&model)
        .args(["--ids", &ids.join(","), "--max-new-tokens", "10"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let expected: Vec<String> = reference["greedy"]["output"][0].as_array().unwrap()[ids.len()..]
        .iter()
        .map(|v| v.to_string())
        .collect();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("ids: {}", expected.join(","))),
        "{stdout}"
    );
}

/// `envrl lm generate --model <gguf> --prompt … --chat` prints SmolLM2's reference greedy reply.
#[test]
fn generate_from_a_gguf_file_prints_the_reference_reply() {
    let gguf = envrl_examples::run::models_dir().join("SmolLM2-135M-Instruct.Q4_1.gguf");
    let Some(shared) = tiny_qwen2().and_then(|d| d.parent().map(PathBuf::from)) else {
        return;
    };
    if !gguf.exists() {
        let message = format!("lm gguf command: skipped, {} not found", gguf.display());
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "{message}"
        );
        eprintln!("{message}");
        return;
    }
    let reference: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(shared.join("smollm2-135m-reference.json")).unwrap(),
    )
    .unwrap();
    let prompt = reference["prompt"].as_str().unwrap();
    let user = prompt
        .split_once("<|im_start|>user\n")
        .and_then(|(_, rest)| rest.split_once("<|im_end|>"))
        .map(|(content, _)| content)
        .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_envrl"))
        .args(["lm", "generate", "--model"])
        .arg(&gguf)
        .args(["--prompt", user, "--chat", "--max-new-tokens", "24"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let expected: Vec<String> = reference["greedy_new_tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.to_string())
        .collect();
    assert!(
        stdout.contains(&format!("ids: {}", expected.join(","))),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "text: {}",
            reference["greedy_text"].as_str().unwrap()
        )),
        "{stdout}"
    );
}

/// `envrl bench … --model config.json` times an architecture with random weights (what
/// `bench/gpu.sh` uses for Qwen2.5 at the paper's shapes).
#[test]
fn benchmarks_run_an_architecture_from_its_config() {
    let Some(model) = tiny_qwen2() else {
        return;
    };
    let config = model.join("config.json");
    for args in [
        vec![
            "bench", "train", "--batch", "1", "--seq", "8", "--steps", "1",
        ],
        vec![
            "bench",
            "generate",
            "--batches",
            "2",
            "--prompt-len",
            "4",
            "--new-tokens",
            "2",
            "--prefill-len",
            "4",
        ],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_envrl"))
            .args(&args)
            .args(["--dtype", "bf16", "--model"])
            .arg(&config)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("| envrl (cpu) |"), "{stdout}");
        assert!(
            stdout.contains("| training") || stdout.contains("| generation, batch 2"),
            "{stdout}"
        );
    }
}

/// `envrl bench iteration` runs a config's iterations in a scratch directory and breaks each
/// down (rollout, update), from the run's own metrics.
#[test]
fn bench_iteration_breaks_an_iteration_down() {
    for weights in ["f32", "bf16"] {
        let out = Command::new(env!("CARGO_BIN_EXE_envrl"))
            .args(["bench", "iteration", "keydoor", "--iterations", "2"])
            .args(["--set", "warmup.steps=5", "--set", "trainer.groups=2"])
            .args(["--set", &format!("trainer.rollout_weights={weights}")])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout
                .contains("| iteration | wall s | rollout s | old-log-prob recompute s | update s"),
            "{stdout}"
        );
        assert!(
            stdout.contains(&format!("rollout weights: {weights}")),
            "{stdout}"
        );
        for row in ["| 0 |", "| 1 |", "| mean |"] {
            let line = stdout.lines().find(|l| l.starts_with(row));
            let line = line.unwrap_or_else(|| panic!("{row} missing: {stdout}"));
            // The mismatch column: a number exactly when the old log-probs were recomputed.
            let mismatch = line.trim_end_matches(" |").rsplit("| ").next().unwrap();
            assert_eq!(mismatch == "—", weights == "f32", "{line}");
        }
    }
}
