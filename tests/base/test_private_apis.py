"""Each private API gradlab uses degrades to its public fallback: the same result, one warning.

The private API is made to fail as a TensorFlow or Hydra upgrade would make it fail: the attribute
deleted (``monkeypatch.delattr``), or a stand-in that raises what a moved module or a changed
signature raises. The private paths themselves are tested in tests/muzero/test_compiled_call.py,
tests/muzero/test_graph_store.py, tests/launch/test_plan.py and
tests/launch/test_planned_sweeper.py.
"""

from __future__ import annotations

import types
import warnings

import numpy as np
import pytest
import tensorflow as tf
from conftest import compose_config
from hydra._internal.core_plugins import basic_sweeper

from experiments.base.errors import ConfigError
from experiments.base.private_api import PrivateAPIWarning
from experiments.config import register_schema, to_run_config
from experiments.launch import plan
from experiments.launch.hydra_app import CONF_DIR
from experiments.muzero.config import MuZeroConfig
from experiments.muzero.runtime.compiled_call import (
    CapturesUnavailable,
    FlatCall,
    substitutes_captures,
)
from hydra_plugins.gradlab_sweeper import planned_sweeper


def _recorded(run):
    """``(run(), [PrivateAPIWarning messages])``, every warning recorded (no once-only filter)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run()
    return result, [str(w.message) for w in caught if w.category is PrivateAPIWarning]


# ---------------------------------------------------------------------------------------------
# TensorFlow: context.call_function, add_function_def and ops.uid
# (experiments/muzero/runtime/graph_store.py).


def test_graph_store_without_add_function_def_traces_with_the_same_rows_and_warns(
    tmp_path, monkeypatch
):
    import dataclasses

    from tensorflow.python.eager import context

    from experiments.gradients import get_placement, make_variant
    from experiments.muzero.agents import AgentCache
    from experiments.muzero.config import NetworkConfig
    from experiments.muzero.runtime.graph_store import GraphStore
    from experiments.muzero.train import train
    from experiments.tasks import TaskConfig

    config = dataclasses.replace(
        MuZeroConfig(network=NetworkConfig(hidden_size=8, width=16)),
        training_steps=4, num_envs=4, selfplay_interval=1, num_simulations=3, unroll_steps=2,
        batch_size=8, eval_every=2, eval_episodes=2, jit_compile=False,
    )  # fmt: skip

    def rows(graphs):
        cache = AgentCache(graphs=graphs)
        run = train(config, TaskConfig(), make_variant("none"), get_placement("pseudocode"),
                    seed=1, cache=cache, overlap=False)  # fmt: skip
        return [{k: v for k, v in r.items() if not k.startswith("time/")} for r in run]

    plain = rows(None)
    monkeypatch.delattr(context.Context, "add_function_def")
    fallback, messages = _recorded(lambda: rows(GraphStore(tmp_path, fingerprint="f")))
    assert fallback == plain
    # one per stored function (the step and the two searches), the same text: shown once by
    # Python's default filter
    assert len(messages) == 3 and len(set(messages)) == 1
    assert "is_op_determinism_enabled is unavailable" in messages[0]
    assert "the traced function" in messages[0]
    assert not list(tmp_path.glob("*.json"))  # nothing stored that this TensorFlow cannot run


# ---------------------------------------------------------------------------------------------
# TensorFlow: ConcreteFunction._call_flat (experiments/muzero/runtime/compiled_call.py).


def _scaled():
    """``x * v + y`` with ``v`` a captured variable, and a second variable ``w`` to swap in."""
    v, w = tf.Variable([2.0, 3.0]), tf.Variable([10.0, 100.0])
    function = tf.function(lambda x, y: x * v + y, autograph=False)
    spec = tf.TensorSpec([2], tf.float32)
    return function.get_concrete_function(spec, spec), v, w


def _concrete_class(concrete) -> type:
    return next(k for k in type(concrete).__mro__ if "_call_flat" in vars(k))


def test_flatcall_without_call_flat_gives_the_public_result_and_warns_once(monkeypatch):
    concrete, v, w = _scaled()
    x, y = np.array([1.0, 2.0], np.float32), np.array([0.5, 0.25], np.float32)
    private = FlatCall(concrete)
    # by hand: [1 * 2 + 0.5, 2 * 3 + 0.25] = [2.5, 6.25]; on w's handle: [10.5, 200.25]
    np.testing.assert_array_equal(private(x, y).numpy(), [2.5, 6.25])
    np.testing.assert_array_equal(private(x, y, captured=[w.handle]).numpy(), [10.5, 200.25])

    def gone(concrete, tensors, captured):  # what a renamed or removed method raises
        raise AttributeError("'ConcreteFunction' object has no attribute '_call_flat'")

    fallback = FlatCall(concrete, private=gone)
    results, messages = _recorded(lambda: [fallback(x, y).numpy() for _ in range(4)])
    for result in results:
        np.testing.assert_array_equal(result, [2.5, 6.25])
    assert len(messages) == 1 and "ConcreteFunction._call_flat is unavailable" in messages[0]
    assert "public call" in messages[0]
    # Its own captures may be given explicitly; other ones have no public equivalent.
    np.testing.assert_array_equal(fallback(x, y, captured=[v.handle]).numpy(), [2.5, 6.25])
    with pytest.raises(CapturesUnavailable, match="needs ConcreteFunction._call_flat"):
        fallback(x, y, captured=[w.handle])


def test_substitutes_captures_looks_the_private_method_up(monkeypatch):
    # TensorFlow's own public call ends in _call_flat too, so the attribute is deleted only to
    # check the lookup; the fallback is exercised with stand-ins above and below.
    concrete, _, _ = _scaled()
    assert substitutes_captures(concrete)
    monkeypatch.delattr(_concrete_class(concrete), "_call_flat")
    assert not substitutes_captures(concrete)


def test_flatcall_falls_back_on_a_changed_signature_but_not_on_other_errors():
    concrete, _, _ = _scaled()
    x = np.ones(2, np.float32)

    def changed(concrete, tensors, captured):
        raise TypeError("_call_flat() takes 2 positional arguments but 3 were given")

    call = FlatCall(concrete, private=changed)
    results, messages = _recorded(lambda: [call(x, x).numpy() for _ in range(3)])
    for result in results:
        np.testing.assert_array_equal(result, [3.0, 4.0])  # 1 * [2, 3] + 1
    assert len(messages) == 1 and "TypeError" in messages[0]

    def failing(concrete, tensors, captured):
        raise TypeError("an op's own error while running")

    with pytest.raises(TypeError, match="op's own error"):
        FlatCall(concrete, private=failing)(x, x)


def test_flatcall_takes_the_private_path_while_it_works():
    concrete, _, _ = _scaled()
    calls = []

    def recording(concrete, tensors, captured):
        calls.append(len(tensors))
        return concrete._call_flat(tensors, captured)  # noqa: SLF001

    call = FlatCall(concrete, private=recording)
    x = np.ones(2, np.float32)
    result, messages = _recorded(lambda: call(x, x).numpy())
    np.testing.assert_array_equal(result, [3.0, 4.0])
    assert calls == [2] and messages == []


# ---------------------------------------------------------------------------------------------
# Hydra: ConfigLoaderImpl._apply_overrides_to_config (experiments/launch/plan.py).

JOBS = [
    ["ablation=hidden_scale", "regime=stress", "variant=none", "seed=0"],
    ["ablation=hidden_scale", "regime=stress", "variant=none", "seed=3"],
    ["ablation=hidden_scale", "regime=stress", "variant=maxnorm", "seed=1"],
]


@pytest.fixture
def _schema():
    register_schema(MuZeroConfig)


def _configs(compositions) -> list:
    return [to_run_config(compositions.job(list(job))) for job in JOBS]


@pytest.mark.usefixtures("_schema")
def test_plan_without_apply_overrides_composes_every_job_and_warns_once():
    # Hydra's own compose ends in _apply_overrides_to_config too, so the attribute cannot be
    # deleted here; a stand-in raises what its absence raises.
    def gone(overrides, cfg):
        raise AttributeError("type object 'ConfigLoaderImpl' has no attribute 'x'")

    expected = [to_run_config(compose_config(CONF_DIR, job, schema=MuZeroConfig)) for job in JOBS]
    compositions = plan._Compositions(CONF_DIR, [], apply_overrides=gone)
    got, messages = _recorded(lambda: _configs(compositions))
    assert got == expected
    assert [run.seed for run in got] == [0, 3, 1]
    assert len(messages) == 1 and "_apply_overrides_to_config is unavailable" in messages[0]
    assert "AttributeError" in messages[0]
    assert compositions.shared == {}  # every job composed whole after the failure


@pytest.mark.usefixtures("_schema")
def test_plan_with_a_moved_module_gives_the_same_configs_and_errors():
    def moved(overrides, cfg):
        raise ImportError("No module named 'hydra._internal.config_loader_impl'")

    got, messages = _recorded(
        lambda: _configs(plan._Compositions(CONF_DIR, [], apply_overrides=moved))
    )
    assert got == _configs(plan._Compositions(CONF_DIR, []))  # the private path's configs
    assert len(messages) == 1
    # A bad seed is the user's error, not the API's: the job's own composition reports it.
    bad = [*JOBS[0][:-1], "seed=abc"]
    compositions = plan._Compositions(CONF_DIR, [], apply_overrides=moved)
    with warnings.catch_warnings(), pytest.raises(ConfigError) as info:
        warnings.simplefilter("ignore", PrivateAPIWarning)
        to_run_config(compositions.job(bad))
    with pytest.raises(ConfigError) as own:
        to_run_config(plan._compose(CONF_DIR, bad))
    assert str(info.value) == str(own.value) and "seed" in str(own.value)


# ---------------------------------------------------------------------------------------------
# Hydra: the internal BasicSweeper (hydra_plugins/gradlab_sweeper/planned_sweeper.py).


def _validated(sweeper_class) -> list:
    """The compositions ``validate_batch_is_legal`` asks Hydra's config loader for."""
    composed = []
    loader = types.SimpleNamespace(
        load_sweep_config=lambda master_config, sweep_overrides: composed.append(sweep_overrides)
    )
    sweeper = sweeper_class(max_batch_size=None)
    sweeper.hydra_context = types.SimpleNamespace(config_loader=loader)
    sweeper.config = object()
    sweeper.validate_batch_is_legal([["seed=0"], ["seed=1"]])
    return composed


