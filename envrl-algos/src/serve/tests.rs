//! The pool against misbehaving servers on the loopback interface: each answers every request
//! the same (bad) way, for a bounded number of connections.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread::JoinHandle;
use std::time::Duration;

use envrl::{Sampler, SamplingParams};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::{Engine, LlamaCpp, PoolConfig, ServerPool, Sglang, Vllm};

/// How a test server answers.
#[derive(Clone, Copy)]
enum Answer {
    /// A valid llama.cpp response: tokens 5, 6 and the stop token 2.
    Good,
    /// `{"tokens": [1, 2` and the connection closed.
    Malformed,
    /// A Content-Length longer than the body it sends before closing.
    Truncated,
    /// A token id outside the vocabulary.
    OutsideVocabulary,
    /// Three tokens with two log-probabilities.
    LengthMismatch,
    /// HTTP 503.
    Unavailable,
    /// Reads the request and never answers.
    Silent,
}

const GOOD: &str = r#"{"tokens":[5,6,2],"stop_type":"eos","completion_probabilities":[
    {"id":5,"logprob":-0.5},{"id":6,"logprob":-0.25},{"id":2,"logprob":-0.125}]}"#;

fn body(answer: Answer) -> (u16, String) {
    match answer {
        Answer::Good | Answer::Truncated | Answer::Silent => (200, GOOD.to_string()),
        Answer::Malformed => (200, r#"{"tokens": [1, 2"#.to_string()),
        Answer::OutsideVocabulary => (
            200,
            GOOD.replace("[5,6,2]", "[5,600,2]")
                .replace(r#"{"id":6,"#, r#"{"id":600,"#),
        ),
        Answer::LengthMismatch => (
            200,
            GOOD.replace(r#"{"id":2,"logprob":-0.125}"#, "")
                .replace(",]", "]"),
        ),
        Answer::Unavailable => (503, r#"{"error":"loading model"}"#.to_string()),
    }
}

/// Reads one HTTP request (headers and a Content-Length body); its route and body.
fn read_request(stream: &mut TcpStream) -> (String, String) {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    let _ = stream.read_exact(&mut body);
    let route = head
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string();
    (route, String::from_utf8_lossy(&body).into_owned())
}

/// A server on a free loopback port answering `connections` connections; its address.
fn serve(answer: Answer, connections: usize) -> (String, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        for stream in listener.incoming().take(connections) {
            let Ok(mut stream) = stream else { continue };
            read_request(&mut stream);
            let (status, text) = body(answer);
            let reply = match answer {
                Answer::Silent => {
                    std::thread::sleep(Duration::from_millis(1500));
                    continue;
                }
                Answer::Truncated => format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{}",
                    text.len() + 100,
                    text
                ),
                _ => format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                    text.len()
                ),
            };
            let _ = stream.write_all(reply.as_bytes());
        }
    });
    (url, handle)
}

fn pool(urls: Vec<String>) -> ServerPool {
    let mut config = PoolConfig::new(urls, 100);
    config.engine = Some(Engine::new(&LlamaCpp));
    config.retries = 1;
    config.backoff = Duration::from_millis(10);
    config.timeout = Duration::from_millis(500);
    config.in_flight = 2;
    ServerPool::connect(config).unwrap()
}

fn sample(pool: &ServerPool, prompts: usize) -> envrl::Result<Vec<envrl::Generation>> {
    let prompts: Vec<Vec<u32>> = (0..prompts).map(|i| vec![1, i as u32 + 3]).collect();
    let mut rngs: Vec<ChaCha8Rng> = (0..prompts.len() as u64)
        .map(ChaCha8Rng::seed_from_u64)
        .collect();
    let params = SamplingParams {
        max_new_tokens: 8,
        ..SamplingParams::default()
    };
    pool.sample(&prompts, &[2], &params, &mut rngs)
}

#[test]
fn a_good_server_gives_each_prompt_its_tokens() {
    let (url, _server) = serve(Answer::Good, 4);
    let generations = sample(&pool(vec![url]), 4).unwrap();
    assert_eq!(generations.len(), 4);
    for g in generations {
        assert_eq!(g.tokens, vec![5, 6, 2]);
        assert_eq!(g.logprobs, vec![-0.5, -0.25, -0.125]);
        assert!(g.stopped);
    }
}

#[test]
fn every_bad_answer_is_an_error_naming_the_server_and_the_request() {
    let cases = [
        (Answer::Malformed, "not json"),
        (Answer::Truncated, "reading the response"),
        (Answer::OutsideVocabulary, "outside the vocabulary of 100"),
        (Answer::LengthMismatch, "3 tokens but 2 log-probabilities"),
        (Answer::Unavailable, "http 503"),
        (Answer::Silent, "timeout"),
    ];
    for (answer, expected) in cases {
        // One request, tried twice (a retry), on one server.
        let (url, server) = serve(answer, 2);
        let err = sample(&pool(vec![url.clone()]), 1).unwrap_err().to_string();
        assert!(
            err.contains(&format!("rollout server {url}"))
                && err.contains("request 0")
                && err.contains("failed 2 times")
                && err.to_lowercase().contains(expected),
            "{expected}: {err}"
        );
        server.join().unwrap();
    }
}

