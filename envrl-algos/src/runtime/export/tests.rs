//! Round trips of tiny Qwen2 and Llama models (and a LoRA model) through every format, and the
//! errors of impossible exports.

use std::path::Path;

use burn::tensor::Device;
use envrl::{BehaviourCloning, Policy, SamplingParams, ScoreRow, Tokenizer};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::{HfTokenizer, WordTokenizer};

const CORPUS: [&str; 2] = [
    "You see a drawer 1, a mug 2. Your task is to: put a mug in drawer 1.",
    "<think>Take it.</think><action>take mug 2 from drawer 1</action> Nothing happens.",
];

fn tokenizer() -> WordTokenizer {
    WordTokenizer::from_corpus(CORPUS)
}

/// A tiny Qwen2 (biases, tied embeddings) or Llama (neither) model.
fn tiny(qwen2: bool, vocab: usize) -> LmConfig {
    LmConfig::tiny(vocab)
        .with_attention_bias(qwen2)
        .with_tie_word_embeddings(qwen2)
}

fn greedy(model: &CausalLm, tok: &dyn Tokenizer) -> Vec<u32> {
    let params = SamplingParams {
        temperature: 0.0,
        max_new_tokens: 12,
        ..Default::default()
    };
    let prompt = tok.encode(CORPUS[0]);
    model.generate(
        &[prompt],
        &[tok.eos_id()],
        &params,
        &mut envrl::row_streams(0, [0]),
    )[0]
    .tokens
    .clone()
}

/// A few behaviour-cloning steps, so that every weight (and a LoRA model's adapters) moved away
/// from its initialisation.
fn train(model: CausalLm, tok: &WordTokenizer) -> CausalLm {
    let rows: Vec<ScoreRow> = CORPUS
        .iter()
        .map(|t| ScoreRow {
            context: tok.encode(&t[..20]),
            target: tok.encode_response(&t[20..]),
        })
        .collect();
    let bc = BehaviourCloning {
        steps: 3,
        batch_size: 2,
        learning_rate: 1e-2,
        max_grad_norm: 1.0,
        context_weight: 0.0,
    };
    bc.train(model, &rows, &mut ChaCha8Rng::seed_from_u64(0)).0
}

/// A from-scratch model with the word tokenizer.
fn scratch<'a>(model: &'a CausalLm, config: &'a LmConfig, tok: &'a WordTokenizer) -> Export<'a> {
    Export {
        model,
        config,
        tokenizer: ExportTokenizer::Word(tok),
        base_model: None,
        name: "tiny",
    }
}

fn options(format: ExportFormat, dtype: WeightDtype, gguf_type: GgufType) -> ExportOptions {
    ExportOptions {
        dtype,
        gguf_type,
        ..ExportOptions::new(format)
    }
}

fn loaded(format: ExportFormat, dir: &Path, base: Option<&Path>) -> CausalLm {
    let device = Device::flex().autodiff();
    match format {
        ExportFormat::Hf => CausalLm::from_hf_dir(dir, &device).unwrap().0,
        ExportFormat::Gguf => CausalLm::from_gguf(dir.join(GGUF_FILE), &device).unwrap().0,
        ExportFormat::Peft => CausalLm::from_hf_dir(base.unwrap(), &device)
            .unwrap()
            .0
            .merge_peft_adapter(dir)
            .unwrap(),
    }
}

#[test]
fn tiny_qwen2_and_llama_models_round_trip_through_every_format() {
    let tok = tokenizer();
    let out = tempfile::tempdir().unwrap();
    for qwen2 in [true, false] {
        let config = tiny(qwen2, tok.vocab_size());
        let model = train(config.init(&Device::flex().autodiff(), 1).unwrap(), &tok);
        let export = scratch(&model, &config, &tok);
        let cases = [
            (ExportFormat::Hf, WeightDtype::F32, GgufType::F32),
            (ExportFormat::Hf, WeightDtype::Bf16, GgufType::F32),
            (ExportFormat::Hf, WeightDtype::F16, GgufType::F32),
            (ExportFormat::Gguf, WeightDtype::F32, GgufType::F32),
            (ExportFormat::Gguf, WeightDtype::F32, GgufType::F16),
            (ExportFormat::Gguf, WeightDtype::F32, GgufType::Q8_0),
        ];
        for (format, dtype, gguf_type) in cases {
            let dir = out
                .path()
                .join(format!("{qwen2}-{format:?}-{dtype:?}-{gguf_type:?}"));
            let opts = options(format, dtype, gguf_type);
            let report = export.write(&opts, &dir).unwrap();
            println!(
                "qwen2={qwen2} {format:?} {dtype:?} {gguf_type:?}: max logit diff {:e} (tolerance {:e})",
                report.max_logit_diff, report.tolerance
            );
            assert!(report.max_logit_diff <= report.tolerance);
            let exact = (format == ExportFormat::Hf && dtype == WeightDtype::F32)
                || (format == ExportFormat::Gguf && gguf_type == GgufType::F32);
            if exact {
                assert_eq!(report.max_logit_diff, 0.0, "{format:?} f32 is not exact");
                let back = loaded(format, &dir, None);
                assert_eq!(greedy(&back, &tok), greedy(&model, &tok));
            }
            assert!(
                report.files.iter().all(|f| f.exists()),
                "{:?}",
                report.files
            );
        }
    }
}

