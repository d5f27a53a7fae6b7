//! `[rollout] server = …`: the run's rollouts sampled by an inference server that follows the
//! trained policy — `spawn:llama-cpp` (started by envrl, restarted with each version),
//! `spawn:vllm` (started by envrl, each version loaded while it runs: a LoRA adapter, or a full
//! fine-tune's weights), or the addresses of vLLM or SGLang servers the user runs (each version
//! written under `policy_dir` and loaded by every server).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use burn::tensor::Device;
use envrl::{Generation, PolicyServer, Sampler, SamplingParams};
use envrl_algos::serve::{
    LiveServers, PolicyFiles, PoolConfig, ServerPool, SpawnConfig, SpawnedLlamaCpp, SpawnedVllm,
    VllmSpawnConfig,
};
use envrl_algos::{CausalLm, Pretrained};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::{ModelSource, RunConfig};

/// Where the rollouts are sampled.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RolloutConfig {
    /// `None`: in this process (the default); `spawn:llama-cpp`: a llama.cpp server envrl
    /// starts from the `xllamacpp` wheel and restarts with each published policy;
    /// `spawn:vllm`: a vLLM server envrl starts on the base model, loading each LoRA version
    /// as an adapter or reloading a full fine-tune's weights; `http://host:port[,http://…]`:
    /// vLLM or SGLang servers the user runs (each version is written under `policy_dir` and
    /// loaded by every server).
    pub server: Option<String>,
    /// The Python interpreter of a spawned server [default: `$ENVRL_LLAMA_PYTHON` or
    /// `$ENVRL_VLLM_PYTHON`, else `~/.cache/envrl-tools/{llama,vllm}-venv/bin/python`, where
    /// `scripts/serve-check.sh` installs them].
    pub python: Option<PathBuf>,
    /// Server threads [default: 1].
    pub threads: Option<usize>,
    /// Requests in flight per server [default: 4].
    pub parallel: Option<usize>,
    /// Where the policy versions (adapters or full weights) of servers given by address are
    /// written: a directory every server reads at the same path.
    pub policy_dir: Option<PathBuf>,
}

impl RolloutConfig {
    /// Refuses a `rollout.server` that cannot be used (an unknown engine, an address that is not
    /// plain `http://`, an address given twice, addresses without `policy_dir`), with the rest
    /// of the config: before any model is loaded or any file written.
    ///
    /// # Errors
    /// As the setting's reading.
    pub(crate) fn check(&self) -> Result<()> {
        match &self.server {
            Some(server) => ServerChoice::parse(server, self.policy_dir.as_deref()).map(|_| ()),
            None => Ok(()),
        }
    }

    /// A one-line description of where the rollouts are sampled, for the run's log.
    pub(crate) fn describe(&self) -> Option<String> {
        Some(match self.server.as_deref()? {
            "spawn:llama-cpp" => "llama.cpp's server, restarted with each policy".into(),
            "spawn:vllm" => "vLLM, each policy version loaded while it runs".into(),
            urls => format!("{urls}, each policy version loaded while they run"),
        })
    }
}

/// The server that samples a run's rollouts.
#[derive(Debug)]
pub(crate) enum RolloutServer {
    LlamaCpp(SpawnedLlamaCpp),
    Vllm(SpawnedVllm),
    Adapters(LiveServers),
}

impl Sampler for RolloutServer {
    fn sample(
        &self,
        prompts: &[Vec<u32>],
        stop_ids: &[u32],
        params: &SamplingParams,
        rngs: &mut [ChaCha8Rng],
    ) -> envrl::Result<Vec<Generation>> {
        match self {
            Self::LlamaCpp(s) => s.sample(prompts, stop_ids, params, rngs),
            Self::Vllm(s) => s.sample(prompts, stop_ids, params, rngs),
            Self::Adapters(s) => s.sample(prompts, stop_ids, params, rngs),
        }
    }
}

impl PolicyServer<CausalLm> for RolloutServer {
    fn publish(&mut self, policy: &CausalLm, version: usize) -> envrl::Result<()> {
        match self {
            Self::LlamaCpp(s) => s.publish(policy, version),
            Self::Vllm(s) => s.publish(policy, version),
            Self::Adapters(s) => s.publish(policy, version),
        }
    }
}

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

/// Which kind of server `rollout.server` names.
#[derive(Debug, Clone, PartialEq)]
enum ServerChoice {
    SpawnLlamaCpp,
    SpawnVllm,
    /// Servers the user runs, by address, and where their adapters are written.
    Urls {
        urls: Vec<String>,
        policy_dir: PathBuf,
    },
}

