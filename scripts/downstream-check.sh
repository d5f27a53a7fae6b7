#!/usr/bin/env bash
# The downstream check: a crate outside the workspace that depends on the local envrl crates by
# path, whose main.rs is the code block of docs/custom-environment.md taken verbatim (a custom
# environment and a custom AuxObjective), built and run for a few training iterations. It proves
# the public API is enough and that the guide works when copied.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/envrl-downstream.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

mkdir -p "$WORK/src"
# The first ```rust block of the chapter, with mdBook/rustdoc hidden-line markers removed.
awk '/^```rust$/ {on=1; next} on && /^```$/ {exit} on {print}' "$ROOT/docs/custom-environment.md" \
  | sed -E 's/^# //; s/^#$//' > "$WORK/src/main.rs"
[ -s "$WORK/src/main.rs" ] || { echo "no rust block found in docs/custom-environment.md" >&2; exit 1; }

cat > "$WORK/Cargo.toml" <<TOML
[package]
name = "lamps"
version = "0.1.0"
edition = "2024"
publish = false

[dependencies]
envrl = { path = "$ROOT/envrl" }
envrl-algos = { path = "$ROOT/envrl-algos" }
burn = { version = "0.22.1", features = ["flex", "autodiff", "safetensors"] }
rand = "0.9"
rand_chacha = "0.9"
anyhow = "1"

# The workspace's release profile, so a shared CARGO_TARGET_DIR reuses its artifacts.
[profile.release]
debug = false
incremental = true
TOML
# The workspace's lock file pins the same versions.
cp "$ROOT/Cargo.lock" "$WORK/Cargo.lock"
cd "$WORK"
cargo run --release 2>&1 | tail -n 20
