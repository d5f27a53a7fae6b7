//! [`SpawnedLlamaCpp`]: a llama.cpp server that envrl starts and restarts with each published
//! policy (llama.cpp cannot load new weights into a running server).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use envrl::{Generation, PolicyServer, Sampler, SamplingParams};
use rand_chacha::ChaCha8Rng;
use tempfile::TempDir;

use super::child::{ChildServer, check_python, free_port, tools_python};
use super::pool::server_error;
use super::{Engine, LlamaCpp, PoolConfig, ServerPool};
use crate::runtime::export::{Export, ExportFormat, ExportOptions, ExportTokenizer};
use crate::{CausalLm, HfTokenizer, LmConfig};

/// The launcher (`llama_server.py` beside this file), written next to the served files.
const LAUNCHER: &str = include_str!("llama_server.py");

/// What a spawned llama.cpp server serves and how it runs.
#[derive(Debug, Clone)]
pub struct SpawnConfig {
    /// A Python interpreter that can `import xllamacpp`.
    pub python: PathBuf,
    /// The served model's architecture.
    pub config: LmConfig,
    /// Its tokenizer (written into each GGUF).
    pub tokenizer: Arc<HfTokenizer>,
    /// The pretrained `.gguf` or Hugging Face directory the model came from (its tokenizer keys).
    pub base_model: Option<PathBuf>,
    /// Server threads.
    pub threads: usize,
    /// Requests served at once.
    pub parallel: usize,
    /// How long a start may take.
    pub start_timeout: Duration,
    /// How long one sampling request may take.
    pub request_timeout: Duration,
}

impl SpawnConfig {
    /// The interpreter a spawned server runs on unless told: `$ENVRL_LLAMA_PYTHON`, else
    /// `~/.cache/envrl-tools/llama-venv/bin/python` (where `scripts/serve-check.sh` installs
    /// `xllamacpp`).
    pub fn default_python() -> PathBuf {
        tools_python("ENVRL_LLAMA_PYTHON", "llama-venv")
    }
}

/// A llama.cpp server started by envrl: each [`PolicyServer::publish`] exports the policy as an
/// F32 GGUF (checked by loading it back), stops the old server, starts one on the new file and
/// waits until it answers. The server is stopped when this is dropped.
pub struct SpawnedLlamaCpp {
    spawn: SpawnConfig,
    dir: TempDir,
    /// The pool that asks the running server, and the server (stopped when dropped).
    server: Option<(ServerPool, ChildServer)>,
    /// Seconds the last publish took (export, restart, first answer).
    pub last_publish_s: f64,
}

impl std::fmt::Debug for SpawnedLlamaCpp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpawnedLlamaCpp")
            .field("dir", &self.dir.path())
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

fn spawn_error(reason: impl Into<String>) -> envrl::Error {
    server_error("spawn:llama-cpp", reason)
}

impl SpawnedLlamaCpp {
    /// A server to be started by the first publish.
    ///
    /// # Errors
    /// [`envrl::Error::RolloutServer`] when the working directory cannot be made or the
    /// interpreter cannot import `xllamacpp`.
    pub fn new(spawn: SpawnConfig) -> envrl::Result<Self> {
        check_python(&spawn.python, "xllamacpp", "pip install xllamacpp").map_err(spawn_error)?;
        let dir = tempfile::Builder::new()
            .prefix("envrl-llama-cpp-")
            .tempdir()
            .map_err(|e| spawn_error(format!("creating a working directory: {e}")))?;
        std::fs::write(dir.path().join("llama-server.py"), LAUNCHER)
            .map_err(|e| spawn_error(format!("writing the launcher: {e}")))?;
        Ok(Self {
            spawn,
            dir,
            server: None,
            last_publish_s: 0.0,
        })
    }

    /// Starts the server on `model` and connects to it.
    fn start(&mut self, model: &Path) -> envrl::Result<()> {
        let port = free_port().map_err(|e| spawn_error(format!("finding a free port: {e}")))?;
        let mut command = Command::new(&self.spawn.python);
        command
            .arg(self.dir.path().join("llama-server.py"))
            .arg(model)
            .arg(port.to_string())
            .args(["--threads", &self.spawn.threads.to_string()])
            .args(["--parallel", &self.spawn.parallel.to_string()]);
        let log = self.dir.path().join("server.log");
        let child = ChildServer::start(command, port, &log, self.spawn.start_timeout)
            .map_err(spawn_error)?;
        let mut config = PoolConfig::new(vec![child.url.clone()], self.spawn.config.vocab_size);
        config.engine = Some(Engine::new(&LlamaCpp));
        config.in_flight = self.spawn.parallel;
        config.timeout = self.spawn.request_timeout;
        self.server = Some((ServerPool::connect(config)?, child));
        Ok(())
    }
}

impl Sampler for SpawnedLlamaCpp {
    fn sample(
        &self,
        prompts: &[Vec<u32>],
        stop_ids: &[u32],
        params: &SamplingParams,
        rngs: &mut [ChaCha8Rng],
    ) -> envrl::Result<Vec<Generation>> {
        match &self.server {
            Some((pool, _)) => pool.sample(prompts, stop_ids, params, rngs),
            None => Err(spawn_error("no policy published yet")),
        }
    }
}

impl PolicyServer<CausalLm> for SpawnedLlamaCpp {
    fn publish(&mut self, policy: &CausalLm, version: usize) -> envrl::Result<()> {
        let start = Instant::now();
        let out = self.dir.path().join(format!("policy-v{version}"));
        if out.exists() {
            let _ = std::fs::remove_dir_all(&out);
        }
        Export {
            model: policy,
            config: &self.spawn.config,
            tokenizer: ExportTokenizer::Hf(&self.spawn.tokenizer),
            base_model: self.spawn.base_model.as_deref(),
            name: "envrl-policy",
        }
        .write(&ExportOptions::new(ExportFormat::Gguf), &out)
        .map_err(|e| spawn_error(format!("exporting policy version {version}: {e}")))?;
        self.server = None;
        self.start(&out.join("model.gguf"))?;
        // Earlier versions are no longer served.
        if let Ok(entries) = std::fs::read_dir(self.dir.path()) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with("policy-v") && entry.path() != out {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        self.last_publish_s = start.elapsed().as_secs_f64();
        log::info!(
            "llama.cpp serves policy version {version} ({:.1} s to publish)",
            self.last_publish_s
        );
        Ok(())
    }
}
