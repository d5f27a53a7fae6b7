"""Checks a served run's metrics.jsonl: every iteration logs how far the server's log-probabilities
were from the learner's recompute, within 1e-3 per token (1e-1 for a rollout played one policy
version behind, which differs by the update, not by the engine), over at least two iterations
(the second plays the policy published after the first update). Prints one line per iteration.

    python3 scripts/lib/served_logprobs.py RUN_DIR NAME
"""
import json
import pathlib
import sys

run, name = pathlib.Path(sys.argv[1]), sys.argv[2]
rows = [json.loads(line) for line in open(run / "metrics.jsonl")]
assert len(rows) >= 2, f"{run}: {len(rows)} iterations logged, expected at least 2"
for row in rows:
    mismatch = row["rollout/logprob_mismatch"]
    stale = row.get("rollout/staleness")
    lag = "" if stale is None else f", played {stale:.0f} version(s) behind"
    print(f"{name}, iteration {row['iteration']}: the server's log-probabilities within "
          f"{mismatch:.1e} per token of the learner's{lag} (rollout {row['perf/rollout_s']:.1f} s, "
          f"publish {row.get('perf/publish_s', 0.0):.2f} s)")
    assert mismatch < (1e-1 if stale else 1e-3), f"{name}, iteration {row['iteration']}: {mismatch}"
