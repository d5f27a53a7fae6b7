//! `envrl bench serve`: steps/s and step latency of `envrl serve` over WebSocket at several
//! numbers of concurrent sessions on loopback, next to the in-process engine and OpenEnv's own
//! Python server running its echo environment (the ceiling of any Python environment server),
//! with the server's memory per session.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::connect_async;
use tokio_tungstenite::tungstenite::Message;

use crate::run::{EnvName, RunConfig};

/// `envrl bench serve` settings.
#[derive(Args, Debug, Clone)]
pub struct ServeBench {
    /// The world served.
    #[arg(long, value_enum, default_value = "alfworld")]
    pub world: EnvName,
    /// Concurrent sessions to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,100,1000")]
    pub sessions: Vec<usize>,
    /// Seconds of load per measure.
    #[arg(long, default_value_t = 3.0)]
    pub seconds: f64,
    /// Offered load in steps/s over all sessions, each session pacing its steps evenly (0: every
    /// session steps as soon as its last answer arrives, the throughput ceiling; latency is then
    /// mostly queueing: sessions / throughput).
    #[arg(long, default_value_t = 0.0)]
    pub rate: f64,
    /// A Python with `openenv` 0.10.0 (and its uvicorn) installed, to measure OpenEnv's own
    /// server beside envrl's (`scripts/openenv-check.sh` makes one in ~/.cache/envrl-tools).
    #[arg(long)]
    pub python: Option<PathBuf>,
}

/// One measure of a server under load.
struct Load {
    steps: usize,
    seconds: f64,
    /// Step latencies (send to answer), in microseconds, sorted.
    latencies: Vec<u64>,
    /// The server's resident memory with every session open, in KiB.
    rss_kib: Option<u64>,
}

impl Load {
    fn percentile(&self, p: f64) -> f64 {
        if self.latencies.is_empty() {
            return f64::NAN;
        }
        let i = ((self.latencies.len() - 1) as f64 * p).round() as usize;
        self.latencies[i] as f64 / 1000.0
    }
}

/// What a load client sends: the reset data, and the step after an observation.
#[derive(Clone, Copy)]
enum Client {
    /// envrl's worlds: raw commands, the admissible ones in turn.
    Envrl { tasks: usize },
    /// OpenEnv's echo environment: a message.
    Echo,
}

impl Client {
    fn reset(self, session: usize) -> String {
        match self {
            Client::Envrl { tasks } => json!({"type": "reset", "data": {
                "split": "train", "index": session % tasks.max(1), "view": "raw"}})
            .to_string(),
            Client::Echo => json!({"type": "reset", "data": {}}).to_string(),
        }
    }

    fn step(self, observation: &Value, t: usize) -> String {
        match self {
            Client::Envrl { .. } => {
                let admissible = observation["data"]["observation"]["admissible"].as_array();
                let action = admissible
                    .filter(|a| !a.is_empty())
                    .and_then(|a| a[t % a.len()].as_str())
                    .unwrap_or("look");
                json!({"type": "step", "data": {"action": action}}).to_string()
            }
            Client::Echo => json!({"type": "step", "data": {"message": "go north"}}).to_string(),
        }
    }
}

