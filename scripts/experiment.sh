#!/usr/bin/env bash
# An EnvRL ablation grid at CPU scale: several arms (GRPO, a placebo, GRPO + objectives at some
# weights), each over several seeds, with one preset and identical budgets. Runs of one seed
# share the warm start (it does not depend on the objectives): the first arm trains it and the
# others load it (`warmup.from`), starting as soon as it is saved; arms of one seed also share every random stream but the
# objectives' own (see docs/training.md), so their differences are paired. Ends with
# `envrl compare`, which writes comparison.md with paired intervals and the curves.
#
#   scripts/experiment.sh [ENV] [extra `envrl train` arguments...]
#
# Environment:
#   ARMS    space-separated NAME:AUX items, AUX as `--aux` takes it (NAME=λ0; =0 a placebo),
#           optionally followed by `@KEY=VALUE` settings of that arm alone, each passed as
#           `--set KEY=VALUE` (e.g. `perloss:state_prediction,inverse_dynamics@trainer.clip=per_loss`).
#           The first arm is the baseline that trains the warm start. Default: grpo:none,
#           placebo:state-prediction=0,inverse-dynamics=0, both:state-prediction,inverse-dynamics.
#   SEEDS   default "0 1 2".
#   JOBS    runs at once (default 2); each gets ${THREADS:-1} rayon threads.
#   OUT     default runs/experiment-ENV.
#   BIN     an `envrl` binary to use instead of building one (rebuilding while a grid runs would
#           change the program of its later runs).
#   RECORD  a folder (e.g. docs/results/runs/NAME) that receives each finished run's
#           config.toml, metrics.jsonl, eval.json and eval-outcomes.json (and the baseline's
#           warm-start.sha256), so that `envrl compare` can rebuild the tables.
#   WARM_FROM  space-separated SEED:DIR items: every arm of that seed loads DIR/warm-start.bpk
#           (a warm start trained before, with the same seed and settings) instead of the
#           baseline training one.
#   ALFWORLD_DATA / WEBSHOP_DATA select the real data sets as for `envrl train`.
#
# The grid can be stopped and started again: finished runs (with eval.json, in OUT or in RECORD)
# are kept, runs with a checkpoint continue with --resume, the others start afresh. A grid longer
# than one machine's life goes on elsewhere from its RECORD: a seed whose baseline is recorded
# but whose other arms are not gets its warm start trained again (--warm-start-only) and checked
# against the recorded warm-start.sha256 (the sha256 of its weights).
set -euo pipefail
cd "$(dirname "$0")/.."

ENV_NAME=${1:-alfworld}
shift || true
SEEDS=${SEEDS:-"0 1 2"}
ARMS=${ARMS:-"grpo:none placebo:state_prediction=0,inverse_dynamics=0 both:state_prediction,inverse_dynamics"}
JOBS=${JOBS:-2}
OUT=${OUT:-runs/experiment-$ENV_NAME}
RECORD=${RECORD:-}
export RAYON_NUM_THREADS=${THREADS:-1}

if [[ -z ${BIN:-} ]]; then
  cargo build --release -p envrl-examples --bin envrl
  BIN=${CARGO_TARGET_DIR:-target}/release/envrl
fi
mkdir -p "$OUT"
if [[ -n $RECORD ]]; then mkdir -p "$RECORD"; fi

