//! Hugging Face model directories: the tiny Qwen2 and Llama references of `shared/models` give
//! the logits of HF transformers (relative error ≤ 1e-4 per row, also left-padded with an
//! attention mask and position ids) and the same greedy tokens; bad directories are clear errors.

use burn::tensor::{Device, Tensor};
use envrl::SamplingParams;
use envrl_algos::{CausalLm, TokenBatch};

use crate::shared_data::{require, shared_dir};
use crate::support::relative_error;

fn ids(v: &serde_json::Value) -> Vec<Vec<u32>> {
    serde_json::from_value(v.clone()).unwrap()
}

fn floats(t: Tensor<3>) -> (Vec<f32>, [usize; 3]) {
    let dims = t.dims();
    (
        t.into_data().convert::<f32>().try_to_vec::<f32>().unwrap(),
        dims,
    )
}

/// The directory of the reference model `name` in `shared/models` and its `reference.json`;
/// `None` (after saying why) when the shared data is missing.
fn reference_model(name: &str, test: &str) -> Option<(std::path::PathBuf, serde_json::Value)> {
    let dir = require(shared_dir().join("models").join(name), test)?;
    let reference =
        serde_json::from_str(&std::fs::read_to_string(dir.join("reference.json")).unwrap())
            .unwrap();
    Some((dir, reference))
}

fn check_reference(name: &str) {
    let Some((dir, reference)) = reference_model(name, &format!("hf parity {name}")) else {
        return;
    };
    let device = Device::flex();
    let (model, config) = CausalLm::from_hf_dir(&dir, &device).unwrap();
    assert_eq!(model.vocab_size(), config.vocab_size);
    let vocab = config.vocab_size;

    // Unpadded logits.
    let input = ids(&reference["input_ids"]);
    let expected: Vec<Vec<Vec<f64>>> = serde_json::from_value(reference["logits"].clone()).unwrap();
    let (logits, [b, s, v]) = floats(model.forward(&input));
    assert_eq!((b, s, v), (input.len(), input[0].len(), vocab));
    for (row, rows) in expected.iter().enumerate() {
        let flat: Vec<f64> = rows.iter().flatten().copied().collect();
        let err = relative_error(&logits[row * s * v..(row + 1) * s * v], &flat);
        eprintln!("{name} row {row}: relative error {err:.2e}");
        assert!(err <= 1e-4, "{name} row {row}: relative error {err:e}");
    }

    // Left-padded batch with its attention mask and position ids.
    let padded = &reference["padded"];
    let pad_ids = ids(&padded["input_ids"]);
    let mask: Vec<Vec<u8>> = serde_json::from_value(padded["attention_mask"].clone()).unwrap();
    let positions: Vec<Vec<usize>> =
        serde_json::from_value(padded["position_ids"].clone()).unwrap();
    let expected: Vec<Vec<Vec<f64>>> =
        serde_json::from_value(padded["logits_valid_positions"].clone()).unwrap();
    let seq = pad_ids[0].len();
    let flat_ids: Vec<u32> = pad_ids.concat();
    let flat_positions: Vec<usize> = positions.concat();
    let key_valid: Vec<Vec<bool>> = mask
        .iter()
        .map(|r| r.iter().map(|&m| m == 1).collect())
        .collect();
    let batch = TokenBatch {
        ids: &flat_ids,
        batch: pad_ids.len(),
        seq,
        positions: &flat_positions,
        key_valid: &key_valid,
    };
    let (logits, _) = floats(model.logits(model.forward_hidden(&batch, None)));
    for (row, valid_rows) in expected.iter().enumerate() {
        let valid: Vec<usize> = (0..seq).filter(|&j| key_valid[row][j]).collect();
        assert_eq!(valid.len(), valid_rows.len());
        let ours: Vec<f32> = valid
            .iter()
            .flat_map(|&j| logits[(row * seq + j) * vocab..(row * seq + j + 1) * vocab].to_vec())
            .collect();
        let flat: Vec<f64> = valid_rows.iter().flatten().copied().collect();
        let err = relative_error(&ours, &flat);
        eprintln!("{name} padded row {row}: relative error {err:.2e}");
        assert!(
            err <= 1e-4,
            "{name} padded row {row}: relative error {err:e}"
        );
    }

    // Greedy generation.
    let greedy = &reference["greedy"];
    let prompts = ids(&greedy["prompt"]);
    let outputs = ids(&greedy["output"]);
    let new_tokens = greedy["new_tokens"].as_u64().unwrap() as usize;
    let params = SamplingParams {
        temperature: 0.0,
        top_p: 1.0,
        top_k: 0,
        max_new_tokens: new_tokens,
    };
    let mut rng = envrl::row_streams(0, 0..prompts.len() as u64);
    let generations = model.generate_batch(&prompts, &[], 0, &params, &mut rng);
    for ((g, prompt), out) in generations.iter().zip(&prompts).zip(&outputs) {
        assert_eq!(g.tokens, out[prompt.len()..], "{name} greedy tokens");
    }
}

