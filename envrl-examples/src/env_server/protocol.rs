//! OpenEnv's wire format (the `openenv` 0.10.0 package's `core/env_server/types.py`): the
//! WebSocket session messages, the HTTP bodies, the error codes, and envrl's action,
//! observation and state as JSON.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The error codes of a WebSocket error response (`WSErrorCode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// The message is not JSON.
    InvalidJson,
    /// The message's `type` is none of reset, step, state, close, mcp.
    UnknownType,
    /// The message or its data does not have the fields and types the schema asks for.
    ValidationError,
    /// The environment could not do what was asked (a step before a reset or after the end).
    ExecutionError,
    /// The server holds as many sessions as it may.
    CapacityReached,
    /// The session ended (idle too long).
    SessionError,
}

/// An error as the protocol returns it: a message and its code.
#[derive(Debug, Clone, PartialEq)]
pub struct ProtocolError {
    /// What went wrong, in words.
    pub message: String,
    /// Its code.
    pub code: ErrorCode,
}

impl ProtocolError {
    /// An error of `code` saying `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code,
        }
    }

    /// The WebSocket error response (`{"type": "error", "data": {"message", "code"}}`).
    pub fn to_ws(&self) -> Value {
        json!({"type": "error", "data": {"message": self.message, "code": self.code}})
    }

    /// The HTTP error body (FastAPI's `{"detail": …}`, with the code beside the message).
    pub fn to_http(&self) -> Value {
        json!({"detail": {"message": self.message, "code": self.code}})
    }
}

/// Which text an observation carries: the prompt the policy sees (the benchmark's verl-agent
/// prompt, with its history) or the environment's raw observation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum View {
    /// The policy's prompt (the default).
    #[default]
    Prompt,
    /// The raw observation.
    Raw,
}

/// How a reset chooses its task: a task id of the world, an index into a split's task list, or
/// a seed (an index into the split, modulo its length). With none, the split's first task.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResetData {
    /// A task id as the world's environments take it (`GET /tasks` lists them).
    pub task: Option<u64>,
    /// A task by name, where the world names its tasks (ALFWorld's game files, e.g.
    /// `valid_unseen/…/game.tw-pddl`; `GET /tasks` lists them).
    pub name: Option<String>,
    /// `train` or `eval` (default `train`).
    pub split: Option<String>,
    /// An index into the split's tasks.
    pub index: Option<usize>,
    /// OpenEnv's seed: the split's task at `seed` modulo its length.
    pub seed: Option<u64>,
    /// OpenEnv's episode id, echoed in the state.
    pub episode_id: Option<String>,
    /// Which text the observations carry (default the prompt).
    pub view: Option<View>,
    /// The episode's step limit (default the server's).
    pub max_steps: Option<usize>,
}

/// A step's action: the model's reply, read by the world's projection exactly as training reads
/// it (an unreadable reply is sent as the projection makes it and marked invalid), or a raw
/// command sent to the environment as it is.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepData {
    /// The model's reply.
    pub reply: Option<String>,
    /// A raw environment command.
    pub action: Option<String>,
    /// OpenEnv's action metadata (ignored).
    #[serde(default)]
    pub metadata: Option<Value>,
}

impl StepData {
    /// The step as one of its two forms.
    ///
    /// # Errors
    /// A validation error when it holds both or neither.
    pub fn kind(&self) -> Result<StepKind<'_>, ProtocolError> {
        match (&self.reply, &self.action) {
            (Some(reply), None) => Ok(StepKind::Reply(reply)),
            (None, Some(action)) => Ok(StepKind::Action(action)),
            _ => Err(ProtocolError::new(
                ErrorCode::ValidationError,
                "a step's data holds exactly one of `reply` (the model's reply, projected as \
                 training does) and `action` (a raw environment command)",
            )),
        }
    }
}

/// A step's action in one of its two forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind<'a> {
    /// The model's reply.
    Reply(&'a str),
    /// A raw environment command.
    Action(&'a str),
}

/// An incoming WebSocket message, as far as its type.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// Start an episode.
    Reset(ResetData),
    /// Act.
    Step(StepData),
    /// The session's state.
    State,
    /// End the session.
    Close,
    /// A JSON-RPC request for the MCP endpoint.
    Mcp(Value),
}

