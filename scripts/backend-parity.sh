#!/usr/bin/env bash
# Cross-backend parity on the tiny Qwen2 and Llama references of ../shared/models, for each
# device given:
#  - logits (`envrl lm logits`) against HF transformers' logits in reference.json;
#  - the loss and the gradient of every parameter (`envrl lm grad`: mean next-token
#    cross-entropy of the reference rows) against PyTorch (`scripts/torch_grad.py`) when
#    $PYTHON has torch and transformers, else against the `cpu` (flex) device.
#  - a short GRPO + EnvRL run (`envrl train keydoor`, 2 iterations) against the same run on `cpu`:
#    the largest relative difference over the logged metrics of each iteration.
# Relative L2 errors; bounds 1e-4 (logits), 1e-5 (loss), 1e-4 (worst parameter's gradient),
# 1e-3 (GRPO metrics, relative to max(|value|, 0.01); sampling is on the host with a seeded
# RNG, so the runs see the same tokens unless the logits differ enough to flip a draw).
#
#   bash scripts/backend-parity.sh ENVRL_BINARY [DEVICE ...]     # default devices: cpu
#   e.g. cargo build --release -p envrl-examples --features wgpu --bin envrl
#        PYTHON=.venv/bin/python bash scripts/backend-parity.sh target/release/envrl cpu wgpu
# wgpu on a machine without a GPU: Mesa's lavapipe (`apt-get install mesa-vulkan-drivers`).
set -euo pipefail
BIN=$1; shift
DEVICES=("${@:-cpu}")
PYTHON=${PYTHON:-python3}
HERE=$(cd "$(dirname "$0")" && pwd)
SHARED=${ENVRL_SHARED:-$HERE/../../shared}
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
if "$PYTHON" -c 'import torch, transformers' 2>/dev/null; then GRAD_REF=pytorch; else GRAD_REF=cpu; fi
printf '| model | device | logits rel. error (rows 0, 1) | loss rel. error | worst gradient rel. error (parameter) | within bounds |\n|---|---|---|---|---|---|\n'
status=0
for model in tiny-qwen2 tiny-llama; do
  dir="$SHARED/models/$model"
  "$PYTHON" -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["input_ids"]))' \
    "$dir/reference.json" > "$WORK/ids.json"
  if [ "$GRAD_REF" = pytorch ]; then
    "$PYTHON" "$HERE/torch_grad.py" "$dir" "$WORK/ids.json" "$WORK/grad-ref.json" 2> /dev/null
  else
    "$BIN" lm grad --model "$dir" --input "$WORK/ids.json" --output "$WORK/grad-ref.json" --device cpu
  fi
  for device in "${DEVICES[@]}"; do
    "$BIN" lm logits --model "$dir" --input "$WORK/ids.json" --output "$WORK/out.json" \
      --device "$device" > /dev/null
    "$BIN" lm grad --model "$dir" --input "$WORK/ids.json" --output "$WORK/grad.json" \
      --device "$device" > /dev/null
    "$PYTHON" - "$dir/reference.json" "$WORK" "$model" "$device" <<'PY' || status=1
import json, math, sys
ref, work, model, device = sys.argv[1:5]
def rel(a, b):
    num = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))
    return num / max(math.sqrt(sum(y * y for y in b)), 1e-30)
flat = lambda rows: [x for row in rows for x in row]
logits = [rel(flat(o), flat(r)) for o, r in zip(json.load(open(f"{work}/out.json"))["logits"],
                                                json.load(open(ref))["logits"])]
got, want = json.load(open(f"{work}/grad.json")), json.load(open(f"{work}/grad-ref.json"))
loss = abs(got["loss"] - want["loss"]) / abs(want["loss"])
assert set(got["grads"]) == set(want["grads"]), "parameter names differ"
grad, name = max((rel(got["grads"][k], v), k) for k, v in want["grads"].items())
ok = all(e <= 1e-4 for e in logits) and loss <= 1e-5 and grad <= 1e-4
print(f"| {model} | {device} | {logits[0]:.1e}, {logits[1]:.1e} | {loss:.1e} | {grad:.1e} ({name}) | {'yes' if ok else 'NO'} |")
sys.exit(0 if ok else 1)
PY
  done
done
echo
echo "gradients compared against: $GRAD_REF"
echo
printf '| GRPO + EnvRL on keydoor, 2 iterations | largest relative metric difference vs cpu (metric) | within 1e-3 |\n|---|---|---|\n'
grpo() {
  "$BIN" train keydoor --device "$1" --output-dir "$WORK/grpo-$1" --force --quiet --seed 0 \
    --iterations 2 --aux state_prediction,inverse_dynamics --set warmup.steps=20 \
    --set trainer.groups=4 --set trainer.group_size=4 --set trainer.eval_every=0 \
    --set trainer.checkpoint_every=0 > /dev/null
}
grpo cpu
for device in "${DEVICES[@]}"; do
  [ "$device" = cpu ] && continue
  grpo "$device"
  "$PYTHON" - "$WORK/grpo-cpu/metrics.jsonl" "$WORK/grpo-$device/metrics.jsonl" "$device" <<'PY' || status=1
import json, sys
load = lambda p: [json.loads(l) for l in open(p)]
a, b, device = load(sys.argv[1]), load(sys.argv[2]), sys.argv[3]
assert len(a) == len(b), "iteration counts differ"
skip = ("perf/", "time/")
worst = max(
    (abs(x[k] - y[k]) / max(abs(x[k]), 1e-2), f"{k} @ {i}")
    for i, (x, y) in enumerate(zip(a, b)) for k in x if not k.startswith(skip)
)
ok = worst[0] <= 1e-3
print(f"| {device} | {worst[0]:.1e} ({worst[1]}) | {'yes' if ok else 'NO'} |")
sys.exit(0 if ok else 1)
PY
done
exit $status
