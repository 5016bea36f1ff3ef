"""Learning benchmark (issue 3, item 8): does MuZero reach the task's threshold in budget?

Runs ``experiments.muzero.train.train`` with the default config of the task for each seed and
prints, per seed, the final evaluation return, the best one, the first step whose evaluation
reached the threshold, and the wall time; then how many seeds succeeded.

    python benchmarks/learn.py --task catch --seeds 0,1,2,3,4 \
        --variant scale_gradient --placement pseudocode

The per-task defaults are those of ``conf/muzero/default.yaml`` overlaid with the ``muzero:`` keys
of ``conf/task/<task>.yaml`` (cartpole's file sets its own budget).
"""

from __future__ import annotations

import argparse
import pathlib
import time

import yaml

from experiments.gradients import get_placement, make_variant
from experiments.muzero.config import MuZeroConfig
from experiments.muzero.train import train
from experiments.tasks import TaskConfig

CONF = pathlib.Path(__file__).resolve().parents[1] / "conf"


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for key, value in over.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and key in out else value
    return out


def load_configs(task: str, overrides: dict) -> tuple[MuZeroConfig, TaskConfig]:
    """The task's MuZero and task configs from the Hydra YAML, plus ``overrides`` (muzero keys)."""
    muzero = yaml.safe_load((CONF / "muzero" / "default.yaml").read_text())
    task_yaml = yaml.safe_load((CONF / "task" / f"{task}.yaml").read_text())
    if "task" in task_yaml:  # a `# @package _global_` file
        muzero = _merge(muzero, task_yaml.get("muzero", {}))
        task_yaml = task_yaml["task"]
    muzero = _merge(muzero, overrides)
    return MuZeroConfig.from_dict(muzero), TaskConfig.from_dict(task_yaml)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="catch")
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--variant", default="scale_gradient")
    parser.add_argument("--scale", type=float, default=0.5, help="scale_gradient's scale")
    parser.add_argument("--placement", default="pseudocode")
    parser.add_argument("--steps", type=int, default=0, help="override training_steps")
    args = parser.parse_args()

    overrides = {"training_steps": args.steps} if args.steps else {}
    config, task = load_configs(args.task, overrides)
    params = {"scale": args.scale} if args.variant == "scale_gradient" else {}
    variant = make_variant(args.variant, **params)
    placement = get_placement(args.placement)
    print(
        f"task={args.task} variant={args.variant} {params} placement={args.placement} "
        f"steps={config.training_steps} threshold={task.threshold:g}"
    )
    successes = 0
    seeds = [int(s) for s in args.seeds.split(",")]
    for seed in seeds:
        start = time.perf_counter()
        evals: list[tuple[int, float]] = []
        for row in train(config, task, variant, placement, seed=seed):
            if "eval/return" in row:
                evals.append((int(row["step"]), row["eval/return"]))
        wall = time.perf_counter() - start
        final = evals[-1][1]
        reached = next((s for s, r in evals if r >= task.threshold), None)
        successes += final >= task.threshold
        print(
            f"seed {seed}: final eval return {final:.3f}  best {max(r for _, r in evals):.3f}  "
            f"first step >= threshold {reached}  wall {wall:.1f} s",
            flush=True,
        )
    print(f"{successes}/{len(seeds)} seeds reached a final eval return >= {task.threshold:g}")


if __name__ == "__main__":
    main()
