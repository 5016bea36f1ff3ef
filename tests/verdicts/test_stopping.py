"""One definition of divergence and budgets: the streaming check and the stored-rows check agree."""

from __future__ import annotations

import math

import pytest

from experiments.base.errors import ConfigError
from experiments.verdicts.stability import stability_summary
from experiments.verdicts.stopping import Budget, DivergenceCheck, DivergenceRule, first_divergence


def _rows(losses):
    return [{"step": i + 1, "loss/total": loss, "nonfinite": 0.0} for i, loss in enumerate(losses)]


def test_loss_under_factor_is_not_divergence():
    check = DivergenceCheck(DivergenceRule(factor=10.0, reference_steps=2))
    rows = _rows([1.0, 3.0, 19.9, 20.1])
    # reference 2.0: 19.9 < 20 passes, 20.1 > 20 diverges
    assert [check.diverged(r) for r in rows] == [False, False, False, True]


@pytest.mark.parametrize(
    "row",
    [
        {"loss/total": 1.0, "nonfinite": 1.0},
        {"loss/total": float("nan")},
        {"loss/value": float("-inf")},
        {"grad/x": float("inf")},
        {"nonfinite": float("nan")},
    ],
)
def test_non_finite_rows_diverge_even_before_the_reference(row):
    assert DivergenceCheck(DivergenceRule(factor=10, reference_steps=5)).diverged(row)


def test_a_spike_after_ten_steps_at_one_is_divergence_for_both_checks():
    rows = _rows([1.0] * 10 + [1e4])
    rule = DivergenceRule()  # factor 100, reference 10 steps
    check = DivergenceCheck(rule)
    assert [check.diverged(r) for r in rows] == [False] * 10 + [True]
    assert first_divergence(rows, rule) == 11
    summary = stability_summary(rows, threshold=None, divergence=rule)
    assert summary["diverged"] == 1 and summary["diverged_step"] == 11


def test_reference_is_the_mean_of_the_first_rows_with_a_loss():
    rule = DivergenceRule(factor=2.0, reference_steps=3)
    rows = [{"step": 1}, *_rows([1.0, 2.0, 3.0])[0:3], {"step": 5, "loss/total": 4.1}]
    rows[1]["step"], rows[2]["step"], rows[3]["step"] = 2, 3, 4
    # reference = (1 + 2 + 3) / 3 = 2; 4.1 > 2 x 2
    assert first_divergence(rows, rule) == 5
    assert first_divergence(rows[:-1] + [{"step": 5, "loss/total": 4.0}], rule) is None


@pytest.mark.parametrize(
    "kwargs",
    [{"factor": 1.0}, {"factor": math.inf}, {"factor": "x"}, {"reference_steps": 0}],
)
def test_bad_rules_are_refused(kwargs):
    with pytest.raises(ConfigError, match="divergence"):
        DivergenceRule(**kwargs)


def test_budget():
    budget = Budget(max_wall_s=2.0, max_steps=3)
    assert not budget.out_of_time(1.99) and budget.out_of_time(2.0)
    assert not budget.out_of_steps(2) and budget.out_of_steps(3)
    assert not Budget().out_of_time(1e9) and not Budget().out_of_steps(10**9)
    with pytest.raises(ConfigError, match=r"budget.max_steps=0 is out of range"):
        Budget(max_steps=0)
