//! [`ServerPool`]: the servers that sample the rollouts, as one [`Sampler`].

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use envrl::{Generation, Sampler, SamplingParams};
use rand::RngCore;
use rand_chacha::ChaCha8Rng;

use super::Engine;
use super::api::{SampleRequest, finish, redact_credentials};

/// How to reach the servers.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolConfig {
    /// The servers' base addresses (`http://host:port`).
    pub urls: Vec<String>,
    /// Their engine; `None`: asked of each server ([`detect_engine`]).
    pub engine: Option<Engine>,
    /// The tokenizer's vocabulary size: ids at or above it are refused.
    pub vocab_size: usize,
    /// The model (or LoRA adapter) name to ask for, on engines that take one.
    pub model: Option<String>,
    /// Requests in flight per server.
    pub in_flight: usize,
    /// How long one request may take.
    pub timeout: Duration,
    /// Further attempts after a request fails (each on the next server).
    pub retries: usize,
    /// The wait before the first retry; it doubles with each further one.
    pub backoff: Duration,
}

/// How long one sampling request may take unless told: two minutes.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

impl PoolConfig {
    /// `urls` with 8 requests in flight per server, [`DEFAULT_REQUEST_TIMEOUT`] per request,
    /// 3 retries from 0.5 s.
    pub fn new(urls: Vec<String>, vocab_size: usize) -> Self {
        Self {
            urls,
            engine: None,
            vocab_size,
            model: None,
            in_flight: 8,
            timeout: DEFAULT_REQUEST_TIMEOUT,
            retries: 3,
            backoff: Duration::from_millis(500),
        }
    }
}

struct Server {
    url: String,
    engine: Engine,
    /// Requests that failed in a row (a server that keeps failing is asked last).
    failures: AtomicUsize,
}

/// Inference servers that sample rollouts: each prompt of a turn is one request, many are in
/// flight at once, spread over the servers (the least-failing first); a failed request is
/// retried with backoff on the next server.
pub struct ServerPool {
    servers: Vec<Server>,
    config: PoolConfig,
    agent: ureq::Agent,
}

impl std::fmt::Debug for ServerPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let servers: Vec<_> = self
            .servers
            .iter()
            .map(|s| format!("{} ({})", s.url, s.engine.name()))
            .collect();
        f.debug_struct("ServerPool")
            .field("servers", &servers)
            .finish_non_exhaustive()
    }
}

/// A rollout-server error naming `server` (an address, or `-` for none in particular).
/// The error of server `url`, with any password in the address or the reason masked.
pub(crate) fn server_error(url: &str, reason: impl Into<String>) -> envrl::Error {
    envrl::Error::RolloutServer {
        server: redact_credentials(url),
        reason: redact_credentials(&reason.into()),
    }
}

/// Which engine of [`super::ENGINES`] serves `url`: the first whose [`Engine::probe`] answers with JSON it
/// [recognises](Engine::recognises).
///
/// # Errors
/// [`envrl::Error::RolloutServer`] when none does (or the server cannot be reached).
pub fn detect_engine(agent: &ureq::Agent, url: &str) -> envrl::Result<Engine> {
    let mut seen = Vec::new();
    for &engine in super::ENGINES {
        let route = engine.probe();
        match get_json(agent, &format!("{url}{route}")) {
            Ok(body) if engine.recognises(&body) => return Ok(engine),
            Ok(_) => seen.push(format!("{route}: not {}", engine.name())),
            Err(e) => seen.push(format!("{route}: {e}")),
        }
    }
    Err(server_error(
        url,
        format!(
            "no engine recognised ({}); name it ({})",
            seen.join("; "),
            Engine::names()
        ),
    ))
}

/// An HTTP client whose requests time out after `timeout` and return every status as a
/// response (the caller checks it).
pub(crate) fn http_agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .build()
        .into()
}

fn get_json(agent: &ureq::Agent, url: &str) -> Result<serde_json::Value, String> {
    let mut response = agent.get(url).call().map_err(|e| e.to_string())?;
    if !response.status().is_success() {
        return Err(format!("HTTP {}", response.status()));
    }
    let body = response
        .body_mut()
        .read_to_vec()
        .map_err(|e| e.to_string())?;
    serde_json::from_slice(&body).map_err(|e| format!("not JSON: {e}"))
}

impl ServerPool {
    /// Connects to the servers of `config`, asking each for its engine unless the config
    /// names it.
    ///
    /// # Errors
    /// [`envrl::Error::InvalidConfig`] without servers; [`envrl::Error::RolloutServer`] when a
    /// server's engine cannot be told.
    pub fn connect(config: PoolConfig) -> envrl::Result<Self> {
        if config.urls.is_empty() {
            return Err(envrl::Error::config("rollout.servers", "no server address"));
        }
        let agent = http_agent(config.timeout);
        let servers = config
            .urls
            .iter()
            .map(|url| {
                let url = url.trim_end_matches('/').to_string();
                let engine = match config.engine {
                    Some(engine) => engine,
                    None => detect_engine(&agent, &url)?,
                };
                Ok(Server {
                    url,
                    engine,
                    failures: AtomicUsize::new(0),
                })
            })
            .collect::<envrl::Result<Vec<_>>>()?;
        Ok(Self {
            servers,
            config,
            agent,
        })
    }

