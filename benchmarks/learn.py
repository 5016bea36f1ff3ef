"""Learning benchmark: does MuZero reach the task's threshold in its budget, seed by seed?

Composes gradlab's config with Hydra's compose API (the same ``conf/`` and schema as
``gradlab run``, overrides in Hydra's syntax), runs ``experiments.muzero.train.train`` in this
process for each seed, and prints per seed the final return (mean of the final-window
evaluations), the last and best evaluation, the first step whose evaluation reached the
threshold (and 250 for CartPole), and the wall time; then how many seeds succeeded.

    python benchmarks/learn.py task=catch variant=scale_gradient --seeds 0,1,2,3,4
    python benchmarks/learn.py task=cartpole --seeds 0,1,2,3,4 --levels 250,475
"""

from __future__ import annotations

import argparse
import time

from hydra import compose, initialize_config_dir

from experiments.config import register_schema, to_run_config
from experiments.hydra_app import CONF_DIR
from experiments.metrics import stability_summary
from experiments.muzero.config import MuZeroConfig
from experiments.muzero.train import train
from experiments.process import limit_threads, quiet_tensorflow, seed_everything


def load_config(overrides: list[str]):
    """The run's :class:`~experiments.config.RunConfig`, composed by Hydra from ``conf/``."""
    register_schema(MuZeroConfig)
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return to_run_config(compose("config", overrides=overrides))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. task=cartpole")
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--levels", default="", help="extra return levels to time, e.g. 250")
    parser.add_argument("--threads", type=int, default=1, help="TensorFlow threads (sweeps: 1)")
    args = parser.parse_args()

    limit_threads(args.threads)
    quiet_tensorflow()
    seeds = [int(s) for s in args.seeds.split(",")]
    levels = [float(x) for x in args.levels.split(",") if x]
    base = load_config(args.overrides)
    threshold = base.task.threshold
    print(
        f"{' '.join(args.overrides) or 'defaults'}: steps={base.muzero.training_steps} "
        f"threshold={threshold:g} q_form={base.muzero.q_form} threads={args.threads}",
        flush=True,
    )
    successes = 0
    for seed in seeds:
        cfg = load_config([*args.overrides, f"seed={seed}"])
        seed_everything(seed)
        variant, placement = cfg.variant.build()
        start = time.perf_counter()
        rows = list(train(cfg.muzero, cfg.task, variant, placement, seed=seed))
        wall = time.perf_counter() - start
        figures = stability_summary(
            rows,
            threshold=threshold,
            training_steps=cfg.muzero.training_steps,
            return_range=_span(cfg.task.return_range),
        )
        evals = [(int(r["step"]), r["eval/return"]) for r in rows if "eval/return" in r]
        reached = {
            level: next((s for s, r in evals if r >= level), None) for level in [*levels, threshold]
        }
        final = figures["final_return"]
        successes += final is not None and final >= threshold
        times = "  ".join(f"first >= {lv:g}: {st}" for lv, st in reached.items())
        print(
            f"seed {seed}: final return {final:.3f} (mean of {figures['final_evals']} evals)  "
            f"last {figures['final_return_last']:.3f}  best window {figures['best_return']:.3f}  "
            f"{times}  collapsed {figures['collapsed']}  wall {wall:.1f} s",
            flush=True,
        )
    print(f"{successes}/{len(seeds)} seeds reached a final return >= {threshold:g}")


def _span(bounds: tuple[float, float] | None) -> float | None:
    return None if bounds is None else bounds[1] - bounds[0]


if __name__ == "__main__":
    main()
