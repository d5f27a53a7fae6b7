#!/usr/bin/env bash
# Unpacks libtorch 2.9.0's C++ headers (what `tch` 0.22 builds against) from the PyPI wheel
# torch==2.9.0 (sha256-checked) into DIR (default ~/.cache/envrl-tools/libtorch-2.9.0), and
# prints the LIBTORCH value to export. Enough for `cargo check --features tch`, which compiles
# torch-sys's C++ wrapper but links nothing. To build and run on libtorch, install the whole
# package instead: `pip install torch==2.9.0` and `export LIBTORCH_USE_PYTORCH=1`.
#
#   export LIBTORCH=$(bash scripts/fetch-libtorch-headers.sh [DIR])
set -euo pipefail
DIR=${1:-$HOME/.cache/envrl-tools/libtorch-2.9.0}
WHEEL_SHA=51de31219c97c51cf4bf2be94d622e3deb5dcc526c6dc00e97c17eaec0fc1d67
if [ -f "$DIR/build-version" ] && [ "$(cat "$DIR/build-version")" = 2.9.0 ]; then
  echo "$DIR"; exit 0
fi
mkdir -p "$(dirname "$DIR")"
TMP=$(mktemp -d "$(dirname "$DIR")/.fetch.XXXXXX"); trap 'rm -rf "$TMP"' EXIT
echo "torch==2.9.0 --hash=sha256:$WHEEL_SHA" > "$TMP/requirements.txt"
python3 -m pip download --no-deps --only-binary :all: --require-hashes --platform manylinux_2_28_x86_64 \
  --python-version 3.11 --disable-pip-version-check -q -d "$TMP" -r "$TMP/requirements.txt" >&2
python3 - "$TMP"/torch-2.9.0-*.whl "$TMP/libtorch" <<'PY'
import os, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for name in z.namelist():
        if name.startswith("torch/include/") and not name.endswith("/"):
            z.extract(name, sys.argv[2])
root = os.path.join(sys.argv[2], "torch")
os.makedirs(os.path.join(root, "lib"), exist_ok=True)
open(os.path.join(root, "build-version"), "w").write("2.9.0")
PY
rm -rf "$DIR"; mv "$TMP/libtorch/torch" "$DIR"
echo "$DIR"
