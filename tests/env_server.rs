//! `envrl serve` driven as an OpenEnv client drives it, over loopback: WebSocket episodes equal
//! the in-process engine step for step, the HTTP routes answer as `openenv validate` expects,
//! and every fault (bad JSON, unknown types, a step after the end, the session cap, idle and
//! vanished clients, an oversized message) is answered in the protocol's shape while other
//! sessions go on.

use std::sync::Arc;
use std::time::Duration;

use envrl_examples::env_server::{RunningServer, ServeOptions, ServedWorld, start};
use envrl_examples::run::{EnvName, RunConfig};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream, connect_async};

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// The world `envrl serve ENV` builds (the `cpu-tiny` preset), and a second one to play beside.
fn world(env: EnvName) -> (Arc<ServedWorld>, envrl::World) {
    let config = RunConfig::cpu_tiny(env).unwrap();
    let build = || config.env.setup(&config.facts()).unwrap().world;
    (
        Arc::new(ServedWorld::new(build(), config.trainer.max_steps)),
        build(),
    )
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

async fn serve(world: Arc<ServedWorld>, options: ServeOptions) -> RunningServer {
    let options = ServeOptions {
        addr: "127.0.0.1:0".parse().unwrap(),
        ..options
    };
    start(world, options).await.unwrap()
}

async fn connect(server: &RunningServer) -> Socket {
    connect_async(format!("ws://{}/ws", server.addr))
        .await
        .unwrap()
        .0
}

/// Sends one message and reads the answer (`None` when the server closed the connection).
async fn ask(socket: &mut Socket, message: &str) -> Option<Value> {
    socket.send(Message::Text(message.into())).await.ok()?;
    read(socket).await
}

async fn read(socket: &mut Socket) -> Option<Value> {
    loop {
        match tokio::time::timeout(Duration::from_secs(20), socket.next())
            .await
            .ok()??
        {
            Ok(Message::Text(text)) => return Some(serde_json::from_str(&text).unwrap()),
            Ok(Message::Ping(_) | Message::Pong(_)) => continue,
            _ => return None,
        }
    }
}

fn http(server: &RunningServer, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
    let url = format!("http://{}{path}", server.addr);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut response = match (method, body) {
        ("GET", _) => agent.get(&url).call().unwrap(),
        (_, Some(body)) => agent
            .post(&url)
            .content_type("application/json")
            .send(body)
            .unwrap(),
        _ => agent.post(&url).send_empty().unwrap(),
    };
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

#[test]
fn episodes_over_websocket_equal_the_in_process_engine() {
    for env in [
        EnvName::Alfworld,
        EnvName::Keydoor,
        EnvName::Sokoban,
        EnvName::Webshop,
    ] {
        let (served, twin) = world(env);
        let runtime = runtime();
        runtime.block_on(async {
            let server = serve(served.clone(), ServeOptions::default()).await;
            let mut socket = connect(&server).await;
            let mut engine = twin.new_env();
            let (mut steps, mut episodes) = (0, 0);
            for (index, &task) in twin.eval_tasks.iter().take(6).enumerate() {
                let reset = format!(
                    r#"{{"type":"reset","data":{{"split":"eval","index":{index},"view":"raw"}}}}"#
                );
                let first = ask(&mut socket, &reset).await.unwrap();
                assert_eq!(first["type"], "observation", "{first}");
                let mut observation = engine.reset(task);
                assert_eq!(
                    first["data"]["observation"]["text"],
                    observation.text.as_str()
                );
                assert_eq!(
                    first["data"]["observation"]["admissible"],
                    json!(observation.admissible)
                );
                // Raw commands: admissible ones in turn, and one the engine does not accept.
                for t in 0..12 {
                    let action = match (t % 4, observation.admissible.is_empty()) {
                        (3, _) | (_, true) => "do a barrel roll".to_string(),
                        _ => observation.admissible[t % observation.admissible.len()].clone(),
                    };
                    let outcome = engine.step(&action);
                    let message = json!({"type": "step", "data": {"action": action}}).to_string();
                    let got = ask(&mut socket, &message).await.unwrap();
                    let data = &got["data"];
                    assert_eq!(
                        data["observation"]["text"],
                        outcome.observation.text.as_str(),
                        "{env:?} task {task} step {t}"
                    );
                    // Served as written (-0.1, not -0.10000000149): the same f32.
                    let reward = data["reward"].as_f64().map(|r| r as f32);
                    assert_eq!(reward, Some(outcome.reward));
                    assert_eq!(data["observation"]["won"], outcome.won);
                    assert_eq!(data["observation"]["score"], json!(engine.score()));
                    assert_eq!(
                        data["observation"]["admissible"],
                        json!(outcome.observation.admissible)
                    );
                    steps += 1;
                    observation = outcome.observation;
                    if data["done"] == true {
                        assert!(outcome.done || t + 1 >= served.max_steps);
                        break;
                    }
                }
                episodes += 1;
            }
            println!(
                "{env:?}: {episodes} episodes, {steps} steps over WebSocket equal the engine's"
            );
            // A reply goes through the world's projection, as training reads it.
            let reset = ask(
                &mut socket,
                r#"{"type":"reset","data":{"split":"eval","index":0}}"#,
            )
            .await
            .unwrap();
            let prompt = reset["data"]["observation"]["text"]
                .as_str()
                .unwrap()
                .to_string();
            let mut env = twin.new_env();
            let first = env.reset(twin.eval_tasks[0]);
            assert_eq!(prompt, twin.prompt.build(&first, &[], 0));
            let reply = "I am not sure what to do.";
            let parsed = twin.parser.parse(reply, &first.admissible);
            let step = json!({"type": "step", "data": {"reply": reply}}).to_string();
            let got = ask(&mut socket, &step).await.unwrap();
            assert_eq!(got["data"]["observation"]["action"], parsed.action.as_str());
            assert_eq!(got["data"]["observation"]["valid"], parsed.valid);
            let state = ask(&mut socket, r#"{"type":"state"}"#).await.unwrap();
            assert_eq!(state["data"]["step_count"], 1);
            server.stop().await.unwrap();
        });
    }
}

#[test]
fn the_http_routes_answer_as_openenv_validate_expects() {
    let (served, twin) = world(EnvName::Keydoor);
    let runtime = runtime();
    let server = runtime.block_on(serve(served, ServeOptions::default()));
    let get = |path: &str| http(&server, "GET", path, None);
    let (status, openapi) = get("/openapi.json");
    assert_eq!(status, 200);
    assert!(
        openapi["info"]["version"]
            .as_str()
            .unwrap()
            .starts_with("1.")
    );
    for path in ["/reset", "/step", "/state"] {
        assert!(openapi["paths"].get(path).is_some(), "{path}");
    }
    assert_eq!(get("/health"), (200, json!({"status": "healthy"})));
    let (_, metadata) = get("/metadata");
    assert_eq!(metadata["name"], "keydoor");
    assert!(metadata["description"].is_string());
    let (_, schema) = get("/schema");
    for key in ["action", "observation", "state"] {
        assert!(schema[key].is_object(), "{key}");
    }
    let (status, rpc) = http(&server, "POST", "/mcp", Some("{}"));
    assert_eq!((status, &rpc["jsonrpc"]), (200, &json!("2.0")));
    let (_, tasks) = get("/tasks?split=eval&start=1&stop=3");
    assert_eq!(tasks["tasks"], json!(twin.eval_tasks[1..3]));
    assert_eq!(tasks["count"], twin.eval_tasks.len());
    // Stateless reset and step: a fresh environment each, on the requested task.
    let (status, reset) = http(
        &server,
        "POST",
        "/reset",
        Some(r#"{"split":"eval","index":2,"view":"raw"}"#),
    );
    assert_eq!(status, 200, "{reset}");
    let first = twin.new_env().reset(twin.eval_tasks[2]);
    assert_eq!(reset["observation"]["text"], first.text.as_str());
    assert_eq!(reset["done"], false);
    let (status, _) = http(&server, "POST", "/reset", None);
    assert_eq!(status, 200);
    let action = &first.admissible[0];
    let body = json!({"action": {"action": action}, "split": "eval", "index": 2, "view": "raw", "timeout_s": 5}).to_string();
    let (status, step) = http(&server, "POST", "/step", Some(&body));
    assert_eq!(status, 200, "{step}");
    let mut env = twin.new_env();
    env.reset(twin.eval_tasks[2]);
    assert_eq!(
        step["observation"]["text"],
        env.step(action).observation.text.as_str()
    );
    // Bad requests get the protocol's errors, and an unknown route a 404.
    let (status, bad) = http(&server, "POST", "/reset", Some("{oops"));
    assert_eq!(
        (status, &bad["detail"]["code"]),
        (422, &json!("INVALID_JSON"))
    );
    let (status, bad) = http(&server, "POST", "/reset", Some(r#"{"split":"test"}"#));
    assert_eq!(status, 422);
    assert!(
        bad["detail"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown split")
    );
    let (status, bad) = http(&server, "POST", "/step", Some(r#"{"action":{"reply":1}}"#));
    assert_eq!(
        (status, &bad["detail"]["code"]),
        (422, &json!("VALIDATION_ERROR"))
    );
    let (status, _) = get("/nowhere");
    assert_eq!(status, 404);
    runtime.block_on(server.stop()).unwrap();
}

#[test]
fn faults_are_answered_in_the_protocols_shape_and_other_sessions_go_on() {
    let (served, _) = world(EnvName::Keydoor);
    let runtime = runtime();
    runtime.block_on(async {
        let options = ServeOptions {
            max_sessions: 2,
            idle_timeout: Duration::from_millis(1500),
            max_message_bytes: 4096,
            ..ServeOptions::default()
        };
        let server = serve(served, options).await;
        let mut a = connect(&server).await;
        let mut b = connect(&server).await;
        let reset = r#"{"type":"reset","data":{"split":"eval","index":0}}"#;
        assert_eq!(ask(&mut b, reset).await.unwrap()["type"], "observation");
        let code = |v: Value| v["data"]["code"].as_str().unwrap().to_string();
        assert_eq!(
            code(ask(&mut a, "{not json").await.unwrap()),
            "INVALID_JSON"
        );
        assert_eq!(
            code(ask(&mut a, r#"{"type":"fly"}"#).await.unwrap()),
            "UNKNOWN_TYPE"
        );
        let step = r#"{"type":"step","data":{"action":"left"}}"#;
        assert_eq!(code(ask(&mut a, step).await.unwrap()), "EXECUTION_ERROR");
        let wrong = r#"{"type":"step","data":{"reply":["a"]}}"#;
        assert_eq!(code(ask(&mut a, wrong).await.unwrap()), "VALIDATION_ERROR");
        // A third session is refused by name, and the cap is said.
        let mut c = connect(&server).await;
        let refused = read(&mut c).await.unwrap();
        assert_eq!(code(refused.clone()), "CAPACITY_REACHED");
        assert_eq!(refused["data"]["max_sessions"], 2);
        // Play b to its end; a step after it is refused, a reset starts over.
        for _ in 0..100 {
            let got = ask(&mut b, r#"{"type":"step","data":{"action":"noop"}}"#)
                .await
                .unwrap();
            if got["data"]["done"] == true {
                break;
            }
        }
        let after = ask(&mut b, r#"{"type":"step","data":{"action":"noop"}}"#)
            .await
            .unwrap();
        assert!(
            after["data"]["message"].as_str().unwrap().contains("done"),
            "{after}"
        );
        // An oversized message closes that connection only.
        let huge = format!(
            r#"{{"type":"step","data":{{"action":"{}"}}}}"#,
            "x".repeat(8192)
        );
        assert!(ask(&mut a, &huge).await.is_none());
        assert_eq!(ask(&mut b, reset).await.unwrap()["type"], "observation");
        // The closed session's place is free again; one that vanishes frees its place too.
        let mut d = connect(&server).await;
        assert_eq!(ask(&mut d, reset).await.unwrap()["type"], "observation");
        drop(d);
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut e = connect(&server).await;
        assert_eq!(ask(&mut e, reset).await.unwrap()["type"], "observation");
        // A silent session is closed after the idle timeout, saying why.
        let idle = read(&mut b).await.unwrap();
        assert_eq!(code(idle.clone()), "SESSION_ERROR");
        assert!(
            idle["data"]["message"]
                .as_str()
                .unwrap()
                .contains("no message")
        );
        let closed = ask(&mut e, r#"{"type":"close"}"#).await;
        assert!(closed.is_none());
        server.stop().await.unwrap();
    });
}
