"""Tests of the compiled train step: loss weights, losses by hand, diagnostics against an
independent GradientTape computation for every placement, and every variant under XLA."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from experiments.base.errors import ConfigError
from experiments.gradients import VARIANTS, get_placement, make_variant, scale_gradient
from experiments.muzero.config import MuZeroConfig, NetworkConfig
from experiments.muzero.learner import Learner, StepInputs, step_weights
from experiments.muzero.networks import Networks
from experiments.muzero.replay import Batch

K = 3


def _config(**kwargs):
    network = NetworkConfig(hidden_size=6, width=8, value_support_size=3, reward_support_size=2)
    return MuZeroConfig(network=network, unroll_steps=K, batch_size=4, **kwargs)


def _batch(seed=0, b=4):
    rng = np.random.default_rng(seed)
    policy = rng.dirichlet(np.ones(3), size=(b, K + 1)).astype(np.float32)
    mask = np.ones((b, K + 1), np.float32)
    mask[0, 2:] = 0.0
    policy[0, 2:] = 0.0
    return Batch(
        observations=rng.normal(size=(b, 5)).astype(np.float32),
        actions=rng.integers(0, 3, size=(b, K)).astype(np.int32),
        target_value=rng.normal(size=(b, K + 1)).astype(np.float32),
        target_reward=rng.normal(size=(b, K + 1)).astype(np.float32),
        target_policy=policy,
        policy_mask=mask,
        steps_left=np.array([2, 5, 1, 3], np.int32)[:b],
    )


def _learner(variant="scale_gradient", placement="pseudocode", jit=False, **params):
    config = _config(jit_compile=jit)
    v = make_variant(variant, **params)
    nets = Networks(
        config.network,
        observation_size=5,
        num_actions=3,
        seed=1,
        kernel_constraint=v.kernel_constraint,
    )
    return Learner(nets, config=config, variant=v, placement=get_placement(placement))


def test_step_weights_by_hand():
    left = np.array([1, 2, 7])
    np.testing.assert_allclose(
        step_weights(left, unroll_steps=3, loss_scale="pseudocode"), [[1, 1 / 3, 1 / 3, 1 / 3]] * 3
    )
    np.testing.assert_allclose(step_weights(left, unroll_steps=3, loss_scale="none"), 1.0)
    np.testing.assert_allclose(
        step_weights(left, unroll_steps=3, loss_scale="remaining"),
        [[1, 1, 1, 1], [1, 0.5, 0.5, 0.5], [1, 1 / 3, 1 / 3, 1 / 3]],
    )


def test_depth_matched_control_weights_step_k_by_scale_to_the_k():
    """variant=depth_loss_scale multiplies the loss_scale weights by s**k; every other variant's
    weights are exactly step_weights' (x 1.0 in float32 changes no bit)."""
    batch = _batch()
    plain = _learner("none").batch_tensors(batch)["weights"]
    control = _learner("depth_loss_scale", scale=0.5).batch_tensors(batch)["weights"]
    assert plain.dtype == control.dtype == np.float32
    want = plain * np.array([1.0, 0.5, 0.25, 0.125][: K + 1], np.float32)
    np.testing.assert_array_equal(control, want)
    left = batch.steps_left
    np.testing.assert_array_equal(
        plain, step_weights(left, unroll_steps=K, loss_scale="pseudocode")
    )


def _independent(learner, batch, scale, placement):
    """dLoss/dh_k by adding zero perturbations d_k to the h_k the heads see, and the variable
    gradients, from a separately written unroll (placements spelled out by hand)."""
    nets = learner.networks
    tensors = learner.batch_tensors(batch)
    deltas = [tf.Variable(tf.zeros((len(batch.actions), 6))) for _ in range(K + 1)]
    variables = nets.trainable_variables

    def sg(x):
        return scale_gradient(x, scale)

    with tf.GradientTape() as tape:
        h = nets.representation(batch.observations) + deltas[0]
        policy, value = nets.prediction(h)
        outputs = [(None, value, policy)]
        hiddens = [h]
        for k in range(1, K + 1):
            if placement == "pseudocode":
                h_in = h if k == 1 else sg(h)
            elif placement == "paper":
                h_in = sg(h)
            else:
                h_in = h
            h, reward = nets.dynamics([h_in, tf.one_hot(batch.actions[:, k - 1], 3)])
            if placement == "hook":
                h = sg(h)
            h = h + deltas[k]
            hiddens.append(h)
            policy, value = nets.prediction(h)
            outputs.append((reward, value, policy))
        total = learner.losses(outputs, tensors)["total"]
    grads, delta_grads = tape.gradient(total, (variables, deltas))
    return grads, [float(tf.norm(g)) for g in delta_grads], hiddens


