//! [`Engine`], a handle on one engine's [`EngineApi`], and [`ENGINES`], the registry of those
//! envrl speaks.

use std::fmt;

use serde_json::Value;

use super::api::{EngineApi, SampleRequest, ServedTokens};
use super::{llama_cpp, sglang, vllm};

/// The engines envrl speaks, in the order [`super::detect_engine`] asks a server: one line each.
pub const ENGINES: &[Engine] = &[
    Engine::new(&llama_cpp::LlamaCpp),
    Engine::new(&vllm::Vllm),
    Engine::new(&sglang::Sglang),
];

/// An inference engine's HTTP API (one of [`ENGINES`]).
#[derive(Clone, Copy)]
pub struct Engine(&'static dyn EngineApi);

impl PartialEq for Engine {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Engine {}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Engine {
    /// The handle on `api` (the registry's line for an engine).
    pub const fn new(api: &'static dyn EngineApi) -> Self {
        Self(api)
    }

    /// The engine's name in configs and messages (`llama-cpp`, `vllm`, `sglang`).
    pub fn name(self) -> &'static str {
        self.0.name()
    }

    /// The engine of [`ENGINES`] named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        ENGINES.iter().copied().find(|e| e.name() == name)
    }

    /// The names of every engine, for messages (`llama-cpp, vllm, sglang`).
    pub fn names() -> String {
        ENGINES
            .iter()
            .map(|e| e.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The route a server of this engine answers to identify itself.
    pub fn probe(self) -> &'static str {
        self.0.probe()
    }

    /// Whether `body`, the answer to [`Engine::probe`], identifies this engine.
    pub fn recognises(self, body: &Value) -> bool {
        self.0.recognises(body)
    }

    /// The route and JSON body that ask for one response.
    pub fn request(self, request: &SampleRequest<'_>) -> (&'static str, Value) {
        self.0.request(request)
    }

    /// The tokens and log-probabilities in a response body.
    ///
    /// # Errors
    /// What is missing or malformed, in words (a body that is not JSON named with its start).
    pub fn parse(self, body: &[u8]) -> Result<ServedTokens, String> {
        let value: Value = serde_json::from_slice(body).map_err(|e| {
            format!(
                "the response is not JSON ({e}; {} bytes{})",
                body.len(),
                match body.len() {
                    0 => String::new(),
                    _ => format!(
                        ", starting {:?}",
                        String::from_utf8_lossy(&body[..body.len().min(80)])
                    ),
                }
            )
        })?;
        self.0.parse(&value)
    }

    /// The routes that load and unload a LoRA adapter while the server runs; `None` for an
    /// engine that cannot (llama.cpp: a new policy means a restart, [`super::SpawnedLlamaCpp`]).
    pub fn adapter_routes(self) -> Option<(&'static str, &'static str)> {
        self.0.adapter_routes()
    }

    /// The requests, in order, that make a running server reload the served model's weights
    /// from the Hugging Face directory `path`; `None` for an engine that cannot.
    pub fn reload_requests(self, path: &str) -> Option<Vec<(&'static str, Value)>> {
        self.0.reload_requests(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::api::finish;

    fn request() -> SampleRequest<'static> {
        SampleRequest {
            prompt: &[1, 2, 3],
            stop_ids: &[7],
            temperature: 1.0,
            top_p: 1.0,
            top_k: 0,
            max_new_tokens: 4,
            seed: 9,
            model: Some("policy-v3"),
        }
    }

    fn served(tokens: &[u32], logprobs: &[f32]) -> ServedTokens {
        ServedTokens {
            tokens: tokens.to_vec(),
            logprobs: logprobs.to_vec(),
            stopped: false,
        }
    }

    #[test]
    fn a_valid_answer_is_cut_after_its_stop_token() {
        let g = finish(served(&[4, 7, 5], &[-0.1, -0.2, -0.3]), &request(), 10).unwrap();
        assert_eq!(g.tokens, vec![4, 7]);
        assert_eq!(g.logprobs, vec![-0.1, -0.2]);
        assert!(g.stopped);
        let g = finish(served(&[4, 5], &[-0.1, -0.3]), &request(), 10).unwrap();
        assert!(!g.stopped);
    }

    #[test]
    fn malformed_answers_are_named() {
        let r = request();
        let err = |s| finish(s, &r, 10).unwrap_err();
        assert!(err(served(&[4, 5], &[-0.1])).contains("2 tokens but 1 log-probabilities"));
        assert!(err(served(&[4, 10], &[-0.1, -0.1])).contains("id 10, outside the vocabulary"));
        assert!(err(served(&[1, 2, 3, 4, 5], &[0.0; 5])).contains("more than the 4"));
        assert!(err(served(&[4], &[f32::NEG_INFINITY])).contains("log-probability -inf"));
        assert!(
            finish(served(&[4], &[f32::NAN]), &r, 10).is_ok(),
            "not reported"
        );
        assert!(err(served(&[4], &[0.5])).contains("log-probability 0.5"));
        assert!(err(served(&[4], &[-1e30])).contains("which no sampled token has"));
        assert!(finish(served(&[4], &[-999.0]), &r, 10).is_ok());
        // Nothing at all is refused; nothing after a stop is an end-of-sequence not returned.
        assert!(err(served(&[], &[])).contains("no tokens and no stop"));
        let stopped_at_once = ServedTokens {
            stopped: true,
            ..served(&[], &[])
        };
        assert!(finish(stopped_at_once, &r, 10).unwrap().tokens.is_empty());
    }

    #[test]
    fn a_body_that_is_not_json_is_named_with_its_start() {
        for &engine in ENGINES {
            let e = engine.parse(b"{\"tokens\": [1, 2").unwrap_err();
            assert!(e.contains("not JSON") && e.contains("starting"), "{e}");
            assert!(engine.parse(b"").unwrap_err().contains("0 bytes"));
            assert_eq!(Engine::from_name(engine.name()), Some(engine));
        }
    }
}
