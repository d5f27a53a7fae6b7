#!/usr/bin/env bash
# Data-parallel iteration time on one machine: the same SmolLM2-135M + LoRA ALFWorld run
# (docs/results/configs/smollm2-pick.toml: 2 groups x 4 episodes of <= 15 steps, GRPO + both
# objectives, 4 optimizer steps an iteration; no warm start, no evaluation) as one process with
# RAYON_NUM_THREADS=2 and as `mpirun -np 2` ranks with one thread each, so both use the machine's
# two cores. Prints each iteration's wall, rollout, update and exchange times from the runs' own
# metrics, the ratio to one process, and the bytes each rank sent per optimizer step (it receives
# N - 1 times as many: every rank sends its buffer to every other one, docs/distributed.md).
#
#   bash bench/data-parallel.sh            # BIN=path/to/envrl (built with --features mpi),
#                                          # ITERATIONS (2), OUT (run folders; a temporary one)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/envrl}
ITERATIONS=${ITERATIONS:-2}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
export ENVRL_MODELS=${ENVRL_MODELS:-$HOME/.cache/envrl-models}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
bash scripts/fetch-smollm2.sh "$ENVRL_MODELS" > /dev/null
ARGS=(train alfworld --config docs/results/configs/smollm2-pick.toml
  --aux state_prediction,inverse_dynamics --quiet
  --set warmup.steps=0 --set "trainer.iterations=$ITERATIONS" --set trainer.eval_every=0
  --set trainer.checkpoint_every=0 --set tasks.eval=2)

RAYON_NUM_THREADS=2 /usr/bin/time -f "%e s, peak RSS %M KB" "$BIN" "${ARGS[@]}" \
  --output-dir "$OUT/n1" 2> "$OUT/n1.time" > /dev/null
mpirun -np 2 -x RAYON_NUM_THREADS=1 /usr/bin/time -f "%e s, peak RSS %M KB" "$BIN" "${ARGS[@]}" \
  --output-dir "$OUT/n2" 2> "$OUT/n2.time" > /dev/null

python3 - "$OUT" <<'PY'
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
def rows(n):
    return [json.loads(l) for l in (out / f"n{n}" / "metrics.jsonl").read_text().splitlines() if l]
one, two = rows(1), rows(2)
print("| ranks | iteration | wall s | rollout s | update s | exchange s | optimizer steps | sent per step | wall, 1 rank / this |")
print("|---|---|---|---|---|---|---|---|---|")
for n, runs in ((1, one), (2, two)):
    for i, m in enumerate(runs):
        steps = max(m.get("optim/steps", 1), 1)
        sent = m.get("perf/exchange_bytes", 0) / steps / 2**20
        ratio = one[i]["perf/wall_s"] / m["perf/wall_s"]
        exch = m.get("perf/exchange_s", 0.0)
        print(f"| {n} | {m['iteration']} | {m['perf/wall_s']:.1f} | {m['perf/rollout_s']:.1f} "
              f"| {m['perf/update_s']:.1f} | {exch:.2f} | {steps:.0f} | {sent:.2f} MiB | {ratio:.2f}x |")
for n in (1, 2):
    print(f"N={n}: {(out / f'n{n}.time').read_text().strip().splitlines()[-1]}")
print(f"(runs in {out})")
PY
