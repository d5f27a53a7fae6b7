#!/usr/bin/env bash
# The SmolLM2 powered grid (docs/results.md, "A powered test where the dynamics are learned"),
# as pre-registered: seeds 0–7 in order, arms GRPO / EnvRL / the shuffled-target control, all
# scoring both objectives, with the warm-start recipe the pilot picked (R3: 300 steps,
# context weight 1); one run at a time on two threads; finished runs recorded in
# docs/results/runs/smollm2-powered-pending/ until their seed is whole. Stop and start it again
# at will: finished runs are kept and the others resume (scripts/experiment.sh).
#
#   BIN=~/.cache/envrl-frozen/envrl-e71f0b7 nice -n 19 scripts/smollm2-powered.sh
set -euo pipefail
cd "$(dirname "$0")/.."

: "${BIN:?BIN: the frozen envrl binary (docs/results/runs/smollm2-pilot/BINARY.txt)}"
export BIN
export ARMS="grpo:state_prediction=0,inverse_dynamics=0 envrl:state_prediction,inverse_dynamics control:state_prediction:shuffled,inverse_dynamics:shuffled,state_prediction=0,inverse_dynamics=0"
export SEEDS="0 1 2 3 4 5 6 7" JOBS=1 THREADS=${THREADS:-2}
export OUT=${OUT:-/root/envrl-runs/smollm2-powered}
export RECORD=${RECORD:-docs/results/runs/smollm2-powered-pending}
exec scripts/experiment.sh alfworld --config docs/results/configs/smollm2-pick.toml \
  --set tasks.eval=200 --set trainer.eval_episodes=200 --set trainer.max_generation_rows=40 \
  --set warmup.steps=300 --set warmup.context_weight=1.0
