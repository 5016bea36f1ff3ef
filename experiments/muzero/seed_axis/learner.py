"""The train step of S seeds as one compiled function: :class:`GroupLearner`.

The learner's own step (:class:`~experiments.muzero.learner.Learner`: the unroll, the losses, the
diagnostics, the optimizer) run on :class:`~experiments.muzero.seed_axis.networks.StackedNetworks`
with a batch of ``S * B`` flat seed-major rows (seed 0's B sampled positions, then seed 1's, ...).
What changes is every reduction, which keeps one value per seed:

* each loss is seed s's batch mean (``[S]``), the L2 term seed s's weights' (``[S]``);
* the gradient is taken of the sum of the S totals: seed s's weights appear in seed s's total
  alone, so each seed's gradient is its own loss's;
* every diagnostic (gradient norms, per-depth norms, the non-finite flag) is per seed;
* the optimizer's clipping (the ``clipnorm`` and ``global_clipnorm`` variants) is per seed,
  Keras' formulas on each seed's slice (Keras' own would take the norm over all seeds); Adam,
  SGD and momentum are elementwise, and a ``MaxNorm`` kernel constraint is per seed
  (:func:`~experiments.muzero.seed_axis.networks.StackedNetworks`).

All seeds of a group take their steps together, so the learning-rate schedule (one step count)
is theirs alike. A seed whose weights go non-finite stays so on its own slice: no op mixes seeds.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from experiments.base.errors import ConfigError
from experiments.gradients import Placement, Variant
from experiments.muzero.config import MuZeroConfig
from experiments.muzero.learner import Learner, StepInputs, make_optimizer
from experiments.muzero.replay import Batch
from experiments.muzero.seed_axis.networks import StackedNetworks

__all__ = ["GroupLearner"]


class GroupLearner(Learner):
    """:class:`~experiments.muzero.learner.Learner` for S seeds at once (see the module).

    Attributes:
      seeds: S.
    """

    def __init__(
        self,
        networks: StackedNetworks,
        *,
        config: MuZeroConfig,
        variant: Variant,
        placement: Placement,
    ) -> None:
        self.seeds = networks.seeds
        self._clipping = dict(variant.optimizer_kwargs)
        unknown = sorted(set(self._clipping) - {"clipnorm", "global_clipnorm"})
        if unknown:  # each would need its per-seed form here; none may pass silently
            raise ConfigError(
                f"optimizer setting {unknown[0]} of variant {variant.name!r} is not supported on "
                "the seed axis; valid: clipnorm, global_clipnorm"
            )
        super().__init__(networks, config=config, variant=variant, placement=placement)

    def _make_optimizer(self, factor: float) -> Any:
        # clipping is done per seed by apply_gradients, not over the stacked variables
        bare = dataclasses.replace(self.variant, optimizer_kwargs=types.MappingProxyType({}))
        return make_optimizer(self.config, bare, factor)

    def _rows(self) -> int:
        return self.config.batch_size * self.seeds

    def _per_seed(self, x: tf.Tensor) -> tf.Tensor:
        """``x`` as ``[S, everything else]``."""
        return tf.reshape(x, [self.seeds, -1])

    def _batch_mean(self, x: tf.Tensor) -> tf.Tensor:
        return tf.reduce_mean(self._per_seed(x), axis=1)

    def _sum_of_squares(self, variable: Any) -> tf.Tensor:
        return tf.reduce_sum(tf.square(self._per_seed(variable)), axis=1)

    def _objective(self, total: tf.Tensor) -> tf.Tensor:
        return tf.reduce_sum(total)

    def _global_norm(self, tensors: list[tf.Tensor | None]) -> tf.Tensor:
        present = [t for t in tensors if t is not None]
        if not present:
            return tf.zeros([self.seeds])
        return tf.sqrt(tf.add_n([self._sum_of_squares(t) for t in present]))

    def _norm(self, tensor: tf.Tensor) -> tf.Tensor:
        return tf.sqrt(self._sum_of_squares(tensor))

    def _seed_scale(self, scale: tf.Tensor, like: tf.Tensor) -> tf.Tensor:
        """``[S]`` factors shaped to multiply a ``[S, ...]`` tensor like ``like``."""
        return tf.reshape(scale, [self.seeds] + [1] * (len(like.shape) - 1))

    def _clip(self, grads: list[tf.Tensor | None]) -> list[tf.Tensor | None]:
        """The variant's optimizer clipping, per seed: Keras 3's ``clipnorm`` (each variable's
        gradient by its norm) and ``global_clipnorm`` (all of an optimizer's together), with
        Keras' formulas (``keras.src.optimizers.base_optimizer``) on each seed's slice."""
        clipnorm = self._clipping.get("clipnorm")
        if clipnorm:
            return [None if g is None else self._clip_by_norm(g, clipnorm) for g in grads]
        global_clipnorm = self._clipping.get("global_clipnorm")
        if global_clipnorm:
            norm = self._global_norm(grads)
            scale = global_clipnorm * tf.minimum(1.0 / norm, 1.0 / global_clipnorm)
            scale = scale + (norm - norm)  # NaN for a non-finite norm, as Keras
            return [None if g is None else g * self._seed_scale(scale, g) for g in grads]
        return grads

    def _clip_by_norm(self, gradient: tf.Tensor, clipnorm: float) -> tf.Tensor:
        l2sum = self._seed_scale(self._sum_of_squares(gradient), gradient)
        positive = l2sum > 0
        safe = tf.where(positive, l2sum, tf.ones_like(l2sum))
        l2norm = tf.where(positive, tf.sqrt(safe), l2sum)
        return gradient * clipnorm / tf.maximum(l2norm, clipnorm)

    def group_tensors(self, batches: Sequence[Batch]) -> StepInputs:
        """The step's input from one batch per seed (in the group's order): each key's arrays
        of :meth:`~experiments.muzero.learner.Learner.batch_tensors`, seed after seed."""
        if len(batches) != self.seeds:
            raise ValueError(f"a group of {self.seeds} seeds needs {self.seeds} batches")
        parts = [self.batch_tensors(batch) for batch in batches]
        return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}  # type: ignore[return-value]

    def update(self, batch: Batch) -> dict[str, float]:
        """Refused: a group steps all its seeds at once (:meth:`update_group`)."""
        raise TypeError("a GroupLearner updates all its seeds at once: use update_group(batches)")

    def update_group(self, batches: Sequence[Batch]) -> list[dict[str, float]]:
        """One optimizer step of every seed on its batch; one metrics dict per seed."""
        return self.update_tensors(self.group_tensors(batches))

    def update_tensors(self, tensors: StepInputs) -> list[dict[str, float]]:  # type: ignore[override]
        """One step of every seed on :meth:`group_tensors`' arrays; one metrics dict per seed
        (the keys of :meth:`Learner.update`)."""
        values = self._compiled()(tensors).numpy()  # [M, S]
        return [dict(zip(self._metric_names, column.tolist(), strict=True)) for column in values.T]
