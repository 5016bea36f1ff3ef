"""Registries of the MuZero job's named options: per-step loss scales, hidden-state
normalisations and the search's value forms (defined as functions in
:mod:`experiments.muzero.qtransforms`, re-exported here), in the style of
:mod:`experiments.gradients.variants` (importable without TensorFlow; a normalisation's builder
imports Keras, and the paper's layer from :mod:`experiments.muzero.normalisation`, only when a
network is built).

Adding one is one entry here plus one test.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from experiments.base.registry import Registry
from experiments.muzero.qtransforms import Q_FORMS, QForm

__all__ = [
    "LOSS_SCALES",
    "NORMALISATIONS",
    "Q_FORMS",
    "LossScale",
    "Normalisation",
    "QForm",
    "step_weights",
]


@dataclasses.dataclass(frozen=True)
class LossScale:
    """How the losses of unroll steps k >= 1 are weighted (step 0 always has weight 1).

    Attributes:
      name: registry name (``muzero.loss_scale=<name>``).
      summary: one line.
      weights: ``(steps_left [B] int, K) -> [B]`` float32, the weight of every step k >= 1 of
        each sample (``steps_left``: actions left in the episode from the sampled position).
    """

    name: str
    summary: str
    weights: Callable[[np.ndarray, int], np.ndarray]


def _inverse_k(steps_left: np.ndarray, unroll_steps: int) -> np.ndarray:
    return np.full(len(steps_left), 1.0 / unroll_steps, np.float32)


def _ones(steps_left: np.ndarray, unroll_steps: int) -> np.ndarray:
    return np.ones(len(steps_left), np.float32)


def _inverse_remaining(steps_left: np.ndarray, unroll_steps: int) -> np.ndarray:
    remaining = np.clip(np.minimum(unroll_steps, steps_left), 1, None).astype(np.float32)
    return 1.0 / remaining


LOSS_SCALES: Registry[LossScale] = Registry(
    "loss_scale",
    [
        LossScale("pseudocode", "1/K for every step k >= 1 (the pseudocode's scale_gradient "
                  "of each step's loss)", _inverse_k),
        LossScale("none", "1 for every step", _ones),
        LossScale("remaining", "1/min(K, steps left in the episode) (muzero-general)",
                  _inverse_remaining),
    ],
)  # fmt: skip
"""Per-step loss weights by name."""


def step_weights(steps_left: np.ndarray, *, unroll_steps: int, loss_scale: str) -> np.ndarray:
    """Loss weight of each unroll step: ``[B]`` steps left -> ``[B, K+1]`` (column 0 is 1)."""
    rule = LOSS_SCALES.lookup(loss_scale)
    steps_left = np.asarray(steps_left)
    weights = np.ones((len(steps_left), unroll_steps + 1), np.float32)
    weights[:, 1:] = rule.weights(steps_left, unroll_steps)[:, None]
    return weights


@dataclasses.dataclass(frozen=True)
class Normalisation:
    """A hidden-state normalisation, applied to every hidden state the networks produce.

    Attributes:
      name: registry name (``muzero.network.normalisation=<name>``).
      summary: one line.
      build: ``() -> keras.layers.Layer`` (imports Keras).
    """

    name: str
    summary: str
    build: Callable[[], Any]


def _minmax() -> Any:
    from experiments.muzero.normalisation import MinMaxNormalisation  # Keras, when one is built

    return MinMaxNormalisation()


def _keras_layer(name: str, **kwargs: Any) -> Callable[[], Any]:
    def build() -> Any:
        import keras

        return getattr(keras.layers, name)(**kwargs)

    return build


NORMALISATIONS: Registry[Normalisation] = Registry(
    "normalisation",
    [
        Normalisation("minmax", "per sample to [0, 1] by min-max, range guarded (the paper, "
                      "Appendix G)", _minmax),
        Normalisation("none", "no normalisation", _keras_layer("Identity")),
        Normalisation("tanh", "elementwise tanh", _keras_layer("Activation", activation="tanh")),
        Normalisation("layernorm", "LayerNormalization (epsilon 1e-5)",
                      _keras_layer("LayerNormalization", epsilon=1e-5)),
    ],
)  # fmt: skip
"""Hidden-state normalisations by name."""