/// Reads one WebSocket message.
///
/// # Errors
/// `INVALID_JSON`, `UNKNOWN_TYPE` or `VALIDATION_ERROR`, as OpenEnv's server answers them.
pub fn parse_incoming(text: &str) -> Result<Incoming, ProtocolError> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| ProtocolError::new(ErrorCode::InvalidJson, format!("Invalid JSON: {e}")))?;
    let Some(object) = value.as_object() else {
        return Err(ProtocolError::new(
            ErrorCode::ValidationError,
            "Invalid message: expected a JSON object with a `type`",
        ));
    };
    let kind = object.get("type").and_then(Value::as_str).unwrap_or("");
    let data = object.get("data").cloned();
    let extra = object.keys().find(|k| *k != "type" && *k != "data");
    if let Some(key) = extra {
        return Err(invalid(format!("unknown field `{key}`")));
    }
    let read = |default: Value| data.clone().unwrap_or(default);
    match kind {
        "reset" => serde_json::from_value(read(json!({})))
            .map(Incoming::Reset)
            .map_err(|e| invalid(format!("reset data: {e}"))),
        "step" => {
            let data = data.ok_or_else(|| invalid("a step needs `data`".into()))?;
            serde_json::from_value(data)
                .map(Incoming::Step)
                .map_err(|e| invalid(format!("step data: {e}")))
        }
        "state" => Ok(Incoming::State),
        "close" => Ok(Incoming::Close),
        "mcp" => Ok(Incoming::Mcp(read(json!({})))),
        other => Err(ProtocolError::new(
            ErrorCode::UnknownType,
            format!("Unknown message type: {other}"),
        )),
    }
}

fn invalid(message: String) -> ProtocolError {
    ProtocolError::new(
        ErrorCode::ValidationError,
        format!("Invalid message: {message}"),
    )
}

/// The answer to an MCP JSON-RPC request: envrl's environments expose no tools, so
/// `tools/list` is empty and every other method is not found.
pub fn mcp_response(request: &Value) -> Value {
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    match request.get("method").and_then(Value::as_str) {
        Some("tools/list") => json!({"jsonrpc": "2.0", "id": id, "result": {"tools": []}}),
        Some(method) => json!({
            "jsonrpc": "2.0", "id": id,
            "error": {"code": -32601, "message": format!("Method not found: {method}")}
        }),
        None => json!({
            "jsonrpc": "2.0", "id": id,
            "error": {"code": -32600, "message": "Invalid request: no `method`"}
        }),
    }
}

/// The JSON schemas of the action, the observation and the state (`GET /schema`).
pub fn schema() -> Value {
    json!({
        "action": {
            "title": "EnvrlAction",
            "type": "object",
            "description": "Exactly one of `reply` (the model's reply, projected to a command \
                as training does) and `action` (a raw environment command).",
            "properties": {
                "reply": {"type": "string"},
                "action": {"type": "string"},
                "metadata": {"type": "object"}
            },
            "additionalProperties": false
        },
        "observation": {
            "title": "EnvrlObservation",
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "The prompt the policy sees, or the raw observation (the session's view)."},
                "view": {"type": "string", "enum": ["prompt", "raw"]},
                "task": {"type": "string"},
                "admissible": {"type": "array", "items": {"type": "string"}},
                "won": {"type": "boolean"},
                "score": {"type": ["number", "null"], "description": "The score the benchmark reports beside the reward (WebShop's purchase score, 0-1), where it keeps one."},
                "step": {"type": "integer"},
                "action": {"type": ["string", "null"], "description": "The command the last step sent."},
                "valid": {"type": ["boolean", "null"], "description": "Whether the last reply followed the format."},
                "metadata": {"type": "object"},
                "done": {"type": "boolean"},
                "reward": {"type": ["number", "null"]}
            }
        },
        "state": {
            "title": "EnvrlState",
            "type": "object",
            "properties": {
                "episode_id": {"type": ["string", "null"]},
                "step_count": {"type": "integer", "minimum": 0},
                "task_id": {"type": ["integer", "null"]},
                "done": {"type": "boolean"},
                "won": {"type": "boolean"}
            }
        }
    })
}

