"""A MinAtar run of an older tree against this tree, each with its own preset, alternating.

    git worktree add /tmp/before f8d0f02          # the last commit before the MinAtar preset change
    python benchmarks/minatar_speed.py /tmp/before --rounds 2
    python benchmarks/minatar_speed.py /tmp/before --rounds 1 --frames 48000   # a shorter window

Each arm is one run of ``variant=none`` on a MinAtar game (``task=breakout``, seed 0, the tree's
own ``conf`` composed by Hydra: its preset's settings, whatever they are) in a fresh interpreter
with ``PYTHONPATH`` at its tree, as one job of ``gradlab sweep`` on 2 cores runs it: one
TensorFlow thread, no work on worker threads (``overlap=False``), op determinism on, and the
sweep's persistent XLA cache (``runtime.xla_cache``), so that from an arm's second run on its
programs load instead of compiling, as for every job but a sweep's first. The run's clock starts
before the networks are built, so building, compilation and warm-up self-play count; the steady
rate (frames/s from the first training step to the end) leaves them out. A run stops at ``--frames``
environment frames (the preset's whole run by default: both presets' runs are 160,000 frames),
and each arm reports seconds, frames, frames/s and its evaluations' returns.

Each arm first runs :data:`WARM_FRAMES` frames untimed, so both arms' timed runs load their
programs from the cache alike. The arms then alternate (before, now, then now, before, ...), so
a drift of the machine's speed falls on both; the medians of each arm's frames/s and their ratio
are printed. Time it on an idle machine only: nothing else running on its cores.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from experiments.base.cpu import describe

HERE = Path(__file__).resolve().parents[1]
WARM_FRAMES = 9000
"""Each arm's untimed first run: past the first evaluation (8000 frames in both presets), so every
program of the run (train step, self-play and evaluation searches) is in the XLA cache."""

# Runs unchanged in both trees: their Hydra config, schema and train() share these names.
_SNIPPET = """
import json, sys, time
start = time.perf_counter()
from hydra import compose, initialize_config_module
from experiments.base import process
from experiments.config import register_schema, to_run_config
from experiments.muzero.config import MuZeroConfig
game, seed, frames = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
register_schema(MuZeroConfig)
with initialize_config_module(config_module="conf", version_base=None):
    overrides = ["logger=none", f"task={game}", f"seed={seed}"]
    cfg = to_run_config(compose("config", overrides=overrides))
process.limit_threads(1)
process.use_xla_cache(cfg.runtime.xla_cache or None)
process.quiet_tensorflow()
process.seed_everything(seed, deterministic=cfg.runtime.deterministic)
from experiments.muzero.train import train
variant, placement = cfg.variant.build()
clock = time.perf_counter()
returns, seen, first = [], 0, None
for row in train(cfg.muzero, cfg.task, variant, placement, seed=seed, overlap=False):
    seen = int(row["env/steps"])
    if first is None:
        first = (time.perf_counter(), seen)
    if "eval/return" in row:
        returns.append([seen, row["eval/return"]])
    if frames and seen >= frames:
        break
end = time.perf_counter()
print(json.dumps({"seconds": end - clock, "frames": seen, "returns": returns,
                  "steps": int(row["step"]), "start_s": clock - start,
                  "steady_frames_per_s": (seen - first[1]) / (end - first[0])}))
"""


def run(tree: Path, *, game: str, seed: int, frames: int) -> dict:
    """One run of ``tree``'s code in a fresh interpreter: seconds, frames, evaluations."""
    env = dict(os.environ, PYTHONPATH=str(tree), TF_CPP_MIN_LOG_LEVEL="3")
    out = subprocess.run(
        [sys.executable, "-c", _SNIPPET, game, str(seed), str(frames)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"run in {tree} failed:\n{out.stderr[-2000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["frames_per_s"] = result["frames"] / result["seconds"]
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="the older tree (a git worktree)")
    parser.add_argument("--rounds", type=int, default=2, help="runs per arm")
    parser.add_argument("--frames", type=int, default=0, help="stop at this many (0: whole run)")
    parser.add_argument("--game", default="breakout")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if not (args.before / "experiments").is_dir():
        raise SystemExit(f"{args.before} is not a gradlab tree (no experiments/ folder)")
    arms = {"before": args.before.resolve(), "now": HERE}
    results: dict[str, list[dict]] = {name: [] for name in arms}
    for name in arms:  # not timed: fills the XLA cache with both arms' programs
        run(arms[name], game=args.game, seed=args.seed, frames=WARM_FRAMES)
    for r in range(args.rounds):
        order = list(arms) if r % 2 == 0 else list(reversed(arms))
        for name in order:
            result = run(arms[name], game=args.game, seed=args.seed, frames=args.frames)
            results[name].append(result)
            last = result["returns"][-1][1] if result["returns"] else float("nan")
            print(
                f"round {r + 1} {name:6s}: {result['frames']} frames, {result['steps']} steps "
                f"in {result['seconds']:.1f} s ({result['frames_per_s']:.0f} frames/s), "
                f"last evaluation {last:.2f}",
                flush=True,
            )

    def median(name: str, key: str) -> float:
        return statistics.median(x[key] for x in results[name])

    for name in arms:
        print(
            f"{name:6s}: median {median(name, 'frames_per_s'):.0f} frames/s whole run "
            f"({median(name, 'seconds'):.1f} s), {median(name, 'steady_frames_per_s'):.0f} "
            "frames/s steady"
        )
    for key, what in (("frames_per_s", "whole run"), ("steady_frames_per_s", "steady")):
        pairs = [n[key] / b[key] for n, b in zip(results["now"], results["before"], strict=True)]
        print(
            f"now / before, {what}: {median('now', key) / median('before', key):.2f}x frames/s "
            f"(rounds {min(pairs):.2f}-{max(pairs):.2f}; CPU: {describe()})"
        )
    print(json.dumps(results))


if __name__ == "__main__":
    main()
