"""The compiled search against the NumPy reference search, hand numbers and its own contract."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from _search_models import (
    RandomModelTF,
    as_numpy,
    chain_tf,
    random_model,
    random_networks,
    randomize,
    roots_initial_fn,
    two_armed_tf,
)

from experiments.base.errors import ConfigError
from experiments.muzero import _tree_tf
from experiments.muzero._acting import select_action
from experiments.muzero._reference_tree import pick
from experiments.muzero.qtransforms import Q_FORMS
from experiments.muzero.reference_search import run_search
from experiments.muzero.runtime.weights import WeightCopy
from experiments.muzero.search_tf import CompiledSearch, draw_randomness

FORMS = tuple(Q_FORMS)


def _roots(hidden: np.ndarray, logits: np.ndarray) -> np.ndarray:
    return np.concatenate([hidden, logits], axis=1).astype(np.float32)


def _search(recurrent_tf, hidden_size, num_actions, **kwargs) -> CompiledSearch:
    return CompiledSearch(
        roots_initial_fn(hidden_size), recurrent_tf, num_actions=num_actions, **kwargs
    )


def _greedy(search: CompiledSearch, observations: np.ndarray, *, noise=None, fraction=0.0):
    batch = len(observations)
    noise = np.zeros((batch, search.num_actions)) if noise is None else noise
    uniforms = np.full((batch, search.num_actions), 0.5)
    return search(
        observations, noise=noise, noise_fraction=fraction, temperature=0.0, uniforms=uniforms
    )


# ---------------------------------------------------------------------------------------------
# Hand numbers (the same as tests/muzero/test_search.py's).


@pytest.mark.parametrize(
    ("q_form", "visits", "root_value", "q"),
    [("normalized", [1, 3], 1.0, 1.0 + 1.0 / 3.0), ("pseudocode", [0, 4], 2.5, 2.5)],
)
def test_two_armed_model_first_four_simulations_by_hand(q_form, visits, root_value, q):
    # See test_search.py's two hand computations: normalized expands action 0 first (the highest
    # prior, lowest index), pseudocode action 1 (ties to the highest index) and never leaves it.
    search = _search(two_armed_tf, 1, 2, num_simulations=4, discount=1.0, q_form=q_form)
    out = _greedy(search, np.zeros((1, 3), np.float32))
    np.testing.assert_array_equal(out.visit_counts, [visits])
    assert out.root_value[0] == pytest.approx(root_value)
    np.testing.assert_allclose(out.q_values, [[0.0, q]])
    assert out.actions.tolist() == [1] and out.actions.dtype == np.int64
    assert out.visit_counts.dtype == np.int64


@pytest.mark.parametrize("sims", [1, 40])
def test_chain_root_value_closed_form(sims):
    # Simulation s returns 2 + 2 * 0.5^s; the mean over s = 1..n is 2 + (2 / n) * (1 - 0.5^n).
    # At 40 simulations the path is 40 deep: the descent and the backup loop that far.
    search = _search(chain_tf, 2, 1, num_simulations=sims, discount=0.5)
    out = _greedy(search, np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(out.visit_counts, [[sims], [sims]])
    np.testing.assert_allclose(out.root_value, 2 + (2 / sims) * (1 - 0.5**sims), rtol=1e-12)
    # One child: the root's returns are 1 + 0.5 * the child's, so its Q is the root's value.
    np.testing.assert_allclose(out.q_values[:, 0], out.root_value, rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# The NumPy reference search.


@pytest.mark.parametrize(("q_form", "jit_compile"), [(f, j) for f in FORMS for j in (True, False)])
def test_equals_the_numpy_search_on_the_random_fixed_models(q_form, jit_compile):
    """Visit for visit, with root noise, on 8 random models of tests/muzero/test_search.py.

    Rewards depend on the step (0.1 per dynamics call along the path): equal values need the
    compiled search to hand the model the same steps as the NumPy search.
    """
    num_actions, width, batch, sims, discount = 3, 4, 6, 24, 0.95
    model = RandomModelTF(num_actions, width, step_reward=0.1)
    search = _search(
        model, width, num_actions, num_simulations=sims, discount=discount, q_form=q_form,
        jit_compile=jit_compile,
    )  # fmt: skip
    for seed in range(8):
        model.load(seed)
        rng = np.random.default_rng(100 + seed)
        observations = _roots(rng.normal(size=(batch, width)), rng.normal(size=(batch, 3)))
        # The same noise on both sides: run_search draws it from a generator seeded alike.
        noise = np.random.default_rng(seed).dirichlet(np.full(num_actions, 0.25), size=batch)
        out = search(
            observations,
            noise=noise,
            noise_fraction=0.25,
            temperature=0.0,
            uniforms=np.full((batch, num_actions), 0.5),
        )
        reference = run_search(
            observations[:, :width],
            np.zeros(batch),
            observations[:, width:],
            random_model(num_actions, width, seed, step_reward=0.1),
            num_simulations=sims,
            discount=discount,
            rng=np.random.default_rng(seed),
            q_form=q_form,
        )
        np.testing.assert_array_equal(out.visit_counts, reference.visit_counts)
        np.testing.assert_allclose(out.root_value, reference.root_value, rtol=1e-9)
        np.testing.assert_allclose(out.q_values, reference.q_values, rtol=1e-9, atol=1e-12)
    assert search.traces == 1  # new weights, same graph


@pytest.mark.parametrize("priors", ["uniform", "coarse"])
@pytest.mark.parametrize("q_form", FORMS)
def test_equals_the_numpy_search_with_tied_priors(q_form, priors):
    """Visit for visit on 4 x 8 random trees whose priors tie (uniform, or floored logits), with
    and without root noise: both searches break every tie by the form's rule."""
    num_actions, width, batch, sims = 4, 3, 8, 12
    model = RandomModelTF(num_actions, width, priors=priors)
    search = _search(model, width, num_actions, num_simulations=sims, discount=0.9, q_form=q_form)
    patterns = set()
    for seed in range(4):
        model.load(seed)
        rng = np.random.default_rng(seed)
        logits = np.floor(rng.normal(size=(batch, num_actions)) * 2.0)
        if priors == "uniform":
            logits[:] = 0.0
        observations = _roots(rng.normal(size=(batch, width)), logits)
        fraction = 0.25 * (seed % 2)
        noise = np.random.default_rng(seed).dirichlet(np.full(num_actions, 0.25), size=batch)
        out = search(
            observations, noise=noise, noise_fraction=fraction, temperature=0.0,
            uniforms=np.full((batch, num_actions), 0.5),
        )  # fmt: skip
        reference = run_search(
            observations[:, :width], np.zeros(batch), observations[:, width:],
            random_model(num_actions, width, seed, priors=priors), num_simulations=sims,
            discount=0.9, rng=np.random.default_rng(seed), dirichlet_fraction=fraction,
            q_form=q_form,
        )  # fmt: skip
        np.testing.assert_array_equal(out.visit_counts, reference.visit_counts)
        np.testing.assert_allclose(out.root_value, reference.root_value, rtol=1e-9)
        patterns |= {tuple(v) for v in reference.visit_counts}
    assert len(patterns) > 4  # the trees really differ


