"""Support sizes that cover a task's values and rewards, without TensorFlow.

MuZero's categorical heads (:mod:`experiments.muzero.support`) cover ``h(x)`` in ``[-S, S]``
with ``h(x) = sign(x) (sqrt(|x| + 1) - 1) + eps x``. :func:`resolve_support_sizes` sizes
``muzero.network.value_support_size`` / ``reward_support_size`` left ``null`` from the task's
declared bounds and refuses an explicit size that does not cover them; the job checks it when
its config is validated, before anything runs.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from experiments.base.errors import ConfigError
from experiments.muzero.config import NetworkConfig
from experiments.tasks import TaskConfig

__all__ = [
    "EPSILON",
    "FALLBACK_SUPPORT_SIZE",
    "SupportSizes",
    "covering_size",
    "h_scalar",
    "resolve_support_sizes",
    "value_bound",
]

EPSILON = 0.001
"""The epsilon of h(x) (Pohlen et al., 2018)."""

FALLBACK_SUPPORT_SIZE = 300
"""The size a ``null`` support gets where the task declares no bound (MuZero's Atari heads)."""


def h_scalar(x: float) -> float:
    """:func:`h_transform` of one Python float, in float64."""
    return math.copysign(math.sqrt(abs(x) + 1.0) - 1.0, x) + EPSILON * x


def covering_size(bound: float) -> int:
    """The smallest integer ``S >= 1`` with ``h(bound) <= S``: the support that covers
    ``[-bound, bound]``."""
    return max(1, math.ceil(h_scalar(abs(bound))))


def value_bound(task: TaskConfig, *, discount: float) -> tuple[float, str] | None:
    """The largest |value target| the task allows, with a few words on where it comes from.

    Two bounds, both scaled by ``task.reward_scale``: the largest |episode return| (the return
    range's larger end in absolute value), and ``max |reward| / (1 - discount)`` (a discounted
    n-step target that bootstraps from a value within the bound stays within it). The smaller
    one is used; ``None`` when the task declares neither (or only the second with discount 1).
    """
    bounds = []
    if task.return_range is not None:
        bound = max(abs(task.return_range[0]), abs(task.return_range[1]))
        bounds.append((bound, f"max |episode return| {bound:g}"))
    reward = task.max_abs_reward
    if reward is not None and discount < 1:
        bound = reward / (1.0 - discount)
        bounds.append((bound, f"max |reward| {reward:g} / (1 - discount {discount:g})"))
    return min(bounds, key=lambda item: item[0]) if bounds else None


class SupportSizes(NamedTuple):
    """Resolved support sizes S of the value and the reward heads."""

    value: int
    reward: int


def _resolve(setting: str, size: int | None, bound: tuple[float, str] | None, check: bool) -> int:
    if bound is None:
        return FALLBACK_SUPPORT_SIZE if size is None else size
    need = covering_size(bound[0])
    if size is None:
        return need
    if check and size < need:
        value, why = bound
        raise ConfigError(
            f"muzero.network.{setting}={size} does not cover the task's bound {value:g} ({why}; "
            f"h({value:g}) = {h_scalar(value):.4g} > {size}); the smallest size that covers it "
            f"is {need}, or set {setting}=null to size it automatically"
        )
    return size


def resolve_support_sizes(
    task: TaskConfig, network: NetworkConfig, *, discount: float
) -> SupportSizes:
    """The value and reward support sizes of a run, checked against the task.

    A size left ``None`` (``null`` in the YAML) becomes the smallest S >= 1 covering the bound:
    the value bound from :func:`value_bound`, the reward bound the task's ``max_abs_reward``
    (both times ``task.reward_scale``). Where the task declares no bound, ``None`` becomes
    :data:`FALLBACK_SUPPORT_SIZE` and an explicit size is taken as it is. With
    ``network.support == "scalar"`` the sizes are unused and never refused.

    Args:
      task: the task (bounds and reward scale).
      network: the settings holding ``value_support_size`` and ``reward_support_size``.
      discount: the MuZero discount (tightens the value bound where ``max_abs_reward`` is known).

    Returns:
      ``SupportSizes(value, reward)``.

    Raises:
      ConfigError: an explicit size that does not cover a declared bound (e.g. catch with
        ``task.reward_scale=100``: the value bound 100 needs S >= 10 since h(100) = 9.15).
    """
    check = network.support == "categorical"
    reward = task.max_abs_reward
    reward_bound = None if reward is None else (reward, f"max |reward| {reward:g}")
    return SupportSizes(
        value=_resolve(
            "value_support_size",
            network.value_support_size,
            value_bound(task, discount=discount),
            check,
        ),
        reward=_resolve("reward_support_size", network.reward_support_size, reward_bound, check),
    )
