#!/usr/bin/env bash
# Issue 41: rollouts sampled by a real inference engine. Installs llama.cpp's server (the
# `xllamacpp` wheel from PyPI, a 33 MB prebuilt CPU build) once into a virtual environment under
# ~/.cache/envrl-tools, then runs the test that exports SmolLM2-135M as an F32 GGUF, serves it
# (envrl-algos/src/serve/llama_server.py) and checks that the server's greedy tokens and log-probabilities,
# asked as token ids through envrl_algos::serve::ServerPool, equal envrl's own.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/envrl-target}"
VENV="${LLAMA_VENV:-$HOME/.cache/envrl-tools/llama-venv}"
if ! "$VENV/bin/python" -c "import xllamacpp" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet "xllamacpp==2026.10.11549"
fi
ENVRL_LLAMA_PYTHON="$VENV/bin/python" ENVRL_SERVE_CHECK=1 \
  cargo test --workspace --release --test integration -- serve_llama_cpp --nocapture 2>&1 \
  | sed '/^\[\(WARN\|INFO\) \]/d'
