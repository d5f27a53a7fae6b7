//! `envrl export`: a trained ALFWorld agent, exported as a Hugging Face directory or a GGUF
//! file and evaluated through `envrl eval --model`, plays the same held-out episodes as the run
//! did; bad run directories and outputs are clear errors that leave nothing behind.
#![allow(missing_docs)]

use std::path::Path;
use std::process::{Command, Output};

fn envrl(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_envrl"))
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn ok(output: &Output) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{text}");
    text
}

fn failed(output: &Output) -> String {
    let text = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "succeeded: {text}");
    text
}

/// `envrl export RUN --format FORMAT --output OUT [extra]`.
fn export(run: &Path, format: &str, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "export",
        path(run),
        "--format",
        format,
        "--output",
        path(out),
    ];
    args.extend(extra);
    envrl(&args)
}

/// A short ALFWorld run (cpu-tiny, one iteration) into `dir`.
fn train_alfworld(dir: &Path) {
    let sets = [
        "trainer.iterations=1",
        "trainer.groups=4",
        "trainer.group_size=4",
        "trainer.eval_every=0",
        "trainer.eval_episodes=12",
        "tasks.eval=12",
        "warmup.steps=150",
    ];
    let mut args = vec!["train", "alfworld", "--quiet", "--output-dir", path(dir)];
    for set in &sets {
        args.extend(["--set", set]);
    }
    ok(&envrl(&args));
}

#[test]
fn an_exported_alfworld_agent_plays_the_same_held_out_episodes() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    train_alfworld(&run);
    let config = run.join("config.toml");
    let cases: [(&str, &[&str], &str); 2] = [
        ("hf", &["--dtype", "f32"], "hf"),
        ("gguf", &["--quant", "f32"], "gguf/model.gguf"),
    ];
    // `envrl eval --model MODEL` plays the run's held-out episodes exactly.
    let plays_like_the_run = |label: &str, model: &Path| {
        let eval = tmp.path().join(format!("eval-{label}"));
        ok(&envrl(&[
            "eval",
            "alfworld",
            "--quiet",
            "--model",
            path(model),
            "--config",
            path(&config),
            "--output-dir",
            path(&eval),
        ]));
        for file in ["eval-outcomes.json", "eval-episodes.txt"] {
            let theirs = std::fs::read_to_string(eval.join(file)).unwrap();
            let ours = std::fs::read_to_string(run.join(file)).unwrap();
            assert_eq!(theirs, ours, "{label}: {file} differs");
        }
    };
    for (format, flags, model) in cases {
        let out = tmp.path().join(format);
        let text = ok(&export(&run, format, &out, flags));
        assert!(text.contains("within 0.00e0"), "{format}: {text}");
        plays_like_the_run(format, &tmp.path().join(model));
    }

    // A pretrained model exported as envrl loads it (`--model`, what a rollout server serves):
    // the HF export written again as a GGUF plays the same episodes.
    let hf = tmp.path().join("hf");
    let base = tmp.path().join("base");
    let to_gguf = ["--format", "gguf", "--output", path(&base)];
    let text = ok(&envrl(
        &[&["export", "--model", path(&hf)], &to_gguf[..]].concat(),
    ));
    assert!(text.contains("within 0.00e0"), "{text}");
    plays_like_the_run("pretrained", &base.join("model.gguf"));
    let refused = tmp.path().join("refused");
    let err = failed(&envrl(&[
        "export",
        "--model",
        path(&hf),
        "--format",
        "peft",
        "--output",
        path(&refused),
    ]));
    assert!(err.contains("no LoRA adapter"), "{err}");
    let missing = tmp.path().join("no-such-model.gguf");
    let err = failed(&envrl(&[
        "export",
        "--model",
        path(&missing),
        "--format",
        "hf",
        "--output",
        path(&refused),
    ]));
    assert!(err.contains("no-such-model.gguf"), "{err}");
    let err = failed(&envrl(&[
        "export",
        path(&run),
        "--model",
        path(&hf),
        "--format",
        "hf",
        "--output",
        path(&refused),
    ]));
    assert!(err.contains("cannot be used with"), "{err}");
    assert!(!refused.exists());
    // The lossy formats verify within their tolerances.
    for (format, flag, value) in [("hf", "--dtype", "bf16"), ("gguf", "--quant", "q8_0")] {
        let out = tmp.path().join(format!("{format}-{value}"));
        ok(&export(&run, format, &out, &[flag, value]));
    }

    // A from-scratch run has no base model for a PEFT adapter.
    let out = tmp.path().join("peft");
    let err = failed(&export(&run, "peft", &out, &[]));
    assert!(err.contains("no LoRA adapters"), "{err}");
    assert!(!out.exists());

    // A corrupt checkpoint: skipped when choosing the latest, an error when named.
    let broken = tmp.path().join("broken");
    std::fs::create_dir_all(broken.join("checkpoints")).unwrap();
    for file in ["config.toml", "tokenizer.json"] {
        std::fs::copy(run.join(file), broken.join(file)).unwrap();
    }
    let err = failed(&export(&broken, "hf", &out, &[]));
    assert!(err.contains("holds no complete checkpoint"), "{err}");
    let ckpt = broken.join("checkpoints/ckpt-000001");
    std::fs::create_dir(&ckpt).unwrap();
    for entry in std::fs::read_dir(run.join("checkpoints/ckpt-000001")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), ckpt.join(entry.file_name())).unwrap();
    }
    let model = ckpt.join("model.bpk");
    let mut bytes = std::fs::read(&model).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&model, bytes).unwrap();
    let err = failed(&export(&broken, "hf", &out, &[]));
    assert!(err.contains("holds no complete checkpoint"), "{err}");
    let err = failed(&export(
        &broken,
        "hf",
        &out,
        &["--checkpoint", "ckpt-000001"],
    ));
    assert!(
        err.contains("model.bpk") && err.contains("corrupt"),
        "{err}"
    );
    let err = failed(&export(&run, "hf", &out, &["--checkpoint", "ckpt-000009"]));
    assert!(err.contains("ckpt-000009: no such checkpoint"), "{err}");

    // An output that cannot be written, or is taken: nothing is left behind.
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let err = failed(&export(&run, "hf", &file.join("out"), &[]));
    assert!(err.contains("a-file"), "{err}");
    let taken = tmp.path().join("taken");
    std::fs::create_dir_all(taken.join("x")).unwrap();
    let err = failed(&export(&run, "hf", &taken, &[]));
    assert!(err.contains("not an empty directory"), "{err}");
    let err = failed(&export(&run, "hf", &run.join("hf"), &[]));
    assert!(err.contains("inside the run directory"), "{err}");
    assert!(!out.exists());
    let partial: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("partial"))
        .collect();
    assert!(partial.is_empty(), "{partial:?}");
}