/// The server's resident set size, from `/proc` (Linux).
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `sessions` clients, each resetting once and then stepping as fast as answers come for
/// `seconds` (an ended episode is reset, which is not counted as a step).
async fn load(url: &str, sessions: usize, pace: Pace, client: Client, pid: u32) -> Result<Load> {
    let Pace { seconds, rate } = pace;
    // Every session connects and resets, the server's memory is read, then all start stepping.
    let (ready, mut connected) = tokio::sync::mpsc::channel::<Result<()>>(sessions.max(1));
    let go = std::sync::Arc::new(tokio::sync::Barrier::new(sessions + 1));
    let ws_url = format!("{}/ws", url.replacen("http://", "ws://", 1));
    let mut tasks = Vec::new();
    for session in 0..sessions {
        let (url, ready, go) = (ws_url.clone(), ready.clone(), go.clone());
        tasks.push(tokio::spawn(async move {
            let (mut socket, _) = match connect_async(&url).await {
                Ok(connected) => connected,
                Err(e) => {
                    let _ = ready
                        .send(Err(anyhow::anyhow!("connecting to {url}: {e}")))
                        .await;
                    return Ok(Vec::new());
                }
            };
            let mut ask = async |text: String| -> Result<Value> {
                socket.send(Message::Text(text.into())).await?;
                loop {
                    match socket.next().await.context("the server closed")?? {
                        Message::Text(t) => return Ok(serde_json::from_str(&t)?),
                        Message::Close(_) => bail!("the server closed the session"),
                        _ => continue,
                    }
                }
            };
            let mut observation = match ask(client.reset(session)).await {
                Ok(o) if o["type"] == "error" => {
                    let refused = anyhow::anyhow!("the server refused a session: {}", o["data"]);
                    let _ = ready.send(Err(refused)).await;
                    return Ok(Vec::new());
                }
                Ok(o) => o,
                Err(e) => {
                    let _ = ready.send(Err(e)).await;
                    return Ok(Vec::new());
                }
            };
            let _ = ready.send(Ok(())).await;
            go.wait().await;
            let begin = tokio::time::Instant::now();
            let deadline = begin + Duration::from_secs_f64(seconds);
            // Paced sessions start spread over one interval, so that steps arrive evenly.
            let interval = (rate > 0.0).then(|| Duration::from_secs_f64(sessions as f64 / rate));
            let offset = interval.map_or(Duration::ZERO, |i| {
                i.mul_f64(session as f64 / sessions as f64)
            });
            let mut latencies = Vec::new();
            let mut t = 0;
            while tokio::time::Instant::now() < deadline {
                if let Some(interval) = interval {
                    tokio::time::sleep_until(begin + offset + interval * t as u32).await;
                }
                let start = Instant::now();
                observation = ask(client.step(&observation, t)).await?;
                latencies.push(start.elapsed().as_micros() as u64);
                t += 1;
                if observation["data"]["done"] == true {
                    observation = ask(client.reset(session + t)).await?;
                }
            }
            let _ = ask(json!({"type": "close"}).to_string()).await;
            Ok::<_, anyhow::Error>(latencies)
        }));
    }
    drop(ready);
    for _ in 0..sessions {
        connected
            .recv()
            .await
            .context("a session ended before it started")??;
    }
    let rss = rss_kib(pid);
    let start = Instant::now();
    go.wait().await;
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await??);
    }
    let seconds = start.elapsed().as_secs_f64();
    latencies.sort_unstable();
    Ok(Load {
        steps: latencies.len(),
        seconds,
        latencies,
        rss_kib: rss,
    })
}

/// How long, and how fast, the load is offered.
#[derive(Clone, Copy)]
struct Pace {
    seconds: f64,
    /// Steps/s over all sessions (0: as fast as answers come).
    rate: f64,
}

/// A server child process and its URL; killed when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_envrl(world: EnvName, max_sessions: usize) -> Result<Server> {
    let exe = std::env::current_exe().context("finding the envrl binary")?;
    let mut child = Command::new(exe)
        .args(["serve", world.name(), "--port", "0", "--max-sessions"])
        .arg(max_sessions.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("starting envrl serve")?;
    let stdout = child.stdout.take().context("envrl serve's output")?;
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line)?;
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .with_context(|| format!("envrl serve did not print its address: {line}"))?
        .to_string();
    Ok(Server { child, url })
}

