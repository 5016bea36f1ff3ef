"""Tests of the config schema: Hydra's dict -> frozen dataclasses, with one clear error each."""

from __future__ import annotations

import dataclasses

import _standin_job as standin
import pytest

from experiments.config import (
    BudgetConfig,
    RunConfig,
    build_run_config,
    from_mapping,
)
from experiments.errors import ConfigError


def _plain(**changes):
    cfg = {
        "seed": 0,
        "task": {"name": "catch"},
        "muzero": {"training_steps": 5},
        "variant": {"name": "scale_gradient", "placement": "pseudocode", "scale": 0.5},
        "budget": {"max_wall_s": None, "max_steps": None},
        "divergence": {"factor": 100.0, "reference_steps": 10},
        "logger": {"mode": "offline", "project": "gradlab", "entity": None, "tags": []},
        "runtime": {"results_dir": "results", "threads": None, "force": False, "progress": True},
    }
    for dotted, value in changes.items():
        node = cfg
        *parents, leaf = dotted.split("__")
        for p in parents:
            node = node[p]
        node[leaf] = value
    return cfg


def _build(cfg):
    return build_run_config(
        cfg,
        task_name="catch",
        ablation="hidden_scale",
        task_cls=standin.TaskConfig,
        muzero_cls=standin.MuZeroConfig,
    )


def test_valid_config_becomes_frozen_dataclasses():
    run = _build(_plain(seed=3, budget__max_steps=100, logger__tags=["a", "b"]))
    assert isinstance(run, RunConfig) and run.seed == 3 and run.ablation == "hidden_scale"
    assert run.muzero == standin.MuZeroConfig(training_steps=5)
    assert run.variant.name == "scale_gradient" and dict(run.variant.params) == {"scale": 0.5}
    assert run.budget == BudgetConfig(max_wall_s=None, max_steps=100)
    assert run.logger.tags == ("a", "b")
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.seed = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        run.variant.params["scale"] = 1.0  # type: ignore[index]
    variant, placement = run.variant.build()
    assert variant.params["scale"] == 0.5 and placement.name == "pseudocode"


def test_int_is_accepted_where_a_float_is_expected():
    run = _build(_plain(divergence__factor=50, variant__scale=0))
    assert run.divergence.factor == 50.0 and isinstance(run.divergence.factor, float)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"seed": -1}, "seed=-1 is not valid; expected an integer >= 0"),
        ({"seed": "zero"}, "seed='zero' has the wrong type"),
        ({"seed": True}, "seed=True has the wrong type"),
        ({"budget__max_steps": 0}, r"budget.max_steps=0 is out of range; expected a number > 0"),
        ({"budget__max_wall_s": -5.0}, r"budget.max_wall_s=-5.0 is out of range"),
        ({"budget__max_steps": 2.5}, r"budget.max_steps=2.5 has the wrong type"),
        ({"budget__max_stpes": 3}, r"unknown key budget.'max_stpes'; valid keys under budget"),
        ({"divergence__factor": 1.0}, r"divergence.factor=1.0 is out of range"),
        ({"divergence__reference_steps": 0}, r"divergence.reference_steps=0 is out of range"),
        ({"logger__mode": "cloud"}, r"unknown logger.mode 'cloud'; choose one of: none, offline"),
        ({"logger__tags": "x"}, r"logger.tags='x' has the wrong type; expected a list"),
        ({"runtime__threads": 0}, r"runtime.threads=0 is out of range"),
        ({"runtime__force": "yes"}, r"runtime.force='yes' has the wrong type; expected true"),
        ({"variant__name": "scale_gradiant"}, r"unknown variant 'scale_gradiant'; choose one"),
        ({"variant__placement": "here"}, r"unknown placement 'here'; choose one of: hook, paper"),
        ({"variant__scale": -0.5}, r"scale=-0.5 is out of range"),
        ({"variant__scale": "half"}, r"scale='half' is not a number"),
        ({"variant__clipnorm": 1.0}, r"variant 'scale_gradient' has no parameter 'clipnorm'"),
        ({"muzero__training_steps": 0}, r"muzero.training_steps=0 must be >= 1"),
        ({"muzero__training_stpes": 5}, r"unknown key muzero.'training_stpes'; valid keys"),
        ({"task__name": 3}, r"task.name=3 has the wrong type; expected a string"),
        ({"extra": 1}, r"unknown top-level key 'extra'"),
    ],
)
def test_bad_values_name_the_value(changes, message):
    with pytest.raises(ConfigError, match=message):
        _build(_plain(**changes))


def test_missing_variant_name():
    cfg = _plain()
    del cfg["variant"]["name"]
    with pytest.raises(ConfigError, match="missing key variant.name"):
        _build(cfg)


@dataclasses.dataclass(frozen=True)
class _Inner:
    width: int = 4


@dataclasses.dataclass(frozen=True)
class _Outer:
    required: int
    inner: _Inner = dataclasses.field(default_factory=_Inner)
    schedule: tuple[tuple[int, float], ...] = ((0, 1.0),)
    name: str | None = None


def test_from_mapping_nested_dataclasses_and_fixed_tuples():
    out = from_mapping(
        _Outer, {"inner": {"width": 8}, "schedule": [[0, 1], [750, 0.5]], "required": 1}, where="m"
    )
    assert out == _Outer(1, inner=_Inner(8), schedule=((0, 1.0), (750, 0.5)))
    with pytest.raises(ConfigError, match=r"m.schedule\[1\]=\[750\] has the wrong length"):
        from_mapping(_Outer, {"schedule": [[0, 1], [750]], "required": 1}, where="m")
    with pytest.raises(ConfigError, match=r"m.inner.width='8' has the wrong type"):
        from_mapping(_Outer, {"inner": {"width": "8"}, "required": 1}, where="m")
    with pytest.raises(ConfigError, match=r"missing key m.required"):
        from_mapping(_Outer, {}, where="m")
    with pytest.raises(ConfigError, match=r"m.name=1 has the wrong type; expected str or null"):
        from_mapping(_Outer, {"name": 1, "required": 1}, where="m")
    with pytest.raises(ConfigError, match=r"m=3 has the wrong type; expected a mapping"):
        from_mapping(_Outer, 3, where="m")