    /// Each server's address and engine.
    pub fn servers(&self) -> Vec<(&str, Engine)> {
        self.servers
            .iter()
            .map(|s| (s.url.as_str(), s.engine))
            .collect()
    }

    /// The servers' addresses, comma-separated: the name of an error that concerns them all.
    pub fn addresses(&self) -> String {
        let urls: Vec<&str> = self.servers.iter().map(|s| s.url.as_str()).collect();
        urls.join(",")
    }

    /// Asks for another model (or LoRA adapter) name from now on.
    pub fn set_model(&mut self, model: Option<String>) {
        self.config.model = model;
    }

    /// The order in which request `i` tries the servers: round robin from `i`, servers that
    /// failed last put after those that did not.
    fn order(&self, i: usize) -> Vec<usize> {
        let n = self.servers.len();
        let mut order: Vec<usize> = (0..n).map(|k| (i + k) % n).collect();
        order.sort_by_key(|&s| self.servers[s].failures.load(Ordering::Relaxed) > 0);
        order
    }

    /// One request, retried on the next servers with backoff.
    fn request(&self, i: usize, request: &SampleRequest<'_>) -> envrl::Result<Generation> {
        let order = self.order(i);
        let attempts = self.config.retries + 1;
        let mut wait = self.config.backoff;
        let mut last = (String::new(), String::new());
        for attempt in 0..attempts {
            if attempt > 0 {
                std::thread::sleep(wait);
                wait *= 2;
            }
            let server = &self.servers[order[attempt % order.len()]];
            match self.once(server, request) {
                Ok(generation) => {
                    server.failures.store(0, Ordering::Relaxed);
                    return Ok(generation);
                }
                Err(reason) => {
                    server.failures.fetch_add(1, Ordering::Relaxed);
                    log::warn!(
                        "rollout server {}: request {i} (attempt {} of {attempts}): {reason}",
                        server.url,
                        attempt + 1
                    );
                    last = (server.url.clone(), reason);
                }
            }
        }
        Err(server_error(
            &last.0,
            format!(
                "request {i} (a prompt of {} tokens) failed {attempts} times, last: {}",
                request.prompt.len(),
                last.1
            ),
        ))
    }

    /// One attempt of a request on one server.
    fn once(&self, server: &Server, request: &SampleRequest<'_>) -> Result<Generation, String> {
        let (route, body) = server.engine.request(request);
        let body = serde_json::to_vec(&body).map_err(|e| e.to_string())?;
        let mut response = self
            .agent
            .post(&format!("{}{route}", server.url))
            .header("content-type", "application/json")
            .send(&body[..])
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let bytes = response
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_vec()
            .map_err(|e| format!("reading the response: {e}"))?;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned();
            return Err(format!("HTTP {status}: {text}"));
        }
        let served = server.engine.parse(&bytes)?;
        finish(served, request, self.config.vocab_size)
    }
}

impl Sampler for ServerPool {
    fn sample(
        &self,
        prompts: &[Vec<u32>],
        stop_ids: &[u32],
        params: &SamplingParams,
        rngs: &mut [ChaCha8Rng],
    ) -> envrl::Result<Vec<Generation>> {
        let requests: Vec<SampleRequest<'_>> = prompts
            .iter()
            .zip(rngs.iter_mut())
            .map(|(prompt, rng)| SampleRequest {
                prompt,
                stop_ids,
                temperature: params.temperature,
                top_p: params.top_p,
                top_k: params.top_k,
                max_new_tokens: params.max_new_tokens,
                seed: rng.next_u64(),
                model: self.config.model.as_deref(),
            })
            .collect();
        let next = AtomicUsize::new(0);
        let results: Mutex<Vec<Option<envrl::Result<Generation>>>> =
            Mutex::new((0..requests.len()).map(|_| None).collect());
        let workers = (self.servers.len() * self.config.in_flight.max(1)).min(requests.len());
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(request) = requests.get(i) else {
                            break;
                        };
                        let result = self.request(i, request);
                        let failed = result.is_err();
                        if let Ok(mut slots) = results.lock() {
                            slots[i] = Some(result);
                        }
                        if failed {
                            // The turn fails: no new requests.
                            next.store(requests.len(), Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        let slots = results
            .into_inner()
            .map_err(|_| server_error(&self.addresses(), "a request thread panicked"))?;
        let mut generations = Vec::with_capacity(slots.len());
        let mut unfinished = 0;
        for slot in slots {
            match slot {
                Some(result) => generations.push(result?),
                None => unfinished += 1,
            }
        }
        if unfinished > 0 {
            return Err(server_error(
                &self.addresses(),
                format!("{unfinished} requests did not finish"),
            ));
        }
        Ok(generations)
    }
}
