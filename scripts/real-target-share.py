"""The share of a shuffled-target control's examples that were trained on their own (real)
target, per run and objective: `aux/real_target_share/<name>` weighted by `aux/examples/<name>`
over all iterations of each run's metrics.jsonl.

Usage: python3 scripts/real-target-share.py RUN_DIR...
"""

import json
import sys
from pathlib import Path

PREFIX = "aux/real_target_share/"


def shares(run: Path) -> dict[str, float]:
    real, total = {}, {}
    for line in (run / "metrics.jsonl").read_text().splitlines():
        metrics = json.loads(line)
        for key, share in metrics.items():
            name = key.removeprefix(PREFIX)
            if key.startswith(PREFIX) and "_shuffled" in name:
                examples = metrics.get(f"aux/examples/{name}", 0.0)
                real[name] = real.get(name, 0.0) + share * examples
                total[name] = total.get(name, 0.0) + examples
    return {name: real[name] / total[name] for name in sorted(real) if total[name] > 0}


def main(runs: list[str]) -> None:
    print("| run | objective | examples trained on the real target (%) |")
    print("|---|---|---|")
    for run in sorted(runs):
        for name, share in shares(Path(run)).items():
            print(f"| {Path(run).name} | {name} | {100 * share:.1f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
