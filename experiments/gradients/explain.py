"""Live measurements behind ``gradlab explain``: what each variant and placement really does.

Nothing here is a table typed by hand: every figure is computed on a small TensorFlow graph with
``tf.GradientTape`` (or a real Keras optimizer / constraint) each time it is asked for.
"""

from __future__ import annotations

import dataclasses

import keras
import numpy as np
import tensorflow as tf

from experiments.gradients.maths import scale_gradient
from experiments.gradients.placements import PLACEMENTS, Placement
from experiments.gradients.variants import NETWORKS, VARIANTS, HiddenFn, Variant, make_variant

__all__ = [
    "PROBE_HIDDEN",
    "FreezeRow",
    "PlacementRow",
    "VariantRow",
    "confusions",
    "explain_freeze",
    "explain_placements",
    "explain_variants",
    "optimizer_update_norms",
    "placement_notes",
    "placement_gradients",
]

# Two samples, four features: the first row's norm (about 4.7) is above MaxNorm's default bound of
# 2, the second's (about 0.3) is below it, so per-sample behaviour shows.
PROBE_HIDDEN = np.array([[1.5, 2.0, 2.5, 3.0], [0.1, 0.2, 0.1, 0.2]], dtype=np.float32)
# Upstream gradient dLoss/dy used to probe the backward pass (not parallel to any row).
_PROBE_UPSTREAM = np.array([[1.0, -2.0, 0.5, 1.0], [2.0, 1.0, -1.0, 0.5]], dtype=np.float32)
# Gradients of norms 3 and 4 on two variables (global norm 5): tells per-variable from global.
_PROBE_GRADS = (np.array([3.0, 0.0], np.float32), np.array([0.0, 4.0], np.float32))


@dataclasses.dataclass(frozen=True)
class VariantRow:
    """What one variant does, measured."""

    name: str
    acts_on: str
    params: dict[str, float]
    forward_max_abs_diff: float  # max |T(h) - h| on PROBE_HIDDEN
    gradient_factor: float  # ||dL/dh|| / ||dL/dT(h)|| through the hidden-state transform
    scope: str  # measured granularity
    evidence: str  # the measurement behind `scope`
    summary: str
    plugin: str | None = None  # "<distribution> <version>" of a plug-in's variant; None: built in


@dataclasses.dataclass(frozen=True)
class PlacementRow:
    """Gradients of each step's loss on a 3-step linear unroll, for one placement."""

    name: str
    grad_h0: list[float]  # |dL_k/dh_0| for k = 0..K
    grad_w: list[float]  # dL_k/dw (the dynamics weight) for k = 0..K
    summary: str


def _forward_and_factor(hidden: HiddenFn) -> tuple[float, float, np.ndarray]:
    x = tf.constant(PROBE_HIDDEN)
    upstream = tf.constant(_PROBE_UPSTREAM)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = hidden(x)
        loss = tf.reduce_sum(y * upstream)
    zero = tf.UnconnectedGradients.ZERO
    grad = tape.gradient(loss, x, unconnected_gradients=zero)
    jac = tape.jacobian(y, x, unconnected_gradients=zero, experimental_use_pfor=False)
    diff = float(tf.reduce_max(tf.abs(y - x)))
    factor = float(tf.norm(grad) / tf.norm(upstream))
    return diff, factor, jac.numpy()  # jac: [B, H, B, H]


def _jacobian_scope(jac: np.ndarray) -> tuple[str, str]:
    b, h = jac.shape[:2]
    flat = jac.reshape(b * h, b * h)
    off_diag = flat - np.diag(np.diag(flat))
    if np.all(off_diag == 0):
        return "elementwise", "Jacobian dT(h)/dh is diagonal"
    cross = sum(np.abs(jac[i, :, j, :]).sum() for i in range(b) for j in range(b) if i != j)
    if cross == 0:
        return "per sample", "Jacobian couples features within a sample, never across samples"
    return "across samples", "Jacobian couples samples"


def optimizer_update_norms(optimizer_kwargs: dict[str, float]) -> tuple[float, float]:
    """Norms of the update a Keras SGD (lr 1) applies to two variables with gradient norms 3, 4.

    Args:
      optimizer_kwargs: e.g. ``{"clipnorm": 1.0}`` or ``{"global_clipnorm": 1.0}``.

    Returns:
      The two update norms: ``(1, 1)`` for per-variable clipping at 1, ``(0.6, 0.8)`` for global.
    """
    variables = [tf.Variable(tf.zeros(2)), tf.Variable(tf.zeros(2))]
    optimizer = keras.optimizers.SGD(learning_rate=1.0, **optimizer_kwargs)
    optimizer.apply_gradients(zip([tf.constant(g) for g in _PROBE_GRADS], variables, strict=True))
    return tuple(float(tf.norm(v)) for v in variables)  # type: ignore[return-value]


