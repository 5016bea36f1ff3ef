"""Support sizes from a task's bounds (experiments/muzero/support_sizes.py), by hand:
h(x) = sign(x) (sqrt(|x| + 1) - 1) + 0.001 x, and S the smallest integer >= 1 with h(bound) <= S."""

from __future__ import annotations

import dataclasses

import pytest

from experiments.base.errors import ConfigError
from experiments.muzero.config import NetworkConfig
from experiments.muzero.support_sizes import (
    FALLBACK_SUPPORT_SIZE,
    SupportSizes,
    covering_size,
    h_scalar,
    resolve_support_sizes,
    value_bound,
)
from experiments.tasks import TaskConfig

AUTO = NetworkConfig(value_support_size=None, reward_support_size=None)


@pytest.mark.parametrize(
    ("x", "h"),
    [
        (0.0, 0.0),
        (3.0, 1.003),  # sqrt(4) - 1 + 0.003
        (-3.0, -1.003),  # odd
        (8.0, 2.008),  # sqrt(9) - 1 + 0.008
        (99.0, 9.099),  # sqrt(100) - 1 + 0.099
    ],
)
def test_h_by_hand(x, h):
    assert h_scalar(x) == pytest.approx(h, abs=1e-12)


@pytest.mark.parametrize(
    ("bound", "size"),
    [
        (0.0, 1),  # h = 0, but S >= 1
        (1.0, 1),  # sqrt(2) - 1 + 0.001 = 0.415
        (3.0, 2),  # 1.003 > 1
        (99.0, 10),  # 9.099
        (100.0, 10),  # sqrt(101) - 1 + 0.1 = 9.150
        (-100.0, 10),  # |bound|
        (120.0, 11),  # sqrt(121) - 1 + 0.12 = 10.12
    ],
)
def test_covering_size_by_hand(bound, size):
    assert covering_size(bound) == size


def test_value_bound_takes_the_smaller_of_return_and_reward_bounds():
    # catch: returns in [-1, 1]; |reward| <= 1, / (1 - 0.997) = 333.3: the return's 1 is smaller
    bound, why = value_bound(TaskConfig(name="catch"), discount=0.997)
    assert bound == 1.0 and why == "max |episode return| 1"
    # cartpole: returns in [0, 500]; |reward| <= 1, 1 / (1 - 0.997) = 333.33 is smaller
    bound, why = value_bound(TaskConfig(name="cartpole"), discount=0.997)
    assert bound == pytest.approx(1 / 0.003) and why.startswith("max |reward| 1 / (1 - discount")
    # the same with discount 0.99: 100 < 500
    assert value_bound(TaskConfig(name="cartpole"), discount=0.99)[0] == pytest.approx(100.0)


def test_value_bound_none_where_the_task_declares_none():
    breakout = TaskConfig(name="minatar", id="breakout")  # no return range, |reward| <= 1
    assert value_bound(breakout, discount=0.997)[0] == pytest.approx(1 / 0.003)
    assert value_bound(breakout, discount=1.0) is None  # 1 / (1 - 1): no bound
    invaders = TaskConfig(name="minatar", id="space_invaders")  # no bound on one step's reward
    assert value_bound(invaders, discount=0.997) is None


def test_null_sizes_from_the_task():
    # catch: value bound 1 -> S 1; reward 1 -> 1
    assert resolve_support_sizes(TaskConfig(), AUTO, discount=0.997) == SupportSizes(1, 1)
    # catch with rewards x100: bounds 100 -> h(100) = 9.15 -> 10
    scaled = TaskConfig(reward_scale=100.0)
    assert resolve_support_sizes(scaled, AUTO, discount=0.997) == SupportSizes(10, 10)
    # cartpole: 333.33 -> sqrt(334.33) - 1 + 0.333 = 17.62 -> 18; reward 1 -> 1
    cartpole = TaskConfig(name="cartpole")
    assert resolve_support_sizes(cartpole, AUTO, discount=0.997) == SupportSizes(18, 1)
    # space_invaders declares no bound: the fallback for both
    invaders = TaskConfig(name="minatar", id="space_invaders")
    fallback = SupportSizes(FALLBACK_SUPPORT_SIZE, FALLBACK_SUPPORT_SIZE)
    assert resolve_support_sizes(invaders, AUTO, discount=0.997) == fallback


def test_an_explicit_size_is_kept_when_it_covers_or_nothing_is_declared():
    network = NetworkConfig(value_support_size=5, reward_support_size=2)  # the defaults
    assert resolve_support_sizes(TaskConfig(), network, discount=0.997) == SupportSizes(5, 2)
    invaders = TaskConfig(name="minatar", id="space_invaders")
    assert resolve_support_sizes(invaders, network, discount=0.997) == SupportSizes(5, 2)


def test_an_explicit_size_too_small_is_one_line_naming_the_smallest():
    scaled = TaskConfig(reward_scale=100.0)
    network = NetworkConfig(value_support_size=9, reward_support_size=10)
    with pytest.raises(ConfigError) as err:
        resolve_support_sizes(scaled, network, discount=0.997)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("muzero.network.value_support_size=9 does not cover")
    assert "h(100) = 9.15 > 9" in message and "smallest size that covers it is 10" in message


def test_a_scalar_head_never_refuses():
    network = dataclasses.replace(
        NetworkConfig(), support="scalar", value_support_size=1, reward_support_size=1
    )
    scaled = TaskConfig(reward_scale=100.0)
    assert resolve_support_sizes(scaled, network, discount=0.997) == SupportSizes(1, 1)
