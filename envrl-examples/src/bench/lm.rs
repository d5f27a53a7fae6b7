//! `envrl bench generate` and `envrl bench train`: the causal LM's prefill, generation and
//! training throughput, next to PyTorch eager (`torch_bench.py` beside this file, run in the same command
//! with the same model, shapes, threads and steps) when `--python` names an interpreter that
//! has torch, transformers and gguf.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use burn::module::Module;
use burn::tensor::Device;
use envrl::{BehaviourCloning, RolloutWeights, SamplingParams, ScoreRow};
use envrl_algos::{CausalLm, LmConfig, Pretrained, read_hf_config};

use super::bandwidth;
use crate::device::{DType, DeviceArgs};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// One timed measure: tokens processed, wall seconds, CPU seconds of the process.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// Tokens processed.
    pub tokens: f64,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// CPU seconds (user + system) of the whole process.
    pub cpu_seconds: f64,
}

impl Timing {
    /// Tokens per wall-clock second.
    pub fn per_second(&self) -> f64 {
        self.tokens / self.seconds
    }

    /// Tokens per CPU-second.
    pub fn per_cpu_second(&self) -> f64 {
        self.tokens / self.cpu_seconds.max(1e-9)
    }

    fn from_json(v: &serde_json::Value) -> Option<Self> {
        Some(Self {
            tokens: v["tokens"].as_f64()?,
            seconds: v["seconds"].as_f64()?,
            cpu_seconds: v["cpu_seconds"].as_f64()?,
        })
    }
}

/// CPU seconds (user + system) this process has used, from `/proc/self/stat` (0 elsewhere).
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // /proc reports USER_HZ ticks, 100 per second on Linux.
    (ticks(11) + ticks(12)) / 100.0
}

/// Times `f`, which processes `tokens` tokens.
fn timed(tokens: usize, f: impl FnOnce()) -> Timing {
    let (start, cpu) = (Instant::now(), cpu_seconds());
    f();
    Timing {
        tokens: tokens as f64,
        seconds: start.elapsed().as_secs_f64(),
        cpu_seconds: cpu_seconds() - cpu,
    }
}

fn random_ids(rng: &mut ChaCha8Rng, vocab: usize, len: usize) -> Vec<u32> {
    (0..len)
        .map(|_| rng.random_range(3..vocab as u32))
        .collect()
}

fn is_gguf(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "gguf")
}

/// `torch_bench.py` beside this file, built into the program so an installed `envrl` finds it.
const TORCH_BENCH: &str = include_str!("torch_bench.py");