def _kernel_scope(variant: Variant) -> tuple[str, str]:
    kernel = np.array([[3.0, 0.6], [4.0, 0.8]], np.float32)  # column norms 5 and 1
    constrained = variant.kernel_constraint(tf.constant(kernel)).numpy()
    before = np.linalg.norm(kernel, axis=0)
    after = np.linalg.norm(constrained, axis=0)
    untouched = np.isclose(after[1], before[1], rtol=1e-5)
    scope = "per kernel column" if after[0] < before[0] and untouched else "whole kernel"
    evidence = (
        f"kernel column norms {before[0]:.2f}, {before[1]:.2f} -> "
        f"{after[0]:.2f}, {after[1]:.2f} after each update"
    )
    return scope, evidence


def _learning_rate_scope(variant: Variant) -> tuple[str, str]:
    factors = {name: variant.learning_rates(name) for name in NETWORKS}
    scope = "global" if len(set(factors.values())) == 1 else "per network"
    evidence = "learning rate " + ", ".join(f"{n} x{f:g}" for n, f in factors.items())
    return scope, evidence


def _scope(variant: Variant, jac: np.ndarray) -> tuple[str, str]:
    """Measured at the seam the variant acts at (the first not left neutral), else on the
    hidden-state transform's Jacobian."""
    if variant.optimizer.kwargs:
        a, b = optimizer_update_norms(dict(variant.optimizer.kwargs))
        scope = "per variable" if np.isclose(a, b) else "global"
        return scope, f"gradient norms 3, 4 -> updates {a:.2f}, {b:.2f}"
    if variant.learning_rates.scales:
        return _learning_rate_scope(variant)
    if variant.kernel_constraint is not None:
        return _kernel_scope(variant)
    if variant.loss_weights.scale is not None:
        factors = ", ".join(f"{f:g}" for f in variant.loss_weights(3))
        return "per unroll step", f"loss weights of steps 0-3 x {factors}; hidden state untouched"
    return _jacobian_scope(jac)


def explain_variants() -> list[VariantRow]:
    """Measures every registered variant (plug-ins' too), with its default parameters."""
    rows = []
    for name, spec in VARIANTS.items():
        variant = make_variant(name)
        diff, factor, jac = _forward_and_factor(variant.hidden)
        scope, evidence = _scope(variant, jac)
        rows.append(
            VariantRow(
                name=name,
                acts_on=spec.acts_on,
                params=dict(variant.params),
                forward_max_abs_diff=diff,
                gradient_factor=factor,
                scope=scope,
                evidence=evidence,
                summary=spec.summary,
                plugin=None if (plugin := VARIANTS.plugin(name)) is None else plugin.source,
            )
        )
    return rows


def placement_gradients(
    placement: Placement, hidden: HiddenFn, *, steps: int = 3, w: float = 2.0, h0: float = 1.0
) -> tuple[list[float], list[float]]:
    """Gradients of each step's loss on the linear recurrence ``h_k = w * h_{k-1}``.

    The loss of step k is the state step k's heads see, ``L_k = h_k``; ``h_0`` is the
    representation's output. Works eagerly and inside ``tf.function``.

    Args:
      placement: where ``hidden`` is applied.
      hidden: the hidden-state transform, e.g. ``scale_gradient`` at 0.5.
      steps: K, the number of dynamics calls.
      w: the dynamics weight.
      h0: the initial state.

    Returns:
      ``(dL_k/dh_0, dL_k/dw)`` for k = 0..K, two lists of K + 1 floats.
    """
    h0_var = tf.Variable(h0, dtype=tf.float32)
    w_var = tf.Variable(w, dtype=tf.float32)

    @tf.function
    def grads() -> tuple[tf.Tensor, tf.Tensor]:
        with tf.GradientTape(persistent=True) as tape:
            seen = [h0_var * 1.0]
            h = seen[0]
            for k in range(1, steps + 1):
                h_in = placement.dynamics_input(h, hidden, k)
                h = placement.dynamics_output(w_var * h_in, hidden, k)
                seen.append(h)
        zero = tf.UnconnectedGradients.ZERO
        g_h0 = tf.stack([tape.gradient(s, h0_var, unconnected_gradients=zero) for s in seen])
        g_w = tf.stack([tape.gradient(s, w_var, unconnected_gradients=zero) for s in seen])
        del tape
        return g_h0, g_w

    g_h0, g_w = grads()
    return [float(v) for v in g_h0.numpy()], [float(v) for v in g_w.numpy()]


def explain_placements(*, scale: float = 0.5) -> list[PlacementRow]:
    """Measures the three placements with ``scale_gradient(., scale)`` on a 3-step unroll."""
    hidden = lambda h: scale_gradient(h, scale)  # noqa: E731
    rows = []
    for name, placement in PLACEMENTS.items():
        g_h0, g_w = placement_gradients(placement, hidden)
        rows.append(PlacementRow(name, [abs(g) for g in g_h0], g_w, placement.summary))
    return rows


@dataclasses.dataclass(frozen=True)
class FreezeRow:
    """Which weights one SGD step moves, on a 2-step unroll, for one way of 'stopping'."""

    case: str
    gradients: dict[str, float]  # dL/dweight: representation r, dynamics w, prediction p
    moved: dict[str, bool]  # whether the weight changed after the step
    what: str


_NETS = ("representation", "dynamics", "prediction")


