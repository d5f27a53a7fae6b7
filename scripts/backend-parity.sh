#!/usr/bin/env bash
# Cross-backend parity: the tiny Qwen2 and Llama references of ../shared/models through
# `envrl lm logits` on each device given, against the logits of HF transformers (relative error
# per row, bound 1e-4 as in the flex tests).
#
#   bash scripts/backend-parity.sh ENVRL_BINARY [DEVICE ...]     # default devices: cpu
#   e.g. cargo build --release -p envrl-examples --features wgpu --bin envrl
#        bash scripts/backend-parity.sh target/release/envrl cpu wgpu
# wgpu on a machine without a GPU: Mesa's lavapipe (`apt-get install mesa-vulkan-drivers`).
set -euo pipefail
BIN=$1; shift
DEVICES=("${@:-cpu}")
SHARED=${ENVRL_SHARED:-$(cd "$(dirname "$0")/../.." && pwd)/shared}
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
printf '| model | device | row 0 rel. error | row 1 rel. error | within 1e-4 |\n|---|---|---|---|---|\n'
status=0
for model in tiny-qwen2 tiny-llama; do
  dir="$SHARED/models/$model"
  python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["input_ids"]))' \
    "$dir/reference.json" > "$WORK/ids.json"
  for device in "${DEVICES[@]}"; do
    "$BIN" lm logits --model "$dir" --input "$WORK/ids.json" --output "$WORK/out.json" \
      --device "$device" > /dev/null
    python3 - "$dir/reference.json" "$WORK/out.json" "$model" "$device" <<'PY' || status=1
import json, math, sys
ref = json.load(open(sys.argv[1]))["logits"]
out = json.load(open(sys.argv[2]))["logits"]
errors = []
for r, o in zip(ref, out):
    a = [x for row in r for x in row]
    b = [x for row in o for x in row]
    num = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))
    errors.append(num / math.sqrt(sum(x * x for x in a)))
ok = all(e <= 1e-4 for e in errors)
print(f"| {sys.argv[3]} | {sys.argv[4]} | {errors[0]:.1e} | {errors[1]:.1e} | {'yes' if ok else 'NO'} |")
sys.exit(0 if ok else 1)
PY
  done
done
exit $status