@pytest.mark.parametrize(
    ("placement", "jit"),
    [("pseudocode", False), ("paper", False), ("hook", False), ("pseudocode", True)],
)
def test_diagnostics_match_independent_tape(placement, jit):
    learner = _learner(placement=placement, jit=jit, scale=0.5)
    batch = _batch()
    grads, hidden_grads, hiddens = _independent(learner, batch, 0.5, placement)
    nets = learner.networks
    n_repr = len(nets.representation.trainable_variables)
    n_dyn = len(nets.dynamics.trainable_variables)
    metrics = learner.update(batch)  # after the independent computation: it changes weights
    for k in range(K + 1):
        assert metrics[f"grad/hidden_depth_{k}"] == pytest.approx(hidden_grads[k], rel=1e-4)
        norm = float(tf.reduce_mean(tf.norm(hiddens[k], axis=-1)))
        assert metrics[f"hidden/norm_depth_{k}"] == pytest.approx(norm, rel=1e-5)
    assert metrics["grad/global_norm"] == pytest.approx(float(tf.linalg.global_norm(grads)), 1e-4)
    split = {
        "representation": grads[:n_repr],
        "dynamics": grads[n_repr : n_repr + n_dyn],
        "prediction": grads[n_repr + n_dyn :],
    }
    for name, group in split.items():
        assert metrics[f"grad/{name}"] == pytest.approx(float(tf.linalg.global_norm(group)), 1e-4)
    assert metrics["nonfinite"] == 0.0


def test_placements_give_different_hidden_gradients():
    got = {}
    for placement in ("pseudocode", "hook"):
        learner = _learner(placement=placement, scale=0.5)
        learner.update(_batch(1))  # at initialisation the zero output layers pass no gradient
        got[placement] = learner.update(_batch(2))
    # hook scales all gradient into h_1 (heads included); pseudocode only what flows onward.
    assert got["hook"]["grad/hidden_depth_1"] != pytest.approx(
        got["pseudocode"]["grad/hidden_depth_1"], rel=1e-3
    )


def test_losses_by_hand_no_reward_loss_at_step_zero():
    learner = _learner(variant="none")
    batch = _batch()
    tensors = learner.batch_tensors(batch)
    _, outputs = learner.unroll(batch.observations, batch.actions)
    losses = {k: float(v) for k, v in learner.losses(outputs, tensors).items()}
    nets = learner.networks
    w = step_weights(batch.steps_left, unroll_steps=K, loss_scale="pseudocode")
    value = reward = policy = 0.0
    for k, (r, v, p) in enumerate(outputs):
        value += np.mean(w[:, k] * nets.value_support.loss(v, batch.target_value[:, k]).numpy())
        logp = tf.nn.log_softmax(p).numpy()
        ce = -(batch.target_policy[:, k] * logp).sum(axis=1)
        policy += np.mean(w[:, k] * ce)
        if k > 0:
            reward += np.mean(w[:, k] * nets.reward_support.loss(r, batch.target_reward[:, k]))
    l2 = 0.5 * 1e-4 * sum(float(np.sum(x.numpy() ** 2)) for x in nets.trainable_variables)
    assert losses["value"] == pytest.approx(value, rel=1e-5)
    assert losses["reward"] == pytest.approx(reward, rel=1e-5)
    assert losses["policy"] == pytest.approx(policy, rel=1e-5)
    assert losses["l2"] == pytest.approx(l2, rel=1e-5)
    assert losses["total"] == pytest.approx(value + reward + policy + l2, rel=1e-5)
    # the step-0 reward target is ignored
    changed = learner.batch_tensors(_batch())
    changed["reward"] = changed["reward"].copy()
    changed["reward"][:, 0] += 100.0
    assert float(learner.losses(outputs, changed)["reward"]) == pytest.approx(reward, rel=1e-5)


