//! vLLM's OpenAI-compatible server, `POST /v1/completions`: the prompt as token ids, the
//! sampled `token_ids` (`return_token_ids`) and each token's log-probability (`logprobs: 0`).
//!
//! vLLM reports the log-probabilities of its raw distribution unless it runs with
//! `--logprobs-mode processed_logprobs`; at a temperature other than 1 (or with top-p) they
//! then differ from the sampling distribution's, which the learner's recompute measures.

use serde_json::{Value, json};

use super::api::{EngineApi, SampleRequest, ServedTokens};
use super::llama_cpp::ids;

/// The request body: one prompt, a seed, stop token ids, special tokens kept.
pub(crate) fn request(r: &SampleRequest<'_>) -> Value {
    let mut body = json!({
        "prompt": r.prompt,
        "max_tokens": r.max_new_tokens,
        "temperature": r.temperature,
        "top_p": r.top_p,
        "top_k": r.top_k_or_off(),
        "seed": r.signed_seed(),
        "logprobs": 0,
        "return_token_ids": true,
        "stop_token_ids": r.stop_ids,
        "skip_special_tokens": false,
        "stream": false,
    });
    if let Some(model) = r.model {
        body["model"] = json!(model);
    }
    body
}

/// The tokens and log-probabilities of the first choice.
pub(crate) fn parse(body: &Value) -> Result<ServedTokens, String> {
    let choice = body
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or_else(|| match body.get("error").or_else(|| body.get("message")) {
            Some(e) => format!("the server answered an error: {e}"),
            None => "no `choices`".to_string(),
        })?;
    let tokens = ids(choice.get("token_ids"), "choices[0].token_ids")
        .map_err(|e| format!("{e} (is `return_token_ids` supported? vLLM >= 0.10.2)"))?;
    let logprobs = choice
        .pointer("/logprobs/token_logprobs")
        .and_then(Value::as_array)
        .ok_or("no `choices[0].logprobs.token_logprobs`")?
        .iter()
        .enumerate()
        .map(|(i, v)| {
            v.as_f64()
                .map(|x| x as f32)
                .ok_or_else(|| format!("`token_logprobs[{i}]` is {v}, not a number"))
        })
        .collect::<Result<Vec<f32>, String>>()?;
    Ok(ServedTokens {
        tokens,
        logprobs,
        stopped: choice.get("finish_reason").and_then(Value::as_str) == Some("stop"),
    })
}

/// vLLM's OpenAI-compatible server: `POST /v1/completions` with `prompt` as ids,
/// `return_token_ids`, `logprobs: 0` and a seed per request; LoRA adapters loaded while it runs,
/// and a full fine-tune's weights reloaded in place.
pub struct Vllm;

impl EngineApi for Vllm {
    fn name(&self) -> &'static str {
        "vllm"
    }

    /// `/version`, which holds a `version` string.
    fn probe(&self) -> &'static str {
        "/version"
    }

    fn recognises(&self, body: &Value) -> bool {
        body.get("version").is_some_and(Value::is_string)
    }

    fn request(&self, request: &SampleRequest<'_>) -> (&'static str, Value) {
        ("/v1/completions", self::request(request))
    }

    fn parse(&self, body: &Value) -> Result<ServedTokens, String> {
        self::parse(body)
    }

    fn adapter_routes(&self) -> Option<(&'static str, &'static str)> {
        Some(("/v1/load_lora_adapter", "/v1/unload_lora_adapter"))
    }

    /// `reload_weights` through `/collective_rpc` (a server started with
    /// `VLLM_SERVER_DEV_MODE=1`), then `/reset_prefix_cache` so that no cached prefix of the old
    /// weights is reused.
    fn reload_requests(&self, path: &str) -> Option<Vec<(&'static str, Value)>> {
        Some(vec![
            (
                "/collective_rpc",
                json!({"method": "reload_weights", "kwargs": {"weights_path": path}}),
            ),
            ("/reset_prefix_cache", json!({})),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of vLLM's completion response with `return_token_ids` and `logprobs: 0`.
    const RESPONSE: &str = r#"{"id":"cmpl-1","object":"text_completion","model":"policy-v2",
        "choices":[{"index":0,"text":"go north","token_ids":[734,4215,2],
          "prompt_token_ids":[1,2,3],"finish_reason":"stop","stop_reason":2,
          "logprobs":{"text_offset":[0,2,8],"tokens":["go"," north","<|im_end|>"],
            "token_logprobs":[-0.5,-0.25,-0.125],"top_logprobs":[null,null,null]}}],
        "usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6}}"#;

    #[test]
    fn a_response_gives_its_tokens_and_log_probabilities() {
        let served = parse(&serde_json::from_str(RESPONSE).unwrap()).unwrap();
        assert_eq!(served.tokens, vec![734, 4215, 2]);
        assert_eq!(served.logprobs, vec![-0.5, -0.25, -0.125]);
        assert!(served.stopped);
    }

    #[test]
    fn an_error_body_and_a_missing_field_are_named() {
        let err = parse(&json!({"object": "error", "message": "model not found"})).unwrap_err();
        assert!(err.contains("model not found"), "{err}");
        let mut body: Value = serde_json::from_str(RESPONSE).unwrap();
        body["choices"][0]
            .as_object_mut()
            .unwrap()
            .remove("token_ids");
        assert!(parse(&body).unwrap_err().contains("return_token_ids"));
    }

    #[test]
    fn the_request_names_the_model_and_stop_ids() {
        let r = SampleRequest {
            prompt: &[5],
            stop_ids: &[2],
            temperature: 1.0,
            top_p: 1.0,
            top_k: 0,
            max_new_tokens: 4,
            seed: 7,
            model: Some("policy-v2"),
        };
        let body = request(&r);
        assert_eq!(body["model"], json!("policy-v2"));
        assert_eq!(body["stop_token_ids"], json!([2]));
        assert_eq!(body["top_k"], json!(-1));
        assert_eq!(body["logprobs"], json!(0));
    }
}
