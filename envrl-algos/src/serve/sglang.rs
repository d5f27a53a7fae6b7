//! SGLang's native API, `POST /generate`: `input_ids`, and with `return_logprob` the sampled
//! tokens as `meta_info.output_token_logprobs` (`[logprob, id, text]` each).
//!
//! SGLang does not run on this project's CPU machines; this module follows the documented
//! schema of `GenerateReqInput` and its response, and is tested against responses of that
//! shape.

use serde_json::{Value, json};

use super::api::{EngineApi, SampleRequest, ServedTokens};

/// The request body: one prompt, a seed, stop token ids, special tokens kept; a LoRA
/// adapter by name when the request names a model.
pub(crate) fn request(r: &SampleRequest<'_>) -> Value {
    let mut body = json!({
        "input_ids": r.prompt,
        "sampling_params": {
            "max_new_tokens": r.max_new_tokens,
            "temperature": r.temperature,
            "top_p": r.top_p,
            "top_k": r.top_k_or_off(),
            "stop_token_ids": r.stop_ids,
            "skip_special_tokens": false,
            "sampling_seed": r.signed_seed(),
        },
        "return_logprob": true,
        "stream": false,
    });
    if let Some(model) = r.model {
        body["lora_path"] = json!(model);
    }
    body
}

/// The tokens and log-probabilities of a response.
pub(crate) fn parse(body: &Value) -> Result<ServedTokens, String> {
    let meta = body
        .get("meta_info")
        .ok_or_else(|| match body.get("error") {
            Some(e) => format!("the server answered an error: {e}"),
            None => "no `meta_info`".to_string(),
        })?;
    let entries = meta
        .get("output_token_logprobs")
        .and_then(Value::as_array)
        .ok_or("no `meta_info.output_token_logprobs` (was `return_logprob` ignored?)")?;
    let mut served = ServedTokens {
        stopped: meta.pointer("/finish_reason/type").and_then(Value::as_str) == Some("stop"),
        ..ServedTokens::default()
    };
    for (i, entry) in entries.iter().enumerate() {
        let bad = || format!("`output_token_logprobs[{i}]` is {entry}, not [logprob, id, …]");
        let logprob = entry.get(0).and_then(Value::as_f64).ok_or_else(bad)?;
        let id = entry
            .get(1)
            .and_then(Value::as_u64)
            .and_then(|id| u32::try_from(id).ok())
            .ok_or_else(bad)?;
        served.tokens.push(id);
        served.logprobs.push(logprob as f32);
    }
    Ok(served)
}

/// SGLang's native API: `POST /generate` with `input_ids` and `return_logprob`; LoRA adapters
/// loaded while it runs, and a full fine-tune's weights reloaded in place.
pub struct Sglang;

impl EngineApi for Sglang {
    fn name(&self) -> &'static str {
        "sglang"
    }

    /// `/get_model_info`, which holds a `model_path`.
    fn probe(&self) -> &'static str {
        "/get_model_info"
    }

    fn recognises(&self, body: &Value) -> bool {
        body.get("model_path").is_some()
    }

    fn request(&self, request: &SampleRequest<'_>) -> (&'static str, Value) {
        ("/generate", self::request(request))
    }

    fn parse(&self, body: &Value) -> Result<ServedTokens, String> {
        self::parse(body)
    }

    fn adapter_routes(&self) -> Option<(&'static str, &'static str)> {
        Some(("/load_lora_adapter", "/unload_lora_adapter"))
    }

    /// `/update_weights_from_disk` (which flushes its cache).
    fn reload_requests(&self, path: &str) -> Option<Vec<(&'static str, Value)>> {
        Some(vec![(
            "/update_weights_from_disk",
            json!({"model_path": path}),
        )])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The documented shape of a `/generate` response with `return_logprob`.
    const RESPONSE: &str = r#"{"text":"go north","output_ids":[734,4215,2],
        "meta_info":{"id":"a1","finish_reason":{"type":"stop","matched":2},
          "prompt_tokens":3,"completion_tokens":3,"cached_tokens":0,
          "output_token_logprobs":[[-0.5,734,null],[-0.25,4215,null],[-0.125,2,null]]}}"#;

    #[test]
    fn a_response_gives_its_tokens_and_log_probabilities() {
        let served = parse(&serde_json::from_str(RESPONSE).unwrap()).unwrap();
        assert_eq!(served.tokens, vec![734, 4215, 2]);
        assert_eq!(served.logprobs, vec![-0.5, -0.25, -0.125]);
        assert!(served.stopped);
    }

    #[test]
    fn malformed_entries_are_named() {
        let mut body: Value = serde_json::from_str(RESPONSE).unwrap();
        body["meta_info"]["output_token_logprobs"][2] = json!([-0.1, "x", null]);
        assert!(
            parse(&body)
                .unwrap_err()
                .contains("output_token_logprobs[2]")
        );
        assert!(
            parse(&json!({"error": "busy"}))
                .unwrap_err()
                .contains("busy")
        );
    }

    #[test]
    fn the_request_asks_for_log_probabilities_and_the_adapter() {
        let r = SampleRequest {
            prompt: &[5, 6],
            stop_ids: &[2],
            temperature: 0.0,
            top_p: 1.0,
            top_k: 3,
            max_new_tokens: 4,
            seed: 7,
            model: Some("policy-v2"),
        };
        let body = request(&r);
        assert_eq!(body["input_ids"], json!([5, 6]));
        assert_eq!(body["return_logprob"], json!(true));
        assert_eq!(body["lora_path"], json!("policy-v2"));
        assert_eq!(body["sampling_params"]["top_k"], json!(3));
    }
}
