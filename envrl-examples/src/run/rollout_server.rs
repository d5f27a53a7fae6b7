//! `[rollout] server = …`: the run's rollouts sampled by an inference server that follows the
//! trained policy — `spawn:llama-cpp` (started by envrl, restarted with each version),
//! `spawn:vllm` (started by envrl, each version loaded while it runs: a LoRA adapter, or a full
//! fine-tune's weights), or the addresses of vLLM or SGLang servers the user runs (each version
//! written under `policy_dir` and loaded by every server).

use std::path::Path;
use std::sync::Arc;

use anyhow::{Result, bail};
use envrl::PolicyServer;
use envrl_algos::serve::{
    LiveServers, PolicyFiles, PoolConfig, ServerPool, SpawnConfig, SpawnedLlamaCpp, SpawnedVllm,
    VllmSpawnConfig,
};
use envrl_algos::{CausalLm, HfTokenizer, LmConfig};

use super::rollout_config::ServerChoice;
use super::{ModelSource, RunConfig};

/// The server that samples a run's rollouts: a spawned llama.cpp or vLLM server, or running
/// servers that load each version, behind one type.
pub(crate) type RolloutServer = Box<dyn PolicyServer<CausalLm> + Send>;

/// The pretrained model a served run starts from.
fn pretrained_path<'a>(config: &'a RunConfig, server: &str) -> Result<&'a Path> {
    match &config.model {
        ModelSource::Gguf(path) | ModelSource::HfDir(path) => Ok(path),
        ModelSource::Tiny => bail!(
            "rollout.server = {server:?} needs a pretrained model (`--model`): the engines \
             cannot load the tiny model's word tokenizer"
        ),
    }
}

/// The server that samples the run's rollouts, when the config asks for one.
///
/// # Errors
/// An unknown `rollout.server`, a model the engines cannot serve (the tiny model's word
/// tokenizer has no llama.cpp vocabulary type), an adapter server without a LoRA run or
/// without `policy_dir`, an interpreter without the engine, or a server that does not start.
pub(crate) fn policy_server(
    config: &RunConfig,
    lm_config: &LmConfig,
    tokenizer: Option<Arc<HfTokenizer>>,
) -> Result<Option<RolloutServer>> {
    let rollout = &config.rollout;
    let Some(server) = rollout.server.as_deref() else {
        return Ok(None);
    };
    let choice = ServerChoice::parse(server, rollout.policy_dir.as_deref())?;
    let path = pretrained_path(config, server)?;
    let Some(tokenizer) = tokenizer else {
        bail!("rollout.server = {server:?}: the run's pretrained model was not loaded");
    };
    let threads = rollout.threads.unwrap_or(1);
    let parallel = rollout.parallel.unwrap_or(4);
    Ok(Some(match choice {
        ServerChoice::SpawnLlamaCpp => Box::new(SpawnedLlamaCpp::new(SpawnConfig {
            python: rollout
                .python
                .clone()
                .unwrap_or_else(SpawnConfig::default_python),
            config: lm_config.clone(),
            tokenizer,
            base_model: Some(path.to_path_buf()),
            threads,
            parallel,
            start_timeout: rollout.start_timeout(300.0),
            request_timeout: rollout.request_timeout(),
        })?),
        ServerChoice::SpawnVllm => Box::new(SpawnedVllm::start(VllmSpawnConfig {
            python: rollout
                .python
                .clone()
                .unwrap_or_else(VllmSpawnConfig::default_python),
            config: lm_config.clone(),
            tokenizer,
            base_model: path.to_path_buf(),
            lora_rank: config.lora.rank,
            threads,
            in_flight: parallel,
            max_model_len: 4096,
            start_timeout: rollout.start_timeout(900.0),
            request_timeout: rollout.request_timeout(),
        })?),
        ServerChoice::Urls { urls, policy_dir } => {
            let mut pool = PoolConfig::new(urls, lm_config.vocab_size);
            pool.in_flight = parallel;
            pool.timeout = rollout.request_timeout();
            Box::new(LiveServers::new(
                ServerPool::connect(pool)?,
                PolicyFiles {
                    dir: policy_dir,
                    config: lm_config.clone(),
                    tokenizer,
                    base_model: path.to_path_buf(),
                    // vLLM reloads a full fine-tune's output layer only when it has its own
                    // (the server must serve an untied export: docs/rollout-servers.md).
                    untie_embeddings: true,
                },
            )?)
        }
    }))
}