def test_the_planned_sweeper_without_basic_sweeper_is_hydras_basic_sweeper_and_warns_once():
    def moved():
        raise ImportError("No module named 'hydra._internal.core_plugins.basic_sweeper'")

    sweeper_class, messages = _recorded(lambda: planned_sweeper.planned_sweeper_class(moved))
    assert sweeper_class is basic_sweeper.BasicSweeper  # what hydra/sweeper=basic names
    assert _validated(sweeper_class) == [["seed=0"], ["seed=1"]]  # Hydra's second composition
    assert len(messages) == 1 and "BasicSweeper is unavailable" in messages[0]


def test_the_planned_sweeper_without_the_validation_hook_falls_back_too():
    class NoHook:
        pass

    sweeper_class, messages = _recorded(
        lambda: planned_sweeper.planned_sweeper_class(lambda: NoHook)
    )
    assert sweeper_class is basic_sweeper.BasicSweeper
    assert len(messages) == 1 and "no validate_batch_is_legal hook" in messages[0]


def test_the_planned_sweeper_with_basic_sweeper_skips_the_second_composition():
    sweeper_class, messages = _recorded(planned_sweeper.planned_sweeper_class)
    assert issubclass(sweeper_class, basic_sweeper.BasicSweeper) and messages == []
    assert _validated(sweeper_class) == []
    assert _validated(basic_sweeper.BasicSweeper) == [["seed=0"], ["seed=1"]]