/// `envrl lm grad` names every weight of the file with its shape, and its loss is the
/// cross-entropy of transformers' reference logits.
fn check_grad_command(name: &str) {
    let Some((dir, reference)) = reference_model(name, &format!("lm grad {name}")) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let (input, output) = (work.path().join("ids.json"), work.path().join("grad.json"));
    std::fs::write(&input, reference["input_ids"].to_string()).unwrap();
    envrl_examples::lm::grad(&dir, &input, &output, &Device::flex()).unwrap();
    let out: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&output).unwrap()).unwrap();

    // The safetensors header: tensor names and shapes.
    let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
    let len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&bytes[8..8 + len]).unwrap();
    let grads = out["grads"].as_object().unwrap();
    let mut expected: Vec<&String> = header.keys().filter(|k| *k != "__metadata__").collect();
    let mut named: Vec<&String> = grads.keys().collect();
    expected.sort();
    named.sort();
    assert_eq!(named, expected, "{name}: gradient names");
    for (key, grad) in grads {
        let numel: u64 = header[key]["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .product();
        let values = grad.as_array().unwrap();
        assert_eq!(values.len() as u64, numel, "{name}: {key}");
        assert!(
            values.iter().any(|v| v.as_f64().unwrap() != 0.0),
            "{name}: {key} is zero"
        );
    }

    // Mean next-token cross-entropy from the reference logits.
    let ids = ids(&reference["input_ids"]);
    let logits: Vec<Vec<Vec<f64>>> = serde_json::from_value(reference["logits"].clone()).unwrap();
    let (mut total, mut count) = (0.0, 0.0);
    for (row, rows) in ids.iter().zip(&logits) {
        for (t, position) in rows[..row.len() - 1].iter().enumerate() {
            let max = position.iter().copied().fold(f64::MIN, f64::max);
            let lse = max + position.iter().map(|x| (x - max).exp()).sum::<f64>().ln();
            total += lse - position[row[t + 1] as usize];
            count += 1.0;
        }
    }
    let loss = out["loss"].as_f64().unwrap();
    let expected = total / count;
    assert!(
        ((loss - expected) / expected).abs() <= 1e-5,
        "{name}: loss {loss} vs {expected} from the reference logits"
    );
}

#[test]
fn lm_grad_covers_every_weight_and_matches_the_reference_loss() {
    check_grad_command("tiny-qwen2");
    check_grad_command("tiny-llama");
}

#[test]
fn tiny_qwen2_matches_transformers() {
    check_reference("tiny-qwen2");
}

#[test]
fn tiny_llama_matches_transformers() {
    check_reference("tiny-llama");
}

#[test]
fn bad_model_directories_are_clear_errors() {
    let root = tempfile::tempdir().unwrap();
    let device = Device::flex();
    let err = |dir: &std::path::Path| CausalLm::from_hf_dir(dir, &device).unwrap_err().to_string();
    // No config.json.
    assert!(err(root.path()).contains("config.json"));
    // An unsupported architecture.
    let config = |model_type: &str| {
        format!(
            r#"{{"model_type": "{model_type}", "vocab_size": 8, "hidden_size": 8, "intermediate_size": 16,
               "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1}}"#
        )
    };
    std::fs::write(root.path().join("config.json"), config("gpt2")).unwrap();
    assert!(err(root.path()).contains("gpt2"));
    // No weights.
    std::fs::write(root.path().join("config.json"), config("llama")).unwrap();
    assert!(err(root.path()).contains("model.safetensors"));
    // A truncated weight file.
    std::fs::write(root.path().join("model.safetensors"), [1u8, 2, 3]).unwrap();
    assert!(err(root.path()).contains("model.safetensors"));
    // Weights of another shape: the tiny Llama's file under a config that does not fit it.
    if let Some(tiny) = require(shared_dir().join("models/tiny-llama"), "hf bad shapes") {
        std::fs::copy(
            tiny.join("model.safetensors"),
            root.path().join("model.safetensors"),
        )
        .unwrap();
        let message = err(root.path());
        assert!(
            message.contains("model.embed_tokens.weight") && message.contains("shape"),
            "{message}"
        );
    }
}

#[test]
fn smollm2_tokenizer_and_chat_template_reproduce_the_reference_prompt_ids() {
    use envrl::Tokenizer;
    let test = "hf tokenizer smollm2";
    let (Some(dir), Some(reference)) = (
        require(shared_dir().join("models/smollm2-135m-instruct"), test),
        require(
            shared_dir().join("models/smollm2-135m-reference.json"),
            test,
        ),
    ) else {
        return;
    };
    let reference: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(reference).unwrap()).unwrap();
    let tokenizer = envrl_algos::HfTokenizer::from_dir(&dir).unwrap();
    let prompt = reference["prompt"].as_str().unwrap();
    let user = prompt
        .split_once("<|im_start|>user\n")
        .and_then(|(_, rest)| rest.split_once("<|im_end|>"))
        .map(|(content, _)| content)
        .unwrap();
    let rendered = tokenizer
        .apply_chat_template(&[("user", user)], true)
        .unwrap();
    assert_eq!(rendered, prompt);
    let expected: Vec<u32> = serde_json::from_value(reference["input_ids"].clone()).unwrap();
    assert_eq!(tokenizer.encode_prompt(user), expected);
    let new_tokens: Vec<u32> =
        serde_json::from_value(reference["greedy_new_tokens"].clone()).unwrap();
    assert_eq!(
        tokenizer.decode_with_special(&new_tokens),
        reference["greedy_text"].as_str().unwrap()
    );
    assert_eq!(new_tokens.last(), Some(&tokenizer.eos_id()));
}
