#!/usr/bin/env bash
# The EnvRL ablation at CPU scale: GRPO alone, + state prediction, + inverse dynamics and + both,
# each over several seeds, with the cpu-tiny preset and identical budgets. Runs of one seed share
# the warm start (it does not depend on the objectives): the plain GRPO run trains it and the
# other three load it (`warmup.from`). Ends with `envrl compare`, which writes comparison.md and
# the seed-averaged curves.
#
#   scripts/experiment.sh [ENV] [extra `envrl train` arguments...]
#
# Environment: SEEDS (default "0 1 2"), JOBS (runs at once, default 2; each then gets
# ${THREADS:-1} rayon threads), OUT (default runs/experiment-ENV), BIN (an `envrl` binary to use
# instead of building one: rebuilding while a grid runs would change the program of its later
# runs). ALFWORLD_DATA / WEBSHOP_DATA select the real data sets as for `envrl train`.
set -euo pipefail
cd "$(dirname "$0")/.."

ENV_NAME=${1:-alfworld}
shift || true
SEEDS=${SEEDS:-"0 1 2"}
JOBS=${JOBS:-2}
OUT=${OUT:-runs/experiment-$ENV_NAME}
export RAYON_NUM_THREADS=${THREADS:-1}

if [[ -z ${BIN:-} ]]; then
  cargo build --release -p envrl-examples --bin envrl
  BIN=${CARGO_TARGET_DIR:-target}/release/envrl
fi
mkdir -p "$OUT"

# xargs cannot pass arrays: the extra arguments travel as one quoted string.
EXTRA_Q=""
if (($#)); then EXTRA_Q=$(printf '%q ' "$@"); fi
export BIN ENV_NAME OUT EXTRA_Q

job() { # aux seed [run directory whose warm start to load]
  local aux=$1 seed=$2 from=${3:-}
  local dir="$OUT/${aux//,/+}__$seed" start=$SECONDS extra
  eval "extra=($EXTRA_Q)"
  if [[ -n $from ]]; then extra+=(--set "warmup.from=$from"); fi
  "$BIN" train "$ENV_NAME" --quiet --force --aux "$aux" --seed "$seed" --output-dir "$dir" \
    "${extra[@]}" > "$dir.log" 2>&1 ||
    { echo "FAILED: $dir (see $dir.log)"; return 1; }
  echo "$dir: $((SECONDS - start)) s"
}
export -f job

# Phase 1: plain GRPO per seed, training (and saving) the warm start.
for seed in $SEEDS; do echo "none $seed"; done |
  xargs -P "$JOBS" -L 1 bash -c 'job "$0" "$1"'
# Phase 2: the EnvRL variants, from their seed's warm start.
for seed in $SEEDS; do
  for aux in state-prediction inverse-dynamics state-prediction,inverse-dynamics; do
    echo "$aux $seed $OUT/none__$seed"
  done
done | xargs -P "$JOBS" -L 1 bash -c 'job "$0" "$1" "$2"'

"$BIN" compare "$OUT"/*__*/ --output "$OUT/comparison"