def _keras_search(obs_size, num_actions, sims, **kwargs):
    """Small random Keras networks, their recurrent callback, and a compiled search on them."""
    nets = random_networks(observation_size=obs_size, num_actions=num_actions)

    def recurrent(hidden, action, step):
        del step
        return nets.recurrent_inference(hidden, action)

    search = CompiledSearch(
        nets.initial_inference, recurrent, num_actions=num_actions, num_simulations=sims,
        discount=0.997, **kwargs,
    )  # fmt: skip
    return nets, recurrent, search


@pytest.mark.parametrize("q_form", FORMS)
def test_agreement_with_the_numpy_search_on_random_keras_networks(q_form):
    """Root visit counts of 480 trees (30 random networks x 16 roots, 25 simulations, noise).

    The NumPy search calls the same networks compiled on their own; the compiled search traces
    them into its graph, where XLA may fuse and round differently (float32), and the tree's
    float64 sums may differ in the last bit (XLA fuses multiply-adds): trees could then part on a
    near-tie. Measured here: 480 of 480 agree in each q form (3200 of 3200 over 200 networks),
    root values within 3e-14; 480 of 480 again for ``pseudocode`` with its own tie rule.
    """
    obs_size, num_actions, batch, sims = 10, 4, 16, 25
    nets, recurrent, search = _keras_search(obs_size, num_actions, sims, q_form=q_form)
    initial_np = tf.function(nets.initial_inference, jit_compile=True)
    recurrent_np = as_numpy(tf.function(recurrent, jit_compile=True))
    agree = total = 0
    patterns = set()
    for seed in range(30):
        randomize(nets, seed)
        rng = np.random.default_rng(seed)
        observations = (rng.random((batch, obs_size)) < 0.3).astype(np.float32)
        noise = np.random.default_rng(seed).dirichlet(np.full(num_actions, 0.25), size=batch)
        out = search(
            observations, noise=noise, noise_fraction=0.25, temperature=1.0,
            uniforms=np.zeros((batch, num_actions)),
        )  # fmt: skip
        hidden, value, logits = (t.numpy() for t in initial_np(observations))
        reference = run_search(
            hidden, value, logits, recurrent_np, num_simulations=sims, discount=0.997,
            rng=np.random.default_rng(seed), q_form=q_form,
        )  # fmt: skip
        agree += int((out.visit_counts == reference.visit_counts).all(axis=1).sum())
        total += batch
        patterns |= {tuple(v) for v in reference.visit_counts}
    assert total == 480 and len(patterns) > 50  # the trees really differ
    assert agree / total >= 0.99, f"{agree} of {total} trees agree"


