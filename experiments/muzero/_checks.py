"""Argument checks shared by the NumPy and the compiled search (private).

Each returns the checked value as a plain Python number or string, or raises
:class:`~experiments.base.errors.ConfigError` with a one-line message naming the bad value.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from experiments.base.errors import ConfigError, unknown_choice
from experiments.muzero.config import Q_FORMS


def check_real(name: str, value: object, bound: str) -> float:
    """A finite real number (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ConfigError(f"{name} must be a finite number {bound}, got {value!r}")
    return float(value)


def check_unit(name: str, value: object) -> float:
    """A finite number in [0, 1]."""
    number = check_real(name, value, "in [0, 1]")
    if not 0.0 <= number <= 1.0:
        raise ConfigError(f"{name} must be a finite number in [0, 1], got {value!r}")
    return number


def check_positive(name: str, value: object, *, allow_zero: bool = False) -> float:
    """A finite number > 0 (>= 0 with ``allow_zero``)."""
    bound = ">= 0" if allow_zero else "> 0"
    number = check_real(name, value, bound)
    if number < 0 or (number == 0 and not allow_zero):
        raise ConfigError(f"{name} must be a finite number {bound}, got {value!r}")
    return number


def check_count(name: str, value: object) -> int:
    """An integer >= 1 (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ConfigError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def check_temperature(value: object) -> float:
    """A visit-count temperature: a finite number >= 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"temperature must be a finite number >= 0, got {value!r}")
    if value < 0:
        raise ConfigError(f"temperature must be a finite number >= 0, got {value!r}")
    return float(value)


def check_q_form(value: object) -> str:
    """One of :data:`~experiments.muzero.config.Q_FORMS`."""
    if not isinstance(value, str) or value not in Q_FORMS:
        raise unknown_choice("q_form", value, Q_FORMS)
    return value
