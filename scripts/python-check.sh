#!/usr/bin/env bash
# The Python package: lints of the PyO3 crate, the abi3 wheel built with maturin, installed into
# a fresh virtual environment, and its pytest suite (golden replays through the Python API,
# bad input, pickling, threads, the verl-agent drop-in, gymnasium's interfaces).
#
#   scripts/python-check.sh
#
# Environment: CARGO_TARGET_DIR (shared with the workspace build), ENVRL_SHARED (the shared/
# folder, default ../shared), PYTHON (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
TOOLS="$HOME/.cache/envrl-tools/python"
MATURIN_VERSION=1.16.0

cargo fmt --manifest-path envrl-python/Cargo.toml --check
cargo clippy --manifest-path envrl-python/Cargo.toml --all-targets -- -D warnings

if ! "$TOOLS/bin/maturin" --version 2>/dev/null | grep -q "$MATURIN_VERSION"; then
  "$PYTHON" -m venv "$TOOLS"
  "$TOOLS/bin/pip" install --quiet "maturin==$MATURIN_VERSION"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd envrl-python && "$TOOLS/bin/maturin" build --release --out "$work/wheels")

"$PYTHON" -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet "$work"/wheels/envrl-*.whl pytest numpy zstandard "gymnasium==1.4.0"
cd envrl-python/tests
"$work/venv/bin/python" -m pytest -q
