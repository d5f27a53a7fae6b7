# The Python tools the checks run, each installed once from PyPI into a virtual environment under
# ~/.cache/envrl-tools (a venv that already imports them is kept). Sourced by the check scripts,
# and by scripts/prefetch-python-tools.sh, which .ci/run starts in the background so that the
# downloads overlap the build.
#
# Each function takes the venv's path and installs into it.

# OpenEnv 0.10.0 (its client, `openenv validate`) and zstandard (the golden files).
install_openenv() {
  local venv=$1
  if ! "$venv/bin/python" -c "import openenv, zstandard, sys; sys.exit(openenv.__version__ != '0.10.0')" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "openenv==0.10.0" zstandard
  fi
}

# The readers of envrl's exports: torch (CPU/CUDA wheel, ~4 GB installed), transformers, PEFT,
# gguf.
install_export_readers() {
  local venv=$1
  local pins="torch==2.15.0 transformers==5.24.0 peft==0.21.2 gguf==0.19.0 safetensors==0.8.0 numpy==2.4.6"
  if ! "$venv/bin/python" -c "import torch, transformers, peft, gguf" 2>/dev/null; then
    python3 -m venv "$venv"
    # shellcheck disable=SC2086
    "$venv/bin/pip" install --quiet $pins
  fi
}

# llama.cpp's server (the xllamacpp wheel).
install_llama_cpp() {
  local venv=$1
  if ! "$venv/bin/python" -c "import xllamacpp" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "xllamacpp==2026.10.11549"
  fi
}
