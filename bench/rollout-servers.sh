#!/usr/bin/env bash
# Rollouts on inference servers against envrl's own generation, side by side: the same
# SmolLM2-135M + LoRA ALFWorld run (docs/results/configs/smollm2-pick.toml: 2 groups x 4 episodes
# of <= 15 steps, replies of <= 24 tokens, GRPO, 4 optimizer steps an iteration; no warm start,
# no evaluation) sampled (1) by envrl in the training process, (2) by llama.cpp's server that
# envrl restarts on each policy's F32 GGUF (`spawn:llama-cpp`), (3) by vLLM's CPU build that
# loads each policy's LoRA adapter (`spawn:vllm`). Each uses the machine's two cores: the
# learner with RAYON_NUM_THREADS=2, the servers with 2 threads (the learner waits while they
# sample). Prints each iteration's rollout time, the part of it spent publishing the policy,
# generated tokens per second of rollout, the learner's recompute of the old log-probabilities
# (always done with a server), update and wall time, the servers' log-probability
# gap to the learner's recompute, and the rollout's ratio to envrl's own, from the runs'
# metrics.
#
#   bash bench/rollout-servers.sh     # BIN=path/to/envrl, ITERATIONS (2), OUT (a temporary
#                                     # folder), SERVERS ("llama-cpp vllm"); the engines are
#                                     # installed as scripts/serve-check.sh does
set -euo pipefail
cd "$(dirname "$0")/.."
ITERATIONS=${ITERATIONS:-2}
SERVERS=${SERVERS:-"llama-cpp vllm"}
ROLLOUT_THREADS=2
source bench/lib/smollm2-alfworld.sh

finished own || RAYON_NUM_THREADS=2 "$BIN" "${ARGS[@]}" --force --output-dir "$OUT/own" > /dev/null
for server in $SERVERS; do
  finished "$server" || RAYON_NUM_THREADS=2 "$BIN" "${ARGS[@]}" --force \
    --set "rollout.server=spawn:$server" --output-dir "$OUT/$server" > /dev/null
done

python3 - "$OUT" own $SERVERS <<'PY'
import json, sys, pathlib
out, names = pathlib.Path(sys.argv[1]), sys.argv[2:]
def rows(name):
    return [json.loads(l) for l in (out / name / "metrics.jsonl").read_text().splitlines() if l]
runs = {name: rows(name) for name in names}
print("| rollouts by | iteration | rollout s | publish s | generated tokens/s | recompute s "
      "| update s | wall s | log-prob gap per token | rollout, own / this |")
print("|---|---|---|---|---|---|---|---|---|---|")
for name, metrics in runs.items():
    for i, m in enumerate(metrics):
        publish = m.get("perf/publish_s")
        gap = m.get("rollout/logprob_mismatch")
        recompute = m.get("perf/recompute_s")
        ratio = runs["own"][i]["perf/rollout_s"] / m["perf/rollout_s"]
        print(f"| {name} | {m['iteration']} | {m['perf/rollout_s']:.1f} "
              f"| {'–' if publish is None else f'{publish:.1f}'} "
              f"| {m['perf/gen_tokens_per_s']:.1f} "
              f"| {'–' if recompute is None else f'{recompute:.1f}'} | {m['perf/update_s']:.1f} "
              f"| {m['perf/wall_s']:.1f} | {'–' if gap is None else f'{gap:.1e}'} | {ratio:.2f}x |")
print(f"(runs in {out})")
PY