# XLA compiles cost ~10 s each on 2 shared cores: the variants with their own wiring (optimizer
# kwargs, kernel constraint, forward transform) run in CI, the rest under the slow marker.
_FAST = {"clipnorm", "maxnorm", "maxnorm_kernel"}


@pytest.mark.parametrize(
    "variant",
    [v if v in _FAST else pytest.param(v, marks=pytest.mark.slow) for v in sorted(VARIANTS)],
)
def test_every_variant_trains_under_xla(variant):
    learner = _learner(variant=variant, jit=True)
    before = [v.numpy().copy() for v in learner.networks.trainable_variables]
    for seed in range(3):
        metrics = learner.update(_batch(seed))
    assert metrics["nonfinite"] == 0.0
    assert all(np.isfinite(v) for v in metrics.values())
    after = [v.numpy() for v in learner.networks.trainable_variables]
    assert any(not np.allclose(a, b) for a, b in zip(before, after, strict=True))
    if variant == "maxnorm_kernel":
        for layer in learner.networks.dynamics.layers:
            if isinstance(layer, keras.layers.Dense):
                norms = np.linalg.norm(layer.kernel.numpy(), axis=0)
                assert norms.max() <= 2.0 + 1e-5


def test_nonfinite_flag():
    learner = _learner(variant="none")
    batch = _batch()
    bad = Batch(**{**batch.__dict__, "observations": np.full_like(batch.observations, np.nan)})
    assert learner.update(bad)["nonfinite"] == 1.0


def test_sgd_optimizer_and_clipnorm_passed_through():
    config = _config(optimizer="sgd", momentum=0.5)
    variant = make_variant("clipnorm", clipnorm=0.1)
    nets = Networks(config.network, observation_size=5, num_actions=3, seed=0)
    learner = Learner(nets, config=config, variant=variant, placement=get_placement("paper"))
    assert isinstance(learner.optimizer, keras.optimizers.SGD)
    assert learner.optimizer.clipnorm == pytest.approx(0.1)
    assert learner.optimizer.momentum == pytest.approx(0.5)


@pytest.mark.parametrize("frozen", [("representation",), ("dynamics",), ("dynamics", "prediction")])
def test_freeze_logs_the_gradients_but_leaves_those_weights_alone(frozen):
    config = MuZeroConfig(
        network=NetworkConfig(hidden_size=6, width=8, value_support_size=3, reward_support_size=2),
        unroll_steps=K,
        batch_size=4,
        jit_compile=False,
        freeze=list(frozen),
    )
    nets = Networks(config.network, observation_size=5, num_actions=3, seed=1)
    learner = Learner(
        nets, config=config, variant=make_variant("none"), placement=get_placement("pseudocode")
    )
    learner.update(_batch(1))  # at initialisation the zero output layers pass no gradient back
    models = {"representation": nets.representation, "dynamics": nets.dynamics}
    models["prediction"] = nets.prediction
    before = {name: [w.numpy().copy() for w in m.trainable_weights] for name, m in models.items()}
    metrics = learner.update(_batch(2))
    for name, model in models.items():
        after = model.trainable_weights
        moved = [not np.array_equal(a, w.numpy()) for a, w in zip(before[name], after, strict=True)]
        assert metrics[f"grad/{name}"] > 0  # computed and logged, frozen or not
        assert not any(moved) if name in frozen else any(moved), name


def test_freeze_refuses_unknown_or_repeated_networks():
    with pytest.raises(ConfigError, match="unknown network to freeze 'encoder'; choose one of"):
        MuZeroConfig(freeze=["encoder"])
    with pytest.raises(ConfigError, match="names a network twice"):
        MuZeroConfig(freeze=["dynamics", "dynamics"])


