#!/usr/bin/env bash
# GPU readiness on a machine with an NVIDIA GPU, in one short run:
#   1. builds `envrl` with the `cuda` feature (FEATURE=tch builds libtorch instead: then
#      LIBTORCH_USE_PYTORCH=1 and a CUDA build of torch must be importable by $PYTHON);
#   2. checks the GPU device against flex on the tiny references (scripts/backend-parity.sh:
#      logits, loss, every gradient, a short GRPO run);
#   3. times the pieces of one GRPO iteration at the paper's shapes for Qwen2.5-0.5B and
#      Qwen2.5-1.5B in bf16 (random weights of the real architectures: the timing does not depend
#      on the values, and nothing is downloaded): one rollout turn (ROWS prompts of PROMPT tokens,
#      NEW tokens each, KV cache) and one update micro-batch (forward, backward, AdamW on MICRO
#      rows of PROMPT + NEW tokens), with the GPU's peak memory from nvidia-smi.
#
#   bash bench/gpu.sh            # logs and tables under $OUT when set, else a temporary folder
#
# Environment: DEVICE (cuda:0; tch-cuda:0 with FEATURE=tch), SIZES ("0.5b 1.5b"), ROWS (128 =
# 16 groups × 8), PROMPT (1024), NEW (128; the paper allows 512 — raise it when time allows),
# MICRO (8), DTYPE (bf16), SKIP_BUILD=1 with BIN=path to reuse a binary. The output stays short:
# the tables; every command's full log is in the log folder.
#
# Budget: the build dominates a cold start (the `cuda` feature compiles Burn's CUDA backend);
# parity takes about a minute and each model size about one more.
set -euo pipefail
cd "$(dirname "$0")/.."
LOG=${OUT:-$(mktemp -d)}
WORK=$(mktemp -d) # model configs and memory samples (kept out of $OUT: at most 7 files there)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$LOG"
FEATURE=${FEATURE:-cuda}
DEVICE=${DEVICE:-$([ "$FEATURE" = tch ] && echo tch-cuda:0 || echo cuda:0)}
SIZES=${SIZES:-"0.5b 1.5b"}
ROWS=${ROWS:-128} PROMPT=${PROMPT:-1024} NEW=${NEW:-128} MICRO=${MICRO:-8} DTYPE=${DTYPE:-bf16}
export CARGO_TERM_COLOR=never
start=$SECONDS
say() { echo "[$((SECONDS - start)) s] $*"; }

if [[ $DEVICE == *cuda* ]]; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader ||
    { echo "no NVIDIA GPU visible (nvidia-smi failed)"; exit 1; }
fi

if [[ -z ${SKIP_BUILD:-} ]]; then
  say "building envrl with --features $FEATURE (log: $LOG/build.log)"
  if ! cargo build --release -p envrl-examples --features "$FEATURE" --bin envrl \
      > "$LOG/build.log" 2>&1; then
    tail -20 "$LOG/build.log"
    exit 1
  fi
  BIN=${CARGO_TARGET_DIR:-target}/release/envrl
fi
BIN=${BIN:?set BIN with SKIP_BUILD}

say "parity: $DEVICE against flex on tiny-qwen2 and tiny-llama"
bash scripts/backend-parity.sh "$BIN" "$DEVICE" 2> "$LOG/parity.err" | tee "$LOG/parity.md" ||
  { echo "parity failed (see $LOG/parity.err)"; tail -5 "$LOG/parity.err"; exit 1; }

# The Hugging Face configs of the two models (from their config.json on the Hub).
write_config() { # size dir
  local hidden inter layers heads kv tie
  case $1 in
    0.5b) hidden=896 inter=4864 layers=24 heads=14 kv=2 tie=true ;;
    1.5b) hidden=1536 inter=8960 layers=28 heads=12 kv=2 tie=true ;;
    *) echo "unknown size $1 (0.5b, 1.5b)"; exit 1 ;;
  esac
  mkdir -p "$2"
  cat > "$2/config.json" << EOF
{"model_type": "qwen2", "vocab_size": 151936, "hidden_size": $hidden,
 "intermediate_size": $inter, "num_hidden_layers": $layers, "num_attention_heads": $heads,
 "num_key_value_heads": $kv, "rope_theta": 1000000.0, "rms_norm_eps": 1e-06,
 "tie_word_embeddings": $tie, "max_position_embeddings": 32768, "hidden_act": "silu"}
EOF
}

measure() { # log command... : runs the command into the log while sampling the GPU's memory
  local log=$1 samples=$WORK/memory.csv sampler="" status=0
  shift
  if command -v nvidia-smi > /dev/null; then
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$samples" &
    sampler=$!
  fi
  "$@" > "$log" 2>&1 || status=$?
  if [[ -n $sampler ]]; then
    kill "$sampler" 2> /dev/null || true
    wait "$sampler" 2> /dev/null || true
    echo "peak GPU memory (whole GPU): $(sort -n "$samples" | tail -1) MiB" | tee -a "$log"
  fi
  if ((status)); then tail -5 "$log"; exit "$status"; fi
}

for size in $SIZES; do
  dir=$WORK/qwen2.5-$size
  write_config "$size" "$dir"
  say "Qwen2.5-$size ($DTYPE, random weights): one rollout turn, $ROWS × ($PROMPT + $NEW) tokens"
  measure "$LOG/generate-$size.md" "$BIN" bench generate --model "$dir/config.json" \
    --device "$DEVICE" --dtype "$DTYPE" --batches "$ROWS" --prompt-len "$PROMPT" \
    --new-tokens "$NEW" --prefill-len "$PROMPT"
  grep -E '^\| (prefill|generation)' "$LOG/generate-$size.md"
  say "Qwen2.5-$size: one update micro-batch, $MICRO × $((PROMPT + NEW)) tokens, 2 steps"
  measure "$LOG/train-$size.md" "$BIN" bench train --model "$dir/config.json" \
    --device "$DEVICE" --dtype "$DTYPE" --batch "$MICRO" --seq "$((PROMPT + NEW))" --steps 2
  grep -E '^\| training' "$LOG/train-$size.md"
done
say "done; logs in $LOG"
