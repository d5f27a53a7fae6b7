//! The HTTP routes and the WebSocket session loop.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use super::ServeOptions;
use super::protocol::{
    ErrorCode, Incoming, ProtocolError, ResetData, StepData, mcp_response, openapi, parse_incoming,
    schema,
};
use super::session::{ServedWorld, no_episode_state};

/// What every handler shares.
#[derive(Clone)]
struct App {
    world: Arc<ServedWorld>,
    options: Arc<ServeOptions>,
    /// One permit per WebSocket session the server may hold.
    sessions: Arc<Semaphore>,
}

/// The server's routes over `world`.
pub fn router(world: Arc<ServedWorld>, options: ServeOptions) -> Router {
    let limit = options.max_message_bytes;
    let app = App {
        world,
        sessions: Arc::new(Semaphore::new(options.max_sessions)),
        options: Arc::new(options),
    };
    Router::new()
        .route(
            "/health",
            get(|| async { json_ok(json!({"status": "healthy"})) }),
        )
        .route("/metadata", get(metadata))
        .route("/schema", get(|| async { json_ok(schema()) }))
        .route("/openapi.json", get(openapi_doc))
        .route("/tasks", get(tasks))
        .route("/state", get(state))
        .route("/reset", post(reset))
        .route("/step", post(step))
        .route("/mcp", post(mcp))
        .route("/ws", get(ws))
        .fallback(|| async {
            (
                StatusCode::NOT_FOUND,
                axum::Json(json!({"detail": "Not Found"})),
            )
        })
        .layer(DefaultBodyLimit::max(limit))
        .with_state(app)
}

fn json_ok(value: Value) -> Response {
    axum::Json(value).into_response()
}

fn unprocessable(error: &ProtocolError) -> Response {
    let status = match error.code {
        ErrorCode::ExecutionError => StatusCode::CONFLICT,
        _ => StatusCode::UNPROCESSABLE_ENTITY,
    };
    (status, axum::Json(error.to_http())).into_response()
}

async fn metadata(State(app): State<App>) -> Response {
    json_ok(json!({
        "name": app.world.name,
        "description": format!(
            "envrl's {} engine ({}), byte for byte against the reference, served in OpenEnv's \
             protocol: one episode per WebSocket session",
            app.world.name, app.world.description
        ),
        "version": env!("CARGO_PKG_VERSION"),
        "documentation_url": "https://github.com/envrl/envrl/blob/main/docs/serving.md"
    }))
}

async fn openapi_doc(State(app): State<App>) -> Response {
    json_ok(openapi(&app.world.name))
}

async fn tasks(State(app): State<App>, Query(query): Query<HashMap<String, String>>) -> Response {
    let split = query.get("split").map_or("train", String::as_str);
    let tasks = match app.world.tasks(split) {
        Ok(tasks) => tasks,
        Err(e) => return unprocessable(&e),
    };
    let bound = |key: &str, default: usize| match query.get(key) {
        Some(v) => v.parse::<usize>().map_err(|_| {
            ProtocolError::new(
                ErrorCode::ValidationError,
                format!("`{key}` must be an index, got `{v}`"),
            )
        }),
        None => Ok(default),
    };
    let (start, stop) = match (bound("start", 0), bound("stop", tasks.len())) {
        (Ok(a), Ok(b)) => (a.min(tasks.len()), b.min(tasks.len())),
        (Err(e), _) | (_, Err(e)) => return unprocessable(&e),
    };
    let slice = if start < stop {
        &tasks[start..stop]
    } else {
        &[][..]
    };
    let mut listing = json!({"split": split, "count": tasks.len(), "start": start, "tasks": slice});
    if slice
        .iter()
        .any(|&task| app.world.task_name(task).is_some())
    {
        let names: Vec<Option<&str>> = slice.iter().map(|&t| app.world.task_name(t)).collect();
        listing["names"] = json!(names);
    }
    json_ok(listing)
}

/// `GET /state`: stateless, so a fresh environment's state, without building one.
async fn state() -> Response {
    json_ok(no_episode_state())
}

/// Reads an optional JSON object body (empty: `{}`).
fn body_object(body: &Bytes) -> Result<serde_json::Map<String, Value>, ProtocolError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Default::default());
    }
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ProtocolError::new(ErrorCode::InvalidJson, format!("Invalid JSON: {e}")))?;
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(ProtocolError::new(
            ErrorCode::ValidationError,
            "the body must be a JSON object",
        )),
    }
}

fn reset_data(fields: serde_json::Map<String, Value>) -> Result<ResetData, ProtocolError> {
    serde_json::from_value(Value::Object(fields))
        .map_err(|e| ProtocolError::new(ErrorCode::ValidationError, format!("Invalid reset: {e}")))
}