#[test]
fn a_model_above_the_shard_limit_is_written_in_shards_with_an_index() {
    let tok = tokenizer();
    let out = tempfile::tempdir().unwrap();
    let config = tiny(false, tok.vocab_size());
    let model = config.init(&Device::flex(), 5).unwrap();
    let export = scratch(&model, &config, &tok);
    let options = ExportOptions {
        max_shard_bytes: 40_000,
        ..ExportOptions::new(ExportFormat::Hf)
    };
    let dir = out.path().join("hf");
    let report = export.write(&options, &dir).unwrap();
    assert_eq!(report.max_logit_diff, 0.0);
    let shards: Vec<_> = report
        .files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "safetensors"))
        .collect();
    assert!(shards.len() > 2, "{shards:?}");
    assert!(!dir.join("model.safetensors").exists());
    let index: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("model.safetensors.index.json")).unwrap(),
    )
    .unwrap();
    let mapped = index["weight_map"].as_object().unwrap();
    assert_eq!(
        mapped.len(),
        super::tensors::hf_tensors(&model).unwrap().len()
    );
    assert_eq!(
        greedy(&loaded(ExportFormat::Hf, &dir, None), &tok),
        greedy(&model, &tok)
    );
}

#[test]
fn a_lora_model_exports_merged_and_as_a_peft_adapter_on_its_base() {
    let tok = tokenizer();
    let out = tempfile::tempdir().unwrap();
    let config = tiny(false, tok.vocab_size());
    let device = Device::flex().autodiff();
    // The base model, on disk as a pretrained model is.
    let base = config.init(&device, 2).unwrap();
    let base_dir = out.path().join("base");
    let base_export = scratch(&base, &config, &tok);
    base_export
        .write(&ExportOptions::new(ExportFormat::Hf), &base_dir)
        .unwrap();
    let model = CausalLm::from_hf_dir(&base_dir, &device)
        .unwrap()
        .0
        .with_lora(4, 8.0, 0);
    let model = train(model, &tok);
    assert_ne!(
        greedy(&model, &tok),
        greedy(&base, &tok),
        "training changed nothing"
    );
    let hf_tok = HfTokenizer::from_dir(&base_dir).unwrap();
    let export = Export {
        model: &model,
        config: &config,
        tokenizer: ExportTokenizer::Hf(&hf_tok),
        base_model: Some(&base_dir),
        name: "lora",
    };
    for format in [ExportFormat::Hf, ExportFormat::Gguf, ExportFormat::Peft] {
        let dir = out.path().join(format!("{format:?}"));
        let report = export.write(&ExportOptions::new(format), &dir).unwrap();
        // The LoRA model computes `x·W₀ + (s·x·A)·B`, a merged export `x·(W₀ + s·A·B)`: the
        // same function, rounded otherwise.
        assert!(report.max_logit_diff < 1e-5, "{format:?}: {report:?}");
        let back = loaded(format, &dir, Some(&base_dir));
        assert_eq!(greedy(&back, &tok), greedy(&model, &tok), "{format:?}");
    }
    let config_text = std::fs::read_to_string(out.path().join("Peft/adapter_config.json")).unwrap();
    let adapter: serde_json::Value = serde_json::from_str(&config_text).unwrap();
    assert_eq!(adapter["r"], 4);
    assert_eq!(adapter["lora_alpha"], 8.0);
    assert_eq!(
        adapter["base_model_name_or_path"],
        base_dir.display().to_string()
    );
}

