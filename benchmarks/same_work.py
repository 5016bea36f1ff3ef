"""Training steps/s of the round's starting code against this code, on the same work and on each
one's default work, alternating, one process per run.

    git worktree add /tmp/before 4e812ed
    python benchmarks/same_work.py /tmp/before --rounds 3

Three arms, each a catch run of variant ``none`` (placement ``pseudocode``, seed 0) as ``gradlab
bench`` runs it (``experiments.bench.end_to_end``: rates between the end of step ``skip`` and step
``steps``, all cores), in a fresh interpreter with ``PYTHONPATH`` at its tree:

* ``before``: the old tree's default ``MuZeroConfig()`` (32 environments moved every 4 updates,
  32 evaluation episodes every 100 steps);
* ``now, old work``: this tree's ``MuZeroConfig`` with those four settings of the old default
  (``num_envs=32, selfplay_interval=4, eval_every=100, eval_episodes=32``), everything else
  this tree's default;
* ``now``: this tree's default ``MuZeroConfig()`` (128 environments every 4 updates, 128 episodes
  every 50 steps: the settings that learn every seed).

The arms rotate (``before, old work, now``, then reversed, ...), so a drift of the machine's speed
falls on all three; each arm's median and the ratios of the medians are printed. The measuring
snippet is its own copy of ``run_rates``' window rather than a call to it: the old tree's
``run_rates`` takes no settings, and the snippet must run unchanged in both trees.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

_SNIPPET = """
import json, sys
from experiments.gradients import get_placement, make_variant
from experiments.muzero.config import MuZeroConfig
from experiments.muzero.train import train
from experiments.tasks import TaskConfig
settings, skip, steps = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rows = train(MuZeroConfig(**settings), TaskConfig(), make_variant("none"),
             get_placement("pseudocode"), seed=0)
marks = {}
for row in rows:
    if int(row["step"]) in (skip, steps):
        marks[int(row["step"])] = row["time/elapsed_s"]
    if int(row["step"]) >= steps:
        break
print(json.dumps((steps - skip) / (marks[steps] - marks[skip])))
"""

OLD_WORK = {"num_envs": 32, "selfplay_interval": 4, "eval_every": 100, "eval_episodes": 32}


def rate(tree: Path, settings: dict, *, skip: int, steps: int) -> float:
    """Training steps/s of one run of ``tree``'s code in a fresh interpreter."""
    env = dict(os.environ, PYTHONPATH=str(tree), TF_CPP_MIN_LOG_LEVEL="3")
    out = subprocess.run(
        [sys.executable, "-c", _SNIPPET, json.dumps(settings), str(skip), str(steps)],
        cwd=tree,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, help="a worktree of the round's starting code")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip", type=int, default=10)
    parser.add_argument("--steps", type=int, default=1500)
    args = parser.parse_args()
    arms = {
        "before": (args.before.resolve(), {}),
        "now, old work": (HERE, OLD_WORK),
        "now": (HERE, {}),
    }
    rates: dict[str, list[float]] = {name: [] for name in arms}
    order = list(arms)
    for r in range(args.rounds):
        for name in order if r % 2 == 0 else order[::-1]:
            tree, settings = arms[name]
            rates[name].append(rate(tree, settings, skip=args.skip, steps=args.steps))
            print(f"round {r + 1} {name:>14}: {rates[name][-1]:.1f} steps/s", flush=True)
    medians = {name: statistics.median(values) for name, values in rates.items()}
    for name, value in medians.items():
        each = ", ".join(f"{v:.1f}" for v in rates[name])
        print(f"{name:>14}: median {value:.1f} steps/s ({each})")
    before = medians["before"]
    print(f"now, old work / before: {medians['now, old work'] / before:.2f}x")
    print(f"now / before: {medians['now'] / before:.2f}x")


if __name__ == "__main__":
    main()
