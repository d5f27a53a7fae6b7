//! The engines' APIs: one request and one response per prompt, as each engine defines them.

use envrl::Generation;
use serde_json::Value;

use super::{llama_cpp, sglang, vllm};

/// An inference engine's HTTP API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// llama.cpp's server: `POST /completion` with `prompt` as ids, `n_probs`,
    /// `return_tokens`, and its sampler chain set to plain sampling.
    LlamaCpp,
    /// vLLM's OpenAI-compatible server: `POST /v1/completions` with `prompt` as ids,
    /// `return_token_ids`, `logprobs: 0` and a seed per request.
    Vllm,
    /// SGLang's native API: `POST /generate` with `input_ids` and `return_logprob`.
    Sglang,
}

/// One prompt to sample a response for.
#[derive(Debug, Clone, Copy)]
pub struct SampleRequest<'a> {
    /// The prompt's token ids.
    pub prompt: &'a [u32],
    /// Token ids that end a response (kept as its last token).
    pub stop_ids: &'a [u32],
    /// Softmax temperature (0: greedy).
    pub temperature: f32,
    /// Nucleus mass (1: off).
    pub top_p: f32,
    /// Top-k (0: off).
    pub top_k: usize,
    /// The most tokens to sample.
    pub max_new_tokens: usize,
    /// The request's seed (drawn from the trajectory's stream).
    pub seed: u64,
    /// The model (or LoRA adapter) name to ask for, where the engine takes one.
    pub model: Option<&'a str>,
}

/// What a server says it sampled, before envrl checks it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ServedTokens {
    /// The sampled token ids.
    pub tokens: Vec<u32>,
    /// The engine's log-probability of each; NaN where the engine did not report one (see
    /// [`Engine::LlamaCpp`]'s pieces).
    pub logprobs: Vec<f32>,
    /// Whether the engine says a stop token (or end of sequence) ended the response.
    pub stopped: bool,
}

impl SampleRequest<'_> {
    /// Top-k as vLLM and SGLang take it: -1 when off.
    pub(crate) fn top_k_or_off(&self) -> i64 {
        match self.top_k {
            0 => -1,
            k => k as i64,
        }
    }

    /// The seed within a signed 64-bit integer (Python engines read it as one).
    pub(crate) fn signed_seed(&self) -> u64 {
        self.seed % (1 << 63)
    }
}

impl Engine {
    /// The engine's name in configs and messages (`llama-cpp`, `vllm`, `sglang`).
    pub fn name(self) -> &'static str {
        match self {
            Engine::LlamaCpp => "llama-cpp",
            Engine::Vllm => "vllm",
            Engine::Sglang => "sglang",
        }
    }

    /// The engine named `name` (as [`Engine::name`] writes it).
    pub fn from_name(name: &str) -> Option<Self> {
        [Engine::LlamaCpp, Engine::Vllm, Engine::Sglang]
            .into_iter()
            .find(|e| e.name() == name)
    }

    /// The route a server of this engine answers to identify itself, and whether `body` (the
    /// JSON it answered with) is this engine's: llama.cpp's `/props` holds
    /// `default_generation_settings`, vLLM's `/version` a `version`, SGLang's
    /// `/get_model_info` a `model_path`.
    pub fn probe(self) -> &'static str {
        match self {
            Engine::LlamaCpp => "/props",
            Engine::Vllm => "/version",
            Engine::Sglang => "/get_model_info",
        }
    }

    /// Whether `body`, the answer to [`Engine::probe`], identifies this engine.
    pub fn recognises(self, body: &Value) -> bool {
        match self {
            Engine::LlamaCpp => body.get("default_generation_settings").is_some(),
            Engine::Vllm => body.get("version").is_some_and(Value::is_string),
            Engine::Sglang => body.get("model_path").is_some(),
        }
    }

    /// The route and JSON body that ask for one response.
    pub fn request(self, request: &SampleRequest<'_>) -> (&'static str, Value) {
        match self {
            Engine::LlamaCpp => ("/completion", llama_cpp::request(request)),
            Engine::Vllm => ("/v1/completions", vllm::request(request)),
            Engine::Sglang => ("/generate", sglang::request(request)),
        }
    }

    /// The tokens and log-probabilities in a response body.
    ///
    /// # Errors
    /// What is missing or malformed, in words.
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
        match self {
            Engine::LlamaCpp => llama_cpp::parse(&value),
            Engine::Vllm => vllm::parse(&value),
            Engine::Sglang => sglang::parse(&value),
        }
    }
}

/// Checks a server's answer against the request and makes it a [`Generation`]: every id below
/// `vocab_size`, one log-probability per token (at most 0, or NaN where the engine did not
/// report it; never infinite), no more than
/// `max_new_tokens` tokens, and the response cut after its first stop token (an engine that
/// ends at its own end-of-sequence without returning it gets nothing appended).
///
/// # Errors
/// The first problem found, in words.
pub fn finish(
    served: ServedTokens,
    request: &SampleRequest<'_>,
    vocab_size: usize,
) -> Result<Generation, String> {
    let ServedTokens {
        mut tokens,
        mut logprobs,
        stopped,
    } = served;
    if tokens.len() != logprobs.len() {
        return Err(format!(
            "{} tokens but {} log-probabilities",
            tokens.len(),
            logprobs.len()
        ));
    }
    if tokens.len() > request.max_new_tokens {
        return Err(format!(
            "{} tokens, more than the {} asked for",
            tokens.len(),
            request.max_new_tokens
        ));
    }
    if let Some((i, id)) = tokens
        .iter()
        .enumerate()
        .find(|(_, id)| **id as usize >= vocab_size)
    {
        return Err(format!(
            "token {i} is id {id}, outside the vocabulary of {vocab_size}"
        ));
    }
    if let Some((i, lp)) = logprobs
        .iter()
        .enumerate()
        .find(|(_, lp)| lp.is_infinite() || **lp > 1e-4)
    {
        return Err(format!("token {i} has log-probability {lp}"));
    }
    let stop = tokens.iter().position(|id| request.stop_ids.contains(id));
    if let Some(end) = stop {
        tokens.truncate(end + 1);
        logprobs.truncate(end + 1);
    }
    Ok(Generation {
        tokens,
        logprobs,
        stopped: stop.is_some() || stopped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }

    #[test]
    fn a_body_that_is_not_json_is_named_with_its_start() {
        for engine in [Engine::LlamaCpp, Engine::Vllm, Engine::Sglang] {
            let e = engine.parse(b"{\"tokens\": [1, 2").unwrap_err();
            assert!(e.contains("not JSON") && e.contains("starting"), "{e}");
            assert!(engine.parse(b"").unwrap_err().contains("0 bytes"));
            assert_eq!(Engine::from_name(engine.name()), Some(engine));
        }
    }
}
