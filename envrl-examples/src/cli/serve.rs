//! `envrl serve`.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;

use crate::env_server::{ServeOptions, ServedWorld, start};
use crate::run::{EnvName, Preset, RunConfig};

/// Serve an environment in OpenEnv's protocol.
#[derive(Args)]
pub struct ServeArgs {
    /// The environment.
    #[arg(value_enum)]
    env: EnvName,
    /// The preset whose task counts and step limit the world takes (default `cpu-tiny`).
    #[arg(long, value_enum)]
    preset: Option<Preset>,
    /// A run config (TOML) whose `[env]`, `[tasks]` and `trainer.max_steps` the world takes.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Override a config field, e.g. `--set tasks.eval=200` or `--set env.types='["pick"]'`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
    /// The address to listen on. The loopback interface by default: give `0.0.0.0` to accept
    /// other machines.
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
    /// The port (0: any free one, printed).
    #[arg(long, default_value_t = 8000)]
    port: u16,
    /// The most WebSocket sessions at once; one more is refused with `CAPACITY_REACHED`.
    #[arg(long, default_value_t = 1024)]
    max_sessions: usize,
    /// Seconds a session may stay silent before it is closed.
    #[arg(long, default_value_t = 300.0)]
    idle_timeout: f64,
    /// The largest message or body accepted, in bytes.
    #[arg(long, default_value_t = 1 << 20)]
    max_message_bytes: usize,
}

impl ServeArgs {
    /// Builds the world and serves it until Ctrl-C.
    ///
    /// # Errors
    /// When the config or the world cannot be built, or the address cannot be bound.
    pub fn run(self) -> Result<()> {
        let options = self.options()?;
        let config = RunConfig::from_flags(self.config.as_deref(), self.preset, self.env)?
            .with_overrides(&self.overrides)?;
        config.validate()?;
        let setup = config
            .env
            .setup(&config.facts())
            .with_context(|| format!("building the {} world", self.env.name()))?;
        let world = Arc::new(ServedWorld::new(setup.world, config.trainer.max_steps));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .context("starting the server's runtime")?;
        runtime.block_on(async move {
            let (name, train, eval) = (
                world.name.clone(),
                world.tasks("train").map_or(0, <[u64]>::len),
                world.tasks("eval").map_or(0, <[u64]>::len),
            );
            let server = start(world, options.clone())
                .await
                .with_context(|| format!("listening on {}", options.addr))?;
            if !options.addr.ip().is_loopback() {
                eprintln!(
                    "warning: serving on {}, reachable from other machines",
                    options.addr
                );
            }
            println!(
                "serving {name} ({train} train and {eval} eval tasks) on http://{} in OpenEnv's \
                 protocol: WebSocket sessions on /ws, /reset /step /state /health /metadata \
                 /schema /openapi.json /mcp /tasks; Ctrl-C stops",
                server.addr
            );
            tokio::signal::ctrl_c()
                .await
                .context("waiting for Ctrl-C")?;
            server.stop().await.context("serving")
        })
    }

    fn options(&self) -> Result<ServeOptions> {
        if !(self.idle_timeout.is_finite() && self.idle_timeout > 0.0) {
            anyhow::bail!(
                "--idle-timeout {}: must be a positive number of seconds",
                self.idle_timeout
            );
        }
        if self.max_sessions == 0 {
            anyhow::bail!("--max-sessions 0: the server would refuse every session");
        }
        if self.max_message_bytes < 1024 {
            anyhow::bail!(
                "--max-message-bytes {}: at least 1024",
                self.max_message_bytes
            );
        }
        Ok(ServeOptions {
            addr: SocketAddr::new(self.host, self.port),
            max_sessions: self.max_sessions,
            idle_timeout: Duration::from_secs_f64(self.idle_timeout.min(1e9)),
            max_message_bytes: self.max_message_bytes,
        })
    }
}
