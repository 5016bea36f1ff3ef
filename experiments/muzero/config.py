"""Typed, frozen configuration of the MuZero job, validated on construction.

:class:`MuZeroConfig` is the schema of the ``muzero`` section of ``conf/`` (registered in Hydra's
ConfigStore as ``muzero/schema``; ``conf/muzero/default.yaml`` sets its values, the network
settings nested under ``network:``): Hydra checks keys and types, ``__post_init__`` ranges and
names. Importable without TensorFlow.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from experiments.base.errors import ConfigError, unknown_choice
from experiments.muzero.options import LOSS_SCALES, NORMALISATIONS
from experiments.muzero.options import Q_FORMS as _Q_FORMS

__all__ = [
    "NETWORKS",
    "OPTIMIZERS",
    "Q_FORMS",
    "SEED_AXIS_REMOVED",
    "SUPPORTS",
    "MuZeroConfig",
    "NetworkConfig",
]

SUPPORTS = ("categorical", "scalar")
"""Value/reward heads: categorical over h(x) with two-hot targets, or a scalar with MSE."""
OPTIMIZERS = ("adam", "sgd", "momentum")
"""The learner's update: Keras Adam, Keras SGD with momentum (``v = m v - lr g; w += v``), or the
MuZero pseudocode's TF1 ``MomentumOptimizer`` (``a = m a + g; w -= lr a``); see
:mod:`experiments.muzero.optimizers`."""
NETWORKS = ("representation", "dynamics", "prediction")
"""MuZero's three networks, as ``muzero.freeze`` names them."""
SEED_AXIS_REMOVED = (
    "muzero.seed_axis=true is no longer supported: the seed axis was removed (1.07x runs/h on "
    "Catch, 0.82x on Breakout on 2 cores, and a seed's numbers changed with its group on "
    "AVX2-only CPUs; docs/performance.md); drop the override"
)
"""Why ``muzero.seed_axis=true`` is refused, in one line (the key is retired: only ``false``)."""
Q_FORMS = tuple(_Q_FORMS)
"""The names of the search's value score forms (:data:`experiments.muzero.options.Q_FORMS`)."""


