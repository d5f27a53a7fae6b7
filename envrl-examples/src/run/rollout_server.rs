//! `[rollout] server = "spawn:llama-cpp"`: the run's rollouts sampled by an inference server
//! that envrl starts and restarts with each iteration's policy
//! ([`envrl_algos::serve::SpawnedLlamaCpp`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use burn::tensor::Device;
use envrl_algos::Pretrained;
use envrl_algos::serve::{SpawnConfig, SpawnedLlamaCpp};
use serde::{Deserialize, Serialize};

use super::{ModelSource, RunConfig};

/// Where the rollouts are sampled.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RolloutConfig {
    /// `None`: in this process (the default); `spawn:llama-cpp`: a llama.cpp server envrl
    /// starts from the `xllamacpp` wheel and restarts with each published policy.
    pub server: Option<String>,
    /// The Python interpreter with `xllamacpp` [default: `$ENVRL_LLAMA_PYTHON`, else
    /// `~/.cache/envrl-tools/llama-venv/bin/python`, where `scripts/serve-check.sh` installs it].
    pub python: Option<PathBuf>,
    /// Server threads [default: 1].
    pub threads: Option<usize>,
    /// Requests the server samples at once [default: 4].
    pub parallel: Option<usize>,
}

impl RolloutConfig {
    fn python(&self) -> PathBuf {
        self.python
            .clone()
            .or_else(|| std::env::var_os("ENVRL_LLAMA_PYTHON").map(PathBuf::from))
            .unwrap_or_else(|| {
                PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                    .join(".cache/envrl-tools/llama-venv/bin/python")
            })
    }
}

/// The server that samples the run's rollouts, when the config asks for one.
///
/// # Errors
/// An unknown `rollout.server`, a model llama.cpp cannot serve (the tiny model's word
/// tokenizer has no llama.cpp vocabulary type), or an interpreter without `xllamacpp`.
pub(crate) fn policy_server(config: &RunConfig) -> Result<Option<SpawnedLlamaCpp>> {
    let rollout = &config.rollout;
    let Some(server) = rollout.server.as_deref() else {
        return Ok(None);
    };
    if server != "spawn:llama-cpp" {
        bail!(
            "rollout.server = {server:?}: this version can start `spawn:llama-cpp`; servers it \
             does not start cannot follow the trained policy yet (docs/rollout-servers.md)"
        );
    }
    let path = match &config.model {
        ModelSource::Gguf(path) | ModelSource::HfDir(path) => path,
        ModelSource::Tiny => bail!(
            "rollout.server = \"spawn:llama-cpp\" needs a pretrained model (`--model`): \
             llama.cpp cannot load the tiny model's word tokenizer"
        ),
    };
    let pretrained = Pretrained::load(path, &Device::flex())
        .with_context(|| format!("reading {}'s tokenizer and architecture", path.display()))?;
    let spawn = SpawnConfig {
        python: rollout.python(),
        config: pretrained.config,
        tokenizer: Arc::new(pretrained.tokenizer),
        base_model: Some(path.clone()),
        threads: rollout.threads.unwrap_or(1),
        parallel: rollout.parallel.unwrap_or(4),
        start_timeout: Duration::from_secs(300),
    };
    Ok(Some(SpawnedLlamaCpp::new(spawn)?))
}