/// The OpenAPI document (`GET /openapi.json`): version 1.x of OpenEnv's HTTP standard, the
/// simulation mode's routes.
pub fn openapi(world: &str) -> Value {
    let post = |summary: &str| json!({"post": {"summary": summary, "responses": {"200": {"description": "OK"}}}});
    let get = |summary: &str| json!({"get": {"summary": summary, "responses": {"200": {"description": "OK"}}}});
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": format!("envrl {world}"),
            "version": "1.0.0",
            "description": format!("envrl's {world} engine in OpenEnv's protocol (envrl {})", env!("CARGO_PKG_VERSION"))
        },
        "paths": {
            "/reset": post("Reset a one-episode environment and return its first observation"),
            "/step": post("Reset to the requested task, act once and return the outcome"),
            "/state": get("The state of a fresh environment"),
            "/metadata": get("The environment's name and description"),
            "/health": get("Health check"),
            "/schema": get("Action, observation and state schemas"),
            "/tasks": get("The world's task ids of a split"),
            "/mcp": post("JSON-RPC (no tools)"),
            "/ws": get("WebSocket sessions: one episode at a time per connection")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_read_as_openenv_sends_them() {
        let reset = parse_incoming(r#"{"type":"reset","data":{"split":"eval","index":3}}"#);
        let Ok(Incoming::Reset(data)) = reset else {
            panic!("{reset:?}")
        };
        assert_eq!((data.split.as_deref(), data.index), (Some("eval"), Some(3)));
        assert_eq!(
            parse_incoming(r#"{"type":"reset"}"#),
            Ok(Incoming::Reset(ResetData::default()))
        );
        let step = parse_incoming(r#"{"type":"step","data":{"reply":"go north"}}"#).unwrap();
        let Incoming::Step(step) = step else { panic!() };
        assert_eq!(step.kind(), Ok(StepKind::Reply("go north")));
        assert_eq!(parse_incoming(r#"{"type":"state"}"#), Ok(Incoming::State));
        assert_eq!(parse_incoming(r#"{"type":"close"}"#), Ok(Incoming::Close));
    }

    #[test]
    fn bad_messages_get_the_protocols_error_codes() {
        let code = |text: &str| parse_incoming(text).unwrap_err().code;
        assert_eq!(code("{not json"), ErrorCode::InvalidJson);
        assert_eq!(code(r#"{"type":"jump"}"#), ErrorCode::UnknownType);
        assert_eq!(code(r#"{"data":{}}"#), ErrorCode::UnknownType);
        assert_eq!(code("[1, 2]"), ErrorCode::ValidationError);
        assert_eq!(code(r#"{"type":"step"}"#), ErrorCode::ValidationError);
        assert_eq!(
            code(r#"{"type":"step","data":{"reply":5}}"#),
            ErrorCode::ValidationError
        );
        assert_eq!(
            code(r#"{"type":"reset","data":{"seed":-1}}"#),
            ErrorCode::ValidationError
        );
        assert_eq!(
            code(r#"{"type":"reset","data":{"colour":1}}"#),
            ErrorCode::ValidationError
        );
        assert_eq!(
            code(r#"{"type":"state","extra":1}"#),
            ErrorCode::ValidationError
        );
        let both = StepData {
            reply: Some("a".into()),
            action: Some("b".into()),
            metadata: None,
        };
        assert_eq!(both.kind().unwrap_err().code, ErrorCode::ValidationError);
        let error = ProtocolError::new(ErrorCode::CapacityReached, "full");
        assert_eq!(
            error.to_ws(),
            json!({"type": "error", "data": {"message": "full", "code": "CAPACITY_REACHED"}})
        );
    }

    #[test]
    fn mcp_answers_json_rpc() {
        assert_eq!(mcp_response(&json!({}))["jsonrpc"], "2.0");
        let list = mcp_response(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
        assert_eq!(list["result"]["tools"], json!([]));
        assert_eq!(list["id"], 1);
        let other = mcp_response(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call"}));
        assert_eq!(other["error"]["code"], -32601);
    }
}