#[test]
fn a_refused_connection_is_named_too() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let err = sample(&pool(vec![url.clone()]), 1).unwrap_err().to_string();
    assert!(
        err.contains(&url) && err.contains("failed 2 times"),
        "{err}"
    );
}

#[test]
fn one_dead_server_of_two_loses_nothing() {
    let (good, _server) = serve(Answer::Good, 16);
    let dead = TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let generations = sample(&pool(vec![dead_url, good]), 6).unwrap();
    assert_eq!(generations.len(), 6);
    assert!(generations.iter().all(|g| g.tokens == vec![5, 6, 2]));
}

#[test]
fn the_engine_is_told_from_its_identification_route() {
    // A server that answers llama.cpp's /props; the others are asked first only when needed.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = std::thread::spawn(move || {
        if let Some(Ok(mut stream)) = listener.incoming().next() {
            read_request(&mut stream);
            let text = r#"{"default_generation_settings":{},"total_slots":4}"#;
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
            let _ = stream.write_all(reply.as_bytes());
        }
    });
    let agent = super::pool::http_agent(Duration::from_secs(2));
    assert_eq!(
        super::detect_engine(&agent, &url).unwrap(),
        Engine::new(&LlamaCpp)
    );
    server.join().unwrap();
    let err = super::detect_engine(&agent, &url).unwrap_err().to_string();
    assert!(err.contains("no engine recognised"), "{err}");
}

/// A vLLM-like server for `connections` connections: the adapter routes answer `load_status`
/// (and every request's route and body are sent to `seen`).
fn adapter_server(
    load_status: u16,
    connections: usize,
    seen: std::sync::mpsc::Sender<(String, String)>,
) -> (String, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        for stream in listener.incoming().take(connections) {
            let Ok(mut stream) = stream else { continue };
            let (route, body) = read_request(&mut stream);
            let text = r#"{"error":"cannot read the adapter"}"#;
            let _ = seen.send((route, body));
            let reply = format!(
                "HTTP/1.1 {load_status} X\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
            let _ = stream.write_all(reply.as_bytes());
        }
    });
    (url, handle)
}

/// A tiny base model on disk as a pretrained one is, the policy loaded from it (no LoRA) and
/// where its versions are written.
fn tiny_policy_files(dir: &std::path::Path) -> (crate::CausalLm, super::PolicyFiles) {
    use crate::runtime::export::{Export, ExportFormat, ExportOptions, ExportTokenizer};
    use crate::{CausalLm, HfTokenizer, LmConfig, WordTokenizer};

    let words = WordTokenizer::from_corpus(["go to the shelf 1", "take the apple from shelf 1"]);
    let config = LmConfig::tiny(envrl::Tokenizer::vocab_size(&words));
    let device = burn::tensor::Device::flex();
    let base = config.init(&device, 0).unwrap();
    let base_dir = dir.join("base");
    Export {
        model: &base,
        config: &config,
        tokenizer: ExportTokenizer::Word(&words),
        base_model: None,
        name: "tiny",
    }
    .write(&ExportOptions::new(ExportFormat::Hf), &base_dir)
    .unwrap();
    let policy = CausalLm::from_hf_dir(&base_dir, &device).unwrap().0;
    let files = super::PolicyFiles {
        dir: dir.join("versions"),
        config,
        tokenizer: std::sync::Arc::new(HfTokenizer::from_dir(&base_dir).unwrap()),
        base_model: base_dir,
        untie_embeddings: false,
    };
    (policy, files)
}

/// A pool of vLLM servers at `urls`.
fn vllm_pool(urls: Vec<String>) -> ServerPool {
    let mut config = PoolConfig::new(urls, 100);
    config.engine = Some(Engine::new(&Vllm));
    config.timeout = Duration::from_secs(5);
    ServerPool::connect(config).unwrap()
}

