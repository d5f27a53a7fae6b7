//! [`LiveServers`]: servers that take each published policy while they run (vLLM, SGLang): a
//! LoRA version is loaded as a new adapter, a full fine-tune's weights are reloaded in place.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use envrl::{Generation, PolicyServer, Sampler, SamplingParams};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use super::api::redact_credentials;
use super::pool::{http_agent, server_error};
use super::{Engine, ServerPool};
use crate::runtime::export::{Export, ExportFormat, ExportOptions, ExportTokenizer};
use crate::{CausalLm, HfTokenizer, LmConfig};

/// What each published policy is written from and where.
#[derive(Debug, Clone)]
pub struct PolicyFiles {
    /// A directory every server reads at the same path (the learner's machine, or a shared
    /// filesystem): each version is written to `DIR/envrl-vN`.
    pub dir: PathBuf,
    /// The policy's architecture.
    pub config: LmConfig,
    /// Its tokenizer.
    pub tokenizer: Arc<HfTokenizer>,
    /// The pretrained model the run started from (a LoRA adapter's base).
    pub base_model: PathBuf,
    /// Write a full fine-tune of a model with tied embeddings with an output layer of its own
    /// ([`ExportOptions::untie_embeddings`]): vLLM 0.32's in-place reload leaves a tied output
    /// layer on the old weights, so vLLM must serve an untied model (as [`super::SpawnedVllm`]
    /// does) and be given untied versions.
    pub untie_embeddings: bool,
}

/// How a running server takes a published policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PublishForm {
    /// A LoRA policy: its PEFT adapter, loaded under a new name per version.
    Adapter,
    /// A full fine-tune: its Hugging Face directory, reloaded into the served model.
    Weights,
}

impl PublishForm {
    /// The form `policy` is published in: an adapter when it has LoRA parameters.
    pub fn of(policy: &CausalLm) -> Self {
        match policy.adapter_parameters() {
            0 => PublishForm::Weights,
            _ => PublishForm::Adapter,
        }
    }
}

/// The requests that make a running `engine` play `path` (written in `form`) as `name`.
fn publish_requests(
    engine: Engine,
    form: PublishForm,
    name: &str,
    path: &str,
) -> Option<Vec<(&'static str, Value)>> {
    match form {
        PublishForm::Adapter => engine
            .adapter_routes()
            .map(|(load, _)| vec![(load, json!({"lora_name": name, "lora_path": path}))]),
        PublishForm::Weights => engine.reload_requests(path),
    }
}

/// The name a policy version is written and served under (`envrl-vN`): each version gets a new
/// one, because reloading one adapter name in place is a known source of stale prefix caches.
pub fn version_name(version: usize) -> String {
    format!("envrl-v{version}")
}

/// Servers of engines that take a new policy while they run. Each [`PolicyServer::publish`]
/// writes the policy under a new name and:
/// - a LoRA policy: loads its PEFT adapter into every server under that name, asks for that name
///   from then on, and unloads the version before. A server that cannot load it is named in a
///   warning and, since requests name the version, refuses them until it loads a later one: its
///   share goes to the others; the publish fails when no server loads it.
/// - a full fine-tune: has every server reload the served model's weights from the policy's
///   Hugging Face directory. Requests cannot tell versions apart, so the publish fails when any
///   server does not reload.
pub struct LiveServers {
    pool: ServerPool,
    files: PolicyFiles,
    agent: ureq::Agent,
    /// The version served now and the form it was published in.
    served: Option<(String, PublishForm)>,
    /// Seconds the last publish took (export, load, unload).
    pub last_publish_s: f64,
}

impl std::fmt::Debug for LiveServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveServers")
            .field("pool", &self.pool)
            .field("dir", &self.files.dir)
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

impl LiveServers {
    /// Publishes to the servers of `pool`, writing versions under `files.dir` (made if missing).
    ///
    /// # Errors
    /// [`envrl::Error::RolloutServer`] when a server's engine cannot take a policy while it
    /// runs, or the directory cannot be made.
    pub fn new(pool: ServerPool, files: PolicyFiles) -> envrl::Result<Self> {
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
        let dir_error = |e: std::io::Error| {
            server_error(
                &pool.addresses(),
                format!("policy directory {}: {e}", files.dir.display()),
            )
        };
        std::fs::create_dir_all(&files.dir).map_err(dir_error)?;
        let dir = std::path::absolute(&files.dir).map_err(dir_error)?;
        Ok(Self {
            pool,
            files: PolicyFiles { dir, ..files },
            agent: http_agent(Duration::from_secs(300)),
            served: None,
            last_publish_s: 0.0,
        })
    }

