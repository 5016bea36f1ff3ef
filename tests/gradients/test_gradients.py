"""Tests of experiments.gradients (variants, placements, maths, explain): exact forward and
backward values of every variant and placement.

Expected values are computed by hand or independently in NumPy (float64, finite differences),
never by calling the code under test.
"""

from __future__ import annotations

import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from experiments import gradients as G
from experiments.base.errors import ConfigError
from experiments.gradients.explain import optimizer_update_norms, placement_gradients

X = np.array([[1.5, 2.0, 2.5, 3.0], [0.1, 0.2, 0.1, 0.2]], dtype=np.float32)
UP = np.array([[1.0, -2.0, 0.5, 1.0], [2.0, 1.0, -1.0, 0.5]], dtype=np.float32)


def _np_maxnorm(x: np.ndarray, max_value: float) -> np.ndarray:
    norms = np.sqrt((x.astype(np.float64) ** 2).sum(-1, keepdims=True))
    return x * np.minimum(1.0, max_value / norms)


def _np_grad(f, x: np.ndarray, up: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central finite differences of sum(f(x) * up), in float64."""
    x = x.astype(np.float64)
    grad = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[idx] = eps
        grad[idx] = ((f(x + d) - f(x - d)) * up).sum() / (2 * eps)
    return grad


# name -> (expected forward, expected gradient of sum(T(x) * UP) w.r.t. x), both independent.
EXPECTED = {
    "none": (X, UP),
    "scale_gradient": (X, 0.5 * UP),  # default scale 0.5
    "stop_gradient": (X, np.zeros_like(UP)),
    "clipnorm": (X, UP),  # acts on the optimizer, not the hidden state
    "global_clipnorm": (X, UP),
    "maxnorm": (_np_maxnorm(X, 2.0), _np_grad(lambda x: _np_maxnorm(x, 2.0), X, UP)),
    "maxnorm_kernel": (X, UP),  # acts on the dynamics kernels, not the hidden state
    "lr_scale": (X, UP),  # acts on the learning rate (tests/muzero/test_learner.py)
    "dynamics_lr_scale": (X, UP),
    "depth_loss_scale": (X, UP),  # acts on the loss weights (the unroll test below)
}


def test_expectations_cover_every_built_in_variant():
    # an installed plug-in's variant is tested by its own package (tests/base/test_plugins.py: the
    # example's), not by these hand-computed expectations
    assert set(EXPECTED) == set(G.VARIANTS.builtins)


@pytest.mark.parametrize("name", sorted(G.VARIANTS.builtins))
@pytest.mark.parametrize("compiled", [False, True])
def test_variant_forward_and_backward(name, compiled):
    variant = G.make_variant(name)
    want_y, want_g = EXPECTED[name]

    def fwd_bwd(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = variant.hidden(x)
            loss = tf.reduce_sum(y * UP)
        g = tape.gradient(loss, x, unconnected_gradients=tf.UnconnectedGradients.ZERO)
        return y, g

    fn = tf.function(fwd_bwd) if compiled else fwd_bwd
    y, g = fn(tf.constant(X))
    np.testing.assert_allclose(y.numpy(), want_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g.numpy(), want_g, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(G.VARIANTS))
def test_variant_declares_where_it_acts(name):
    spec = G.VARIANTS[name]
    assert spec.acts_on in G.ACTS_ON
    assert spec.summary
    variant = G.make_variant(name)
    h = tf.ones((2, 3))  # the hidden transform is the identity (the very tensor) unless it acts
    assert (variant.hidden(h) is h) == (spec.acts_on not in ("forward", "gradient"))
    assert variant.hidden.forward == (spec.acts_on == "forward")  # the search plans with it
    assert bool(variant.optimizer.kwargs) == (spec.acts_on == "optimizer")
    assert bool(variant.learning_rates.scales) == (spec.acts_on == "learning_rate")
    assert (variant.kernel_constraint is not None) == (spec.acts_on == "weights")
    assert (variant.loss_weights.scale is not None) == (spec.acts_on == "loss_weights")


@pytest.mark.parametrize("scale", [0.0, 0.25, 0.5, 1.0, 2.0])
def test_scale_gradient_scales_only_the_gradient(scale):
    x = tf.constant([1.0, -2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = G.scale_gradient(x, scale)
        loss = tf.reduce_sum(y * tf.constant([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(y.numpy(), [1.0, -2.0, 3.0])
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), [scale, 2 * scale, 3 * scale])


def test_stop_gradient_is_scale_zero():
    x = tf.constant(X)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        a = tf.reduce_sum(G.make_variant("stop_gradient").hidden(x) * UP)
        b = tf.reduce_sum(G.make_variant("scale_gradient", scale=0.0).hidden(x) * UP)
    zero = tf.UnconnectedGradients.ZERO
    np.testing.assert_array_equal(
        tape.gradient(a, x, unconnected_gradients=zero).numpy(),
        tape.gradient(b, x, unconnected_gradients=zero).numpy(),
    )


def test_maxnorm_equals_keras_constraint_per_sample():
    got = G.make_variant("maxnorm", max_value=1.0).hidden(tf.constant(X)).numpy()
    keras_own = keras.constraints.MaxNorm(max_value=1.0, axis=-1)(tf.constant(X)).numpy()
    np.testing.assert_allclose(got, keras_own, rtol=1e-6)
    np.testing.assert_allclose(got, _np_maxnorm(X, 1.0), rtol=1e-5)
    # Row 0 (norm ~4.74) is shrunk to norm 1; row 1 (norm ~0.32) is untouched.
    np.testing.assert_allclose(np.linalg.norm(got, axis=-1), [1.0, np.sqrt(0.1)], rtol=1e-5)


def test_clipnorm_per_variable_vs_global():
    # Gradients [3, 0] and [0, 4]: per-variable clipping at 1 gives updates of norm 1 and 1;
    # global clipping at 1 scales both by 1/5 (global norm 5): 0.6 and 0.8.
    per_var = G.make_variant("clipnorm", clipnorm=1.0).optimizer.kwargs
    glob = G.make_variant("global_clipnorm", clipnorm=1.0).optimizer.kwargs
    np.testing.assert_allclose(optimizer_update_norms(dict(per_var)), [1.0, 1.0], rtol=1e-6)
    np.testing.assert_allclose(optimizer_update_norms(dict(glob)), [0.6, 0.8], rtol=1e-6)
    # Thresholds above a norm leave it alone: clipnorm 3.5 -> 3 and 3.5; global 10 -> 3 and 4.
    per_var = G.make_variant("clipnorm", clipnorm=3.5).optimizer.kwargs
    glob = G.make_variant("global_clipnorm", clipnorm=10.0).optimizer.kwargs
    np.testing.assert_allclose(optimizer_update_norms(dict(per_var)), [3.0, 3.5], rtol=1e-6)
    np.testing.assert_allclose(optimizer_update_norms(dict(glob)), [3.0, 4.0], rtol=1e-6)


def test_maxnorm_kernel_constrains_dynamics_kernel_after_an_update():
    variant = G.make_variant("maxnorm_kernel", max_value=2.0)
    layer = keras.layers.Dense(2, use_bias=False, kernel_constraint=variant.kernel_constraint)
    layer.build((None, 2))
    layer.kernel.assign(np.array([[3.0, 0.6], [4.0, 0.8]], np.float32))  # column norms 5 and 1
    optimizer = keras.optimizers.SGD(learning_rate=0.0)  # a zero step: only the constraint acts
    optimizer.apply_gradients([(tf.zeros((2, 2)), layer.kernel)])
    np.testing.assert_allclose(np.linalg.norm(layer.kernel.numpy(), axis=0), [2.0, 1.0], rtol=1e-5)


# Linear recurrence h_k = w h_(k-1), w = 2, h_0 = 1, L_k = h_k as step k's heads see it, and
# T = scale_gradient(., 0.5). By hand:
#   pseudocode (T on the input of calls 2..K):  dL_k/dh0 = 0.5^(k-1) w^k  -> 1, 2, 2, 2
#                                               dL_k/dw  = 1, 2 + 2*.5*1 = 3, 4 + 2*.5*3 = 7
#   paper (T on the input of every call):       dL_k/dh0 = 0.5^k w^k      -> 1, 1, 1, 1
#                                               dL_k/dw  = 1, 3, 7 (h_0 does not depend on w)
#   hook (T on every dynamics output):          dL_k/dh0 = 0.5^k w^k      -> 1, 1, 1, 1
#                                               dL_k/dw  = .5*1, .5*(2 + 2*.5) = 1.5, .5*(4 + 2*1.5)
PLACEMENT_EXPECTED = {
    "pseudocode": ([1.0, 2.0, 2.0, 2.0], [0.0, 1.0, 3.0, 7.0]),
    "paper": ([1.0, 1.0, 1.0, 1.0], [0.0, 1.0, 3.0, 7.0]),
    "hook": ([1.0, 1.0, 1.0, 1.0], [0.0, 0.5, 1.5, 3.5]),
}


def test_placement_expectations_cover_the_registry():
    assert set(PLACEMENT_EXPECTED) == set(G.PLACEMENTS)


@pytest.mark.parametrize("name", sorted(G.PLACEMENTS))
def test_placements_on_a_three_step_linear_recurrence(name):
    hidden = G.make_variant("scale_gradient", scale=0.5).hidden
    g_h0, g_w = placement_gradients(G.get_placement(name), hidden, steps=3, w=2.0, h0=1.0)
    want_h0, want_w = PLACEMENT_EXPECTED[name]
    np.testing.assert_allclose(g_h0, want_h0, rtol=1e-6)
    np.testing.assert_allclose(g_w, want_w, rtol=1e-6)


def test_placements_are_distinct():
    results = {
        name: placement_gradients(p, G.make_variant("scale_gradient").hidden)
        for name, p in G.PLACEMENTS.items()
    }
    as_tuples = {name: (tuple(a), tuple(b)) for name, (a, b) in results.items()}
    assert len(set(as_tuples.values())) == len(G.PLACEMENTS)


def test_placement_identity_transform_gives_plain_backprop():
    # With no transform all placements give dL_k/dh0 = w^k and dL_k/dw = k w^(k-1).
    for placement in G.PLACEMENTS.values():
        g_h0, g_w = placement_gradients(placement, G.make_variant("none").hidden)
        np.testing.assert_allclose(g_h0, [1, 2, 4, 8])
        np.testing.assert_allclose(g_w, [0, 1, 4, 12])


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (
            lambda: G.make_variant("scale_gradiant"),
            "unknown variant 'scale_gradiant'; choose one of",
        ),
        (lambda: G.get_placement("middle"), "unknown placement 'middle'; choose one of: hook,"),
        (lambda: G.make_variant("scale_gradient", scale=-0.5), "scale=-0.5 is out of range"),
        (lambda: G.make_variant("scale_gradient", scale=float("nan")), "scale=nan is out of range"),
        (lambda: G.make_variant("scale_gradient", scale="half"), "scale='half' has the wrong type"),
        (lambda: G.make_variant("scale_gradient", scale=True), "scale=True has the wrong type"),
        (lambda: G.make_variant("clipnorm", clipnorm=0.0), "clipnorm=0 is out of range"),
        (lambda: G.make_variant("global_clipnorm", clipnorm=-1), "expected a finite number > 0"),
        (lambda: G.make_variant("maxnorm", max_value=0), "max_value=0 is out of range"),
        (lambda: G.make_variant("maxnorm_kernel", max_value=-2.0), "max_value=-2 is out of"),
        (
            lambda: G.make_variant("none", scale=0.5),
            "has no parameter 'scale'; its parameters: none",
        ),
        (lambda: G.make_variant("clipnorm", clip=1.0), "its parameters: clipnorm"),
    ],
)
def test_bad_input_names_value_and_choices(call, fragment):
    with pytest.raises(ConfigError, match=None) as info:
        call()
    assert fragment in str(info.value)


def test_unknown_variant_lists_every_choice():
    with pytest.raises(ConfigError) as info:
        G.make_variant("nope")
    for name in G.VARIANTS:
        assert name in str(info.value)


@pytest.mark.parametrize("name", sorted(G.PLACEMENTS))
def test_placement_with_a_step_per_row_equals_the_int_form_row_by_row(name):
    # The search calls the placement with each row's own dynamics-call index (its leaf depth).
    placement = G.PLACEMENTS[name]
    h = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    steps = [1, 2, 3]

    def double(x):
        return 2.0 * x

    for fn in (placement.dynamics_input, placement.dynamics_output):
        batched = fn(h, double, tf.constant(steps)).numpy()
        rows = [fn(h[i : i + 1], double, k).numpy()[0] for i, k in enumerate(steps)]
        np.testing.assert_array_equal(batched, np.stack(rows))


# ---------------------------------------------------------------------------------------------
# The package's import surface.


def test_the_registries_import_without_tensorflow_and_the_maths_on_first_use():
    """``import experiments.gradients`` (and the registries, and the MuZero config that reads
    them) loads no TensorFlow; asking the package for ``scale_gradient`` loads it then."""
    code = (
        "import sys\n"
        "import experiments.gradients as g\n"
        "import experiments.gradients.placements, experiments.gradients.variants\n"
        "import experiments.muzero.options, experiments.muzero.support_sizes\n"
        "print('tensorflow' in sys.modules)\n"
        "g.make_variant('none'), g.get_placement('hook')\n"
        "print('tensorflow' in sys.modules)\n"
        "from experiments.gradients import scale_gradient\n"
        "from experiments.gradients.maths import scale_gradient as direct\n"
        "print('tensorflow' in sys.modules, scale_gradient is direct)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout.split("\n")
    assert out[:3] == ["False", "False", "True True"]


def test_the_package_surface_is_its_modules_and_nothing_else():
    from experiments.gradients import explain, maths, placements, seams, variants

    modules = (variants, placements, seams, maths, explain)
    assert set(G.__all__) == {name for module in modules for name in module.__all__}
    assert G.scale_gradient is maths.scale_gradient and G.PLACEMENTS is placements.PLACEMENTS
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = G.nothing


def _unroll_gradients(variant, placement: str, *, steps: int = 2) -> dict[str, float]:
    """d/d(a, b, c) of sum_k w_k p_k on the scalar model h_0 = a x, h_k = b h_in, p_k = c h_k
    (x = 1, a = 1, b = 2, c = 3), with the variant's hidden transform put in by the placement
    and its per-step loss factors (1 for all but depth_loss_scale)."""
    import tensorflow as tf

    place = G.get_placement(placement)
    a, b, c = (tf.Variable(v) for v in (1.0, 2.0, 3.0))
    factors = variant.loss_weights(steps)
    with tf.GradientTape() as tape:
        h = a * 1.0
        loss = factors[0] * c * h
        for k in range(1, steps + 1):
            h = b * place.dynamics_input(h, variant.hidden, k)
            h = place.dynamics_output(h, variant.hidden, k)
            loss = loss + factors[k] * c * h
    grads = tape.gradient(loss, [a, b, c])
    return {name: float(g) for name, g in zip("abc", grads, strict=True)}


def test_depth_matched_control_equals_scale_gradient_on_the_representation_only():
    """The control weights step k's loss 0.5**k. Worked by hand (K = 2; forward h = 1, 2, 4 in
    every case: scale_gradient leaves it unchanged):

    * placement paper (scale at every dynamics input): da = 3 + 3*2*0.5 + 3*4*0.25 = 9, equal
      to the control's 3 + 0.5*6 + 0.25*12 = 9; dc = 1 + 2 + 4 = 7 (the heads' gradient is
      untouched) against the control's 1 + 0.5*2 + 0.25*4 = 3; db = 3 + (6 + 3*2*0.5) = 12
      against 0.5*3 + 0.25*(6 + 6) = 4.5: the dynamics' backward path differs.
    * placement pseudocode (the first dynamics call sees h_0 untouched): da = 3 + 6 + 6 = 15, not
      the control's 9: there the representation's attenuation is 0.5**(k-1) for k >= 1.
    """
    control = G.make_variant("depth_loss_scale")
    assert control.loss_weights(3) == [1.0, 0.5, 0.25, 0.125]
    assert _unroll_gradients(control, "paper") == {"a": 9.0, "b": 4.5, "c": 3.0}
    scaled = G.make_variant("scale_gradient", scale=0.5)
    assert _unroll_gradients(scaled, "paper") == {"a": 9.0, "b": 12.0, "c": 7.0}
    assert _unroll_gradients(scaled, "pseudocode")["a"] == 15.0
    # the placement does not move the control: it never touches the hidden state
    assert _unroll_gradients(control, "pseudocode") == _unroll_gradients(control, "paper")
    # and scale 1 is the baseline
    plain = _unroll_gradients(G.make_variant("none"), "paper")
    assert _unroll_gradients(G.make_variant("depth_loss_scale", scale=1.0), "paper") == plain