# xargs cannot pass arrays: the extra arguments travel as one quoted string.
EXTRA_Q=""
if (($#)); then EXTRA_Q=$(printf '%q ' "$@"); fi
export BIN ENV_NAME OUT EXTRA_Q RECORD

# The `--set` arguments of an arm's `@KEY=VALUE` settings (none without).
arm_settings() { # aux[@KEY=VALUE...]
  local item
  IFS=@ read -r -a items <<< "$1"
  for item in "${items[@]:1}"; do printf '%q %q ' --set "$item"; done
}

job() { # arm aux[@settings] seed [run directory whose warm start to load | "warm-start-only"]
  local arm=$1 aux=${2%%@*} seed=$3 from=${4:-}
  local name="${arm}__$seed" dir start=$SECONDS extra mode=(--force)
  local settings_q
  settings_q=$(arm_settings "$2")
  dir="$OUT/$name"
  if [[ $from == warm-start-only ]]; then
    warm_start_again "$arm" "$2" "$seed"
    return
  fi
  if [[ -f $dir/eval.json ]]; then
    echo "$dir: done before"
    return 0
  fi
  if [[ -n $RECORD && -f $RECORD/$name/eval.json ]]; then
    echo "$dir: recorded before in $RECORD/$name"
    return 0
  fi
  if compgen -G "$dir/checkpoints/ckpt-*[0-9]" > /dev/null; then mode=(--resume); fi
  eval "extra=($EXTRA_Q $settings_q)"
  if [[ -n $from ]]; then
    # The baseline of this seed may still be training the warm start: wait for its file
    # (written whole and renamed into place), unless that run failed.
    while [[ ! -f $from/warm-start.bpk ]]; do
      if [[ -f $from/eval.json || -f $from/warm-start.bpk.differs ]] ||
        grep -qs "^Error" "$from.log"; then
        echo "FAILED: $dir: no warm start in $from"
        return 1
      fi
      sleep 30
    done
    extra+=(--set "warmup.from=$from")
  fi
  "$BIN" train "$ENV_NAME" --quiet "${mode[@]}" --aux "$aux" --seed "$seed" --output-dir "$dir" \
    "${extra[@]}" >> "$dir.log" 2>&1 ||
    { echo "FAILED: $dir (see $dir.log)"; return 1; }
  if [[ -n $RECORD ]]; then
    mkdir -p "$RECORD/$name"
    cp "$dir/config.toml" "$dir/metrics.jsonl" "$dir/eval.json" "$dir/eval-outcomes.json" \
      "$RECORD/$name/"
    if [[ -z $from && -f $dir/warm-start.bpk ]]; then
      weights_sha256 "$dir/warm-start.bpk" > "$RECORD/$name/warm-start.sha256"
    fi
  fi
  echo "$dir: $((SECONDS - start)) s"
}

# sha256 of a Burnpack file's tensor data: the file's own bytes also hold parameter ids, which
# Burn draws at random in each process (header: magic, version, metadata length; the data starts
# at the next multiple of 256 after the metadata).
weights_sha256() { # file.bpk
  python3 - "$1" << 'PY'
import hashlib, struct, sys
data = open(sys.argv[1], "rb").read()
if data[:4] != b"NRUB":
    sys.exit(f"{sys.argv[1]}: not a Burnpack file")
(metadata_len,) = struct.unpack_from("<I", data, 6)
start = -(-(10 + metadata_len) // 256) * 256
print(hashlib.sha256(data[start:]).hexdigest())
PY
}

# The baseline of a seed was recorded by an earlier launch (on another machine, say) but other
# arms of the seed still need its warm start: train only the warm start, into the baseline's
# run directory, and check that it is the recorded one byte for byte.
warm_start_again() { # arm aux[@settings] seed
  local arm=$1 aux=${2%%@*} seed=$3 extra
  local name="${arm}__$seed"
  local dir="$OUT/$name"
  if [[ -f $dir/warm-start.bpk ]]; then return 0; fi
  eval "extra=($EXTRA_Q $(arm_settings "$2"))"
  "$BIN" train "$ENV_NAME" --quiet --force --warm-start-only --aux "$aux" --seed "$seed" \
    --output-dir "$dir" "${extra[@]}" >> "$dir.log" 2>&1 ||
    { echo "FAILED: $dir: the warm start again (see $dir.log)"; return 1; }
  local recorded="$RECORD/$name/warm-start.sha256"
  if [[ -f $recorded && $(weights_sha256 "$dir/warm-start.bpk") != "$(cat "$recorded")" ]]; then
    echo "FAILED: $dir: the warm start trained again has other weights than $recorded"
    mv "$dir/warm-start.bpk" "$dir/warm-start.bpk.differs"
    return 1
  fi
  echo "$dir: warm start trained again for the arms of seed $seed"
}
export -f job warm_start_again weights_sha256 arm_settings

read -r -a arms <<< "$ARMS"
baseline=${arms[0]%%:*}
warm_from() { # seed -> the warm start given for it, if any
  local item
  for item in ${WARM_FROM:-}; do
    if [[ ${item%%:*} == "$1" ]]; then echo "${item#*:}"; fi
  done
}
seed_recorded() { # seed -> whether every arm of it is in RECORD
  local arm
  for arm in "${arms[@]}"; do
    [[ -f $RECORD/${arm%%:*}__$1/eval.json ]] || return 1
  done
}
# One queue, seed by seed: the baseline arm first (it trains and saves the seed's warm start
# unless WARM_FROM gives one), then the other arms, which load it (waiting for it if need be).
for seed in $SEEDS; do
  given=$(warm_from "$seed")
  # No trailing blank when no warm start is given: `xargs -L` would join the next line on.
  if [[ -z $given && -n $RECORD && -f $RECORD/${baseline}__$seed/eval.json ]] &&
    ! seed_recorded "$seed"; then
    echo "$baseline ${arms[0]#*:} $seed warm-start-only"
  else
    echo "$baseline ${arms[0]#*:} $seed${given:+ $given}"
  fi
  for arm in "${arms[@]:1}"; do
    echo "${arm%%:*} ${arm#*:} $seed ${given:-$OUT/${baseline}__$seed}"
  done
done | xargs -P "$JOBS" -L 1 bash -c 'job "$0" "$1" "$2" "$3"'

if [[ -n $RECORD ]]; then
  "$BIN" compare "$RECORD"/*__*/ --output "$OUT/comparison"
else
  "$BIN" compare "$OUT"/*__*/ --output "$OUT/comparison"
fi
