#!/usr/bin/env bash
# The downstream check: crates outside the workspace that depend on the envrl crates the ways the
# quick start shows, built and run. Each crate holds the guide's two programs taken verbatim:
#   - `lamps`: the code block of docs/custom-environment.md (a custom environment, prompt,
#     parser and objective, trained from scratch);
#   - `reward_prediction`: envrl-examples/examples/custom_aux.rs, the program of
#     docs/writing-an-aux-objective.md (a custom objective on the key-and-door world), which
#     uses the library crates only.
# Routes (first argument, default `both`):
#   path  `envrl = { path = "<clone>/envrl" }`
#   git   `envrl = { git = "file://<repo>" }`, as `cargo add --git` records it, where <repo> is
#         the clone's committed HEAD in a repository of its own (works offline, and from a
#         shallow clone)
# It proves the public API is enough and that the guide works when copied.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUTES=${1:-both}
[[ $ROUTES == both ]] && ROUTES="path git"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/envrl-downstream.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# The first ```rust block of the chapter, with mdBook/rustdoc hidden-line markers removed.
awk '/^```rust$/ {on=1; next} on && /^```$/ {exit} on {print}' "$ROOT/docs/custom-environment.md" \
  | sed -E 's/^# //; s/^#$//' > "$WORK/lamps.rs"
[ -s "$WORK/lamps.rs" ] || { echo "no rust block found in docs/custom-environment.md" >&2; exit 1; }

for route in $ROUTES; do
  case $route in
    path) dep() { echo "$1 = { path = \"$ROOT/$1\" }"; } ;;
    git)
      # The clone's committed HEAD as a repository of one commit: cargo's git fetch cannot read
      # a shallow clone (CI's may be one), and this one is complete and offline.
      if [[ ! -d $WORK/repo ]]; then
        mkdir -p "$WORK/repo"
        git -C "$ROOT" archive HEAD | tar -x -C "$WORK/repo"
        git -C "$WORK/repo" init -q
        git -C "$WORK/repo" add -A
        git -C "$WORK/repo" -c user.name=downstream -c user.email=downstream@localhost \
          commit -q -m "envrl at $(git -C "$ROOT" rev-parse --short HEAD)"
      fi
      dep() { echo "$1 = { git = \"file://$WORK/repo\" }"; }
      ;;
    *) echo "unknown route $route (path, git or both)" >&2; exit 2 ;;
  esac
  crate="$WORK/$route"
  mkdir -p "$crate/src/bin"
  cp "$WORK/lamps.rs" "$crate/src/bin/lamps.rs"
  cp "$ROOT/envrl-examples/examples/custom_aux.rs" "$crate/src/bin/reward_prediction.rs"
  cat > "$crate/Cargo.toml" <<TOML
[package]
name = "downstream-$route"
version = "0.1.0"
edition = "2024"
publish = false

[dependencies]
$(dep envrl)
$(dep envrl-algos)
$(dep envrl-envs)
burn = { version = "0.22.1", features = ["flex", "autodiff", "safetensors"] }
rand = "0.9"
rand_chacha = "0.9"
anyhow = "1"

# The workspace's release profile, so a shared CARGO_TARGET_DIR reuses its artifacts.
[profile.release]
debug = false
incremental = true
TOML
  # The workspace's lock file pins the same versions of everything else.
  cp "$ROOT/Cargo.lock" "$crate/Cargo.lock"
  echo "=== route: $route ($(dep envrl))"
  (cd "$crate" && cargo build --release --bins 2>&1 | tail -n 3)
  (cd "$crate" && cargo run --release --bin lamps 2>&1 | tail -n 6)
  (cd "$crate" && cargo run --release --bin reward_prediction -- 3 2>&1 | tail -n 3)
done