#[test]
fn each_version_is_loaded_under_its_own_name_and_a_refused_load_is_named() {
    use envrl::PolicyServer;

    use super::LiveServers;

    let dir = tempfile::tempdir().unwrap();
    let (base, sync) = tiny_policy_files(dir.path());
    let policy = base.with_lora(4, 8.0, 0);
    let connect = vllm_pool;

    // Two servers: one loads, one refuses; each asked to load v0, load v1, unload v0.
    let (tx, rx) = std::sync::mpsc::channel();
    let (good, good_server) = adapter_server(200, 3, tx.clone());
    let (bad, bad_server) = adapter_server(404, 3, tx);
    let mut servers = LiveServers::new(connect(vec![good, bad]), sync.clone()).unwrap();
    servers.publish(&policy, 0).unwrap();
    assert_eq!(servers.served(), Some("envrl-v0"));
    servers.publish(&policy, 1).unwrap();
    assert_eq!(servers.served(), Some("envrl-v1"));
    good_server.join().unwrap();
    bad_server.join().unwrap();
    let seen: Vec<(String, String)> = rx.try_iter().collect();
    let loads: Vec<&String> = seen
        .iter()
        .filter(|(route, _)| route == "/v1/load_lora_adapter")
        .map(|(_, body)| body)
        .collect();
    assert_eq!(loads.len(), 4, "{seen:?}");
    assert!(loads.iter().all(|b| b.contains(r#""lora_name":"envrl-v"#)));
    let unloads = seen
        .iter()
        .filter(|(route, body)| route == "/v1/unload_lora_adapter" && body.contains("envrl-v0"));
    assert_eq!(unloads.count(), 2);
    // The served version's adapter is on disk, the one before it is not.
    assert!(sync.dir.join("envrl-v1/adapter_config.json").exists());
    assert!(!sync.dir.join("envrl-v0").exists());

    // No server loads the version: an error naming both, and the served name is unchanged.
    let (tx, _rx) = std::sync::mpsc::channel();
    let (a, a_server) = adapter_server(404, 1, tx.clone());
    let (b, b_server) = adapter_server(500, 1, tx);
    let mut servers = LiveServers::new(connect(vec![a.clone(), b.clone()]), sync.clone()).unwrap();
    let err = servers.publish(&policy, 0).unwrap_err().to_string();
    assert!(
        err.contains("policy version 0 from")
            && err.contains("was not taken")
            && err.contains(&format!("{a}: HTTP 404"))
            && err.contains(&format!("{b}: HTTP 500")),
        "{err}"
    );
    assert_eq!(servers.served(), None);
    a_server.join().unwrap();
    b_server.join().unwrap();

    // llama.cpp cannot load adapters while it runs: refused when the servers are given.
    let (url, _server) = serve(Answer::Good, 1);
    let err = LiveServers::new(pool(vec![url]), sync)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cannot load a new policy while it runs"),
        "{err}"
    );
}

#[test]
fn a_full_fine_tune_is_reloaded_by_every_server_or_refused() {
    use envrl::PolicyServer;

    use super::LiveServers;

    let dir = tempfile::tempdir().unwrap();
    let (policy, files) = tiny_policy_files(dir.path());
    // Two servers that reload: each asked to reload v0 then v1 from its directory, and to drop
    // its prefix cache after each.
    let (tx, rx) = std::sync::mpsc::channel();
    let (a, a_server) = adapter_server(200, 4, tx.clone());
    let (b, b_server) = adapter_server(200, 4, tx);
    let mut servers = LiveServers::new(vllm_pool(vec![a, b]), files.clone()).unwrap();
    servers.publish(&policy, 0).unwrap();
    assert!(files.dir.join("envrl-v0/config.json").exists());
    servers.publish(&policy, 1).unwrap();
    assert_eq!(servers.served(), Some("envrl-v1"));
    a_server.join().unwrap();
    b_server.join().unwrap();
    let seen: Vec<(String, String)> = rx.try_iter().collect();
    let routes: Vec<&str> = seen.iter().map(|(route, _)| route.as_str()).collect();
    assert_eq!(
        routes.iter().filter(|r| **r == "/collective_rpc").count(),
        4,
        "{seen:?}"
    );
    assert_eq!(
        routes
            .iter()
            .filter(|r| **r == "/reset_prefix_cache")
            .count(),
        4
    );
    let v1 = files.dir.join("envrl-v1");
    assert!(seen.iter().any(|(route, body)| {
        route == "/collective_rpc"
            && body.contains(r#""method":"reload_weights""#)
            && body.contains(&*v1.to_string_lossy())
    }));
    assert!(v1.join("model.safetensors").exists());
    assert!(!files.dir.join("envrl-v0").exists());

    // One server of two does not reload: the publish fails (it would answer from the old
    // weights as if they were the new ones), naming it.
    let (tx, _rx) = std::sync::mpsc::channel();
    let (good, good_server) = adapter_server(200, 2, tx.clone());
    let (bad, bad_server) = adapter_server(500, 1, tx);
    let mut servers = LiveServers::new(vllm_pool(vec![good, bad.clone()]), files).unwrap();
    let err = servers.publish(&policy, 2).unwrap_err().to_string();
    assert!(
        err.contains("policy version 2") && err.contains(&format!("{bad}: HTTP 500")),
        "{err}"
    );
    assert_eq!(servers.served(), None);
    good_server.join().unwrap();
    bad_server.join().unwrap();
}

#[test]
fn each_engine_reloads_full_weights_by_its_own_route() {
    let path = "/shared/envrl-v3";
    let vllm = Engine::new(&Vllm).reload_requests(path).unwrap();
    assert_eq!(vllm[0].0, "/collective_rpc");
    assert_eq!(
        vllm[0].1,
        serde_json::json!({"method": "reload_weights", "kwargs": {"weights_path": path}})
    );
    assert_eq!(vllm[1].0, "/reset_prefix_cache");
    let sglang = Engine::new(&Sglang).reload_requests(path).unwrap();
    assert_eq!(
        sglang,
        vec![(
            "/update_weights_from_disk",
            serde_json::json!({"model_path": path})
        )]
    );
    assert!(Engine::new(&LlamaCpp).reload_requests(path).is_none());
}