def explain_freeze(*, lr: float = 0.1) -> list[FreezeRow]:
    """Stopping a gradient vs not applying it, measured live on a tiny MuZero-shaped graph.

    One scalar weight per network: ``h_0 = r o`` (representation), ``h_k = w h_(k-1)``
    (dynamics, 2 steps), heads ``y_k = p h_k`` (prediction), ``o = 1``, ``r = 1``, ``w = 0.5``,
    ``p = 2``, loss ``sum_k y_k^2``. Each case takes one Keras SGD step (learning rate ``lr``) on
    the weights the learner would update: all of them, except a ``muzero.freeze``-d network's,
    which is left out of the optimizer's variable list as the learner does. ``stop_gradient`` on
    the hidden state changes the gradients but every weight still moves; freezing leaves the
    gradients as they are (they are still computed and logged) and the frozen weight does not
    move.
    """
    cases = [
        ("none", "none", "pseudocode", (), "plain backpropagation"),
        ("stop_gradient, pseudocode placement", "stop_gradient", "pseudocode", (),
         "the second dynamics call gets no gradient through its input"),
        ("stop_gradient, paper placement", "stop_gradient", "paper", (),
         "no gradient flows into any dynamics input: r learns from step 0's head only"),
        ("freeze representation", "none", "pseudocode", ("representation",),
         "gradients as 'none', representation not updated"),
        ("freeze dynamics", "none", "pseudocode", ("dynamics",),
         "gradients as 'none', dynamics not updated"),
    ]  # fmt: skip
    rows = []
    for case, name, where, frozen, what in cases:
        variant, placement = make_variant(name), PLACEMENTS[where]
        weights = {
            "representation": tf.Variable(1.0),
            "dynamics": tf.Variable(0.5),
            "prediction": tf.Variable(2.0),
        }
        r, w, p = (weights[n] for n in _NETS)
        with tf.GradientTape() as tape:
            h = r * 1.0
            loss = tf.square(p * h)
            for k in (1, 2):
                h_in = placement.dynamics_input(h, variant.hidden, k)
                h = placement.dynamics_output(w * h_in, variant.hidden, k)
                loss += tf.square(p * h)
        grads = dict(zip(_NETS, tape.gradient(loss, [r, w, p]), strict=True))
        before = {n: float(v) for n, v in weights.items()}
        applied = [(grads[n], weights[n]) for n in _NETS if n not in frozen]
        keras.optimizers.SGD(learning_rate=lr).apply_gradients(applied)
        rows.append(
            FreezeRow(
                case=case,
                gradients={n: float(g) for n, g in grads.items()},
                moved={n: float(weights[n]) != before[n] for n in _NETS},
                what=what,
            )
        )
    return rows


def confusions(variants: list[VariantRow]) -> list[str]:
    """The confusions the measurements settle, each a sentence with its live figures."""
    by = {row.name: row for row in variants}
    sg, clip, mx, stop = by["scale_gradient"], by["clipnorm"], by["maxnorm"], by["stop_gradient"]
    zero_grad = _forward_and_factor(lambda h: scale_gradient(h, 0.0))[1]
    return [
        f"scale_gradient is not clipnorm: scale_gradient keeps forward values "
        f"(max |diff| {sg.forward_max_abs_diff:.2g}) and multiplies the gradient through the "
        f"hidden state by {sg.gradient_factor:.2f} whatever its size; clipnorm leaves that "
        f"gradient alone (factor {clip.gradient_factor:.2f}) and clips each variable's update "
        f"({clip.evidence}).",
        f"scale_gradient is not MaxNorm: MaxNorm changes forward values "
        f"(max |diff| {mx.forward_max_abs_diff:.2f} at max_value "
        f"{mx.params['max_value']:g}), scale_gradient never does.",
        f"stop_gradient is scale_gradient with scale 0: gradient factor "
        f"{stop.gradient_factor:.2f} vs {zero_grad:.2f}, forward unchanged in both.",
    ]


def placement_notes(rows: list[PlacementRow]) -> list[str]:
    """Which placements agree and where they differ, read off the measured rows."""
    notes = []
    names = [r.name for r in rows]
    for i, a in enumerate(rows):
        for b in rows[i + 1 :]:
            same_h0 = np.allclose(a.grad_h0, b.grad_h0)
            same_w = np.allclose(a.grad_w, b.grad_w)
            if same_h0 and same_w:
                notes.append(f"{a.name} and {b.name} give identical gradients here")
            elif same_h0:
                notes.append(
                    f"{a.name} and {b.name} send the same gradient to h_0 but differ on the "
                    f"dynamics weight ({_fmt(a.grad_w)} vs {_fmt(b.grad_w)})"
                )
            elif same_w:
                notes.append(
                    f"{a.name} and {b.name} give the dynamics weight the same gradient but differ "
                    f"at h_0 ({_fmt(a.grad_h0)} vs {_fmt(b.grad_h0)})"
                )
    if not notes:
        notes.append(f"{', '.join(names)}: all gradients differ")
    return notes


def _fmt(values: list[float]) -> str:
    return "[" + ", ".join(f"{v:g}" for v in values) + "]"