    /// The version requests are sampled from now (`None` before the first publish).
    pub fn served(&self) -> Option<&str> {
        self.served.as_ref().map(|(name, _)| name.as_str())
    }

    /// Writes `policy` to `path` in `form` (a PEFT adapter, or a Hugging Face directory).
    fn write(&self, policy: &CausalLm, form: PublishForm, path: &Path) -> envrl::Result<()> {
        if path.exists() {
            let _ = std::fs::remove_dir_all(path);
        }
        let format = match form {
            PublishForm::Adapter => ExportFormat::Peft,
            PublishForm::Weights => ExportFormat::Hf,
        };
        Export {
            model: policy,
            config: &self.files.config,
            tokenizer: ExportTokenizer::Hf(&self.files.tokenizer),
            base_model: Some(&self.files.base_model),
            name: "envrl-policy",
        }
        .write(
            &ExportOptions {
                untie_embeddings: self.files.untie_embeddings,
                ..ExportOptions::new(format)
            },
            path,
        )
        .map_err(|e| {
            server_error(
                &self.pool.addresses(),
                format!("writing {}: {e}", path.display()),
            )
        })?;
        Ok(())
    }

    /// Unloads adapter `name` from every server (a failure only warns: the version is no
    /// longer asked for).
    fn unload_adapter(&self, name: &str) {
        let unload = json!({"lora_name": name});
        for (url, engine) in self.pool.servers() {
            if let Some((_, route)) = engine.adapter_routes()
                && let Err(e) = post(&self.agent, &format!("{url}{route}"), &unload)
            {
                let warning = format!("rollout server {url}: unloading adapter {name}: {e}");
                log::warn!("{}", redact_credentials(&warning));
            }
        }
    }
}

impl Sampler for LiveServers {
    fn sample(
        &self,
        prompts: &[Vec<u32>],
        stop_ids: &[u32],
        params: &SamplingParams,
        rngs: &mut [ChaCha8Rng],
    ) -> envrl::Result<Vec<Generation>> {
        match self.served {
            Some(_) => self.pool.sample(prompts, stop_ids, params, rngs),
            None => Err(server_error(
                &self.pool.addresses(),
                "no policy published yet",
            )),
        }
    }
}

impl PolicyServer<CausalLm> for LiveServers {
    fn publish(&mut self, policy: &CausalLm, version: usize) -> envrl::Result<()> {
        let start = Instant::now();
        let form = PublishForm::of(policy);
        let name = version_name(version);
        let path = self.files.dir.join(&name);
        self.write(policy, form, &path)?;
        let path_text = path.to_string_lossy();
        let servers: Vec<(String, Engine)> = self
            .pool
            .servers()
            .into_iter()
            .map(|(url, engine)| (url.to_string(), engine))
            .collect();
        let mut failed = Vec::new();
        for (url, engine) in &servers {
            let Some(requests) = publish_requests(*engine, form, &name, &path_text) else {
                continue;
            };
            if let Err(e) = requests
                .iter()
                .try_for_each(|(route, body)| post(&self.agent, &format!("{url}{route}"), body))
            {
                let failure = redact_credentials(&format!("{url}: {e}"));
                log::warn!("rollout server {failure} (taking policy version {version})");
                failed.push(failure);
            }
        }
        // A server left on old full weights would answer as if it held the new ones.
        let refused = match form {
            PublishForm::Adapter => failed.len() == servers.len(),
            PublishForm::Weights => !failed.is_empty(),
        };
        if refused {
            let urls: Vec<&str> = servers.iter().map(|s| s.0.as_str()).collect();
            return Err(server_error(
                &urls.join(","),
                format!(
                    "policy version {version} from {} was not taken ({})",
                    path.display(),
                    failed.join("; ")
                ),
            ));
        }
        self.pool.set_model(match form {
            PublishForm::Adapter => Some(name.clone()),
            PublishForm::Weights => None,
        });
        if let Some((old, old_form)) = self.served.replace((name, form)) {
            if old_form == PublishForm::Adapter {
                self.unload_adapter(&old);
            }
            let _ = std::fs::remove_dir_all(self.files.dir.join(&old));
        }
        self.last_publish_s = start.elapsed().as_secs_f64();
        log::info!(
            "rollout servers play policy version {version} ({:.2} s to publish)",
            self.last_publish_s
        );
        Ok(())
    }
}
