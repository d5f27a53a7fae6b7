//! llama.cpp's server (the `xllamacpp` wheel) samples SmolLM2-135M for envrl: the model
//! envrl loaded is exported as an F32 GGUF, served by `scripts/llama-server.py`, and asked
//! through [`ServerPool`] (engine detected) for greedy responses to eight ALFWorld prompts as
//! token ids. The server's tokens equal envrl's own greedy generation, and its log-probabilities
//! match envrl's scores of the same tokens.
//!
//! Needs the wheel in `~/.cache/envrl-tools/llama-venv` (`scripts/serve-check.sh` installs it;
//! `ENVRL_LLAMA_PYTHON` names another interpreter): skipped with the reason without it, failed
//! when `ENVRL_SERVE_CHECK=1` (the script) says it must run.

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use burn::tensor::Device;
use envrl::{Environment, Policy, Sampler, SamplingParams, ScoreRow, Tokenizer};
use envrl_algos::Pretrained;
use envrl_algos::export::{Export, ExportFormat, ExportOptions, ExportTokenizer};
use envrl_algos::serve::{Engine, PoolConfig, ServerPool};

use crate::shared_data::smollm2_gguf;

/// The interpreter with `xllamacpp`, or why there is none.
fn llama_python() -> Result<PathBuf, String> {
    let python = std::env::var_os("ENVRL_LLAMA_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/envrl-tools/llama-venv/bin/python")
        });
    let ok = Command::new(&python)
        .args(["-c", "import xllamacpp"])
        .output()
        .is_ok_and(|o| o.status.success());
    match ok {
        true => Ok(python),
        false => Err(format!(
            "{} cannot import xllamacpp (run scripts/serve-check.sh)",
            python.display()
        )),
    }
}

/// Kills the server when the test ends, however it ends.
struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts the server and waits (up to 120 s) until it answers `/health`.
fn spawn(python: &PathBuf, model: &std::path::Path, port: u16) -> Served {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/llama-server.py");
    let child = Command::new(python)
        .arg(script)
        .arg(model)
        .arg(port.to_string())
        .args(["--threads", "1", "--parallel", "4"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let served = Served(child);
    let start = Instant::now();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(2)))
        .build()
        .into();
    while start.elapsed() < Duration::from_secs(120) {
        if agent
            .get(&format!("http://127.0.0.1:{port}/health"))
            .call()
            .is_ok()
        {
            return served;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("llama.cpp's server did not answer on port {port} within 120 s");
}

#[test]
fn llama_cpp_serves_envrl_s_greedy_tokens_and_log_probabilities() {
    let python = match llama_python() {
        Ok(python) => python,
        Err(reason) => {
            assert!(
                std::env::var("ENVRL_SERVE_CHECK").as_deref() != Ok("1"),
                "{reason}"
            );
            eprintln!("llama.cpp serve check: skipped, {reason}");
            return;
        }
    };
    let Some(path) = smollm2_gguf("llama.cpp serve check") else {
        return;
    };
    let pretrained = Pretrained::load(&path, &Device::flex()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let gguf = dir.path().join("gguf");
    Export {
        model: &pretrained.model,
        config: &pretrained.config,
        tokenizer: ExportTokenizer::Hf(&pretrained.tokenizer),
        base_model: Some(&path),
        name: "smollm2-envrl",
    }
    .write(&ExportOptions::new(ExportFormat::Gguf), &gguf)
    .unwrap();
    let port = free_port();
    let _server = spawn(&python, &gguf.join("model.gguf"), port);
    let tokenizer = &pretrained.tokenizer;
    let pool = ServerPool::connect(PoolConfig::new(
        vec![format!("http://127.0.0.1:{port}")],
        tokenizer.vocab_size(),
    ))
    .unwrap();
    assert_eq!(pool.servers()[0].1, Engine::LlamaCpp, "engine detected");

    let games = std::sync::Arc::new(envrl_envs::alfworld::GameGenerator::new(7).generate_many(8));
    let mut env = envrl_envs::alfworld::AlfWorld::new(games);
    let prompts: Vec<Vec<u32>> = (0..8)
        .map(|task| {
            let obs = env.reset(task);
            tokenizer.encode_prompt(&format!(
                "{}\nYour admissible actions are: {:?}.\nChoose one admissible action.",
                obs.text, obs.admissible
            ))
        })
        .collect();
    let greedy = SamplingParams {
        temperature: 0.0,
        top_p: 1.0,
        top_k: 0,
        max_new_tokens: 24,
    };
    let stops = tokenizer.stop_ids();
    let mut rngs = envrl::row_streams(0, 0..8);
    let start = Instant::now();
    let served = pool.sample(&prompts, &stops, &greedy, &mut rngs).unwrap();
    let served_s = start.elapsed().as_secs_f64();
    let own =
        pretrained
            .model
            .generate(&prompts, &stops, &greedy, &mut envrl::row_streams(0, 0..8));
    let tokens: usize = served.iter().map(|g| g.tokens.len()).sum();
    let same = served
        .iter()
        .zip(&own)
        .filter(|(a, b)| a.tokens == b.tokens)
        .count();
    // The server's log-probabilities against envrl's scores of the served tokens.
    let rows: Vec<ScoreRow> = prompts
        .iter()
        .zip(&served)
        .map(|(p, g)| ScoreRow {
            context: p.clone(),
            target: g.tokens.clone(),
        })
        .collect();
    let scores = pretrained.model.score(&rows, false);
    let width = scores.logprobs.dims()[1];
    let ours: Vec<f32> = scores
        .logprobs
        .into_data()
        .convert::<f32>()
        .try_into_vec()
        .unwrap();
    let mut worst = 0.0f32;
    for (i, g) in served.iter().enumerate() {
        for (k, lp) in g.logprobs.iter().enumerate() {
            worst = worst.max((lp - ours[i * width + k]).abs());
        }
    }
    eprintln!(
        "llama.cpp (F32 GGUF): {same} of 8 greedy responses equal envrl's ({tokens} tokens, \
         {served_s:.2} s); log-probabilities within {worst:.1e} of envrl's scores"
    );
    assert_eq!(same, 8, "greedy responses differ");
    assert!(worst < 1e-3, "log-probabilities differ by {worst}");
}
