"""Learning benchmark: does MuZero learn, seed by seed, and how fast?

Reads a results folder (any sweep; typically ``gradlab sweep ablation=learning``, the chosen
settings x 5 seeds) and prints per run: the final return (the stability summary's: mean of the
final-window evaluations), the last single evaluation, the best window, whether it collapsed, and
for each return level the first training step whose evaluation reached it and the job's wall
time at that step; then per group how many seeds ended at or above the task's threshold.

    gradlab sweep ablation=learning task=catch variant=none,scale_gradient
    python benchmarks/learn.py results/learning --levels 0.9
    gradlab sweep ablation=learning task=cartpole runtime.results_dir=results/cartpole
    python benchmarks/learn.py results/cartpole/learning --levels 250,475
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from experiments.jobs import read_metrics, read_summary
from experiments.report.runs import load_results


def _first(rows: list[dict], level: float) -> tuple[int, float] | None:
    """``(step, seconds)`` of the first evaluation with ``eval/return >= level``."""
    for row in rows:
        value = row.get("eval/return")
        if value is not None and value >= level:
            return int(row["step"]), float(row["time/elapsed_s"])
    return None


def _fmt(x: float | None, spec: str = ".3f") -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="an ablation's results folder")
    parser.add_argument("--levels", default="", help="return levels to time, e.g. 250,475")
    args = parser.parse_args()
    levels = [float(x) for x in args.levels.split(",") if x]
    results = load_results(args.results)
    for group, runs in results.runs.groupby("group", sort=False):
        print(f"{group}:")
        successes, total, thresholds = 0, 0, set()
        for run in runs.itertuples():
            rows = read_metrics(Path(run.path) / "metrics.jsonl")
            summary = read_summary(run.path)
            threshold = summary.threshold if summary else None
            thresholds.add(threshold)
            marks = []
            for level in levels:
                hit = _first(rows, level)
                at = f"step {hit[0]}, {hit[1]:.0f} s" if hit else "never"
                marks.append(f">= {level:g}: {at}")
            final = run.final_return
            total += 1
            successes += threshold is not None and final == final and final >= threshold
            print(
                f"  seed {run.seed}: {run.status}, final {_fmt(final)} "
                f"(last {_fmt(run.final_return_last)}, best window {_fmt(run.best_return)}, "
                f"collapsed {_fmt(run.collapsed, '.0f')}), {'; '.join(marks)}, "
                f"wall {_fmt(run.wall_time_s, '.0f')} s"
            )
        if thresholds == {None}:
            print("  (the task defines no success threshold)")
        else:
            print(f"  {successes}/{total} seeds ended with a final return >= the task's threshold")


if __name__ == "__main__":
    main()
