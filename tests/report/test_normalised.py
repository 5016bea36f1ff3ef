"""The normalised return (experiments/report/runs/normalised.py): (R / scale - R_rand) /
(R_ref - R_rand) per run, by hand; a diverged run or one without a final return counts 0."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from experiments.base.errors import ConfigError
from experiments.report.runs.normalised import COLUMN, add_normalised

NORMALISATION = {"catch": (0.8, -0.6), "breakout": (10.0, 0.38)}


def _runs(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["task", "final_return", "diverged", "reward_scale"])


def test_by_hand():
    runs = _runs([
        ("catch", 0.8, 0, 1.0),  # the reference: 1
        ("catch", -0.6, 0, 1.0),  # random: 0
        ("catch", 0.1, 0, 1.0),  # (0.1 + 0.6) / 1.4 = 0.5
        ("catch", 10.0, 0, 100.0),  # scaled x100: 0.1 -> 0.5
        ("breakout", 5.19, 0, None),  # no scale: 1; (5.19 - 0.38) / 9.62 = 0.5
        ("breakout", 0.0, 0, 1.0),  # below random: -0.38 / 9.62
    ])  # fmt: skip
    got = add_normalised(runs, NORMALISATION)[COLUMN].tolist()
    assert got == pytest.approx([1.0, 0.0, 0.5, 0.5, 0.5, -0.38 / 9.62], rel=1e-12)


def test_a_diverged_run_or_no_return_counts_as_random():
    runs = _runs([
        ("catch", 0.8, 1, 1.0),  # diverged: 0 whatever its return
        ("catch", None, 0, 1.0),  # no final return: 0
        ("catch", math.inf, 0, 1.0),  # not finite: 0
        ("catch", 0.8, 0.0, 1.0),
    ])  # fmt: skip
    assert add_normalised(runs, NORMALISATION)[COLUMN].tolist() == [0.0, 0.0, 0.0, 1.0]


def test_the_frame_is_copied_not_changed():
    runs = _runs([("catch", 0.1, 0, 1.0)])
    out = add_normalised(runs, NORMALISATION)
    assert COLUMN not in runs and list(out.columns) == [*runs.columns, COLUMN]


def test_a_task_without_its_declared_references_is_refused():
    runs = _runs([("catch", 0.1, 0, 1.0), ("cartpole", 400.0, 0, 1.0)])
    with pytest.raises(ConfigError) as err:
        add_normalised(runs, NORMALISATION)
    assert str(err.value) == (
        "normalised_return needs task 'cartpole''s R_ref and R_rand, declared before the runs "
        "(a study's record); declared for: breakout, catch"
    )
    with pytest.raises(ConfigError, match="declared for: none$"):
        add_normalised(runs, {})


def test_a_reference_not_above_random_is_refused():
    runs = _runs([("catch", 0.1, 0, 1.0)])
    with pytest.raises(ConfigError, match=r"^task 'catch': R_ref -0.6 is not above R_rand -0.6$"):
        add_normalised(runs, {"catch": (-0.6, -0.6)})
