"""The learner's optimizers: Adam, Keras SGD, and the MuZero pseudocode's TF1 momentum.

All three follow one exponentially decaying learning rate (Schrittwieser et al., 2020,
pseudocode ``train_network``)::

    lr(step) = learning_rate * lr_decay_rate ** (step / lr_decay_steps)

with ``step`` the number of updates already applied (Keras' ``optimizer.iterations``: the first
update uses ``learning_rate`` itself). ``optimizer`` picks the update:

* ``adam``: ``keras.optimizers.Adam`` (the tuned setting).
* ``sgd``: ``keras.optimizers.SGD(momentum=...)``, Keras' form: ``v = m v - lr g; w += v``.
* ``momentum``: :class:`Momentum`, the pseudocode's ``tf.train.MomentumOptimizer(learning_rate,
  momentum)``: ``accum = m accum + g; w -= lr accum``. The two momentum forms give the same
  weights while the learning rate is constant; once it changes they differ (Keras' velocity
  holds the past learning rates, TF1's accumulator does not: the whole accumulated step is taken
  at today's rate).

The L2 term is part of the loss (``experiments.muzero.learner``), not of the optimizer.
"""

from __future__ import annotations

import keras
from keras import ops

from experiments.gradients import Variant
from experiments.muzero.config import MuZeroConfig

__all__ = ["Momentum", "learning_rate_schedule", "make_optimizer"]


class Momentum(keras.optimizers.Optimizer):
    """TF1's ``tf.compat.v1.train.MomentumOptimizer`` (no Nesterov) as a Keras 3 optimizer.

    Per variable ``w`` with gradient ``g``, accumulator ``a`` (zeros at build)::

        a = momentum * a + g
        w = w - learning_rate * a

    Args:
      learning_rate: a float or a ``keras.optimizers.schedules.LearningRateSchedule``.
      momentum: in [0, 1].
      **kwargs: Keras' base optimizer arguments (``clipnorm``, ``global_clipnorm``, ``name``).
    """

    def __init__(self, learning_rate, *, momentum: float = 0.9, **kwargs) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"momentum={momentum!r} is invalid; expected a number in [0, 1]")
        self.momentum = float(momentum)

    def build(self, variables) -> None:
        if self.built:
            return
        super().build(variables)
        self.accumulators = self.add_optimizer_variables(variables, "accumulator")

    def update_step(self, gradient, variable, learning_rate) -> None:
        learning_rate = ops.cast(learning_rate, variable.dtype)
        gradient = ops.cast(gradient, variable.dtype)
        momentum = ops.cast(self.momentum, variable.dtype)
        accumulator = self.accumulators[self._get_variable_index(variable)]
        self.assign(accumulator, ops.add(ops.multiply(accumulator, momentum), gradient))
        self.assign_sub(variable, ops.multiply(accumulator, learning_rate))

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"momentum": self.momentum})
        return config


def learning_rate_schedule(
    config: MuZeroConfig, scale: float = 1.0
) -> keras.optimizers.schedules.ExponentialDecay:
    """``scale * learning_rate * lr_decay_rate ** (step / lr_decay_steps)``, continuous (not
    staircase)."""
    initial = config.learning_rate if scale == 1.0 else config.learning_rate * scale
    return keras.optimizers.schedules.ExponentialDecay(
        initial, decay_steps=config.lr_decay_steps, decay_rate=config.lr_decay_rate
    )


def make_optimizer(
    config: MuZeroConfig, variant: Variant, lr_scale: float = 1.0
) -> keras.optimizers.Optimizer:
    """``config.optimizer`` on :func:`learning_rate_schedule` (x ``lr_scale``: one of the
    variant's learning-rate factors); the variant's optimizer keyword arguments (``clipnorm``,
    ``global_clipnorm``) passed straight through."""
    schedule = learning_rate_schedule(config, lr_scale)
    build = variant.optimizer
    if config.optimizer == "adam":
        return build(keras.optimizers.Adam, learning_rate=schedule)
    if config.optimizer == "momentum":
        return build(Momentum, schedule, momentum=config.momentum)
    return build(keras.optimizers.SGD, learning_rate=schedule, momentum=config.momentum)
