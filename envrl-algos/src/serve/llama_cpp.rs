//! llama.cpp's server, `POST /completion`: the prompt as token ids, the sampled `tokens` and,
//! with `n_probs: 1`, each one's `logprob` in `completion_probabilities` (the end-of-sequence
//! token included when it ended the response).

use serde_json::{Value, json};

use super::api::{EngineApi, SampleRequest, ServedTokens};

/// The request body. llama.cpp's defaults (top-k 40, min-p 0.05, repetition window, DRY, XTC)
/// are turned off and its sampler chain set to temperature → top-k → top-p, Hugging Face's
/// order, so that it samples as envrl does. Its seed is 32 bits and `u32::MAX` means
/// "random", so the request's seed is folded below it.
pub(crate) fn request(r: &SampleRequest<'_>) -> Value {
    json!({
        "prompt": r.prompt,
        "n_predict": r.max_new_tokens,
        "temperature": r.temperature,
        "top_p": r.top_p,
        "top_k": r.top_k,
        "min_p": 0.0,
        "typical_p": 1.0,
        "top_n_sigma": -1.0,
        "repeat_penalty": 1.0,
        "repeat_last_n": 0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        "dry_multiplier": 0.0,
        "xtc_probability": 0.0,
        "mirostat": 0,
        "samplers": ["temperature", "top_k", "top_p"],
        "seed": r.seed % u64::from(u32::MAX),
        "n_probs": 1,
        "return_tokens": true,
        "cache_prompt": true,
        "stream": false,
    })
}

/// The most tokens one entry of `completion_probabilities` stands for: llama.cpp reports one
/// entry per piece of text, so the byte tokens of one UTF-8 character (up to 4 bytes, with a
/// leading space token) share an entry.
const MAX_PIECE_TOKENS: usize = 5;

/// The tokens and log-probabilities of a response. Where llama.cpp reports one entry for
/// several tokens (the bytes of one character), the entry's log-probability is the last
/// token's and the others' are not reported: NaN (the learner recomputes them). A response cut
/// at the token limit (`stop_type` `limit`) inside a character ends with byte tokens that have
/// no entry at all (the piece was never complete): up to `MAX_PIECE_TOKENS - 1` of them are NaN
/// too.
pub(crate) fn parse(body: &Value) -> Result<ServedTokens, String> {
    let tokens = ids(body.get("tokens"), "tokens")?;
    let probs = body
        .get("completion_probabilities")
        .and_then(Value::as_array)
        .ok_or("no `completion_probabilities` array (was `n_probs` ignored?)")?;
    let mut logprobs = Vec::with_capacity(tokens.len());
    for (i, p) in probs.iter().enumerate() {
        let id = p
            .get("id")
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("completion_probabilities[{i}] has no `id`"))?;
        let logprob = p
            .get("logprob")
            .and_then(Value::as_f64)
            .ok_or_else(|| format!("completion_probabilities[{i}] has no `logprob`"))?;
        let start = logprobs.len();
        let piece = tokens[start..]
            .iter()
            .take(MAX_PIECE_TOKENS)
            .position(|&t| u64::from(t) == id)
            .ok_or_else(|| {
                format!(
                    "completion_probabilities[{i}] is for token {id}, not one of the response's \
                     next tokens {:?}",
                    &tokens[start..(start + MAX_PIECE_TOKENS).min(tokens.len())]
                )
            })?;
        logprobs.extend(std::iter::repeat_n(f32::NAN, piece));
        logprobs.push(logprob as f32);
    }
    let stop_type = body.get("stop_type").and_then(Value::as_str);
    let unfinished = tokens.len() - logprobs.len();
    if stop_type == Some("limit") && (1..MAX_PIECE_TOKENS).contains(&unfinished) {
        logprobs.extend(std::iter::repeat_n(f32::NAN, unfinished));
    }
    Ok(ServedTokens {
        tokens,
        logprobs,
        stopped: stop_type == Some("eos"),
    })
}

/// A JSON array of token ids.
pub(crate) fn ids(value: Option<&Value>, field: &str) -> Result<Vec<u32>, String> {
    let array = value
        .and_then(Value::as_array)
        .ok_or_else(|| format!("no `{field}` array"))?;
    array
        .iter()
        .enumerate()
        .map(|(i, v)| {
            v.as_u64()
                .and_then(|id| u32::try_from(id).ok())
                .ok_or_else(|| format!("`{field}[{i}]` is {v}, not a token id"))
        })
        .collect()
}

/// llama.cpp's server: `POST /completion` with `prompt` as ids, `n_probs`, `return_tokens`, and
/// its sampler chain set to plain sampling; it cannot take a new policy while it runs.
pub struct LlamaCpp;

