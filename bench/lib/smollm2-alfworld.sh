# Set-up shared by the SmolLM2-135M + LoRA ALFWorld benches (rollout-servers.sh, overlap.sh);
# sourced from the repository root after the caller sets ITERATIONS and ROLLOUT_THREADS.
# Defines BIN (path/to/envrl), OUT (a temporary folder unless given), ARGS (the run:
# docs/results/configs/smollm2-pick.toml, no warm start, no evaluation, no checkpoints) and
# `finished NAME` (a run already in OUT with one metrics line per iteration: the bench resumes).
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/envrl}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
export ENVRL_MODELS=${ENVRL_MODELS:-$HOME/.cache/envrl-models}
bash scripts/fetch-smollm2.sh "$ENVRL_MODELS" > /dev/null
ARGS=(train alfworld --config docs/results/configs/smollm2-pick.toml --aux none --quiet
  --set warmup.steps=0 --set "trainer.iterations=$ITERATIONS" --set trainer.eval_every=0
  --set trainer.checkpoint_every=0 --set tasks.eval=2 --set "rollout.threads=$ROLLOUT_THREADS"
  --set rollout.parallel=8)
finished() { [[ -f $OUT/$1/metrics.jsonl && $(wc -l < "$OUT/$1/metrics.jsonl") -eq $ITERATIONS ]]; }