impl ServerChoice {
    /// Reads `rollout.server` (and `rollout.policy_dir`, which servers given by address need).
    ///
    /// # Errors
    /// An unknown `spawn:` engine, an item that is not an `http(s)://` address, or addresses
    /// without `policy_dir`.
    fn parse(server: &str, policy_dir: Option<&Path>) -> Result<Self> {
        match server {
            "spawn:llama-cpp" => return Ok(Self::SpawnLlamaCpp),
            "spawn:vllm" => return Ok(Self::SpawnVllm),
            s if s.starts_with("spawn:") => {
                bail!("rollout.server = {s:?}: envrl starts `spawn:llama-cpp` or `spawn:vllm`")
            }
            _ => {}
        }
        let urls: Vec<String> = server.split(',').map(|u| u.trim().to_string()).collect();
        if let Some(tls) = urls.iter().find(|u| u.starts_with("https://")) {
            bail!(
                "rollout.server: {tls:?}: this build speaks plain HTTP only (no TLS stack); reach \
                 the servers over http:// on a trusted network, or through a TLS-terminating \
                 tunnel on this machine"
            );
        }
        if let Some(bad) = urls.iter().find(|u| !u.starts_with("http://")) {
            bail!(
                "rollout.server: {bad:?} is neither spawn:llama-cpp, spawn:vllm nor an http:// \
                 address"
            );
        }
        if let Some((i, twice)) = urls
            .iter()
            .enumerate()
            .find(|(i, u)| urls[..*i].contains(u))
        {
            bail!(
                "rollout.server: {twice:?} is given twice (items {} and {}); each server once",
                urls[..i].iter().position(|u| u == twice).unwrap_or(0) + 1,
                i + 1
            );
        }
        let Some(policy_dir) = policy_dir else {
            bail!(
                "rollout.server = {server:?}: set rollout.policy_dir, a directory the servers \
                 read at the same path, for the policy versions' adapters"
            );
        };
        Ok(Self::Urls {
            urls,
            policy_dir: policy_dir.to_path_buf(),
        })
    }
}

/// The server that samples the run's rollouts, when the config asks for one.
///
/// # Errors
/// An unknown `rollout.server`, a model the engines cannot serve (the tiny model's word
/// tokenizer has no llama.cpp vocabulary type), an adapter server without a LoRA run or
/// without `policy_dir`, an interpreter without the engine, or a server that does not start.
pub(crate) fn policy_server(config: &RunConfig) -> Result<Option<RolloutServer>> {
    let rollout = &config.rollout;
    let Some(server) = rollout.server.as_deref() else {
        return Ok(None);
    };
    let choice = ServerChoice::parse(server, rollout.policy_dir.as_deref())?;
    let path = pretrained_path(config, server)?;
    let pretrained = Pretrained::load(path, &Device::flex())
        .with_context(|| format!("reading {}'s tokenizer and architecture", path.display()))?;
    let tokenizer = Arc::new(pretrained.tokenizer);
    let threads = rollout.threads.unwrap_or(1);
    let parallel = rollout.parallel.unwrap_or(4);
    Ok(Some(match choice {
        ServerChoice::SpawnLlamaCpp => {
            RolloutServer::LlamaCpp(SpawnedLlamaCpp::new(SpawnConfig {
                python: rollout
                    .python
                    .clone()
                    .unwrap_or_else(SpawnConfig::default_python),
                config: pretrained.config,
                tokenizer,
                base_model: Some(path.to_path_buf()),
                threads,
                parallel,
                start_timeout: Duration::from_secs(300),
            })?)
        }
        ServerChoice::SpawnVllm => RolloutServer::Vllm(SpawnedVllm::start(VllmSpawnConfig {
            python: rollout
                .python
                .clone()
                .unwrap_or_else(VllmSpawnConfig::default_python),
            config: pretrained.config,
            tokenizer,
            base_model: path.to_path_buf(),
            lora_rank: config.lora.rank,
            threads,
            in_flight: parallel,
            max_model_len: 4096,
            start_timeout: Duration::from_secs(900),
        })?),
        ServerChoice::Urls { urls, policy_dir } => {
            let mut pool = PoolConfig::new(urls, pretrained.config.vocab_size);
            pool.in_flight = parallel;
            RolloutServer::Adapters(LiveServers::new(
                ServerPool::connect(pool)?,
                PolicyFiles {
                    dir: policy_dir,
                    config: pretrained.config,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_setting_is_read_before_any_model_is_loaded() {
        let dir = Path::new("/shared/adapters");
        assert_eq!(
            ServerChoice::parse("spawn:vllm", None).unwrap(),
            ServerChoice::SpawnVllm
        );
        assert_eq!(
            ServerChoice::parse("http://a:8000, http://b:8000", Some(dir)).unwrap(),
            ServerChoice::Urls {
                urls: vec!["http://a:8000".into(), "http://b:8000".into()],
                policy_dir: dir.to_path_buf(),
            }
        );
        let err = ServerChoice::parse("http://a:8000, https://b:8000", Some(dir))
            .unwrap_err()
            .to_string();
        assert!(err.contains("plain HTTP only"), "{err}");
        let err = ServerChoice::parse("http://a:8000,http://b:1,http://a:8000", Some(dir))
            .unwrap_err()
            .to_string();
        assert!(err.contains("given twice (items 1 and 3)"), "{err}");
        let err = ServerChoice::parse("spawn:sglang", None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("envrl starts"), "{err}");
        let err = ServerChoice::parse("http://a:8000,b:8000", Some(dir))
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"b:8000\" is neither"), "{err}");
        let err = ServerChoice::parse("http://a:8000", None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("set rollout.policy_dir"), "{err}");
    }
}