/// `POST /reset`: a fresh environment reset to the requested task (`ResetRequest`: `seed`,
/// `episode_id`, and envrl's `task`, `split`, `index`, `view`, `max_steps`).
async fn reset(State(app): State<App>, body: Bytes) -> Response {
    let result = body_object(&body)
        .and_then(reset_data)
        .and_then(|data| app.world.session().reset(data));
    match result {
        Ok(payload) => json_ok(payload),
        Err(e) => unprocessable(&e),
    }
}

/// `POST /step` (`StepRequest`: `action`, `timeout_s`, `request_id`): stateless, so a fresh
/// environment is reset to the task the other fields name (as `/reset` reads them) and acts
/// once.
async fn step(State(app): State<App>, body: Bytes) -> Response {
    #[derive(Deserialize)]
    struct Envelope {
        action: StepData,
    }
    let result = body_object(&body).and_then(|mut fields| {
        for key in ["timeout_s", "request_id"] {
            fields.remove(key);
        }
        let action = fields.remove("action").ok_or_else(|| {
            ProtocolError::new(ErrorCode::ValidationError, "a step needs `action`")
        })?;
        let Envelope { action } =
            serde_json::from_value(json!({"action": action})).map_err(|e| {
                ProtocolError::new(ErrorCode::ValidationError, format!("Invalid action: {e}"))
            })?;
        let mut session = app.world.session();
        session.reset(reset_data(fields)?)?;
        session.step(&action)
    });
    match result {
        Ok(payload) => json_ok(payload),
        Err(e) => unprocessable(&e),
    }
}

async fn mcp(body: Bytes) -> Response {
    match serde_json::from_slice::<Value>(&body) {
        Ok(request) => json_ok(mcp_response(&request)),
        Err(e) => json_ok(json!({
            "jsonrpc": "2.0", "id": null,
            "error": {"code": -32700, "message": format!("Parse error: {e}")}
        })),
    }
}

async fn ws(State(app): State<App>, upgrade: WebSocketUpgrade) -> Response {
    let limit = app.options.max_message_bytes;
    upgrade
        .max_message_size(limit)
        .max_frame_size(limit)
        .on_upgrade(move |socket| session_loop(app, socket))
}

async fn send(socket: &mut WebSocket, value: &Value) -> bool {
    socket
        .send(Message::Text(value.to_string().into()))
        .await
        .is_ok()
}

/// One WebSocket session: a permit of the session cap, an environment of its own, messages
/// answered in order until the client closes, disconnects or stays idle too long.
async fn session_loop(app: App, mut socket: WebSocket) {
    let Ok(_permit) = app.sessions.clone().try_acquire_owned() else {
        let max = app.options.max_sessions;
        let error = ProtocolError::new(
            ErrorCode::CapacityReached,
            format!(
                "the server holds its maximum of {max} sessions (`envrl serve --max-sessions`); \
                 close one or try again later"
            ),
        );
        let mut reply = error.to_ws();
        reply["data"]["max_sessions"] = json!(max);
        reply["data"]["active_sessions"] = json!(max);
        send(&mut socket, &reply).await;
        let _ = socket.send(Message::Close(None)).await;
        return;
    };
    let mut session = app.world.session();
    let idle = app.options.idle_timeout;
    loop {
        let message = match tokio::time::timeout(idle, socket.recv()).await {
            Err(_) => {
                let error = ProtocolError::new(
                    ErrorCode::SessionError,
                    format!(
                        "no message for {} s: the session is closed (`--idle-timeout`)",
                        idle.as_secs_f64()
                    ),
                );
                send(&mut socket, &error.to_ws()).await;
                break;
            }
            Ok(None | Some(Err(_))) => break,
            Ok(Some(Ok(message))) => message,
        };
        let text = match message {
            Message::Text(text) => text.to_string(),
            Message::Binary(bytes) => match String::from_utf8(bytes.to_vec()) {
                Ok(text) => text,
                Err(_) => {
                    let error =
                        ProtocolError::new(ErrorCode::InvalidJson, "Invalid JSON: not UTF-8");
                    if !send(&mut socket, &error.to_ws()).await {
                        break;
                    }
                    continue;
                }
            },
            Message::Close(_) => break,
            Message::Ping(_) | Message::Pong(_) => continue,
        };
        let reply = match parse_incoming(&text) {
            Ok(Incoming::Close) => break,
            Ok(Incoming::Reset(data)) => session
                .reset(data)
                .map(|data| json!({"type": "observation", "data": data})),
            Ok(Incoming::Step(data)) => session
                .step(&data)
                .map(|data| json!({"type": "observation", "data": data})),
            Ok(Incoming::State) => Ok(json!({"type": "state", "data": session.state()})),
            Ok(Incoming::Mcp(request)) => {
                Ok(json!({"type": "mcp", "data": mcp_response(&request)}))
            }
            Err(e) => Err(e),
        };
        let reply = reply.unwrap_or_else(|e| e.to_ws());
        if !send(&mut socket, &reply).await {
            break;
        }
    }
    let _ = socket.send(Message::Close(None)).await;
}