fn start_openenv(python: &Path, max_sessions: usize) -> Result<Server> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let script = std::env::temp_dir().join("envrl-openenv-echo-server.py");
    std::fs::write(&script, include_str!("openenv_echo_server.py"))?;
    let child = Command::new(python)
        .arg(&script)
        .args([port.to_string(), max_sessions.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting OpenEnv's server with {}", python.display()))?;
    let url = format!("http://127.0.0.1:{port}");
    let server = Server { child, url };
    for _ in 0..300 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(server);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    bail!("OpenEnv's server did not listen on port {port} within 30 s")
}

/// The in-process engine's steps/s on one core with the load clients' policy.
fn in_process(world: EnvName, seconds: f64) -> Result<f64> {
    let config = RunConfig::cpu_tiny(world)?;
    let world = config.env.setup(&config.facts())?.world;
    let mut env = world.new_env();
    let (mut steps, start) = (0usize, Instant::now());
    let mut episode = 0;
    while start.elapsed().as_secs_f64() < seconds {
        let task = world.train_tasks[episode % world.train_tasks.len().max(1)];
        let mut observation = env.reset(task);
        for t in 0..config.trainer.max_steps {
            let action = match observation.admissible.is_empty() {
                true => "look".to_string(),
                false => observation.admissible[t % observation.admissible.len()].clone(),
            };
            let outcome = env.step(&action);
            steps += 1;
            if outcome.done {
                break;
            }
            observation = outcome.observation;
        }
        episode += 1;
    }
    Ok(steps as f64 / start.elapsed().as_secs_f64())
}

/// Runs the measures and prints the table.
///
/// # Errors
/// When a server cannot be started or a session fails.
pub fn bench_serve(bench: &ServeBench) -> Result<()> {
    let max = bench.sessions.iter().copied().max().unwrap_or(1);
    let tasks = RunConfig::cpu_tiny(bench.world)?.tasks.train;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let engine = in_process(bench.world, bench.seconds)?;
    let mut rows = Vec::new();
    let measure = |server: &Server, client: Client, sessions: usize| -> Result<Load> {
        let pace = Pace {
            seconds: bench.seconds,
            rate: bench.rate,
        };
        runtime.block_on(load(&server.url, sessions, pace, client, server.child.id()))
    };
    let envrl = start_envrl(bench.world, max)?;
    let mut envrl_rates = Vec::new();
    for &sessions in &bench.sessions {
        let load = measure(&envrl, Client::Envrl { tasks }, sessions)?;
        envrl_rates.push(load.steps as f64 / load.seconds);
        rows.push((
            format!("envrl serve {}", bench.world.name()),
            sessions,
            load,
        ));
    }
    drop(envrl);
    let mut openenv_rates = Vec::new();
    if let Some(python) = &bench.python {
        let server = start_openenv(python, max)?;
        for &sessions in &bench.sessions {
            let load = measure(&server, Client::Echo, sessions)?;
            openenv_rates.push(load.steps as f64 / load.seconds);
            rows.push(("OpenEnv's Python server, echo env".into(), sessions, load));
        }
    }
    let offered = match bench.rate {
        0.0 => "each session stepping as soon as its last answer arrives".to_string(),
        rate => format!("{rate:.0} steps/s offered, paced evenly over the sessions"),
    };
    println!(
        "\n`envrl bench serve`: {} over WebSocket on loopback, {:.0} s per measure, {offered}, \
         load generated by one Tokio thread in this process ({} cores)\n",
        bench.world.name(),
        bench.seconds,
        std::thread::available_parallelism().map_or(1, usize::from)
    );
    println!(
        "| server | sessions | steps/s | p50 step (ms) | p99 step (ms) | memory per session (KiB) | envrl / OpenEnv |"
    );
    println!("|---|---|---|---|---|---|---|");
    println!(
        "| {} engine in process (one core, no network) | – | {engine:.0} | – | – | – | – |",
        bench.world.name()
    );
    for (k, (name, sessions, load)) in rows.iter().enumerate() {
        let rate = load.steps as f64 / load.seconds;
        // The growth of the server's memory from the first (smallest) measure of the same
        // server, per added session (memory freed by ended sessions is kept by the allocator,
        // so only growth over the smallest count says what a session costs).
        let first = rows[..=k]
            .iter()
            .rposition(|r| r.0 != *name)
            .map_or(0, |i| i + 1);
        let (_, base_sessions, base) = &rows[first];
        let memory = match (load.rss_kib, base.rss_kib) {
            (Some(busy), Some(idle)) if sessions > base_sessions => format!(
                "{:.0}",
                busy.saturating_sub(idle) as f64 / (sessions - base_sessions) as f64
            ),
            _ => "–".into(),
        };
        let i = bench
            .sessions
            .iter()
            .position(|s| s == sessions)
            .unwrap_or(0);
        let ratio = match (
            name.starts_with("envrl"),
            envrl_rates.get(i),
            openenv_rates.get(i),
        ) {
            (true, Some(a), Some(b)) => format!("{:.1}×", a / b),
            _ => "–".into(),
        };
        println!(
            "| {name} | {sessions} | {rate:.0} | {:.3} | {:.3} | {memory} | {ratio} |",
            load.percentile(0.5),
            load.percentile(0.99)
        );
    }
    Ok(())
}
