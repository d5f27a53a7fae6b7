//! [`AdapterServers`]: servers that load each published LoRA policy as a new adapter at run
//! time (vLLM, SGLang), so the next rollouts play it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use envrl::{Generation, PolicyServer, Sampler, SamplingParams};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use super::pool::{http_agent, server_error};
use super::{Engine, ServerPool};
use crate::export::{Export, ExportFormat, ExportOptions, ExportTokenizer};
use crate::{CausalLm, HfTokenizer, LmConfig};

/// What each published adapter is written from and where.
#[derive(Debug, Clone)]
pub struct AdapterSync {
    /// A directory every server reads at the same path (the learner's machine, or a shared
    /// filesystem): each version is written to `DIR/envrl-vN`.
    pub dir: PathBuf,
    /// The policy's architecture.
    pub config: LmConfig,
    /// Its tokenizer.
    pub tokenizer: Arc<HfTokenizer>,
    /// The pretrained model the LoRA run started from (the adapter's base).
    pub base_model: PathBuf,
}

impl Engine {
    /// The routes that load and unload a LoRA adapter while the server runs; `None` for
    /// llama.cpp, which cannot (a new policy means a restart: [`super::SpawnedLlamaCpp`]).
    pub fn adapter_routes(self) -> Option<(&'static str, &'static str)> {
        match self {
            Engine::LlamaCpp => None,
            Engine::Vllm => Some(("/v1/load_lora_adapter", "/v1/unload_lora_adapter")),
            Engine::Sglang => Some(("/load_lora_adapter", "/unload_lora_adapter")),
        }
    }
}

/// The adapter name a policy version is served under (`envrl-vN`): each version gets a new
/// name, because reloading one name in place is a known source of stale prefix caches.
pub fn adapter_name(version: usize) -> String {
    format!("envrl-v{version}")
}

/// Servers of engines that load LoRA adapters at run time: each [`PolicyServer::publish`]
/// writes the policy's adapter (a PEFT directory), loads it into every server under a new
/// name, asks for that name from then on, and unloads the version before.
///
/// A server that cannot load a version is named in a warning and, since requests name the
/// version, refuses them until it loads a later one: its share goes to the others. A publish
/// fails when no server loads the version.
pub struct AdapterServers {
    pool: ServerPool,
    sync: AdapterSync,
    agent: ureq::Agent,
    served: Option<String>,
    /// Seconds the last publish took (export, load, unload).
    pub last_publish_s: f64,
}

impl std::fmt::Debug for AdapterServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdapterServers")
            .field("pool", &self.pool)
            .field("dir", &self.sync.dir)
            .field("served", &self.served)
            .finish_non_exhaustive()
    }
}

/// POSTs `body` to `url` and returns the error in words unless the answer is a success.
fn post(agent: &ureq::Agent, url: &str, body: &Value) -> Result<(), String> {
    let mut response = agent
        .post(url)
        .header("content-type", "application/json")
        .send(&serde_json::to_vec(body).map_err(|e| e.to_string())?[..])
        .map_err(|e| e.to_string())?;
    let status = response.status();
    if status.is_success() {
        return Ok(());
    }
    let text = response
        .body_mut()
        .with_config()
        .limit(4096)
        .read_to_string()
        .unwrap_or_default();
    Err(format!("HTTP {status}: {}", text.trim()))
}

