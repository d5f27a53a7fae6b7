#!/usr/bin/env bash
# The SmolLM2 powered test's pilot (docs/results.md, "A powered test where the dynamics are
# learned"): warm-start recipes R1–R4 in order, each on pilot seeds 100 and 101; every warm start
# is trained alone (`--warm-start-only`) and evaluated on the run's 200 held-out games
# (`envrl eval`). Stops after the first recipe whose warm starts win 5–40 % on both seeds, as the
# pre-registered rule says, and prints which recipe that is (or that none qualified).
#
#   BIN=~/.cache/envrl-frozen/envrl-COMMIT OUT=/root/envrl-runs/smollm2-pilot \
#     RECORD=docs/results/runs/smollm2-pilot nice -n 19 scripts/smollm2-pilot.sh
#
# Finished warm starts (with eval.json in OUT or RECORD) are kept: the pilot can be stopped and
# started again. Each run's config.toml, eval.json, eval-outcomes.json and its wall time are
# copied into RECORD.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${BIN:?BIN: the frozen envrl binary}"
OUT=${OUT:-runs/smollm2-pilot}
RECORD=${RECORD:-}
export RAYON_NUM_THREADS=${THREADS:-2}
CONFIG=docs/results/configs/smollm2-pick.toml
COMMON=(--config "$CONFIG" --set tasks.eval=200 --set trainer.eval_episodes=200
  --set trainer.max_generation_rows=40)
declare -A RECIPES=(
  [R1]=""
  [R2]="warmup.steps=300"
  [R3]="warmup.steps=300 warmup.context_weight=1.0"
  [R4]="warmup.steps=600 warmup.context_weight=1.0"
)

success() { # eval.json → the held-out success of its last row ("all")
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[-1]["success"])' "$1"
}

pilot_run() { # recipe seed → the run's eval.json path
  local recipe=$1 seed=$2 name="$1__$2" settings=() item start=$SECONDS
  local dir="$OUT/$name"
  if [[ -n $RECORD && -f $RECORD/$name/eval.json ]]; then echo "$RECORD/$name/eval.json"; return; fi
  if [[ ! -f $dir/eval.json ]]; then
    for item in ${RECIPES[$recipe]}; do settings+=(--set "$item"); done
    "$BIN" train alfworld "${COMMON[@]}" "${settings[@]}" --seed "$seed" --warm-start-only \
      --force --quiet --output-dir "$dir" >&2
    "$BIN" eval alfworld --output-dir "$dir" --quiet >&2
    echo "$((SECONDS - start))" > "$dir/wall-seconds.txt"
  fi
  if [[ -n $RECORD ]]; then
    mkdir -p "$RECORD/$name"
    cp "$dir"/{config.toml,eval.json,eval-outcomes.json,wall-seconds.txt} "$RECORD/$name/"
    echo "$RECORD/$name/eval.json"
  else
    echo "$dir/eval.json"
  fi
}

mkdir -p "$OUT"
for recipe in R1 R2 R3 R4; do
  qualifies=1
  for seed in 100 101; do
    eval_json=$(pilot_run "$recipe" "$seed")
    won=$(success "$eval_json")
    echo "pilot $recipe seed $seed: held-out success $won before RL"
    if ! python3 -c 'import sys; sys.exit(0 if 0.05 <= float(sys.argv[1]) <= 0.40 else 1)' "$won"; then
      qualifies=0
      break # one seed outside the band rules the recipe out: its other seed is not needed
    fi
  done
  if ((qualifies)); then
    echo "pilot: $recipe qualifies (5–40 % on both pilot seeds): the grid's warm-start recipe"
    exit 0
  fi
done
echo "pilot: no recipe qualifies; by the pre-registration the grid is not run"
