"""Study 6's confirmatory family, recomputed from the committed runs without gradlab's endpoint,
normalisation or pooling code: each run's final return from its own curves (the mean of the
evaluations after 0.9 of the planned steps; a diverged run at the game's random-policy return),
normalised with the R_ref and R_rand its record declares, then per game Welch's t test (scipy)
and the equal-weight pooled difference, its Satterthwaite df and its TOST written out by hand.
These are the figures the README and docs/studies.md quote."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

FOLDER = Path(__file__).resolve().parents[2] / "results" / "findings" / "study_minatar_return"
GAMES = ("breakout", "space_invaders")
N = 61  # registered runs an arm a game
# the README's and docs/studies.md's figures (gradlab pool results/findings/study_minatar_return)
QUOTED = {
    "scale_gradient": {"estimate": -0.226, "ci": [-0.293, -0.159],
                       "diffs": {"breakout": -0.208, "space_invaders": -0.244}},
    "depth_loss_scale": {"estimate": -0.215, "ci": [-0.272, -0.157],
                         "diffs": {"breakout": -0.136, "space_invaders": -0.294}},
}  # fmt: skip


def _record() -> dict:
    return json.loads((FOLDER / "preregistration.json").read_text())["design"]


def _final_from_curves(job: Path, r_rand: float) -> float:
    summary = json.loads((job / "summary.json").read_text())
    if summary["status"] == "diverged":
        return r_rand
    assert summary["status"] == "completed", job
    planned = int(summary["training_steps"])
    with gzip.open(job / "curves.csv.gz", "rt") as f:
        curves = pd.read_csv(f)
    evals = curves.dropna(subset=["eval/return"])
    final = evals.loc[evals["step"] > 0.9 * planned, "eval/return"]
    assert len(final) == 2, job  # the declared final window: steps 9,500 and 10,000
    return float(final.mean())


@pytest.fixture(scope="module")
def normalised() -> dict[tuple[str, str], np.ndarray]:
    design = _record()
    out = {}
    for game in GAMES:
        ref, rand = (float(design["normalisation"][game][k]) for k in ("r_ref", "r_rand"))
        for arm in ("none", "scale_gradient", "depth_loss_scale"):
            jobs = sorted(FOLDER.glob(f"regime=tuned__task={game}__variant={arm}__seed=*"))
            assert len(jobs) == N, (game, arm)
            out[game, arm] = np.array([(_final_from_curves(j, rand) - rand) / (ref - rand)
                                       for j in jobs])  # fmt: skip
    return out


def _pooled(normalised, arm: str, margin: float = 0.1) -> dict:
    diffs, variances, parts, per_game = [], [], [], {}
    for game in GAMES:
        a, b = normalised[game, arm], normalised[game, "none"]
        va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
        diffs.append(a.mean() - b.mean())
        variances.append(va + vb)
        parts += [va**2 / (len(a) - 1), vb**2 / (len(b) - 1)]
        per_game[game] = stats.ttest_ind(a, b, equal_var=False).pvalue
    g = len(GAMES)
    estimate, se = sum(diffs) / g, math.sqrt(sum(variances)) / g
    df = sum(variances) ** 2 / sum(parts)
    half = stats.t.ppf(0.975, df) * se
    p = 2 * stats.t.sf(abs(estimate) / se, df)
    tost = max(stats.t.sf((estimate + margin) / se, df), stats.t.cdf((estimate - margin) / se, df))
    low, high = sorted(per_game.values())  # Holm over the two games, by hand
    holm = {low: min(1.0, 2 * low), high: max(min(1.0, 2 * low), high)}
    return {"estimate": estimate, "ci": (estimate - half, estimate + half), "p": p,
            "tost_p": tost, "diffs": dict(zip(GAMES, diffs, strict=True)),
            "p_adj": {game: holm[per_game[game]] for game in GAMES}}  # fmt: skip


def _pool_json(*options: str) -> dict:
    from typer.testing import CliRunner

    from cli.main import app

    result = CliRunner().invoke(app, ["pool", str(FOLDER), "-f", "json", *options])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("arm", ["scale_gradient", "depth_loss_scale"])
def test_the_pooled_difference_recomputed_by_hand_is_what_pool_prints(normalised, arm):
    mine = _pooled(normalised, arm)
    table = _pool_json() if arm == "scale_gradient" else _pool_json("--arm", arm)
    assert table["estimate"] == pytest.approx(mine["estimate"], rel=1e-9)
    assert table["ci"] == pytest.approx(list(mine["ci"]), rel=1e-9)
    assert table["p"] == pytest.approx(mine["p"], rel=1e-7, abs=1e-15)
    assert table["tost_p"] == pytest.approx(mine["tost_p"], rel=1e-7, abs=1e-15)
    assert table["confirmatory"] is (arm == "scale_gradient")


def test_the_quoted_figures(normalised):
    for arm, quoted in QUOTED.items():
        mine = _pooled(normalised, arm)
        assert round(mine["estimate"], 3) == quoted["estimate"], arm
        assert [round(x, 3) for x in mine["ci"]] == quoted["ci"], arm
        for game in GAMES:
            assert round(mine["diffs"][game], 3) == quoted["diffs"][game], (arm, game)
            assert mine["p_adj"][game] < 0.001, (arm, game)  # printed "<0.001"
        assert mine["p"] < 0.001 and mine["tost_p"] > 0.99  # "<0.001*", "1.00*": lower