# ---------------------------------------------------------------------------------------------
# Acting: the caller's draws, the action rule, no re-tracing.


def test_act_draws_and_acts_as_the_numpy_path():
    num_actions, width, batch, sims = 3, 4, 5, 12
    search = _search(
        RandomModelTF(num_actions, width).load(3), width, num_actions, num_simulations=sims,
        discount=0.9,
    )  # fmt: skip
    rng = np.random.default_rng(0)
    observations = _roots(rng.normal(size=(batch, width)), rng.normal(size=(batch, 3)))
    fn = random_model(num_actions, width, 3)
    for temperature, fraction in [(1.0, 0.25), (0.0, 0.0), (0.5, 0.0), (0.0, 0.25), (0.25, 1.0)]:
        compiled_rng, numpy_rng = np.random.default_rng(7), np.random.default_rng(7)
        out = search.act(
            observations, rng=compiled_rng, temperature=temperature, dirichlet_fraction=fraction
        )
        reference = run_search(
            observations[:, :width], np.zeros(batch), observations[:, width:], fn,
            num_simulations=sims, discount=0.9, rng=numpy_rng, dirichlet_fraction=fraction,
        )  # fmt: skip
        actions = select_action(reference.visit_counts, temperature=temperature, rng=numpy_rng)
        np.testing.assert_array_equal(out.visit_counts, reference.visit_counts)
        np.testing.assert_array_equal(out.actions, actions)
        # both generators consumed exactly the same draws
        assert compiled_rng.bit_generator.state == numpy_rng.bit_generator.state
    assert search.traces == 1


def test_one_trace_per_batch_size_whatever_the_temperature_noise_and_dtype():
    search = _search(two_armed_tf, 1, 2, num_simulations=3, discount=1.0)
    rng = np.random.default_rng(0)
    for temperature in (0.0, 0.25, 1.0):
        for fraction in (0.0, 0.25):
            search.act(
                np.zeros((4, 3)), rng=rng, temperature=temperature, dirichlet_fraction=fraction
            )
    search.act(np.zeros((4, 3), np.float32), rng=rng, temperature=1)
    assert search.traces == 1
    search.act(np.zeros((2, 3)), rng=rng, temperature=1.0)
    assert search.traces == 2
    search.act(np.zeros((4, 3)), rng=rng, temperature=0.5)
    assert search.traces == 2


