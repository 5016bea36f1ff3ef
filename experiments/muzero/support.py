"""Value and reward supports: the invertible transform h(x), two-hot targets, scalar heads.

MuZero (Schrittwieser et al., 2020, Appendix F) predicts values and rewards as categorical
distributions over the integers ``-S..S`` after scaling them with the invertible transform
``h(x) = sign(x) (sqrt(|x| + 1) - 1) + eps x`` (Pohlen et al., 2018), eps = 0.001. A scalar
target ``x`` becomes the two-hot distribution on the two integers around ``h(x)``; a prediction
becomes a scalar by taking the expectation over the bins and inverting ``h`` in closed form.

The support size S must cover the task: a categorical head represents ``|x|`` up to
``h^-1(S)`` only (two-hot targets beyond it are clipped). :func:`resolve_support_sizes` sizes
``muzero.network.value_support_size`` / ``reward_support_size`` left ``null`` from the task's
declared bounds, and refuses an explicit size that does not cover them.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, NamedTuple

import tensorflow as tf

from experiments.errors import ConfigError, unknown_choice

if TYPE_CHECKING:
    from experiments.muzero.config import NetworkConfig
    from experiments.tasks import TaskConfig

__all__ = [
    "EPSILON",
    "FALLBACK_SUPPORT_SIZE",
    "Support",
    "SupportSizes",
    "covering_size",
    "h_inverse",
    "h_scalar",
    "h_transform",
    "resolve_support_sizes",
    "two_hot",
    "value_bound",
]

EPSILON = 0.001
FALLBACK_SUPPORT_SIZE = 300
"""S of an automatic head whose task declares no bound: MuZero's Atari heads (Appendix F: 601
bins for value and reward), which cover |x| up to h^-1(300) = 5.9e4."""


def h_transform(x: tf.Tensor) -> tf.Tensor:
    """``h(x) = sign(x) (sqrt(|x| + 1) - 1) + eps x``, elementwise."""
    x = tf.convert_to_tensor(x, tf.float32)
    return tf.sign(x) * (tf.sqrt(tf.abs(x) + 1.0) - 1.0) + EPSILON * x


def h_inverse(y: tf.Tensor) -> tf.Tensor:
    """The closed-form inverse of :func:`h_transform`, elementwise.

    ``h^-1(y) = sign(y) (((sqrt(1 + 4 eps (|y| + 1 + eps)) - 1) / (2 eps))^2 - 1)``, evaluated as
    ``root = 2 (|y| + 1 + eps) / (1 + sqrt(...))`` (the same number, multiplied through by the
    conjugate) to avoid the cancellation in ``sqrt(...) - 1``: in float32 the textbook form gives
    ``h^-1(0) = -2.6e-5``, this one ``2.4e-7``.
    """
    y = tf.convert_to_tensor(y, tf.float32)
    inner = tf.abs(y) + 1.0 + EPSILON
    root = 2.0 * inner / (1.0 + tf.sqrt(1.0 + 4.0 * EPSILON * inner))
    return tf.sign(y) * (tf.square(root) - 1.0)


def two_hot(y: tf.Tensor, size: int) -> tf.Tensor:
    """Two-hot encoding of already-transformed values on the integer bins ``-size..size``.

    Args:
      y: ``[B]`` values (clipped to ``[-size, size]``).
      size: S.

    Returns:
      ``[B, 2S+1]`` distributions whose mean over the bins is ``clip(y)``.
    """
    y = tf.clip_by_value(tf.convert_to_tensor(y, tf.float32), -float(size), float(size))
    low = tf.floor(y)
    upper_weight = y - low
    low_index = tf.cast(low, tf.int32) + size
    depth = 2 * size + 1
    # At y == size the upper index is out of range: tf.one_hot gives zeros there, weight 0 anyway.
    return (
        tf.one_hot(low_index, depth) * (1.0 - upper_weight)[:, None]
        + tf.one_hot(low_index + 1, depth) * upper_weight[:, None]
    )


@dataclasses.dataclass(frozen=True)
class Support:
    """How a value or reward head encodes scalars.

    Attributes:
      kind: ``categorical`` (2S+1 logits over h(x), two-hot cross-entropy) or ``scalar`` (one
        output, squared error).
      size: S (ignored by ``scalar``).
    """

    kind: str
    size: int

    def __post_init__(self) -> None:
        if self.kind not in ("categorical", "scalar"):
            raise unknown_choice("support", self.kind, ("categorical", "scalar"))

    @property
    def num_outputs(self) -> int:
        """Width of the head: 2S+1 or 1."""
        return 2 * self.size + 1 if self.kind == "categorical" else 1

    def to_scalar(self, logits: tf.Tensor) -> tf.Tensor:
        """``[B, num_outputs]`` head outputs -> ``[B]`` scalars."""
        if self.kind == "scalar":
            return logits[:, 0]
        bins = tf.range(-self.size, self.size + 1, dtype=tf.float32)
        return h_inverse(tf.reduce_sum(tf.nn.softmax(logits, axis=-1) * bins, axis=-1))

    def encode(self, x: tf.Tensor) -> tf.Tensor:
        """``[B]`` scalars -> ``[B, num_outputs]`` targets (two-hot of h(x), or x itself)."""
        x = tf.convert_to_tensor(x, tf.float32)
        if self.kind == "scalar":
            return x[:, None]
        return two_hot(h_transform(x), self.size)

    def loss(self, logits: tf.Tensor, x: tf.Tensor) -> tf.Tensor:
        """Per-sample loss ``[B]`` of head outputs ``[B, num_outputs]`` against scalars ``[B]``."""
        target = tf.stop_gradient(self.encode(x))
        if self.kind == "scalar":
            return tf.square(logits[:, 0] - target[:, 0])
        return tf.nn.softmax_cross_entropy_with_logits(labels=target, logits=logits)


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
