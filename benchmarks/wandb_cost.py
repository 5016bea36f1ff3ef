"""What mirroring rows to W&B costs a run: ``logger.every=1`` against ``10``, side by side.

    python benchmarks/wandb_cost.py                   # 4 runs each of 1000 steps, tuned regime
    python benchmarks/wandb_cost.py --runs 6 --steps 2500

One process, one TensorFlow thread, W&B offline. The agent is built once (seed 0, not counted),
then restarted runs alternate between the two settings (order swapped every other seed), so
both see the same moments of the machine. Each run's CPU time is this process's plus that of
its child processes (W&B's service, ``wandb-core``), read from ``/proc``: with one job per core,
CPU time is what a sweep pays. The numbers of the runs are the same either way (the mirror
only reads the rows).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from experiments.base import process


def _children_cpu_s() -> float:
    """CPU seconds (user + system) of this process's direct children, from ``/proc``."""
    me, tick, total = os.getpid(), os.sysconf("SC_CLK_TCK"), 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def _own_cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4, help="restarted runs per setting")
    parser.add_argument("--steps", type=int, default=1000, help="training steps per run")
    parser.add_argument("--regime", default="tuned")
    args = parser.parse_args()

    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    from experiments.config import register_schema, to_run_config, without_hydra
    from experiments.jobs import MUZERO, run_job
    from experiments.muzero import MuZeroConfig

    register_schema(MuZeroConfig)
    process.limit_threads(1)
    process.quiet_tensorflow()
    cache = MUZERO.cache()
    out = Path(tempfile.mkdtemp(prefix="gradlab-wandb-cost-"))
    plan = [(0, 10)] + [
        (seed, every)
        for seed in range(1, args.runs + 1)
        for every in ((1, 10) if seed % 2 else (10, 1))
    ]
    measured: dict[int, list[tuple[float, float, float]]] = {1: [], 10: []}
    for seed, every in plan:
        with initialize_config_module(config_module="conf", version_base=None):
            cfg = compose(
                "config",
                overrides=[
                    f"regime={args.regime}", "variant=none", f"seed={seed}",
                    "logger=wandb_offline", f"logger.every={every}",
                    f"budget.max_steps={args.steps}",
                ],
            )  # fmt: skip
        own, children, start = _own_cpu_s(), _children_cpu_s(), time.perf_counter()
        run_job(
            to_run_config(cfg),
            out / f"seed{seed}_every{every}",
            job=f"seed={seed}",
            overrides={"seed": str(seed)},
            choices={"regime": args.regime},
            resolved=OmegaConf.to_container(without_hydra(cfg), resolve=True),
            train_fn=MUZERO.train,
            ablation=None,
            cache=cache,
        )
        wall = time.perf_counter() - start
        cpu, service = _own_cpu_s() - own, _children_cpu_s() - children
        if seed:  # seed 0 builds the agent: not counted
            measured[every].append((wall, cpu, service))
        print(f"seed={seed} logger.every={every}: wall {wall:.2f} s, CPU {cpu:.2f} s here "
              f"+ {service:.2f} s in W&B's service", flush=True)  # fmt: skip
    mean = {
        e: [sum(col) / len(rows) for col in zip(*rows, strict=True)] for e, rows in measured.items()
    }
    for every, (wall, cpu, service) in mean.items():
        print(f"logger.every={every}: mean of {args.runs} runs of {args.steps} steps: wall "
              f"{wall:.2f} s, CPU {cpu + service:.2f} s ({cpu:.2f} here, {service:.2f} W&B "
              "service)")  # fmt: skip
    saved = sum(mean[1][1:]) - sum(mean[10][1:])  # CPU seconds; every=10 logs 0.9 x fewer rows
    share = saved / sum(mean[1][1:])
    print(f"every row costs W&B {saved / (0.9 * args.steps) * 1e3:.2f} ms of CPU "
          f"({saved:.2f} s per {args.steps}-step run, {share:.1%} of its CPU)")  # fmt: skip
    print(f"(runs written to {out})")


if __name__ == "__main__":
    main()