#[test]
fn impossible_exports_are_errors_that_leave_nothing_behind() {
    let tok = tokenizer();
    let out = tempfile::tempdir().unwrap();
    let config = tiny(true, tok.vocab_size());
    let model = config.init(&Device::flex(), 0).unwrap();
    let export = scratch(&model, &config, &tok);
    let leftovers = || -> Vec<String> {
        std::fs::read_dir(out.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("partial"))
            .collect()
    };
    // A non-empty output directory is refused and kept.
    let taken = out.path().join("taken");
    std::fs::create_dir(&taken).unwrap();
    std::fs::write(taken.join("keep.txt"), "mine").unwrap();
    let err = export
        .write(&ExportOptions::new(ExportFormat::Hf), &taken)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("taken") && err.contains("not an empty directory"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(taken.join("keep.txt")).unwrap(),
        "mine"
    );
    // PEFT needs adapters.
    let dir = out.path().join("peft");
    let err = export
        .write(&ExportOptions::new(ExportFormat::Peft), &dir)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no LoRA adapters"), "{err}");
    assert!(!dir.exists());
    assert_eq!(leftovers(), Vec::<String>::new());
    // An output that cannot be created (its parent is a file).
    let file = out.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let err = export
        .write(&ExportOptions::new(ExportFormat::Gguf), &file.join("gguf"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("file"), "{err}");
    assert_eq!(leftovers(), Vec::<String>::new());
}

/// Sets the first element of the `nth` float parameter (counting from 0) to NaN.
struct Poison {
    nth: usize,
    seen: usize,
}

impl burn::module::ModuleMapper for Poison {
    fn map_float<const D: usize>(
        &mut self,
        param: burn::module::Param<burn::tensor::Tensor<D>>,
    ) -> burn::module::Param<burn::tensor::Tensor<D>> {
        self.seen += 1;
        if self.seen != self.nth + 1 {
            return param;
        }
        let value = param.val();
        let (shape, device) = (value.shape(), value.device());
        let mut data: Vec<f32> = value.into_data().iter::<f32>().collect();
        data[0] = f32::NAN;
        let data = burn::tensor::TensorData::new(data, shape);
        burn::module::Param::from_tensor(burn::tensor::Tensor::from_data(data, &device))
    }
}

/// Overwrites the first value of the first f32 tensor of a safetensors file with NaN; returns
/// the tensor's name.
fn poison_safetensors(path: &Path) -> String {
    let mut bytes = std::fs::read(path).unwrap();
    let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + header_len]).unwrap();
    let (name, info) = header
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, v)| v["dtype"] == "F32")
        .unwrap();
    let start = 8 + header_len + info["data_offsets"][0].as_u64().unwrap() as usize;
    bytes[start..start + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    std::fs::write(path, bytes).unwrap();
    name.clone()
}

#[test]
fn non_finite_weights_are_refused_by_name_on_export_and_on_load() {
    use burn::module::Module;
    let tok = tokenizer();
    let config = tiny(true, tok.vocab_size());
    let clean = config.init(&Device::flex().autodiff(), 1).unwrap();
    assert_eq!(envrl::first_non_finite(&clean), None);
    let model = clean.clone().map(&mut Poison { nth: 3, seen: 0 });
    let which = envrl::first_non_finite(&model).expect("the poisoned weight");
    assert!(which.contains('.') && which.contains("NaN"), "{which}");

    // An export of non-finite weights is refused by name, and nothing is written.
    let out = tempfile::tempdir().unwrap();
    for format in [ExportFormat::Hf, ExportFormat::Gguf] {
        let dir = out.path().join(format!("{format:?}"));
        let opts = options(format, WeightDtype::F32, GgufType::F32);
        let err = scratch(&model, &config, &tok)
            .write(&opts, &dir)
            .unwrap_err()
            .to_string();
        assert!(err.contains("non-finite") && err.contains(&which), "{err}");
        assert!(!dir.exists());
    }

    // A model directory whose weights hold a NaN is refused on load, naming the parameter.
    let dir = out.path().join("clean-hf");
    let opts = options(ExportFormat::Hf, WeightDtype::F32, GgufType::F32);
    scratch(&clean, &config, &tok).write(&opts, &dir).unwrap();
    let weights = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "safetensors"))
        .unwrap();
    poison_safetensors(&weights);
    let err = crate::Pretrained::load(&dir, &Device::flex())
        .expect_err("NaN weights must be refused")
        .to_string();
    assert!(
        err.contains("non-finite") && err.contains(&dir.display().to_string()),
        "{err}"
    );
}

#[test]
fn a_tied_model_exported_untied_has_its_own_output_layer_and_the_same_logits() {
    let tok = tokenizer();
    let out = tempfile::tempdir().unwrap();
    let config = tiny(true, tok.vocab_size());
    let model = config.init(&Device::flex(), 3).unwrap();
    let options = ExportOptions {
        untie_embeddings: true,
        ..ExportOptions::new(ExportFormat::Hf)
    };
    let dir = out.path().join("hf");
    let report = scratch(&model, &config, &tok)
        .write(&options, &dir)
        .unwrap();
    // Loaded back (and checked by the export) to the same logits.
    assert_eq!(report.max_logit_diff, 0.0);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("config.json")).unwrap()).unwrap();
    assert_eq!(json["tie_word_embeddings"], serde_json::json!(false));
    let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
    let file = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let (head, embedding) = (
        file.tensor("lm_head.weight").unwrap(),
        file.tensor("model.embed_tokens.weight").unwrap(),
    );
    assert_eq!(head.shape(), embedding.shape());
    assert_eq!(head.data(), embedding.data());
}
