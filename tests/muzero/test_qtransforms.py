"""The value forms of the search as functions (experiments/muzero/qtransforms.py)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import tensorflow as tf
from _search_models import RandomModelTF, random_model, roots_initial_fn

from experiments.base.errors import ConfigError
from experiments.muzero.options import Q_FORMS as OPTIONS_Q_FORMS
from experiments.muzero.qtransforms import FRESH, Q_FORMS, TIES, QForm, resolve
from experiments.muzero.reference_search import run_search
from experiments.muzero.search_tf import CompiledSearch

# reward 0.5, value 0.2, discount 0.9 (one child, by hand):
#   pseudocode: node_q = value = 0.2; value_score(normalized 0.25) = 0.5 + 0.9 * 0.25 = 0.725
#   normalized: node_q = 0.5 + 0.9 * 0.2 = 0.68; value_score(normalized 0.25) = 0.25
HAND = {"pseudocode": (0.2, 0.725), "normalized": (0.68, 0.25)}


def test_every_form_is_documented_by_hand_here_and_in_options():
    assert set(HAND) == set(Q_FORMS)
    assert OPTIONS_Q_FORMS is Q_FORMS  # one registry, re-exported for the config's validation
    for form in Q_FORMS.values():
        assert form.ties in TIES and form.fresh in FRESH and form.summary


@pytest.mark.parametrize("name", list(Q_FORMS))
def test_each_form_by_hand_on_numpy_and_tensorflow_alike(name):
    form = Q_FORMS[name]
    node_q, score = HAND[name]
    assert form.node_q(np.array([0.5]), np.array([0.2]), 0.9)[0] == pytest.approx(node_q)
    assert form.value_score(np.array([0.25]), np.array([0.5]), 0.9)[0] == pytest.approx(score)
    t = tf.constant([0.5], tf.float64), tf.constant([0.2], tf.float64)
    assert form.node_q(*t, 0.9).numpy()[0] == form.node_q(np.array([0.5]), np.array([0.2]), 0.9)
    normalized = tf.constant([0.25], tf.float64)
    got = form.value_score(normalized, t[0], 0.9).numpy()[0]
    assert got == form.value_score(np.array([0.25]), np.array([0.5]), 0.9)[0]


def test_the_tie_rules_are_the_sources():
    assert (Q_FORMS["pseudocode"].ties, Q_FORMS["pseudocode"].fresh) == ("highest", "score")
    assert (Q_FORMS["normalized"].ties, Q_FORMS["normalized"].fresh) == ("lowest", "prior")


def test_resolve_takes_a_form_or_its_name_and_names_the_choices_otherwise():
    assert resolve("normalized") is Q_FORMS["normalized"]
    custom = dataclasses.replace(Q_FORMS["pseudocode"], name="custom")
    assert resolve(custom) is custom
    for bad in ("minmax", None, 3):
        with pytest.raises(ConfigError) as info:
            resolve(bad)
        assert str(info.value) == (f"unknown q_form {bad!r}; choose one of: normalized, pseudocode")


@pytest.mark.parametrize(("field", "value"), [("ties", "random"), ("fresh", "value")])
def test_a_form_with_a_bad_rule_is_refused_when_defined(field, value):
    with pytest.raises(ValueError, match=f"{field} {value!r}"):
        dataclasses.replace(Q_FORMS["normalized"], **{field: value})


def _value_only(normalized, reward, discount):
    """A form not in the registry: ``normalize(value)``, the reward left out."""
    del reward, discount
    return normalized


VALUE_ONLY = QForm(
    "value_only",
    "normalize(value) (test only)",
    node_q=Q_FORMS["pseudocode"].node_q,
    value_score=_value_only,
    ties="lowest",
    fresh="score",
)


def test_a_new_form_is_one_entry_that_both_searches_run_alike():
    """Passed as a value, as mctx passes a qtransform: the NumPy reference and the compiled search
    agree on it visit for visit, and it is not either registered form (its trees differ)."""
    num_actions, width, batch, sims = 3, 4, 12, 16
    model = RandomModelTF(num_actions, width).load(4)
    search = CompiledSearch(
        roots_initial_fn(width), model, num_actions=num_actions, num_simulations=sims,
        discount=0.9, q_form=VALUE_ONLY, jit_compile=False,
    )  # fmt: skip
    rng = np.random.default_rng(4)
    hidden, logits = rng.normal(size=(batch, width)), rng.normal(size=(batch, num_actions))
    observations = np.concatenate([hidden, logits], axis=1).astype(np.float32)
    out = search(
        observations, noise=np.zeros((batch, num_actions)), noise_fraction=0.0, temperature=0.0,
        uniforms=np.full((batch, num_actions), 0.5),
    )  # fmt: skip
    searches = {
        form: run_search(
            observations[:, :width], np.zeros(batch), observations[:, width:],
            random_model(num_actions, width, 4), num_simulations=sims, discount=0.9,
            rng=np.random.default_rng(0), dirichlet_fraction=0.0, q_form=form,
        ).visit_counts
        for form in (VALUE_ONLY, "pseudocode", "normalized")
    }  # fmt: skip
    np.testing.assert_array_equal(out.visit_counts, searches[VALUE_ONLY])
    for name in ("pseudocode", "normalized"):
        assert (searches[VALUE_ONLY] != searches[name]).any(axis=1).sum() > 0