def test_draw_randomness_draws_exactly_what_the_numpy_path_draws():
    a, b = np.random.default_rng(3), np.random.default_rng(3)
    noise, uniforms = draw_randomness(
        a, batch_size=4, num_actions=3, temperature=0.0, dirichlet_alpha=0.3,
        dirichlet_fraction=0.25,
    )  # fmt: skip
    np.testing.assert_array_equal(noise, b.dirichlet([0.3] * 3, size=4))
    np.testing.assert_array_equal(uniforms, b.random((4, 3)))
    noise, uniforms = draw_randomness(
        a, batch_size=4, num_actions=3, temperature=1.0, dirichlet_alpha=0.3,
        dirichlet_fraction=0.0,
    )  # fmt: skip
    np.testing.assert_array_equal(noise, 0.0)
    np.testing.assert_array_equal(uniforms[:, 0], b.random(4))
    np.testing.assert_array_equal(uniforms[:, 1:], 0.0)
    assert a.bit_generator.state == b.bit_generator.state


@pytest.mark.parametrize("temperature", [0.0, 0.25, 0.5, 1.0, 2.0])
def test_select_action_in_the_graph_equals_numpys(temperature):
    rng = np.random.default_rng(int(temperature * 100))
    counts = rng.integers(0, 4, size=(500, 5))
    counts[:, 2] += 1  # every row has a positive sum; many rows have tied maxima
    draw = np.random.default_rng(1)
    expected = select_action(counts, temperature=temperature, rng=draw)
    _, uniforms = draw_randomness(
        np.random.default_rng(1), batch_size=500, num_actions=5, temperature=temperature,
        dirichlet_alpha=1.0, dirichlet_fraction=0.0,
    )  # fmt: skip
    graph = tf.function(_tree_tf.select_action, jit_compile=True)
    got = graph(tf.constant(counts, tf.int32), tf.constant(temperature, tf.float64), uniforms)
    np.testing.assert_array_equal(got.numpy(), expected)


def test_argmax_first_breaks_ties_low_and_takes_nan_as_the_maximum():
    x = tf.constant([[1.0, 3.0, 3.0], [2.0, np.nan, np.nan], [-np.inf, -np.inf, -np.inf]])
    assert _tree_tf.argmax_first(x).numpy().tolist() == [1, 1, 0]
    assert np.argmax(x.numpy(), axis=1).tolist() == [1, 1, 0]


def test_argmax_last_breaks_ties_high_as_the_numpy_tree():
    # Row 0: maxima at 1 and 2 -> 2; row 1: NaNs at 1 and 2 -> the last, 2; row 2: all -inf -> 2;
    # row 3: one maximum at 0 -> 0.
    rows = [[1.0, 3.0, 3.0], [2.0, np.nan, np.nan], [-np.inf] * 3, [5.0, 1.0, 1.0]]
    x = tf.constant(rows)
    assert _tree_tf.argmax_last(x).numpy().tolist() == [2, 2, 2, 0]
    assert pick(np.array(rows), "highest").tolist() == [2, 2, 2, 0]
    assert pick(np.array(rows), "lowest").tolist() == [1, 1, 0, 0]


def test_non_finite_model_outputs_do_not_crash():
    def broken(hidden, action, step):
        batch = tf.shape(hidden)[0]
        nan = tf.fill([batch], np.nan)
        return hidden, nan, tf.fill([batch], np.inf), tf.fill([batch, 2], np.nan)

    out = _greedy(_search(broken, 2, 2, num_simulations=5, discount=0.9), np.zeros((3, 4)))
    np.testing.assert_array_equal(out.visit_counts.sum(axis=1), 5)
    assert np.isnan(out.root_value).all()
    assert set(out.actions) <= {0, 1}


