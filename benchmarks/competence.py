"""Is the baseline competent? Its MinAtar returns next to a random policy and published agents.

    python benchmarks/competence.py results/findings/minatar_preset/candidate/learning

Reads every finished ``variant=none`` MinAtar run of the given results folders (``summary.json``
and ``config.yaml`` of each job) and prints one markdown row per game and setting (a calibration
rung's runs are a row of their own, their unroll, normalisation and learning rate printed with
them; give it the folder of the preset's runs for the baseline's row): the runs, the frames they
trained on (``training_steps / selfplay_interval * num_envs``: the budget's self-play frames,
warm-up left out), the final return (mean of the final window, greedy evaluation) per run and
their mean, the uniformly random policy's return (measured: ``experiments/tasks/registry.py``,
``benchmarks/random_policy.py``), and the published DQN and AC(0.8) learning-curve values with
their frames (``experiments/tasks/published.py``: read off plots, approximate, training
episodes with exploration, the full action set). The frames are printed so that nobody reads a
160,000-frame run against a 5,000,000-frame one as a like-for-like comparison.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from omegaconf import OmegaConf

from experiments.tasks import PUBLISHED, task_facts

FINISHED = ("completed", "diverged")


@dataclasses.dataclass(frozen=True)
class GameRuns:
    """The baseline's finished runs of one game at one budget and setting."""

    game: str
    frames: int
    setting: str
    final_returns: tuple[float, ...]

    @property
    def mean(self) -> float:
        return sum(self.final_returns) / len(self.final_returns)


def baseline_runs(folders: list[Path]) -> list[GameRuns]:
    """The finished ``variant=none`` MinAtar runs under ``folders``, by game and frames."""
    found: dict[tuple[str, int], list[float]] = {}
    for folder in folders:
        for path in sorted(folder.rglob("summary.json")):
            summary = json.loads(path.read_text())
            config = OmegaConf.load(path.parent / "config.yaml")
            if summary["status"] not in FINISHED or config.task.name != "minatar":
                continue
            if config.variant.name != "none":
                continue
            m = config.muzero
            # self-play moves at updates 1, 1 + interval, ...: ceil(steps / interval) moves
            frames = -(-m.training_steps // m.selfplay_interval) * m.num_envs
            value = (summary.get("stability") or {}).get("final_return")
            if summary["status"] == "diverged" or value is None:
                value = task_facts(config.task.id).random_return  # as the tables count them
            setting = f"K={m.unroll_steps}, {m.network.normalisation}, lr {m.learning_rate:g}"
            found.setdefault((config.task.id, frames, setting), []).append(float(value))
    return [GameRuns(*key, tuple(v)) for key, v in sorted(found.items())]


def table(runs: list[GameRuns]) -> str:
    """The markdown table of :func:`baseline_runs`' games."""
    lines = [
        "| game | gradlab `none`: frames | setting | runs | final return per run | mean "
        "| random policy | DQN (published) | AC(0.8) (published) |",
        "|---|--:|---|--:|---|--:|--:|---|---|",
    ]
    for game in runs:
        facts = task_facts(game.game)
        published = PUBLISHED.get(game.game, ())

        def cell(algorithm: str, published=published) -> str:
            values = [p for p in published if p.algorithm == algorithm]
            return ", ".join(f"~{p.value:g} at {p.frames / 1e6:g}M" for p in values) or "-"

        per_run = ", ".join(f"{v:.2f}" for v in game.final_returns)
        lines.append(
            f"| {game.game} | {game.frames:,} | {game.setting} | {len(game.final_returns)} "
            f"| {per_run} "
            f"| {game.mean:.2f} | {facts.random_return:.2f} | {cell('DQN')} | {cell('AC(0.8)')} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    args = parser.parse_args(argv)
    runs = baseline_runs(args.folders)
    if not runs:
        raise SystemExit("no finished variant=none MinAtar runs under the given folders")
    print(table(runs))


if __name__ == "__main__":
    main()