# Per-variable sums of the weights after 3 Adam updates of _learner(variant="none") on batches
# 0, 1, 2, recorded from the code before the optimizers moved to experiments/muzero/optimizers.py
# (commit 375c596); that code gave the weights sha256 89c91a76... bit for bit, as this one does.
_ADAM_SUMS = [
    3.2215664363466203,
    0.012852282728999853,
    -1.0472961533814669,
    0.027667823247611523,
    -0.41995827993378043,
    0.07945995032787323,
    -2.040422510355711,
    -0.03150228038430214,
    -0.3744853176176548,
    -0.0841010119765997,
    0.39171677827835083,
    0.0781782679259777,
    -0.08396999957039952,
    -0.009392063599079847,
    -0.5841539823450148,
    -0.08654881827533245,
]


def test_adam_updates_are_those_recorded_before_the_optimizer_choice_grew():
    learner = _learner(variant="none")
    for seed in range(3):
        metrics = learner.update(_batch(seed))
    sums = [
        float(np.sum(v.numpy(), dtype=np.float64)) for v in learner.networks.trainable_variables
    ]
    np.testing.assert_allclose(sums, _ADAM_SUMS, rtol=1e-5, atol=1e-6)
    assert metrics["loss/total"] == pytest.approx(7.336489200592041, rel=1e-5)


def test_momentum_optimizer_takes_the_pseudocode_step_in_the_learner():
    # First update: the accumulator is the gradient itself, so w1 = w0 - lr * dLoss/dw at w0.
    config = _config(jit_compile=False, optimizer="momentum", learning_rate=0.1)
    nets = Networks(config.network, observation_size=5, num_actions=3, seed=1)
    learner = Learner(
        nets, config=config, variant=make_variant("none"), placement=get_placement("pseudocode")
    )
    batch = _batch()
    before = [v.numpy().copy() for v in nets.trainable_variables]
    with tf.GradientTape() as tape:
        _, outputs = learner.unroll(batch.observations, batch.actions)
        total = learner.losses(outputs, learner.batch_tensors(batch))["total"]
    grads = tape.gradient(total, nets.trainable_variables)
    learner.update(batch)
    for w0, g, w1 in zip(before, grads, nets.trainable_variables, strict=True):
        g = np.zeros_like(w0) if g is None else g.numpy()
        np.testing.assert_allclose(w1.numpy(), w0 - 0.1 * g, rtol=1e-5, atol=1e-7)


def _weights(learner):
    return [v.numpy().copy() for v in learner.networks.trainable_variables]


def test_lr_scale_is_the_baseline_at_half_the_learning_rate_bit_for_bit():
    # lr_scale 0.5: one optimizer on the schedule x 0.5, so exactly none at learning_rate 0.005
    def run(variant, learning_rate):
        config = _config(jit_compile=False, learning_rate=learning_rate)
        nets = Networks(config.network, observation_size=5, num_actions=3, seed=1)
        v = make_variant(variant)
        learner = Learner(nets, config=config, variant=v, placement=get_placement("pseudocode"))
        for seed in range(3):
            learner.update(_batch(seed))
        return learner

    scaled, halved, full = run("lr_scale", 0.01), run("none", 0.005), run("none", 0.01)
    assert len(scaled.optimizers) == 1
    for a, b in zip(_weights(scaled), _weights(halved), strict=True):
        np.testing.assert_array_equal(a, b)
    assert any(
        not np.array_equal(a, b) for a, b in zip(_weights(scaled), _weights(full), strict=True)
    )