# ---------------------------------------------------------------------------------------------
# Bad input.


@pytest.mark.parametrize(
    ("override", "needle"),
    [
        (dict(q_form="minmax"), "unknown q_form 'minmax'; choose one of: normalized, pseudocode"),
        (dict(num_simulations=0), "num_simulations must be an integer >= 1, got 0"),
        (dict(discount=1.5), "discount must be a finite number in [0, 1], got 1.5"),
        (dict(pb_c_base=0.0), "pb_c_base"),
        (dict(num_actions=0), "num_actions must be an integer >= 1, got 0"),
    ],
)
def test_bad_hyper_parameters_raise_config_error(override, needle):
    kwargs = {"num_actions": 2, "num_simulations": 2, "discount": 0.9, **override}
    with pytest.raises(ConfigError) as info:
        CompiledSearch(roots_initial_fn(1), two_armed_tf, **kwargs)
    assert needle in str(info.value)


def test_bad_call_arguments_raise_config_error():
    search = _search(two_armed_tf, 1, 2, num_simulations=2, discount=0.9)
    obs = np.zeros((2, 3))
    good = dict(noise=np.zeros((2, 2)), noise_fraction=0.0, temperature=0.0)
    with pytest.raises(ConfigError, match=r"uniforms has shape \(2, 3\)"):
        search(obs, uniforms=np.zeros((2, 3)), **good)
    with pytest.raises(ConfigError, match=r"noise has shape \(3, 2\)"):
        search(obs, uniforms=np.zeros((2, 2)), **{**good, "noise": np.zeros((3, 2))})
    with pytest.raises(ConfigError, match="temperature must be a finite number >= 0, got -1"):
        search.act(obs, rng=np.random.default_rng(0), temperature=-1.0)
    with pytest.raises(ConfigError, match="rng must be a numpy.random.Generator"):
        search.act(obs, rng=np.random.RandomState(0), temperature=1.0)
    with pytest.raises(ConfigError, match=r"observations have shape \(3,\)"):
        search.act(np.zeros(3), rng=np.random.default_rng(0), temperature=1.0)
    assert search.traces == 0  # nothing was traced for bad input


def test_a_search_on_a_weight_copy_computes_what_it_computes_on_the_networks():
    """WeightCopy: the same compiled program reads the copy's variables instead of the
    networks'. On a fresh copy it gives bit for bit what it gives on the networks; after the
    networks change, a copy not refreshed still gives what the networks gave then, and a refreshed
    one what they give now. No second trace."""
    obs_size, num_actions, batch, sims = 10, 4, 16, 12
    nets, _, search = _keras_search(obs_size, num_actions, sims)

    def move(seed, weights=None):
        rng = np.random.default_rng(seed)
        observations = (rng.random((batch, obs_size)) < 0.3).astype(np.float32)
        out = search.act(observations, rng=rng, temperature=1.0, weights=weights)
        return np.concatenate([out.visit_counts.ravel(), out.root_value, out.q_values.ravel()])

    randomize(nets, 1)
    copy = WeightCopy(nets.variables)
    then = move(7)
    np.testing.assert_array_equal(move(7, copy), then)
    randomize(nets, 2)  # the networks change (as training changes them)
    now = move(7)
    assert not np.array_equal(now, then)
    np.testing.assert_array_equal(move(7, copy), then)  # the copy kept its values
    copy.refresh()
    np.testing.assert_array_equal(move(7, copy), now)
    for value, variable in zip(copy.values(), nets.variables, strict=True):
        np.testing.assert_array_equal(value.numpy(), variable.numpy())
    assert search.traces == 1
    with pytest.raises(ValueError, match="reads none of the copied variables"):
        WeightCopy([tf.Variable(1.0)]).captured(
            search.concrete_function(batch, obs_size).concrete.captured_inputs
        )