impl EngineApi for LlamaCpp {
    fn name(&self) -> &'static str {
        "llama-cpp"
    }

    /// `/props`, which holds `default_generation_settings`.
    fn probe(&self) -> &'static str {
        "/props"
    }

    fn recognises(&self, body: &Value) -> bool {
        body.get("default_generation_settings").is_some()
    }

    fn request(&self, request: &SampleRequest<'_>) -> (&'static str, Value) {
        ("/completion", self::request(request))
    }

    fn parse(&self, body: &Value) -> Result<ServedTokens, String> {
        self::parse(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A response of llama.cpp's server (xllamacpp 2026.10.11549, SmolLM2-135M), trimmed.
    const RESPONSE: &str = r#"{"index":0,"content":"Hello!","tokens":[19556,17,2],
        "id_slot":3,"stop":true,"tokens_predicted":3,"stop_type":"eos",
        "completion_probabilities":[
          {"id":19556,"token":"Hello","bytes":[72],"logprob":-0.0160,"top_logprobs":[]},
          {"id":17,"token":"!","bytes":[33],"logprob":-0.0145,"top_logprobs":[]},
          {"id":2,"token":"<|im_end|>","bytes":[],"logprob":-0.2,"top_logprobs":[]}]}"#;

    #[test]
    fn a_response_gives_its_tokens_and_log_probabilities() {
        let served = parse(&serde_json::from_str(RESPONSE).unwrap()).unwrap();
        assert_eq!(served.tokens, vec![19556, 17, 2]);
        assert_eq!(served.logprobs, vec![-0.016, -0.0145, -0.2]);
        assert!(served.stopped);
    }

    /// llama.cpp's entries for a sampled emoji (xllamacpp 2026.10.11549, SmolLM2-135M at
    /// temperature 1): the three byte tokens of " 🌳" share one entry, for the last one.
    #[test]
    fn a_character_of_several_byte_tokens_reports_its_last_token_only() {
        let body = json!({
            "tokens": [17, 15107, 230, 128, 1116],
            "stop_type": "limit",
            "completion_probabilities": [
                {"id": 17, "logprob": -0.5},
                {"id": 128, "token": " 🌳", "logprob": -0.25},
                {"id": 1116, "logprob": -0.125}
            ]
        });
        let served = parse(&body).unwrap();
        assert_eq!(served.tokens.len(), served.logprobs.len());
        assert_eq!(served.logprobs[0], -0.5);
        assert!(served.logprobs[1].is_nan() && served.logprobs[2].is_nan());
        assert_eq!(&served.logprobs[3..], &[-0.25, -0.125]);
    }

    /// Found by the first SmolLM2 ALFWorld run on llama.cpp (24 tokens, 22 entries): a reply
    /// cut at the token limit in the middle of a character has no entry for its last bytes.
    #[test]
    fn a_character_cut_by_the_token_limit_has_no_entry() {
        let body = json!({
            "tokens": [17, 15107, 230],
            "stop_type": "limit",
            "completion_probabilities": [{"id": 17, "logprob": -0.5}]
        });
        let served = parse(&body).unwrap();
        assert_eq!(served.logprobs[0], -0.5);
        assert!(served.logprobs[1].is_nan() && served.logprobs[2].is_nan());
        // Not when the reply ended otherwise: the lengths then disagree (checked by `finish`).
        let mut eos = body;
        eos["stop_type"] = json!("eos");
        assert_eq!(parse(&eos).unwrap().logprobs.len(), 1);
    }

    #[test]
    fn a_response_whose_probabilities_do_not_match_its_tokens_is_refused() {
        let mut body: Value = serde_json::from_str(RESPONSE).unwrap();
        body["completion_probabilities"][1]["id"] = json!(18);
        assert!(
            parse(&body)
                .unwrap_err()
                .contains("is for token 18, not one of")
        );
        body["tokens"] = json!([1, -2]);
        assert!(parse(&body).unwrap_err().contains("`tokens[1]` is -2"));
        body.as_object_mut()
            .unwrap()
            .remove("completion_probabilities");
        body["tokens"] = json!([1]);
        assert!(parse(&body).unwrap_err().contains("n_probs"));
    }

    #[test]
    fn the_request_turns_off_llama_cpp_s_own_sampler_defaults() {
        let r = SampleRequest {
            prompt: &[1, 2],
            stop_ids: &[2],
            temperature: 0.7,
            top_p: 0.9,
            top_k: 0,
            max_new_tokens: 8,
            seed: u64::MAX,
            model: None,
        };
        let body = request(&r);
        assert_eq!(body["prompt"], json!([1, 2]));
        assert_eq!(body["min_p"], json!(0.0));
        assert_eq!(body["n_probs"], json!(1));
        assert!(body["seed"].as_u64().unwrap() < u64::from(u32::MAX));
    }
}