@pytest.mark.parametrize("optimizer", ["momentum", "adam"])
def test_dynamics_lr_scale_halves_only_the_dynamics_networks_step(optimizer):
    # One update from the same weights (all made non-zero, so every network gets a gradient).
    # Both first steps are linear in the learning rate: momentum w - lr g; Keras' Adam
    # w - lr_t m / (sqrt(v) + eps), with m, v independent of lr. So the dynamics network moves
    # exactly half as far as under none, and the other two exactly as far.
    def one_step(variant):
        config = _config(jit_compile=False, optimizer=optimizer, learning_rate=0.1)
        nets = Networks(config.network, observation_size=5, num_actions=3, seed=1)
        rng = np.random.default_rng(7)
        for w in nets.trainable_variables:
            w.assign(rng.normal(scale=0.3, size=w.shape).astype(np.float32))
        v = make_variant(variant)
        learner = Learner(nets, config=config, variant=v, placement=get_placement("pseudocode"))
        before = {n: [w.numpy().copy() for w in m.trainable_weights] for n, m in _models(nets)}
        learner.update(_batch(2))
        deltas = {
            n: [w.numpy() - b for w, b in zip(m.trainable_weights, before[n], strict=True)]
            for n, m in _models(nets)
        }
        return learner, deltas

    learner, scaled = one_step("dynamics_lr_scale")
    _, base = one_step("none")
    assert len(learner.optimizers) == 2
    for name in ("representation", "dynamics", "prediction"):
        factor = 0.5 if name == "dynamics" else 1.0
        assert any(np.abs(d).max() > 1e-4 for d in base[name]), name
        for d_scaled, d_base in zip(scaled[name], base[name], strict=True):
            np.testing.assert_allclose(d_scaled, factor * d_base, rtol=1e-3, atol=1e-7)


def test_restart_resets_every_optimizer():
    learner = _learner(variant="dynamics_lr_scale")
    start = _weights(learner)
    for seed in range(2):
        learner.update(_batch(seed))
    first = _weights(learner)
    initial = Networks(learner.config.network, observation_size=5, num_actions=3, seed=1)
    for a, b in zip(start, [v.numpy() for v in initial.trainable_variables], strict=True):
        np.testing.assert_array_equal(a, b)  # the same seed builds the same start
    learner.restart(initial)
    for seed in range(2):
        learner.update(_batch(seed))
    for a, b in zip(first, _weights(learner), strict=True):
        np.testing.assert_array_equal(a, b)


def _models(nets):
    return [
        ("representation", nets.representation),
        ("dynamics", nets.dynamics),
        ("prediction", nets.prediction),
    ]


def test_global_clipnorm_with_several_learning_rate_factors_is_refused():
    # each optimizer would clip over its own variables: not a global norm any more
    import dataclasses

    from experiments.gradients import OptimizerOptions

    variant = dataclasses.replace(
        make_variant("dynamics_lr_scale"), optimizer=OptimizerOptions({"global_clipnorm": 1.0})
    )
    config = _config(jit_compile=False)
    nets = Networks(config.network, observation_size=5, num_actions=3, seed=1)
    with pytest.raises(ConfigError, match="global_clipnorm and several learning-rate factors"):
        Learner(nets, config=config, variant=variant, placement=get_placement("pseudocode"))


def test_step_inputs_name_the_compiled_steps_keys():
    # the TypedDict, the fixed signature and the arrays handed to the step hold the same keys
    learner = _learner("none")
    keys = set(StepInputs.__annotations__)
    assert set(learner.batch_spec()) == keys == set(learner.batch_tensors(_batch()))
    spec = learner.batch_spec()
    for name, array in learner.batch_tensors(_batch()).items():
        assert tuple(array.shape)[1:] == tuple(spec[name].shape)[1:], name


def test_update_eager_is_the_compiled_step_run_op_by_op():
    """Learner.update_eager (what gradlab bench times as "eager"): the same metrics and the same
    new weights as update_tensors on the same batch, from the same start (and the step did move
    them)."""
    eager, compiled = _learner(), _learner()
    tensors = {k: tf.constant(v) for k, v in eager.batch_tensors(_batch()).items()}
    start = _weights(eager)
    by_eager = {k: float(v) for k, v in eager.update_eager(tensors).items()}
    by_compiled = compiled.update_tensors(tensors)
    assert list(by_eager) == list(by_compiled)
    assert by_eager == pytest.approx(by_compiled, rel=1e-5, abs=1e-7)
    for a, b in zip(_weights(eager), _weights(compiled), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    assert any(not np.array_equal(a, s) for a, s in zip(_weights(eager), start, strict=True))
