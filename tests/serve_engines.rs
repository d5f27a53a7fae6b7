//! llama.cpp's server (the `xllamacpp` wheel) samples SmolLM2-135M for envrl: a
//! [`SpawnedLlamaCpp`] publishes the model envrl loaded (an F32 GGUF, a server started on it)
//! and is asked for greedy responses to eight ALFWorld prompts as token ids. The server's
//! tokens equal envrl's own greedy generation and its log-probabilities match envrl's scores of
//! the same tokens; after a changed policy is published (the server restarted on it), its
//! log-probabilities match the new policy's, not the old one's.
//!
//! Needs the wheel in `~/.cache/envrl-tools/llama-venv` (`scripts/serve-check.sh` installs it;
//! `ENVRL_LLAMA_PYTHON` names another interpreter): skipped with the reason without it, failed
//! when `ENVRL_SERVE_CHECK=1` (the script) says it must run.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use burn::module::{Module, ModuleMapper, Param};
use burn::tensor::{Device, Tensor};
use envrl::{Generation, Policy, PolicyServer, Sampler, SamplingParams, ScoreRow, Tokenizer};
use envrl_algos::serve::{SpawnConfig, SpawnedLlamaCpp};
use envrl_algos::{CausalLm, Pretrained};

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
    })
    .unwrap();
    server.publish(&model, 0).unwrap();
    let first_publish = server.last_publish_s;

    let prompts = crate::support::alfworld_prompts(tokenizer.as_ref(), 8);
    let greedy = SamplingParams {
        temperature: 0.0,
        top_p: 1.0,
        top_k: 0,
        max_new_tokens: 24,
    };
    let stops = tokenizer.stop_ids();
    let start = Instant::now();
    let served = server
        .sample(&prompts, &stops, &greedy, &mut envrl::row_streams(0, 0..8))
        .unwrap();
    let served_s = start.elapsed().as_secs_f64();
    let own = model.generate(&prompts, &stops, &greedy, &mut envrl::row_streams(0, 0..8));
    let tokens: usize = served.iter().map(|g| g.tokens.len()).sum();
    let same = served
        .iter()
        .zip(&own)
        .filter(|(a, b)| a.tokens == b.tokens)
        .count();
    let worst = worst_logprob_gap(&model, &prompts, &served);
    eprintln!(
        "llama.cpp (F32 GGUF): {same} of 8 greedy responses equal envrl's ({tokens} tokens, \
         {served_s:.2} s); log-probabilities within {worst:.1e} of envrl's scores; \
         published in {first_publish:.1} s"
    );
    assert_eq!(same, 8, "greedy responses differ");
    assert!(worst < 1e-3, "log-probabilities differ by {worst}");

    // A new policy version: the restarted server samples from it.
    let nudged = model.clone().map(&mut Nudge);
    server.publish(&nudged, 1).unwrap();
    let served = server
        .sample(&prompts, &stops, &greedy, &mut envrl::row_streams(0, 0..8))
        .unwrap();
    let to_new = worst_logprob_gap(&nudged, &prompts, &served);
    let to_old = worst_logprob_gap(&model, &prompts, &served);
    eprintln!(
        "after publishing version 1 ({:.1} s): log-probabilities within {to_new:.1e} of the new \
         policy's, {to_old:.1e} from the old one's",
        server.last_publish_s
    );
    assert!(
        to_new < 1e-3 && to_old > 10.0 * to_new,
        "{to_new} vs {to_old}"
    );
}
