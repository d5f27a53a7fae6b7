//! `envrl serve`: a world's environments over HTTP and WebSocket in OpenEnv's protocol
//! (`openenv` 0.10.0): many concurrent episodes in one process, one per WebSocket session, on
//! the same engines, prompts and projections training uses.
//!
//! Routes: `/ws` (sessions: `reset`, `step`, `state`, `close`, `mcp` messages), `/reset`,
//! `/step` and `/state` over plain HTTP (each on a fresh environment), `/health`, `/metadata`,
//! `/schema`, `/openapi.json`, `/mcp` and `/tasks` (the task ids a reset can name). Safe by
//! default: the loopback interface, a cap on sessions (refused past it, named), an idle timeout,
//! a bound on message size; a client that disconnects frees its episode; every bad request is
//! answered in the protocol's error shape without touching other sessions.

mod protocol;
mod routes;
mod session;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

pub use protocol::{ErrorCode, ProtocolError, View};
pub use session::{ServedWorld, Session};

/// The server's limits and address.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Where to listen (default `127.0.0.1:8000`, the loopback interface only).
    pub addr: SocketAddr,
    /// The most WebSocket sessions at once; one more is refused with `CAPACITY_REACHED`.
    pub max_sessions: usize,
    /// A session that sends nothing this long is closed.
    pub idle_timeout: Duration,
    /// The largest message (WebSocket) or body (HTTP) accepted, in bytes.
    pub max_message_bytes: usize,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            addr: SocketAddr::from(([127, 0, 0, 1], 8000)),
            max_sessions: 1024,
            idle_timeout: Duration::from_secs(300),
            max_message_bytes: 1 << 20,
        }
    }
}

/// A running server: its address and the task that serves it.
pub struct RunningServer {
    /// The address it listens on (the port chosen when 0 was asked for).
    pub addr: SocketAddr,
    /// Stops it.
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl RunningServer {
    /// Stops the server and waits for it.
    ///
    /// # Errors
    /// When serving failed.
    pub async fn stop(mut self) -> std::io::Result<()> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        self.task.await.map_err(std::io::Error::other)?
    }
}

/// Starts serving `world` on the current Tokio runtime.
///
/// # Errors
/// When the address cannot be bound.
pub async fn start(
    world: Arc<ServedWorld>,
    options: ServeOptions,
) -> std::io::Result<RunningServer> {
    let listener = tokio::net::TcpListener::bind(options.addr).await?;
    let addr = listener.local_addr()?;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let app = routes::router(world, options);
    let task = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = rx.await;
            })
            .await
    });
    Ok(RunningServer {
        addr,
        shutdown: Some(tx),
        task,
    })
}