/// Runs `torch_bench.py` with `python` and parses its JSON line.
fn run_python(python: &Path, args: &[String]) -> Result<serde_json::Value> {
    let out = Command::new(python)
        .arg("-c")
        .arg(TORCH_BENCH)
        .args(args)
        .output()
        .with_context(|| format!("running torch_bench.py with {}", python.display()))?;
    if !out.status.success() {
        bail!(
            "torch_bench.py failed under {}:\n{}",
            python.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).with_context(|| format!("parsing the PyTorch result `{line}`"))
}

/// One row of a side-by-side table.
fn row(measure: &str, ours: Timing, reference: Option<Timing>) {
    let fmt = |t: Option<Timing>| {
        t.map_or("–".to_string(), |t| {
            if t.cpu_seconds < 0.01 {
                // Too little CPU time to measure: the rate per CPU-second would be noise.
                format!("{:.0}", t.per_second())
            } else {
                format!("{:.0} ({:.0}/CPU-s)", t.per_second(), t.per_cpu_second())
            }
        })
    };
    let ratio = reference.map_or("–".to_string(), |r| {
        format!(
            "{:.2}× ({:.2}× per CPU-s)",
            ours.per_second() / r.per_second(),
            ours.per_cpu_second() / r.per_cpu_second()
        )
    });
    println!(
        "| {measure} | {} | {} | {ratio} |",
        fmt(Some(ours)),
        fmt(reference)
    );
}

fn header(threads: usize, device: &str) {
    println!("threads: {threads} (Burn flex uses the rayon pool; PyTorch set_num_threads)");
    println!();
    println!("| measure (tokens/s) | envrl ({device}) | PyTorch eager | ratio |");
    println!("|---|---|---|---|");
}

/// Shapes of `envrl bench generate` (its command-line flags).
#[derive(Debug, Clone, clap::Args)]
pub struct GenerateBench {
    /// A `.gguf` file, a Hugging Face directory, or a Hugging Face `config.json` (that
    /// architecture with random weights; no PyTorch column).
    #[arg(long)]
    pub model: PathBuf,
    /// Prompt tokens per row.
    #[arg(long, default_value_t = 128)]
    pub prompt_len: usize,
    /// New tokens per row (no stop token: every row generates exactly this many).
    #[arg(long, default_value_t = 64)]
    pub new_tokens: usize,
    /// Batch sizes, comma-separated.
    #[arg(long, default_value = "1,16", value_delimiter = ',')]
    pub batches: Vec<usize>,
    /// Tokens of the single-row prefill measure.
    #[arg(long, default_value_t = 512)]
    pub prefill_len: usize,
    /// A Python with torch, transformers and gguf: adds the PyTorch column (f32 only).
    #[arg(long)]
    pub python: Option<PathBuf>,
    /// The acting copies' weight formats to time generation with (`f32`, `bf16`, `int8`),
    /// comma-separated; the lighter ones need `--dtype f32` on the CPU.
    #[arg(long, default_value = "f32,bf16,int8", value_delimiter = ',')]
    pub weights: Vec<RolloutWeights>,
    /// Attach LoRA adapters of this rank (alpha = 2 × rank) first, as a LoRA run's policy has
    /// them: the `f32` rows then time the adapters applied at every step, the lighter copies
    /// have them merged (no PyTorch column).
    #[arg(long, default_value_t = 0)]
    pub lora_rank: usize,
    /// The device and the float type of the weights and activations (f32 by default).
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// A benchmark's model: `tiny` (the examples' model with `vocab` words), a `.gguf` file, a
/// Hugging Face directory, or a Hugging Face `config.json` (that architecture with random
/// weights, for timings without the download).
fn bench_model(model: &Path, vocab: usize, device: &Device) -> Result<(CausalLm, LmConfig)> {
    let config = if model == Path::new("tiny") {
        LmConfig::tiny(vocab)
    } else if model.file_name() == Some("config.json".as_ref()) {
        read_hf_config(model.parent().unwrap_or(Path::new(".")))?
    } else {
        let Pretrained { model, config, .. } = Pretrained::load(model, device)?;
        return Ok((model, config));
    };
    Ok((config.init(device, 0)?, config))
}

/// Prefill and KV-cache generation throughput of a GGUF model, optionally next to PyTorch.
///
/// # Errors
/// When the model cannot be loaded or the PyTorch script fails.
pub fn bench_generate(bench: &GenerateBench) -> Result<()> {
    let threads = rayon::current_num_threads();
    let dtype = bench.device.dtype_or(DType::F32);
    let device = bench.device.device()?;
    let (model, config) = bench_model(&bench.model, 0, &device)?;
    let model = with_lora(model, bench.lora_rank);
    let vocab = model.vocab_size();
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let prefill_ids = random_ids(&mut rng, vocab, bench.prefill_len);
    let _ = model.forward(std::slice::from_ref(&prefill_ids)); // warm-up
    let prefill = timed(bench.prefill_len, || {
        let _ = model
            .forward(std::slice::from_ref(&prefill_ids))
            .into_data();
    });
    let params = SamplingParams {
        temperature: 0.0,
        top_p: 1.0,
        top_k: 0,
        max_new_tokens: bench.new_tokens,
    };
    let prompts: Vec<(usize, Vec<Vec<u32>>)> = bench
        .batches
        .iter()
        .map(|&batch| {
            let rows = (0..batch)
                .map(|_| random_ids(&mut rng, vocab, bench.prompt_len))
                .collect();
            (batch, rows)
        })
        .collect();
    let mut generation = Vec::new();
    for &weights in &bench.weights {
        let acting = match model.acting_copy(weights) {
            Ok(acting) => acting,
            Err(e) if weights != RolloutWeights::F32 => {
                eprintln!("skipping the {weights} acting copy: {e}");
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        for (batch, rows) in &prompts {
            let (timing, decoding) = time_generation(&acting, rows, &params);
            generation.push(GenerationTiming {
                weights,
                bytes: acting.decoding_bytes(),
                batch: *batch,
                timing,
                decoding,
            });
        }
    }

    let reference = match &bench.python {
        Some(python) if dtype == DType::F32 && is_gguf(&bench.model) && bench.lora_rank == 0 => {
            Some(run_python(
                python,
                &[
                    "generate".into(),
                    "--gguf".into(),
                    bench.model.display().to_string(),
                    "--prompt-len".into(),
                    bench.prompt_len.to_string(),
                    "--new-tokens".into(),
                    bench.new_tokens.to_string(),
                    "--prefill-len".into(),
                    bench.prefill_len.to_string(),
                    "--batches".into(),
                    bench
                        .batches
                        .iter()
                        .map(usize::to_string)
                        .collect::<Vec<_>>()
                        .join(","),
                    "--threads".into(),
                    threads.to_string(),
                ],
            )?)
        }
        _ => None,
    };
    println!(
        "model: {} ({} layers, width {}), {}{}",
        bench.model.display(),
        config.num_hidden_layers,
        config.hidden_size,
        dtype.name(),
        match bench.lora_rank {
            0 => String::new(),
            rank => format!(", LoRA rank {rank}"),
        }
    );
    header(threads, &bench.device.device.to_string());
    row(
        &format!("prefill, 1 × {} tokens", bench.prefill_len),
        prefill,
        reference
            .as_ref()
            .and_then(|r| Timing::from_json(&r["prefill"])),
    );
    let reference_of = |batch: usize| {
        reference
            .as_ref()
            .and_then(|r| Timing::from_json(&r[format!("generate_b{batch}")]))
    };
    for g in &generation {
        row(
            &format!(
                "generation, batch {}, {} + {} tokens, KV cache, {} weights",
                g.batch, bench.prompt_len, bench.new_tokens, g.weights
            ),
            g.timing,
            reference_of(g.batch),
        );
    }

    // Decoding reads every weight once per step: how close each rate comes to that bound.
    let bw = bandwidth::measure(256, 5);
    let f32_bytes = model.decoding_bytes() as f64;
    println!();
    println!(
        "memory bandwidth (STREAM, 3 × 256 MiB, {threads} threads): copy {:.1} GB/s, triad {:.1} \
         GB/s; each decoding step reads the matrices once: {:.0} MB in {}",
        bw.copy,
        bw.triad,
        f32_bytes / 1e6,
        dtype.name()
    );
    println!();
    println!(
        "| decoding alone (the run with 1 new token subtracted) | weights (MB read per step) | \
         envrl (tokens/s) | PyTorch eager f32 (tokens/s) | envrl ÷ PyTorch | bound at triad \
         bandwidth | envrl's fraction of its bound | PyTorch's of the f32 bound |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for g in &generation {
        let bound = bandwidth::decode_bound(g.bytes as f64, bw.triad, g.batch);
        let f32_bound = bandwidth::decode_bound(f32_bytes, bw.triad, g.batch);
        let torch = reference.as_ref().and_then(|r| {
            let all = Timing::from_json(&r[format!("generate_b{}", g.batch)])?;
            let first = Timing::from_json(&r[format!("first_b{}", g.batch)])?;
            Some((all.tokens - first.tokens) / (all.seconds - first.seconds).max(1e-9))
        });
        let ours = g.decoding.per_second();
        let cell = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("—".into(), f);
        println!(
            "| batch {}, {} tokens per row | {} ({:.0}) | {ours:.0} | {} | {} | {bound:.0} | \
             {:.0} % | {} |",
            g.batch,
            bench.new_tokens.saturating_sub(1),
            g.weights,
            g.bytes as f64 / 1e6,
            cell(torch, &|t| format!("{t:.0}")),
            cell(torch, &|t| format!("{:.2}×", ours / t)),
            100.0 * ours / bound,
            cell(torch, &|t| format!("{:.0} %", 100.0 * t / f32_bound)),
        );
    }
    Ok(())
}

/// Generation timed with one acting copy at one batch size.
struct GenerationTiming {
    weights: RolloutWeights,
    /// The bytes of the matrices one decoding step reads.
    bytes: usize,
    batch: usize,
    /// The whole generation.
    timing: Timing,
    /// The decoding steps alone.
    decoding: Timing,
}

/// Times `model`'s generation of `params.max_new_tokens` for `prompts` (after a 2-token
/// warm-up), and the decoding alone: the same run with one new token (the prefill and the first
/// step) subtracted.
fn time_generation(
    model: &CausalLm,
    prompts: &[Vec<u32>],
    params: &SamplingParams,
) -> (Timing, Timing) {
    let rngs = &mut envrl::row_streams(0, 0..prompts.len() as u64);
    let with_tokens = |n: usize| SamplingParams {
        max_new_tokens: n,
        ..params.clone()
    };
    model.generate_batch(prompts, &[], 0, &with_tokens(2), rngs);
    let mut produced = 0;
    let mut timing = timed(0, || {
        produced = model
            .generate_batch(prompts, &[], 0, params, rngs)
            .iter()
            .map(|g| g.tokens.len())
            .sum();
    });
    timing.tokens = produced as f64;
    let prefill_only = timed(0, || {
        model.generate_batch(prompts, &[], 0, &with_tokens(1), rngs);
    });
    let decoding = Timing {
        tokens: produced.saturating_sub(prompts.len()) as f64,
        seconds: (timing.seconds - prefill_only.seconds).max(1e-9),
        cpu_seconds: (timing.cpu_seconds - prefill_only.cpu_seconds).max(0.0),
    };
    (timing, decoding)
}

/// Shapes of `envrl bench train` (its command-line flags).
#[derive(Debug, Clone, clap::Args)]
pub struct TrainBench {
    /// `tiny` (the examples' model), a `.gguf` file, a Hugging Face directory, or a Hugging
    /// Face `config.json` (that architecture with random weights).
    #[arg(long, default_value = "tiny")]
    pub model: String,
    /// Vocabulary of the tiny model.
    #[arg(long, default_value_t = 2048)]
    pub vocab: usize,
    /// Rows per step.
    #[arg(long, default_value_t = 8)]
    pub batch: usize,
    /// Tokens per row.
    #[arg(long, default_value_t = 256)]
    pub seq: usize,
    /// Timed steps (after one warm-up step).
    #[arg(long, default_value_t = 5)]
    pub steps: usize,
    /// A Python with torch and transformers: adds the PyTorch column (full fine-tuning only).
    #[arg(long)]
    pub python: Option<PathBuf>,
    /// Train LoRA adapters of this rank (alpha = 2 × rank) instead of every parameter.
    #[arg(long, default_value_t = 0)]
    pub lora_rank: usize,
    /// Recompute memory-bound activations in the backward pass.
    #[arg(long)]
    pub gradient_checkpointing: bool,
    /// The device and the float type of the weights, activations and gradients (f32 by
    /// default; the PyTorch column runs for f32 only).
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// `model` with LoRA adapters of `rank` (alpha = 2 × rank) attached; unchanged for rank 0.
fn with_lora(model: CausalLm, rank: usize) -> CausalLm {
    match rank {
        0 => model,
        rank => model.with_lora(rank, 2.0 * rank as f64, 0),
    }
}

/// The Hugging Face `config.json` of a model config (what the PyTorch side builds).
fn hf_config(config: &LmConfig) -> serde_json::Value {
    envrl_algos::export::hf_config_json(config, 8192)
}

/// Training throughput (forward, backward, global grad clipping and AdamW on full-sequence
/// next-token cross-entropy), optionally next to PyTorch.
///
/// # Errors
/// When the model cannot be loaded or the PyTorch script fails.
pub fn bench_train(bench: &TrainBench) -> Result<()> {
    let threads = rayon::current_num_threads();
    let dtype = bench.device.dtype_or(DType::F32);
    let mut device = bench.device.device()?.autodiff();
    if bench.gradient_checkpointing {
        device = device.gradient_checkpointing();
    }
    let (model, config) = bench_model(Path::new(&bench.model), bench.vocab, &device)?;
    let base_params = model.num_params();
    let model = with_lora(model, bench.lora_rank);
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let rows: Vec<ScoreRow> = (0..bench.batch)
        .map(|_| {
            let ids = random_ids(&mut rng, config.vocab_size, bench.seq);
            ScoreRow {
                context: ids[..1].to_vec(),
                target: ids[1..].to_vec(),
            }
        })
        .collect();
    let bc = |steps| BehaviourCloning {
        steps,
        batch_size: bench.batch,
        learning_rate: 1e-5,
        max_grad_norm: 1.0,
        context_weight: 0.0,
    };
    let adapters = model.adapter_parameters();
    let (model, _) = bc(1).train(model, &rows, &mut rng); // warm-up
    let ours = timed(bench.batch * bench.seq * bench.steps, || {
        let _ = bc(bench.steps).train(model, &rows, &mut rng);
    });

    let reference = match &bench.python {
        Some(python) if bench.lora_rank == 0 && dtype == DType::F32 => {
            let file = tempfile::NamedTempFile::new()?;
            std::fs::write(file.path(), hf_config(&config).to_string())?;
            let result = run_python(
                python,
                &[
                    "train".into(),
                    "--config".into(),
                    file.path().display().to_string(),
                    "--batch".into(),
                    bench.batch.to_string(),
                    "--seq".into(),
                    bench.seq.to_string(),
                    "--steps".into(),
                    bench.steps.to_string(),
                    "--threads".into(),
                    threads.to_string(),
                ],
            )?;
            Timing::from_json(&result["train"])
        }
        _ => None,
    };
    println!(
        "model: {} (vocab {}, {} layers, width {}); batch {} × {} tokens, {} steps",
        bench.model,
        config.vocab_size,
        config.num_hidden_layers,
        config.hidden_size,
        bench.batch,
        bench.seq,
        bench.steps
    );
    header(threads, &bench.device.device.to_string());
    let mut label = match bench.lora_rank {
        0 => "training (forward, backward, AdamW)".to_string(),
        rank => format!("training with LoRA rank {rank} ({adapters} of {base_params} parameters)"),
    };
    if bench.gradient_checkpointing {
        label.push_str(", gradient checkpointing");
    }
    if dtype != DType::F32 {
        label.push_str(&format!(", {}", dtype.name()));
    }
    row(&label, ours, reference);
    Ok(())
}
