#!/usr/bin/env bash
# Issue 26: envrl's exports read by the real readers. Trains a tiny Qwen2 and a tiny Llama keydoor
# run, a LoRA run on a Hugging Face base (the tiny Qwen2 export) and, where SmolLM2-135M-Instruct
# is present ($ENVRL_MODELS, fetched by scripts/fetch-smollm2.sh), a one-iteration SmolLM2 LoRA
# run; exports each (hf, peft, gguf f32/q8_0) and checks them with transformers, PEFT and the gguf
# package (scripts/export_check.py). The Python packages (torch CPU/CUDA wheel from PyPI, about
# 4 GB installed) go once into a virtual environment under ~/.cache/envrl-tools.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/envrl-target}"
VENV="${EXPORT_VENV:-$HOME/.cache/envrl-tools/export-venv}"
source scripts/lib/python-tools.sh
install_export_readers "$VENV"

# The workspace's build (what the tests built): a `-p` build would unify other features and
# compile envrl-algos and envrl-examples again.
cargo build --workspace --release --bins
ENVRL="$CARGO_TARGET_DIR/release/envrl"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

QUICK=(--quiet --set trainer.iterations=1 --set trainer.groups=4 --set trainer.group_size=4
       --set trainer.eval_every=0 --set trainer.eval_episodes=4 --set tasks.eval=4 --set warmup.steps=40)
"$ENVRL" train keydoor "${QUICK[@]}" --output-dir "$WORK/qwen2"
"$ENVRL" train keydoor "${QUICK[@]}" --output-dir "$WORK/llama" \
  --set tiny.attention_bias=false --set tiny.tie_word_embeddings=false
for run in qwen2 llama; do
  "$ENVRL" export "$WORK/$run" --format hf --output "$WORK/$run-hf"
  "$ENVRL" export "$WORK/$run" --format gguf --output "$WORK/$run-gguf"
  "$ENVRL" export "$WORK/$run" --format gguf --quant q8_0 --output "$WORK/$run-q8"
done
"$ENVRL" train keydoor "${QUICK[@]}" --output-dir "$WORK/lora" --model "$WORK/qwen2-hf" \
  --set lora.rank=4 --set lora.alpha=8
"$ENVRL" export "$WORK/lora" --format hf --output "$WORK/lora-hf"
"$ENVRL" export "$WORK/lora" --format peft --output "$WORK/lora-peft"

CASES="[
  {\"kind\": \"hf\", \"dir\": \"$WORK/qwen2-hf\"},
  {\"kind\": \"hf\", \"dir\": \"$WORK/llama-hf\"},
  {\"kind\": \"gguf\", \"file\": \"$WORK/qwen2-gguf/model.gguf\", \"hf\": \"$WORK/qwen2-hf\"},
  {\"kind\": \"gguf\", \"file\": \"$WORK/llama-gguf/model.gguf\", \"hf\": \"$WORK/llama-hf\"},
  {\"kind\": \"gguf\", \"file\": \"$WORK/qwen2-q8/model.gguf\", \"hf\": \"$WORK/qwen2-hf\"},
  {\"kind\": \"gguf\", \"file\": \"$WORK/llama-q8/model.gguf\", \"hf\": \"$WORK/llama-hf\"},
  {\"kind\": \"hf\", \"dir\": \"$WORK/lora-hf\"},
  {\"kind\": \"peft\", \"dir\": \"$WORK/lora-peft\", \"base\": \"$WORK/qwen2-hf\", \"merged\": \"$WORK/lora-hf\"}"

SMOLLM2="${ENVRL_MODELS:-$HOME/.cache/envrl-models}/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ -f "$SMOLLM2" ]; then
  "$ENVRL" train alfworld --preset smollm2-135m --quiet --output-dir "$WORK/smollm2" \
    --model "$SMOLLM2" --set trainer.iterations=1 --set trainer.groups=1 --set trainer.group_size=2 \
    --set trainer.eval_every=0 --set trainer.eval_episodes=1 --set tasks.eval=1 \
    --set warmup.steps=4 --set warmup.episodes=4 --set trainer.sampling.max_new_tokens=48 \
    --set trainer.max_steps=3 --set lora.rank=8 --set lora.alpha=16
  "$ENVRL" export "$WORK/smollm2" --format hf --output "$WORK/smollm2-hf"
  "$ENVRL" export "$WORK/smollm2" --format peft --output "$WORK/smollm2-peft"
  "$ENVRL" export "$WORK/smollm2" --format gguf --quant q8_0 --output "$WORK/smollm2-q8"
  "$ENVRL" export "$WORK/smollm2" --format hf --dtype bf16 --output "$WORK/smollm2-bf16"
  CASES="$CASES,
  {\"kind\": \"hf\", \"dir\": \"$WORK/smollm2-hf\"},
  {\"kind\": \"peft\", \"dir\": \"$WORK/smollm2-peft\", \"base\": \"$SMOLLM2\", \"merged\": \"$WORK/smollm2-hf\"},
  {\"kind\": \"gguf\", \"file\": \"$WORK/smollm2-q8/model.gguf\", \"hf\": \"$WORK/smollm2-hf\"}"
else
  echo "SmolLM2 not found at $SMOLLM2: its LoRA export is not checked (scripts/fetch-smollm2.sh fetches it)"
fi
echo "$CASES]" > "$WORK/cases.json"
"$VENV/bin/python" scripts/export_check.py "$ENVRL" "$WORK/cases.json"
