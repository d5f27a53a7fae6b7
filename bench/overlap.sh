#!/usr/bin/env bash
# Playing the next rollout during the update (`trainer.max_staleness = 1`) against synchronous
# iterations, side by side: the SmolLM2-135M + LoRA ALFWorld run of bench/rollout-servers.sh
# (docs/results/configs/smollm2-pick.toml, no warm start, no evaluation), sampled
# (1) by envrl in the training process (learner and rollout share RAYON_NUM_THREADS=2), and
# (2) by llama.cpp's server (`spawn:llama-cpp`, 1 thread) with the learner on 1 thread, as a
# learner and an inference machine each with their own core would be. Iteration 0 has nothing
# to overlap with; from iteration 1 the ahead run's rollout was played during the previous
# update. Prints each run's wall seconds per iteration, the rollout and update seconds, how long
# the learner waited for the rollout playing ahead, the k3 estimate of KL(sampler ‖ learner) per
# token (the engine's difference, and from iteration 1 of an ahead run the one-version lag), and
# the synchronous/ahead ratio of the wall time of iterations 1 and later.
#
#   bash bench/overlap.sh     # BIN=path/to/envrl, ITERATIONS (3), OUT (a temporary folder),
#                             # ARMS ("own llama-cpp"); llama.cpp installed as serve-check does
set -euo pipefail
cd "$(dirname "$0")/.."
ITERATIONS=${ITERATIONS:-3}
ARMS=${ARMS:-"own llama-cpp"}
ROLLOUT_THREADS=1
source bench/lib/smollm2-alfworld.sh

for arm in $ARMS; do
  case $arm in
    own) threads=2; server=() ;;
    llama-cpp) threads=1; server=(--set rollout.server=spawn:llama-cpp) ;;
    *) echo "unknown arm $arm (own, llama-cpp)" >&2; exit 2 ;;
  esac
  for staleness in 0 1; do
    name=$arm-staleness$staleness
    finished "$name" || RAYON_NUM_THREADS=$threads "$BIN" "${ARGS[@]}" "${server[@]}" --force \
      --set "trainer.max_staleness=$staleness" --output-dir "$OUT/$name" > /dev/null
  done
done

python3 - "$OUT" $ARMS <<'PY'
import json, sys, pathlib
out, arms = pathlib.Path(sys.argv[1]), sys.argv[2:]
def rows(name):
    return [json.loads(l) for l in (out / name / "metrics.jsonl").read_text().splitlines() if l]
print("| rollouts by | max_staleness | wall s per iteration | rollout s | update s (with recompute) "
      "| learner waited s | KL(sampler ‖ learner) per token | wall, iterations ≥ 1 "
      "| synchronous / ahead |")
print("|---|---|---|---|---|---|---|---|---|")
for arm in arms:
    later = {}
    for staleness in (0, 1):
        metrics = rows(f"{arm}-staleness{staleness}")
        later[staleness] = sum(m["perf/wall_s"] for m in metrics[1:])
        f = lambda key: " / ".join(f"{m.get(key, 0):.1f}" for m in metrics)
        update = " / ".join(f"{m['perf/update_s'] + m.get('perf/recompute_s', 0):.1f}" for m in metrics)
        wait = " / ".join("–" if "perf/rollout_wait_s" not in m else f"{m['perf/rollout_wait_s']:.1f}"
                          for m in metrics)
        kl = " / ".join("–" if "rollout/logprob_kl" not in m else f"{m['rollout/logprob_kl']:.0e}"
                        for m in metrics)
        ratio = f"{later[0] / later[1]:.2f}x" if staleness == 1 else "–"
        print(f"| {arm} | {staleness} | {f('perf/wall_s')} | {f('perf/rollout_s')} | {update} "
              f"| {wait} | {kl} | {later[staleness]:.1f} | {ratio} |")
print(f"(runs in {out})")
PY
