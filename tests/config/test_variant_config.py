"""The variant config classes are derived from the registry (experiments/config/variants.py):
one class per entry, its parameter fields the entry's, found by name, pickled by reference."""

from __future__ import annotations

import dataclasses
import pickle
import subprocess
import sys

import pytest

from experiments.config import variants as variant_config
from experiments.config.variants import VARIANT_CONFIGS, VariantConfig, class_name, config_class
from experiments.gradients import VARIANTS, ParamSpec


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_each_registered_variant_has_a_class_derived_from_its_entry(name):
    cls = VARIANT_CONFIGS[name]
    # a module attribute under a stable name, so pickle finds it in a job's process
    assert getattr(variant_config, cls.__name__) is cls
    assert cls.__module__ == "experiments.config.variants"
    assert issubclass(cls, VariantConfig) and cls.__dataclass_params__.frozen
    fields = [f for f in dataclasses.fields(cls) if f.name not in ("name", "placement")]
    assert [(f.name, f.type, f.default) for f in fields] == [
        (p.name, float, p.default) for p in VARIANTS[name].params
    ]
    node = cls()
    assert node.name == name and node.params == {p.name: p.default for p in VARIANTS[name].params}
    assert pickle.loads(pickle.dumps(node)) == node
    assert VARIANT_CONFIGS[name] is cls  # derived once


def test_the_classes_keep_the_names_they_were_declared_under():
    # the names a job's pickled config (and a reader of older code) refers to
    assert {n: VARIANT_CONFIGS[n].__name__ for n in VARIANTS.builtins} == {
        "none": "NoneVariant",
        "scale_gradient": "ScaleGradientVariant",
        "stop_gradient": "StopGradientVariant",
        "clipnorm": "ClipnormVariant",
        "global_clipnorm": "GlobalClipnormVariant",
        "maxnorm": "MaxnormVariant",
        "maxnorm_kernel": "MaxnormKernelVariant",
        "lr_scale": "LrScaleVariant",
        "dynamics_lr_scale": "DynamicsLrScaleVariant",
        "depth_loss_scale": "DepthLossScaleVariant",
    }
    assert variant_config.ScaleGradientVariant(scale=0.25).params == {"scale": 0.25}


def test_a_pickled_config_unpickles_in_a_fresh_process():
    node = VARIANT_CONFIGS["maxnorm"](max_value=3.0, placement="hook")
    code = "import pickle, sys; print(repr(pickle.loads(sys.stdin.buffer.read())))"
    out = subprocess.run(
        [sys.executable, "-c", code], input=pickle.dumps(node), capture_output=True, check=True
    )
    assert out.stdout.decode().strip() == repr(node)


def test_a_changed_entry_derives_a_new_class(monkeypatch):
    original = VARIANT_CONFIGS["scale_gradient"]
    spec = VARIANTS["scale_gradient"]
    changed = dataclasses.replace(spec, params=(ParamSpec("scale", 0.25, 0.0, True, "x"),))
    # restored afterwards: the registry's entry, the cache and the module attribute
    monkeypatch.setattr(variant_config, "_derived", dict(variant_config._derived))
    monkeypatch.setattr(variant_config, "ScaleGradientVariant", original)
    monkeypatch.setitem(VARIANTS._entries, "scale_gradient", changed)
    cls = config_class("scale_gradient")
    assert cls is not original and cls().scale == 0.25
    assert variant_config.ScaleGradientVariant is cls


def test_class_names():
    assert class_name("dynamics_lr_scale") == "DynamicsLrScaleVariant"
    assert class_name("none") == "NoneVariant"
