#!/usr/bin/env bash
# Does a change of the programs' code keep what runs do? Runs a fixed-seed keydoor, ALFWorld,
# WebShop and Sokoban run and a keydoor run that plays ahead (3 iterations each, the EnvRL
# objectives on) with two `envrl` binaries
# and compares what they write: metrics.jsonl line by line without the timings (`perf/*`) and
# config.toml key by key (and value by value, except those listed in ALLOWED_VALUE_CHANGES).
#
#   scripts/behaviour-check.sh BEFORE_BIN [AFTER_BIN]
#
# With MIGRATE_BEFORE=SCRIPT, the before run's config.toml is first rewritten by SCRIPT (a one-time
# config migration, e.g. scripts/migrate-run-configs.py), so a change that moves settings out of
# the config is checked against the migrated form.
#
# BEFORE_BIN: an `envrl` built from the old revision, e.g.
#   git worktree add /tmp/envrl-old <rev> && (cd /tmp/envrl-old && cargo build --release \
#     -p envrl-examples --bin envrl) && cp "$CARGO_TARGET_DIR/release/envrl" /tmp/envrl-before
# AFTER_BIN: default: this checkout's release build (built if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
before=${1:?usage: scripts/behaviour-check.sh BEFORE_BIN [AFTER_BIN]}
after=${2:-}
if [[ -z $after ]]; then
  cargo build --release -p envrl-examples --bin envrl
  after=${CARGO_TARGET_DIR:-target}/release/envrl
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export RAYON_NUM_THREADS=1

keydoor=(train keydoor --seed 3 --iterations 3 --aux state_prediction,inverse_dynamics
  --set trainer.eval_every=2 --set trainer.eval_episodes=16 --set tasks.eval=16)
alfworld=(train alfworld --seed 3 --iterations 3 --aux state_prediction,inverse_dynamics
  --set warmup.steps=40 --set warmup.episodes=40 --set tasks.train=40 --set tasks.eval=8
  --set trainer.eval_every=2 --set trainer.eval_episodes=8 --set trainer.groups=2)
webshop=(train webshop --seed 3 --iterations 3 --aux state_prediction,inverse_dynamics
  --set warmup.steps=40 --set warmup.episodes=40 --set tasks.train=40 --set tasks.eval=8
  --set trainer.eval_every=2 --set trainer.eval_episodes=8 --set trainer.groups=2)

sokoban=(train sokoban --seed 3 --iterations 3 --aux state_prediction,inverse_dynamics
  --set warmup.steps=40 --set warmup.episodes=40 --set tasks.train=40 --set tasks.eval=8
  --set trainer.eval_every=2 --set trainer.eval_episodes=8 --set trainer.groups=2)
# The next rollout played during each update (the actor on another thread while the learner steps).
ahead=(train keydoor --seed 5 --iterations 3 --aux state_prediction,inverse_dynamics
  --set trainer.max_staleness=1 --set trainer.eval_every=2 --set trainer.eval_episodes=16
  --set tasks.eval=16)

status=0
for name in keydoor alfworld webshop sokoban ahead; do
  declare -n args=$name
  for side in before after; do
    bin=${!side}
    "$bin" "${args[@]}" --quiet --output-dir "$work/$side-$name" > "$work/$side-$name.log" 2>&1 ||
      { echo "$side $name failed:"; cat "$work/$side-$name.log"; exit 1; }
  done
  if [[ -n ${MIGRATE_BEFORE:-} ]]; then
    python3 "$MIGRATE_BEFORE" "$work/before-$name/config.toml" > /dev/null
  fi
  python3 - "$work/before-$name" "$work/after-$name" "$name" <<'PY' || status=1
import json, sys, tomllib
before, after, name = sys.argv[1:]
def metrics(d):
    rows = []
    for line in open(f"{d}/metrics.jsonl"):
        m = json.loads(line)
        rows.append({k: v for k, v in m.items() if not k.startswith("perf/")})
    return rows
def keys(table, prefix=""):
    out = {}
    for k, v in table.items():
        if isinstance(v, dict):
            out.update(keys(v, f"{prefix}{k}."))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for i, x in enumerate(v):
                out.update(keys(x, f"{prefix}{k}[{i}]."))
        else:
            out[prefix + k] = v
    return out
a, b = metrics(before), metrics(after)
ok = True
if a != b:
    ok = False
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            diff = {k: (x.get(k), y.get(k)) for k in set(x) | set(y) if x.get(k) != y.get(k)}
            print(f"{name}: metrics record {i} differs: {diff}")
            break
    if len(a) != len(b):
        print(f"{name}: {len(a)} records before, {len(b)} after")
ca = keys(tomllib.load(open(f"{before}/config.toml", "rb")))
cb = keys(tomllib.load(open(f"{after}/config.toml", "rb")))
if set(ca) != set(cb):
    ok = False
    print(f"{name}: config.toml keys only before: {sorted(set(ca) - set(cb))}, only after: {sorted(set(cb) - set(ca))}")
changed = {k: (ca[k], cb[k]) for k in set(ca) & set(cb) if ca[k] != cb[k]}
if changed:
    print(f"{name}: config.toml values that differ (same keys): {changed}")
print(f"{name}: {len(a)} metrics records {'identical' if a == b else 'DIFFERENT'} (timings aside); "
      f"config.toml: {len(ca)} keys, {'the same' if set(ca) == set(cb) else 'DIFFERENT'}")
sys.exit(0 if ok else 1)
PY
done
exit $status
