//! What every engine's file works with: the request for one response, what a server says it
//! sampled, the trait an engine implements, and the checks every answer passes.

use envrl::Generation;
use serde_json::Value;

/// What envrl knows of one inference engine's HTTP API. An engine is one file that implements
/// this trait and one line in [`super::ENGINES`]; the pool, the live servers and the spawners
/// reach it only through [`super::Engine`].
pub trait EngineApi: Send + Sync + 'static {
    /// Its name in configs and messages (`llama-cpp`, `vllm`, `sglang`).
    fn name(&self) -> &'static str;

    /// The route a server of this engine answers to identify itself.
    fn probe(&self) -> &'static str;

    /// Whether `body`, the JSON answer to [`EngineApi::probe`], is this engine's.
    fn recognises(&self, body: &Value) -> bool;

    /// The route and JSON body that ask for one response.
    fn request(&self, request: &SampleRequest<'_>) -> (&'static str, Value);

    /// The tokens and log-probabilities in a response's JSON.
    ///
    /// # Errors
    /// What is missing or malformed, in words.
    fn parse(&self, body: &Value) -> Result<ServedTokens, String>;

    /// The routes that load and unload a LoRA adapter while the server runs; `None` (the
    /// default) when it cannot (a new policy means a restart).
    fn adapter_routes(&self) -> Option<(&'static str, &'static str)> {
        None
    }

    /// The requests, in order, that make a running server reload the served model's weights
    /// from the Hugging Face directory `path`; `None` (the default) when it cannot.
    fn reload_requests(&self, _path: &str) -> Option<Vec<(&'static str, Value)>> {
        None
    }
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
    /// llama.cpp's pieces).
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

/// The lowest log-probability a sampled token is believed to have: a token of probability
/// e^−1000 is never drawn, so an answer reporting one (e.g. −1e30) is malformed — trained on, it
/// would pin every importance weight at its cap.
pub const MIN_SAMPLED_LOGPROB: f32 = -1000.0;

/// Checks a server's answer against the request and makes it a [`Generation`]: every id below
/// `vocab_size`, one log-probability per token (at most 0, or NaN where the engine did not
/// report it; never infinite, never below [`MIN_SAMPLED_LOGPROB`]), no more than
/// `max_new_tokens` tokens, at least one unless the engine says it stopped (at its own
/// end-of-sequence, which some engines do not return), and the response cut after its first
/// stop token (an engine that
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
    if tokens.is_empty() && !stopped && request.max_new_tokens > 0 {
        return Err(
            "no tokens and no stop: a reply that did not stop has at least one token".into(),
        );
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
        .find(|(_, lp)| !(MIN_SAMPLED_LOGPROB..=1e-4).contains(*lp) && !lp.is_nan())
    {
        return Err(format!(
            "token {i} has log-probability {lp}, which no sampled token has (between \
             {MIN_SAMPLED_LOGPROB} and 0)"
        ));
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

/// `text` with the password of every URL in it masked (`http://user:***@host`): server
/// addresses may carry credentials (sent as Basic auth), which no message or log repeats.
pub fn redact_credentials(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(scheme) = rest.find("://") {
        let (head, tail) = rest.split_at(scheme + 3);
        out.push_str(head);
        let authority_end = tail
            .find(|c: char| c == '/' || c.is_whitespace() || c == '"' || c == ',')
            .unwrap_or(tail.len());
        let authority = &tail[..authority_end];
        match authority.rfind('@') {
            Some(at) => {
                let userinfo = &authority[..at];
                match userinfo.find(':') {
                    Some(colon) => {
                        out.push_str(&userinfo[..colon]);
                        out.push_str(":***");
                    }
                    None => out.push_str(userinfo),
                }
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[authority_end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_in_addresses_are_masked_wherever_they_appear() {
        assert_eq!(
            redact_credentials("rollout server http://me:s3cret@a:8000/v1: refused"),
            "rollout server http://me:***@a:8000/v1: refused"
        );
        assert_eq!(
            redact_credentials("\"http://a:1,http://u:p@b:2\" and https://x:y@c"),
            "\"http://a:1,http://u:***@b:2\" and https://x:***@c"
        );
        assert_eq!(
            redact_credentials("http://user@a:8000"),
            "http://user@a:8000"
        );
        assert_eq!(redact_credentials("no address here"), "no address here");
    }
}
