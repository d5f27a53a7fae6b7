#!/usr/bin/env bash
# `envrl serve` against OpenEnv's own tools: installs `openenv` 0.10.0 from PyPI once into a
# virtual environment under ~/.cache/envrl-tools, starts `envrl serve` for every world on a free
# loopback port, runs `openenv validate --url` (every criterion must pass), plays episodes with
# OpenEnv's own client (scripts/openenv_client_check.py), then replays every golden transcript
# (ALFWorld, WebShop, Sokoban) through the server with that client, byte for byte against the
# reference's recording (scripts/openenv_golden_replay.py). That the served episodes equal the
# in-process engine's step for step is also tested in Rust (tests/env_server.rs).
#
# Environment: ENVRL_SHARED (the shared/ folder, default ../shared), ALFWORLD_DATA (else the
# shared archive is unpacked once into the temp folder, where the tests unpack it).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/envrl-target}"
VENV="${OPENENV_VENV:-$HOME/.cache/envrl-tools/openenv-venv}"
source scripts/lib/python-tools.sh
install_openenv "$VENV"
BIN="$CARGO_TARGET_DIR/release/envrl"
[[ -x $BIN ]] || cargo build --workspace --release --bins
LOGS=$(mktemp -d)
cleanup() {
  if [[ -n ${PID:-} ]]; then kill "$PID" 2>/dev/null || true; fi
  rm -rf "$LOGS"
}
trap cleanup EXIT
for world in keydoor alfworld sokoban webshop; do
  "$BIN" serve "$world" --port 0 > "$LOGS/$world.log" 2>&1 &
  PID=$!
  for _ in $(seq 1 600); do
    if grep -qs "^serving" "$LOGS/$world.log"; then break; fi
    if ! kill -0 "$PID" 2>/dev/null; then cat "$LOGS/$world.log"; exit 1; fi
    sleep 0.1
  done
  URL=$(grep -o "http://127.0.0.1:[0-9]*" "$LOGS/$world.log" | head -1)
  [[ -n $URL ]] || { echo "envrl serve $world did not start:"; cat "$LOGS/$world.log"; exit 1; }
  echo "== $world on $URL: openenv validate"
  "$VENV/bin/openenv" validate --url "$URL" --output "$LOGS/validate.json" > /dev/null || true
  "$VENV/bin/python" - "$LOGS/validate.json" << 'PY'
import json, sys
report = json.load(open(sys.argv[1]))
for c in report["criteria"]:
    print(f"  {'pass' if c['passed'] else 'FAIL'}  {c.get('description', c.get('id'))}")
if not report["passed"]:
    sys.exit("openenv validate failed")
PY
  echo "== $world: episodes with OpenEnv's GenericEnvClient"
  "$VENV/bin/python" scripts/openenv_client_check.py "$URL"
  kill "$PID"
  wait "$PID" 2>/dev/null || true
  PID=
done

SHARED="${ENVRL_SHARED:-../shared}"
if [[ ! -d $SHARED/golden ]]; then
  if [[ ${CI:-} == true ]]; then echo "$SHARED/golden not found; under CI=true missing data fails"; exit 1; fi
  echo "== golden replay through OpenEnv's client skipped: $SHARED/golden not found (set ENVRL_SHARED)"
  exit 0
fi
if [[ -z ${ALFWORLD_DATA:-} ]]; then
  archive="$SHARED/data/alfworld/json_2.1.2_tw-pddl.tar.zst"
  ALFWORLD_DATA="${TMPDIR:-/tmp}/envrl-alfworld-2.1.2-$(stat -c %s "$archive")"
  if [[ ! -e $ALFWORLD_DATA/.complete ]]; then
    staging="$ALFWORLD_DATA.staging-$$"
    mkdir -p "$staging"
    tar --zstd -xf "$archive" -C "$staging"
    touch "$staging/.complete"
    mv -T "$staging" "$ALFWORLD_DATA" 2>/dev/null || rm -rf "$staging"
  fi
fi
echo "== the golden transcripts through envrl serve with OpenEnv's client"
ALFWORLD_DATA="$ALFWORLD_DATA" "$VENV/bin/python" scripts/openenv_golden_replay.py "$BIN" "$SHARED"
