"""The searches' argument checks (experiments/muzero/_checks.py): each returns the value as a
plain Python number or string, or one line naming the bad value; bools are never numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from experiments.base.errors import ConfigError
from experiments.muzero._checks import (
    check_count,
    check_positive,
    check_q_form,
    check_real,
    check_temperature,
    check_unit,
)
from experiments.muzero.config import Q_FORMS


def _refused(check, *args, **kwargs) -> str:
    with pytest.raises(ConfigError) as err:
        check(*args, **kwargs)
    message = str(err.value)
    assert "\n" not in message
    return message


def test_real_returns_a_float():
    assert check_real("x", 3, "anything") == 3.0 and type(check_real("x", 3, "")) is float
    assert check_real("x", np.float32(0.5), "") == 0.5
    assert type(check_real("x", np.float32(0.5), "")) is float


@pytest.mark.parametrize("bad", [True, "1", None, math.nan, math.inf, -math.inf])
def test_real_refuses(bad):
    assert _refused(check_real, "discount", bad, "in (0, 1]") == (
        f"discount must be a finite number in (0, 1], got {bad!r}"
    )


@pytest.mark.parametrize(("value", "ok"), [(0, True), (1, True), (0.25, True), (-1e-9, False),
                                           (1.0000001, False)])  # fmt: skip
def test_unit_interval_closed(value, ok):
    if ok:
        assert check_unit("dirichlet_fraction", value) == float(value)
    else:
        message = _refused(check_unit, "dirichlet_fraction", value)
        assert message == f"dirichlet_fraction must be a finite number in [0, 1], got {value!r}"


def test_positive_and_zero():
    assert check_positive("c", 2.5) == 2.5
    assert _refused(check_positive, "c", 0) == "c must be a finite number > 0, got 0"
    assert check_positive("c", 0, allow_zero=True) == 0.0
    assert _refused(check_positive, "c", -1, allow_zero=True) == (
        "c must be a finite number >= 0, got -1"
    )


def test_count():
    assert check_count("num_simulations", 1) == 1
    assert type(check_count("n", np.int64(7))) is int
    for bad in (0, -3, 2.0, True, "5"):
        assert _refused(check_count, "n", bad) == f"n must be an integer >= 1, got {bad!r}"


def test_temperature():
    assert check_temperature(0) == 0.0 and check_temperature(0.25) == 0.25
    for bad in (-0.5, math.nan, math.inf, False, "1"):
        message = _refused(check_temperature, bad)
        assert message == f"temperature must be a finite number >= 0, got {bad!r}"


def test_q_form():
    for form in Q_FORMS:
        assert check_q_form(form) == form
    message = _refused(check_q_form, "pseudo")
    assert message == f"unknown q_form 'pseudo'; choose one of: {', '.join(sorted(Q_FORMS))}"
    assert _refused(check_q_form, 3).startswith("unknown q_form 3;")
