"""What a job's first step costs when its agent is built, restarted, or built after another
configuration in the same process: the start-up that a sweep pays once per configuration.

    python benchmarks/startup_builds.py none,scale_gradient,maxnorm --xla-cache DIR
    python benchmarks/startup_builds.py maxnorm,none,scale_gradient --xla-cache DIR

Runs, in this one process and in the order given, two seeds of each variant (Catch's tuned
regime by default; extra ``KEY=VALUE`` arguments are Hydra overrides) through
``experiments.muzero.train.train`` with one agent cache, as a job host runs a worker's jobs, for
``--rows`` training steps each, one thread. For each job it prints the first row's time (the
start-up of the job: networks built or restarted, tracing, XLA compiling or loading, the
warm-up's self-play, the first update), split into the warm-up's self-play (where the search
compiles) and the first update (where the train step is traced and compiles), with the seconds
spent tracing (``get_concrete_function``); and the cache files XLA wrote.

Run it twice on one ``--xla-cache`` folder: the second run loads what the first compiled (when
the functions get the same names, see docs/performance.md, "Start-up, per job"); in another
order, later configurations get other names and compile again. Wraps, never changes, what it
times; its numbers are not a measurement while anything else runs.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from hydra import compose, initialize_config_module

from experiments.base import process
from experiments.config import register_schema, to_run_config
from experiments.muzero import MuZeroConfig


def _config(overrides: list[str]):
    with initialize_config_module(config_module="conf", version_base=None):
        return to_run_config(compose("config", overrides=["logger=none", *overrides]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("variants", help="comma-separated, in the order to run them")
    parser.add_argument("--xla-cache", required=True, help="XLA's persistent cache folder")
    parser.add_argument("--rows", type=int, default=300, help="training steps a job runs")
    parser.add_argument(
        "--no-graphs",
        action="store_true",
        help="trace every build (no graph store beside the XLA cache, as before 2026-12-07)",
    )
    parser.add_argument("overrides", nargs="*", default=["task=catch", "regime=tuned"])
    args = parser.parse_args()
    register_schema(MuZeroConfig)
    cache_dir = Path(args.xla_cache)
    process.limit_threads(1)
    process.use_xla_cache(cache_dir)
    process.quiet_tensorflow()
    import tensorflow as tf  # noqa: F401  (after the thread limit and the cache flag)
    from tensorflow.python.eager.polymorphic_function import polymorphic_function

    from experiments.muzero import AgentCache, learner, train
    from experiments.muzero.runtime import GraphStore

    spent: dict[str, float] = {}

    def timed(owner, name, label, *, first_only=None):
        original = getattr(owner, name)

        def wrapper(*a, **k):
            counted = first_only is None or first_only(*a)
            start = time.perf_counter()
            out = original(*a, **k)
            if counted:
                spent[label] = spent.get(label, 0.0) + time.perf_counter() - start
            return out

        setattr(owner, name, wrapper)

    timed(polymorphic_function.Function, "get_concrete_function", "trace")
    timed(
        learner.Learner, "update_tensors", "first update", first_only=lambda s, *_: s._step is None
    )
    timed(train, "_warm_up", "warm-up")
    before = set(cache_dir.glob("xla_*"))
    agents = AgentCache(graphs=None if args.no_graphs else GraphStore.beside(cache_dir))
    for variant_name in args.variants.split(","):
        for seed in (0, 1):
            spent.clear()
            cfg = _config([*args.overrides, f"variant={variant_name}", f"seed={seed}"])
            variant, placement = cfg.variant.build()
            start = time.perf_counter()
            rows = train.train(
                cfg.muzero, cfg.task, variant, placement, seed=seed, cache=agents, overlap=False
            )
            first = next(rows)["time/elapsed_s"]
            for n, _ in enumerate(rows, 2):
                if n >= args.rows:
                    break
            total = time.perf_counter() - start
            print(
                f"{variant_name} seed {seed}: first row {first:.2f} s (warm-up "
                f"{spent.get('warm-up', 0):.2f}, first update {spent.get('first update', 0):.2f}; "
                f"tracing {spent.get('trace', 0):.2f}); {args.rows} rows {total:.1f} s",
                flush=True,
            )
    print(f"agents built {agents.misses}, restarted {agents.hits}; "
          f"XLA cache files written: {len(set(cache_dir.glob('xla_*')) - before)}")  # fmt: skip


if __name__ == "__main__":
    main()
