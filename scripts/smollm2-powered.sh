#!/usr/bin/env bash
# The SmolLM2 powered grid (docs/results.md, "A powered test where the dynamics are learned"),
# as pre-registered: seeds 0–7 in order, arms GRPO / EnvRL / the shuffled-target control, all
# scoring both objectives, with the warm-start recipe the pilot picked (scripts/smollm2-pilot.sh);
# one run at a time on two threads; finished runs recorded in
# docs/results/runs/smollm2-powered-pending/ until their seed is whole. Stop and start it again
# at will: finished runs are kept and the others resume (scripts/experiment.sh). It is launched
# only once the pilot has picked a recipe; RECIPE holds that recipe's settings, e.g.
#
#   RECIPE="warmup.steps=600 warmup.context_weight=1.0" \
#     BIN=~/.cache/envrl-frozen/envrl-e71f0b7 nice -n 19 scripts/smollm2-powered.sh
set -euo pipefail
cd "$(dirname "$0")/.."

: "${BIN:?BIN: the frozen envrl binary (docs/results/runs/smollm2-pilot/BINARY.txt)}"
: "${RECIPE?RECIPE: the warm-start settings of the recipe the pilot picked (empty for R1)}"
recipe=()
for item in $RECIPE; do recipe+=(--set "$item"); done
export BIN
export ARMS="grpo:state_prediction=0,inverse_dynamics=0 envrl:state_prediction,inverse_dynamics control:state_prediction:shuffled,inverse_dynamics:shuffled,state_prediction=0,inverse_dynamics=0"
export SEEDS="0 1 2 3 4 5 6 7" JOBS=1 THREADS=${THREADS:-2}
export OUT=${OUT:-/root/envrl-runs/smollm2-powered}
export RECORD=${RECORD:-docs/results/runs/smollm2-powered-pending}
exec scripts/experiment.sh alfworld --config docs/results/configs/smollm2-pick.toml \
  --set tasks.eval=200 --set trainer.eval_episodes=200 --set trainer.max_generation_rows=40 \
  "${recipe[@]}"