impl AdapterServers {
    /// Publishes to the servers of `pool`, writing adapters under `sync.dir` (made if missing).
    ///
    /// # Errors
    /// [`envrl::Error::RolloutServer`] when a server's engine cannot load adapters at run time,
    /// or the directory cannot be made.
    pub fn new(pool: ServerPool, sync: AdapterSync) -> envrl::Result<Self> {
        for (url, engine) in pool.servers() {
            if engine.adapter_routes().is_none() {
                return Err(server_error(
                    url,
                    format!(
                        "{} cannot load a new policy while it runs; let envrl start it \
                         (`spawn:llama-cpp`), which restarts it on each version",
                        engine.name()
                    ),
                ));
            }
        }
        std::fs::create_dir_all(&sync.dir)
            .map_err(|e| server_error("-", format!("creating {}: {e}", sync.dir.display())))?;
        let dir = std::path::absolute(&sync.dir)
            .map_err(|e| server_error("-", format!("{}: {e}", sync.dir.display())))?;
        Ok(Self {
            pool,
            sync: AdapterSync { dir, ..sync },
            agent: http_agent(Duration::from_secs(120)),
            served: None,
            last_publish_s: 0.0,
        })
    }

    /// The adapter name requests ask for now (`None` before the first publish).
    pub fn served(&self) -> Option<&str> {
        self.served.as_deref()
    }

    /// Writes `policy`'s adapter to `path`.
    fn write_adapter(&self, policy: &CausalLm, path: &Path) -> envrl::Result<()> {
        if path.exists() {
            let _ = std::fs::remove_dir_all(path);
        }
        Export {
            model: policy,
            config: &self.sync.config,
            tokenizer: ExportTokenizer::Hf(&self.sync.tokenizer),
            base_model: Some(&self.sync.base_model),
            name: "envrl-policy",
        }
        .write(&ExportOptions::new(ExportFormat::Peft), path)
        .map_err(|e| server_error("-", format!("writing the adapter {}: {e}", path.display())))?;
        Ok(())
    }
}

impl Sampler for AdapterServers {
    fn sample(
        &self,
        prompts: &[Vec<u32>],
        stop_ids: &[u32],
        params: &SamplingParams,
        rngs: &mut [ChaCha8Rng],
    ) -> envrl::Result<Vec<Generation>> {
        match self.served {
            Some(_) => self.pool.sample(prompts, stop_ids, params, rngs),
            None => Err(server_error("-", "no policy published yet")),
        }
    }
}

impl PolicyServer<CausalLm> for AdapterServers {
    fn publish(&mut self, policy: &CausalLm, version: usize) -> envrl::Result<()> {
        let start = Instant::now();
        let name = adapter_name(version);
        let path = self.sync.dir.join(&name);
        self.write_adapter(policy, &path)?;
        let load = json!({"lora_name": name, "lora_path": path.to_string_lossy()});
        let mut failed = Vec::new();
        let servers: Vec<(String, Engine)> = self
            .pool
            .servers()
            .into_iter()
            .map(|(url, engine)| (url.to_string(), engine))
            .collect();
        for (url, engine) in &servers {
            let Some((load_route, _)) = engine.adapter_routes() else {
                continue;
            };
            if let Err(e) = post(&self.agent, &format!("{url}{load_route}"), &load) {
                log::warn!("rollout server {url}: loading adapter {name}: {e}");
                failed.push(format!("{url}: {e}"));
            }
        }
        if failed.len() == servers.len() {
            return Err(server_error(
                &servers
                    .iter()
                    .map(|s| s.0.as_str())
                    .collect::<Vec<_>>()
                    .join(","),
                format!(
                    "no server loaded policy version {version} from {} ({})",
                    path.display(),
                    failed.join("; ")
                ),
            ));
        }
        self.pool.set_model(Some(name.clone()));
        if let Some(old) = self.served.replace(name) {
            let unload = json!({"lora_name": old});
            for (url, engine) in &servers {
                if let Some((_, unload_route)) = engine.adapter_routes()
                    && let Err(e) = post(&self.agent, &format!("{url}{unload_route}"), &unload)
                {
                    log::warn!("rollout server {url}: unloading adapter {old}: {e}");
                }
            }
            let _ = std::fs::remove_dir_all(self.sync.dir.join(&old));
        }
        self.last_publish_s = start.elapsed().as_secs_f64();
        log::info!(
            "rollout servers play policy version {version} ({:.2} s to publish)",
            self.last_publish_s
        );
        Ok(())
    }
}
