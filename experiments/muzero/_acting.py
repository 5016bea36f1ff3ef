"""Acting from a search: the visit-count temperature schedule and the action draw.

Used by self-play; re-exported by :mod:`experiments.muzero.reference_search`. The pseudocode
(Schrittwieser et al., 2020, ``select_action`` / ``visit_softmax_temperature_fn``) samples an
action with probability proportional to ``visit_count ** (1 / T)``, T from a schedule over
training steps (1.0, then 0.5 after 500k steps, then 0.25 after 750k); T = 0 means the most
visited action.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from experiments.base.errors import ConfigError
from experiments.muzero._checks import check_temperature

__all__ = ["select_action", "visit_softmax_temperature"]


def visit_softmax_temperature(step: int, *, schedule: Sequence[tuple[int, float]]) -> float:
    """The temperature of the last schedule entry whose start step is <= ``step``.

    Args:
      step: the current training step, >= the first entry's start.
      schedule: ``((start_step, temperature), ...)`` with strictly increasing start steps and
        temperatures >= 0, e.g. ``((0, 1.0), (500, 0.5), (750, 0.25))``.

    Returns:
      The temperature in force at ``step``.

    Raises:
      ConfigError: an empty or unsorted schedule, a negative temperature, or a step before the
        schedule starts.
    """
    entries = [tuple(entry) for entry in schedule]
    if not entries or any(len(entry) != 2 for entry in entries):
        raise ConfigError(
            f"temperature schedule {schedule!r} must be a non-empty sequence of "
            "(start_step, temperature) pairs"
        )
    starts = [entry[0] for entry in entries]
    if any(b <= a for a, b in zip(starts, starts[1:], strict=False)):
        raise ConfigError(f"temperature schedule start steps {starts} must strictly increase")
    for _, temperature in entries:
        if not (isinstance(temperature, int | float) and math.isfinite(temperature)) or (
            temperature < 0
        ):
            raise ConfigError(
                f"temperature {temperature!r} in schedule must be a finite number >= 0"
            )
    if step < starts[0]:
        raise ConfigError(f"step {step} is before the temperature schedule starts ({starts[0]})")
    current = entries[0][1]
    for start, temperature in entries:
        if start > step:
            break
        current = temperature
    return float(current)


def select_action(
    visit_counts: np.ndarray, *, temperature: float, rng: np.random.Generator
) -> np.ndarray:
    """Draws one action per row from visit counts.

    Args:
      visit_counts: [B, A] non-negative visit counts, each row with a positive sum.
      temperature: >= 0. 0: the most visited action, ties broken uniformly at random by ``rng``.
        T > 0: action ``a`` with probability ``N_a ** (1 / T) / sum_b N_b ** (1 / T)``.
      rng: the only source of randomness ([B, A] uniforms drawn at T = 0, [B] otherwise).

    Returns:
      [B] int64 actions.

    Raises:
      ConfigError: a bad temperature, a non-2-D or negative ``visit_counts``, or a row summing to 0.
    """
    temperature = check_temperature(temperature)
    if not isinstance(rng, np.random.Generator):
        raise ConfigError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    counts = np.asarray(visit_counts, dtype=np.float64)
    if counts.ndim != 2 or counts.shape[1] < 1:
        raise ConfigError(f"visit_counts has shape {counts.shape}; expected [B, A] with A >= 1")
    peak = counts.max(axis=1, keepdims=True)  # [B, 1]
    if (counts < 0).any() or (peak <= 0).any():
        raise ConfigError("visit_counts must be >= 0 with a positive sum in every row")
    if temperature == 0:
        is_max = counts == peak
        return np.argmax(np.where(is_max, rng.random(counts.shape), -1.0), axis=1)
    weights = (counts / peak) ** (1.0 / temperature)  # scaled by the peak: no overflow
    cumulative = np.cumsum(weights, axis=1)  # [B, A]
    threshold = rng.random(counts.shape[0])[:, None] * cumulative[:, -1:]
    action = (cumulative <= threshold).sum(axis=1)
    return np.minimum(action, counts.shape[1] - 1)