def _positive_int(owner: str, name: str, value: Any, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{owner}.{name}={value!r} is invalid; expected an integer >= {minimum}")


def _float_in(owner: str, name: str, value: Any, lo: float, hi: float, *, lo_open: bool) -> None:
    ok = not isinstance(value, bool) and isinstance(value, int | float)
    if ok:
        ok = (value > lo if lo_open else value >= lo) and value <= hi
    if not ok:
        bracket = "(" if lo_open else "["
        raise ConfigError(
            f"{owner}.{name}={value!r} is invalid; expected a number in {bracket}{lo:g}, {hi:g}]"
        )


def _pairs(schedule: Any) -> tuple[tuple[int, float], ...]:
    """``[[0, 1.0], [400, 0.5]]`` -> ``((0, 1.0), (400, 0.5))``; ``()`` if not of that shape."""
    try:
        pairs = tuple((step, temperature) for step, temperature in schedule)
    except (TypeError, ValueError):
        return ()
    ok = all(
        isinstance(s, int)
        and not isinstance(s, bool)
        and isinstance(t, int | float)
        and not isinstance(t, bool)
        for s, t in pairs
    )
    return tuple((s, float(t)) for s, t in pairs) if ok else ()


def _listed(value: Any) -> Any:
    """Tuples (and OmegaConf lists) as plain lists, for messages."""
    if isinstance(value, str) or not hasattr(value, "__iter__"):
        return value
    return [_listed(v) for v in value]


def _choice(kind: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise unknown_choice(kind, value, choices)


@dataclasses.dataclass(frozen=True)
class NetworkConfig:
    """Sizes and options of the three MLP networks.

    Attributes:
      hidden_size: H, the size of the hidden state.
      width: units of each hidden Dense layer.
      depth: hidden Dense layers per network trunk (0 = linear).
      normalisation: a name in :data:`~experiments.muzero.options.NORMALISATIONS`, applied to
        every hidden state.
      support: one of :data:`SUPPORTS`.
      value_support_size: S; the categorical value head has 2S+1 bins over h(value) in [-S, S].
        ``None`` (null): sized from the task (``experiments.muzero.support.resolve_support_sizes``).
      reward_support_size: likewise for the reward head.
    """

    hidden_size: int = 32
    width: int = 64
    depth: int = 1
    normalisation: str = "minmax"
    support: str = "categorical"
    value_support_size: int | None = 5
    reward_support_size: int | None = 2

    def __post_init__(self) -> None:
        _positive_int("network", "hidden_size", self.hidden_size)
        _positive_int("network", "width", self.width)
        _positive_int("network", "depth", self.depth, minimum=0)
        NORMALISATIONS.lookup(self.normalisation)
        _choice("support", self.support, SUPPORTS)
        for name in ("value_support_size", "reward_support_size"):
            if getattr(self, name) is not None:  # None: sized from the task
                _positive_int("network", name, getattr(self, name))


@dataclasses.dataclass(frozen=True)
class MuZeroConfig:
    """Everything the MuZero job needs besides the task, variant, placement and seed.

    Attributes:
      network: the networks' settings.
      training_steps: learner updates in the default budget.
      num_envs: parallel self-play environments (one batched search over all of them).
      selfplay_interval: one batched move of all self-play environments (num_envs transitions)
        every this many learner updates (the replay ratio knob: acting costs more than learning).
      warmup_steps: batched environment steps taken before the first update.
      num_simulations: MCTS simulations per move.
      discount: gamma.
      dirichlet_alpha: root noise concentration.
      dirichlet_fraction: root noise weight (0.25 in the paper).
      pb_c_base: c2 of pUCT.
      pb_c_init: c1 of pUCT.
      q_form: one of :data:`Q_FORMS`, the search's value score.
      temperature_schedule: ``[[from_step, temperature], ...]``, the visit-count softmax
        temperature from each training step on (held as a tuple of ``(int, float)`` pairs).
      unroll_steps: K.
      td_steps: n of the n-step value target.
      batch_size: positions per update.
      replay_capacity: positions kept in the replay buffer. Small on purpose: with n-step targets
        longer than a Catch episode the value targets are Monte Carlo returns of the policy that
        played, and a short memory keeps them fresh (catch learns ~2x faster at 5000 than 20000).
      optimizer: one of :data:`OPTIMIZERS`.
      learning_rate: initial learning rate.
      lr_decay_rate: the learning rate after ``step`` updates is ``learning_rate *
        lr_decay_rate ** (step / lr_decay_steps)`` (continuous, as the pseudocode's).
      lr_decay_steps: see above.
      momentum: the momentum of ``sgd`` and ``momentum`` (unused by Adam).
      weight_decay: L2 coefficient c in ``c * sum(w**2) / 2`` over all weights.
      value_loss_weight: factor of the value loss (the paper uses 0.25 with Reanalyse).
      loss_scale: a name in :data:`~experiments.muzero.options.LOSS_SCALES`.
      eval_every: updates between evaluations (also at the last update).
      eval_episodes: evaluation episodes (run as one batch).
      freeze: networks (``representation``, ``dynamics``, ``prediction``) whose gradients are
        computed and logged but not applied (an optimizer's ``var_list`` without them); held as
        a tuple. Not the same as ``stop_gradient``, which changes the gradients themselves.
      jit_compile: compile the train step with XLA.
      seed_axis: retired; only ``false``. The seed axis (the seeds of one configuration trained
        as one computation) was removed (docs/performance.md, "The seed axis, removed"); the key
        stays because the configs and study records written while it existed hold
        ``muzero.seed_axis: false``, and a run config's hash and a study's registered arms
        compare every key (a run of the same config still hashes as theirs).
    """

    network: NetworkConfig = dataclasses.field(default_factory=NetworkConfig)
    training_steps: int = 2500
    num_envs: int = 128
    selfplay_interval: int = 4
    warmup_steps: int = 10
    num_simulations: int = 8
    discount: float = 0.997
    dirichlet_alpha: float = 0.25
    dirichlet_fraction: float = 0.25
    pb_c_base: float = 19652.0
    pb_c_init: float = 1.25
    q_form: str = "normalized"
    temperature_schedule: list[Any] = dataclasses.field(
        default_factory=lambda: [[0, 1.0], [400, 0.5], [800, 0.25]]
    )
    unroll_steps: int = 5
    td_steps: int = 10
    batch_size: int = 256
    replay_capacity: int = 5000
    optimizer: str = "adam"
    learning_rate: float = 1e-2
    lr_decay_rate: float = 0.1
    lr_decay_steps: int = 10000
    momentum: float = 0.9
    weight_decay: float = 1e-4
    value_loss_weight: float = 1.0
    loss_scale: str = "pseudocode"
    eval_every: int = 50
    eval_episodes: int = 128
    freeze: list[str] = dataclasses.field(default_factory=list)
    jit_compile: bool = True
    seed_axis: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.network, NetworkConfig):
            raise ConfigError(f"muzero.network={self.network!r} is not a NetworkConfig")
        for name in ("training_steps", "num_envs", "selfplay_interval", "num_simulations"):
            _positive_int("muzero", name, getattr(self, name))
        for name in ("unroll_steps", "td_steps", "batch_size", "replay_capacity"):
            _positive_int("muzero", name, getattr(self, name))
        for name in ("lr_decay_steps", "eval_every", "eval_episodes"):
            _positive_int("muzero", name, getattr(self, name))
        _positive_int("muzero", "warmup_steps", self.warmup_steps, minimum=0)
        _float_in("muzero", "discount", self.discount, 0.0, 1.0, lo_open=True)
        _float_in("muzero", "dirichlet_alpha", self.dirichlet_alpha, 0.0, 1e9, lo_open=True)
        _float_in("muzero", "dirichlet_fraction", self.dirichlet_fraction, 0.0, 1.0, lo_open=False)
        _float_in("muzero", "pb_c_base", self.pb_c_base, 0.0, 1e12, lo_open=True)
        _float_in("muzero", "pb_c_init", self.pb_c_init, 0.0, 1e12, lo_open=False)
        _float_in("muzero", "learning_rate", self.learning_rate, 0.0, 1e3, lo_open=True)
        _float_in("muzero", "lr_decay_rate", self.lr_decay_rate, 0.0, 1.0, lo_open=True)
        _float_in("muzero", "momentum", self.momentum, 0.0, 1.0, lo_open=False)
        _float_in("muzero", "weight_decay", self.weight_decay, 0.0, 1e3, lo_open=False)
        _float_in("muzero", "value_loss_weight", self.value_loss_weight, 0.0, 1e3, lo_open=True)
        _choice("optimizer", self.optimizer, OPTIMIZERS)
        LOSS_SCALES.lookup(self.loss_scale)
        _Q_FORMS.lookup(self.q_form)
        if self.replay_capacity < self.batch_size:
            raise ConfigError(
                f"muzero.replay_capacity={self.replay_capacity} is smaller than "
                f"muzero.batch_size={self.batch_size}; expected capacity >= batch size"
            )
        if self.seed_axis:
            raise ConfigError(SEED_AXIS_REMOVED)
        frozen = tuple(self.freeze)
        for name in frozen:
            _choice("network to freeze", name, NETWORKS)
        if len(set(frozen)) != len(frozen):
            raise ConfigError(f"muzero.freeze={list(frozen)!r} names a network twice")
        object.__setattr__(self, "freeze", frozen)
        given = self.temperature_schedule
        schedule = _pairs(given)
        if not schedule:
            raise ConfigError(
                f"muzero.temperature_schedule={_listed(given)!r} is invalid; expected a non-empty "
                "list of [from_step, temperature] pairs"
            )
        object.__setattr__(self, "temperature_schedule", schedule)
        steps = [s for s, _ in schedule]
        increasing = all(a < b for a, b in zip(steps, steps[1:], strict=False))
        if not increasing or steps[0] != 0 or any(t < 0 for _, t in schedule):
            raise ConfigError(
                f"muzero.temperature_schedule={schedule!r} is invalid; expected steps strictly "
                "increasing from 0 and temperatures >= 0"
            )
