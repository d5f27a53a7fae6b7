//! `lora.rank`: a run trains adapters on the projections and nothing else; its checkpoints
//! load into a model with the same adapters; `policy/weight_distance` is the adapters' distance
//! from the warm start. A non-positive `lora.alpha` is refused.
#![allow(missing_docs)]

use std::path::Path;
use std::process::Command;

use burn::tensor::Device;
use envrl_algos::CausalLm;

fn train(dir: &Path, extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_envrl"))
        .args([
            "train",
            "keydoor",
            "--iterations",
            "2",
            "--set",
            "trainer.checkpoint_every=1",
            "--set",
            "trainer.groups=4",
            "--set",
            "trainer.group_size=4",
            "--set",
            "trainer.eval_every=0",
            "--set",
            "warmup.steps=20",
        ])
        .arg("--output-dir")
        .arg(dir)
        .args(extra)
        .output()
        .unwrap()
}

fn values(tensor: burn::tensor::Tensor<2>) -> Vec<f32> {
    tensor.into_data().try_to_vec::<f32>().unwrap()
}

#[test]
fn a_lora_run_trains_only_the_adapters() {
    let dir = tempfile::tempdir().unwrap();
    let run = train(
        dir.path(),
        // An entropy bonus trains the adapters even when no episode is won.
        &[
            "--set",
            "lora.rank=4",
            "--set",
            "lora.alpha=8",
            "--set",
            "algorithm.loss.entropy_coef=0.01",
        ],
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{stdout}\n{run:?}");
    assert!(stdout.contains("LoRA: rank 4"), "{stdout}");

    let config =
        envrl_examples::run::RunConfig::from_toml_file(&dir.path().join("config.toml")).unwrap();
    let tokenizer = envrl_algos::WordTokenizer::load(dir.path().join("tokenizer.json")).unwrap();
    let seed = config.trainer.seed;
    let fresh: CausalLm = config
        .tiny
        .lm_config(envrl::Tokenizer::vocab_size(&tokenizer))
        .init(&Device::flex().autodiff(), seed)
        .unwrap();
    let with_adapters = fresh.clone().with_lora(4, 8.0, seed);
    let optimizer = burn::optim::AdamWConfig::new().init();
    let checkpoint = dir.path().join("checkpoints/ckpt-000002");
    let trained = envrl::load_checkpoint(&checkpoint, with_adapters.clone(), optimizer)
        .unwrap()
        .model;
    // The warm start and two iterations left the frozen embedding as initialised and moved the
    // adapted projections.
    assert_eq!(
        values(trained.model.embed_tokens.val()),
        values(fresh.model.embed_tokens.val())
    );
    let q = |m: &CausalLm| values(m.model.layers[0].self_attn.q_proj.weight.val());
    assert_ne!(q(&trained), q(&fresh));
    assert!(trained.adapter_parameters() > 0);
    // `policy/weight_distance` measures the adapters alone, from the warm start's.
    use burn::module::Module;
    let record = burn::store::ModuleRecord::from_bytes(
        envrl::read_whole(&dir.path().join("warm-start.bpk")).unwrap(),
    )
    .unwrap();
    let warm = with_adapters.try_load_record(record).unwrap();
    let start = envrl::TrainableWeights::of(&warm);
    let moved = envrl::TrainableWeights::of(&trained)
        .distance_from(&start)
        .unwrap();
    let metrics = std::fs::read_to_string(dir.path().join("metrics.jsonl")).unwrap();
    let last: serde_json::Value = serde_json::from_str(metrics.lines().last().unwrap()).unwrap();
    let logged = last["policy/weight_distance"].as_f64().unwrap();
    assert!(moved.l2 > 0.0);
    assert!(
        (logged - moved.l2).abs() <= 1e-6 * moved.l2,
        "logged {logged}, recomputed {}",
        moved.l2
    );
    // A model without adapters does not fit the checkpoint.
    let plain = burn::optim::AdamWConfig::new().init();
    assert!(envrl::load_checkpoint(&checkpoint, fresh.clone(), plain).is_err());

    let bad = train(
        &dir.path().join("bad"),
        &["--set", "lora.rank=4", "--set", "lora.alpha=0"],
    );
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("lora.alpha"));
}
