"""What planning a sweep costs: one Hydra composition per job against one per configuration.

    python benchmarks/plan_cost.py                               # the main job, 3 rounds
    python benchmarks/plan_cost.py ablation=hidden_scale "seed=range(10)" --rounds 5

Before anything runs, ``gradlab sweep`` plans the sweep (``experiments.launch.plan.plan``): every
job is composed by Hydra and validated. Jobs that differ only in their seed share one composition
(``plan._compose_job``). This times ``plan`` as it is against ``plan`` with every job composed from
its own overrides, alternating in one process so both see the same moments of the machine. Writes
nothing.
"""

from __future__ import annotations

import argparse
import time

from experiments.launch import CONF_DIR, plan


def _one_each(config_dir, overrides, hyd, composed):
    """Every job composed from its own overrides (the planning before the shared composition)."""
    return plan._compose(config_dir, [*overrides, *hyd])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("overrides", nargs="*", default=["ablation=hidden_scale"])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    shared = plan._compose_job
    seconds: dict[str, list[float]] = {"one composition a job": [], "shared (as built)": []}
    jobs = 0
    for _ in range(args.rounds):
        for name, compose_job in zip(seconds, (_one_each, shared), strict=True):
            plan._compose_job = compose_job
            start = time.perf_counter()
            jobs = len(plan.plan(args.overrides, multirun=True, config_dir=CONF_DIR))
            seconds[name].append(time.perf_counter() - start)
    plan._compose_job = shared
    print(f"planning {jobs} jobs ({' '.join(args.overrides)}), seconds per round:")
    for name, values in seconds.items():
        print(f"  {name:24s} " + "  ".join(f"{v:.2f}" for v in values))


if __name__ == "__main__":
    main()
