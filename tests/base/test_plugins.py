"""A user's variant as an installed plug-in (entry-point group ``gradlab.variants``): loaded from
a real distribution on ``sys.path`` (a ``.dist-info`` folder with its ``entry_points.txt``, built
in ``tmp_path``, so no install is needed), shown by ``gradlab list``, a Hydra node with its
parameters, recorded in a run's summary; bad plug-ins refused in one line, exit 2; a builder that
fails at build time is one failed job."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from cli.main import app
from experiments.base.errors import ConfigError
from experiments.base.plugins import Plugin
from experiments.config import variants as variant_config
from experiments.gradients import VARIANTS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "plugin_variant"
EXAMPLE_PACKAGE = EXAMPLE / "norm_scale_gradient"
EXAMPLE_DIST = "gradlab-norm-scale-gradient"
EXAMPLE_POINT = {"norm_scale_gradient": "norm_scale_gradient:SPEC"}


def make_dist(
    root: Path, name: str, version: str, points: dict[str, str], modules: dict[str, str]
) -> Path:
    """An installed distribution ``name`` in ``root`` (a sys.path entry): its ``.dist-info`` with
    ``METADATA`` and ``entry_points.txt`` (group ``gradlab.variants``), and ``modules``
    (``{module name: source}``) beside it. Returns ``root``."""
    info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    lines = "".join(f"{k} = {v}\n" for k, v in points.items())
    (info / "entry_points.txt").write_text(f"[gradlab.variants]\n{lines}")
    for module, source in modules.items():
        (root / f"{module}.py").write_text(textwrap.dedent(source))
    return root


@pytest.fixture
def plugins(monkeypatch, tmp_path):
    """``add(name, version, points, modules)``: a distribution on ``sys.path`` (and on the
    ``PYTHONPATH`` of processes started from here); the registry reloaded before and after."""
    added: list[str] = []  # the plug-ins' own modules, forgotten afterwards
    derived = dict(variant_config._derived)

    def add(name, version, points, modules=None, *, packages=()):
        root = make_dist(tmp_path / name, name, version, points, modules or {})
        for package in packages:  # as an install puts them: beside the .dist-info
            shutil.copytree(package, root / package.name, ignore=shutil.ignore_patterns("__py*"))
        added.extend([*(modules or {}), *(p.name for p in packages)])
        monkeypatch.syspath_prepend(str(root))
        old = os.environ.get("PYTHONPATH")
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(root), *filter(None, [old])]))
        VARIANTS.reload()
        return root

    VARIANTS.reload()
    yield add
    VARIANTS.reload()  # read again at next use, after monkeypatch has restored sys.path
    for name in added:
        sys.modules.pop(name, None)
    for name in set(variant_config._derived) - set(derived):
        cls = variant_config._derived.pop(name)[1]
        vars(variant_config).pop(cls.__name__, None)


@pytest.fixture
def example(plugins):
    """``examples/plugin_variant`` as an installed distribution: its package copied beside a
    ``.dist-info`` declaring its entry point as its pyproject.toml does."""
    assert (
        'norm_scale_gradient = "norm_scale_gradient:SPEC"'
        in (EXAMPLE / "pyproject.toml").read_text()
    )
    return plugins(EXAMPLE_DIST, "0.1.0", EXAMPLE_POINT, packages=[EXAMPLE_PACKAGE])


def _invoke(args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_the_registry_loads_a_plugin_from_an_installed_distribution(example):
    assert list(VARIANTS)[-1] == "norm_scale_gradient"
    assert set(VARIANTS.builtins) == set(VARIANTS) - {"norm_scale_gradient"}
    assert VARIANTS.plugin("norm_scale_gradient") == Plugin(
        name="norm_scale_gradient",
        value="norm_scale_gradient:SPEC",
        group="gradlab.variants",
        distribution=EXAMPLE_DIST,
        version="0.1.0",
    )
    assert VARIANTS.plugin("scale_gradient") is None
    # its config class: derived from the entry, a module attribute, pickled by reference
    cls = variant_config.VARIANT_CONFIGS["norm_scale_gradient"]
    assert cls.__name__ == "NormScaleGradientVariant" and variant_config.NormScaleGradientVariant
    node = cls(max_norm=3.0)
    assert node.params == {"max_norm": 3.0} and pickle.loads(pickle.dumps(node)) == node
    with pytest.raises(ConfigError, match=r"variant.max_norm=0 is out of range; expected .* > 0"):
        cls(max_norm=0.0)


def test_a_plugin_config_unpickles_in_a_fresh_process(example):
    # what a job's process does with its config: the class is derived there again, by name,
    # and loading the plug-in does not import TensorFlow (its builder does, when bound)
    node = variant_config.VARIANT_CONFIGS["norm_scale_gradient"](max_norm=3.0)
    code = (
        "import pickle, sys; print(repr(pickle.loads(sys.stdin.buffer.read())));"
        "print('tensorflow' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        input=pickle.dumps(node),
        capture_output=True,
        check=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.stdout.decode().splitlines() == [repr(node), "False"]


def test_a_plugin_is_a_hydra_node_with_its_parameters(example, conf):
    from conftest import compose_config

    from experiments.config import to_run_config
    from experiments.muzero.config import MuZeroConfig

    cfg = compose_config(
        conf, ["variant=norm_scale_gradient", "variant.max_norm=3"], schema=MuZeroConfig
    )
    run = to_run_config(cfg)
    assert type(run.variant).__name__ == "NormScaleGradientVariant"
    assert run.variant.params == {"max_norm": 3.0}


def test_the_example_scales_each_samples_gradient_by_its_norm(example):
    import tensorflow as tf

    from experiments.gradients import make_variant

    variant = make_variant("norm_scale_gradient", max_norm=2.0)
    h = tf.constant([[3.0, 4.0], [0.6, 0.8]])  # norms 5 and 1: factors 2/5 and 1 (inside)
    upstream = tf.constant([[1.0, -2.0], [0.5, 1.0]])
    for fn in (lambda x: variant.hidden(x), tf.function(lambda x: variant.hidden(x))):
        with tf.GradientTape() as tape:
            tape.watch(h)
            y = fn(h)
            loss = tf.reduce_sum(y * upstream)
        np.testing.assert_allclose(y.numpy(), h.numpy(), rtol=1e-6)  # forward unchanged
        grad = tape.gradient(loss, h).numpy()
        np.testing.assert_allclose(grad, [[0.4, -0.8], [0.5, 1.0]], rtol=1e-6)


def test_gradlab_list_shows_the_plugin_with_its_distribution(example):
    result = _invoke(["list"])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("  norm_scale_gradient "))
    assert line.endswith(f"[max_norm=2] (plug-in from {EXAMPLE_DIST} 0.1.0)")
    assert "plug-in" not in next(x for x in result.output.splitlines() if "  maxnorm " in x)


_SPEC = """\
from experiments.gradients import Built, ParamSpec, VariantSpec

def _build(**params):
    {build}

SPEC = VariantSpec("{name}", "gradient", "elementwise", "a test plug-in", ({params}), _build)
"""


def _module(name, build="return Built(lambda h: h)", params=""):
    return _SPEC.format(name=name, build=build, params=params)


@pytest.mark.parametrize(
    ("dists", "message"),
    [
        (
            [("gradlab-clash", {"scale_gradient": "clash:SPEC"}, {"clash": _module("x")})],
            "plug-in 'scale_gradient' (entry point scale_gradient = clash:SPEC in group "
            "'gradlab.variants' of gradlab-clash 1.0): its name collides with the built-in "
            "variant",
        ),
        (
            [
                ("gradlab-one", {"twice": "one:SPEC"}, {"one": _module("twice")}),
                ("gradlab-two", {"twice": "two:SPEC"}, {"two": _module("twice")}),
            ],
            "its name collides with plug-in 'twice' (entry point twice = ",
        ),
        (
            [("gradlab-broken", {"broken": "broken_mod:SPEC"}, {"broken_mod": "import nope\n"})],
            "plug-in 'broken' (entry point broken = broken_mod:SPEC in group 'gradlab.variants' "
            "of gradlab-broken 1.0) fails to import: ModuleNotFoundError: No module named 'nope'",
        ),
        (
            [("gradlab-gone", {"gone": "not_there:SPEC"}, {})],
            "plug-in 'gone' (entry point gone = not_there:SPEC in group 'gradlab.variants' of "
            "gradlab-gone 1.0) fails to import: ModuleNotFoundError",
        ),
        (
            [("gradlab-text", {"text": "text_mod:SPEC"}, {"text_mod": "SPEC = 'a variant'\n"})],
            "of gradlab-text 1.0): it gives a str, not a VariantSpec",
        ),
        (
            [("gradlab-named", {"named": "named:SPEC"}, {"named": _module("other")})],
            "its entry point is named 'named' but its variant 'other'; they must be the same",
        ),
        (
            [("gradlab-caps", {"Bad-Name": "caps:SPEC"}, {"caps": _module("x")})],
            "'Bad-Name' is not a variant name",
        ),
        (
            [
                (
                    "gradlab-param",
                    {"param": "param:SPEC"},
                    {"param": _module("param", params='ParamSpec("placement", 1, 0, True, ""),')},
                ),
            ],
            "its parameter name 'placement' is not a distinct identifier",
        ),
        (
            [
                (
                    "gradlab-default",
                    {"dflt": "dflt:SPEC"},
                    {"dflt": _module("dflt", params='ParamSpec("s", -1.0, 0, True, ""),')},
                ),
            ],
            "variant.s=-1 is out of range",
        ),
    ],
    ids=[
        "builtin",
        "two-plugins",
        "import-error",
        "no-module",
        "not-a-spec",
        "name",
        "bad-name",
        "reserved-param",
        "bad-default",
    ],  # fmt: skip
)
def test_a_bad_plugin_is_one_line_exit_2_nothing_written(plugins, tmp_path, dists, message):
    for name, points, modules in dists:
        plugins(name, "1.0", points, modules)
    res = tmp_path / "res"
    for args in (
        ["list"],
        ["run", "seed=1", f"runtime.results_dir={res}", "logger=none"],
    ):
        result = _invoke(args)
        assert result.exit_code == 2, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], result.output
        assert "Traceback" not in result.output
    assert not res.exists()


_STANDIN_SWEEP = r"""
import dataclasses
import sys
import _standin_job as standin
from pathlib import Path
from typer.testing import CliRunner
from cli.main import app

conf = standin.make_conf(Path(sys.argv[1]))
(conf / "ablation" / "plugins.yaml").write_text(
    "# @package _global_\n# two plug-ins\nhydra:\n  sweeper:\n    params:\n"
    "      variant: norm_scale_gradient,fails_at_build\n      seed: range(1)\n"
)
args = ["sweep", "ablation=plugins", "logger=none", f"runtime.results_dir={sys.argv[2]}",
        "--config-dir", str(conf)]
job = dataclasses.replace(standin.JOB, tensorflow=True)  # binds its variant, as MuZero does
result = CliRunner().invoke(app, args, obj=job)
print(result.output)
print("EXIT", result.exit_code)
"""


@pytest.fixture
def swept(plugins, tmp_path):
    """A sweep of the stand-in job over the example plug-in and one whose builder raises, in a
    process of its own (the jobs' processes then find both on their sys.path, as installed)."""
    plugins(EXAMPLE_DIST, "0.1.0", EXAMPLE_POINT, packages=[EXAMPLE_PACKAGE])
    build = "raise RuntimeError('this trick needs a GPU')"
    plugins(
        "gradlab-fails", "2.5", {"fails_at_build": "fails:SPEC"},
        {"fails": _module("fails_at_build", build=build)},
    )  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(ROOT),
                                                        os.environ["PYTHONPATH"]])}  # fmt: skip
    res = tmp_path / "res"
    out = subprocess.run(
        [sys.executable, "-c", _STANDIN_SWEEP, str(tmp_path), str(res)],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=600,
    )  # fmt: skip
    assert "EXIT" in out.stdout, out.stdout + out.stderr
    jobs = {p.parent.name: p.parent for p in res.rglob("summary.json")}
    return out.stdout, jobs


def test_a_sweep_records_each_plugins_version_and_a_build_failure_is_one_failed_job(swept):
    output, jobs = swept
    assert sorted(jobs) == ["variant=fails_at_build__seed=0", "variant=norm_scale_gradient__seed=0"]
    # the example's run: completed, the plug-in's distribution and version in its versions
    summary = json.loads((jobs["variant=norm_scale_gradient__seed=0"] / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["variant_params"] == {"max_norm": 2.0}
    assert summary["versions"][f"plugin:{EXAMPLE_DIST}"] == "0.1.0"
    assert "plugin:gradlab-fails" not in summary["versions"]
    # the plug-in whose builder raises: that job failed with its reason, the sweep went on
    job = jobs["variant=fails_at_build__seed=0"]
    summary = json.loads((job / "summary.json").read_text())
    assert summary["status"] == "failed"
    assert summary["error"] == "RuntimeError: this trick needs a GPU"
    assert summary["versions"]["plugin:gradlab-fails"] == "2.5"
    assert "this trick needs a GPU" in (job / "error.txt").read_text()
    assert "EXIT 1" in output  # both jobs ran; the sweep says one failed


def test_study_register_pins_a_plugin_arm_and_check_refuses_another_version(
    example, conf, tmp_path
):
    from experiments.protocols.study.design import load_study
    from experiments.protocols.study.record import check, register

    study_file = conf / "study" / "catch_stress.yaml"
    text = study_file.read_text()
    plain = register(load_study("catch_stress", conf), config_dir=conf, results_dir=tmp_path / "a")
    assert "plugins" not in json.loads(plain.read_text())  # built-in arms only: no key
    study_file.write_text(text.replace("{variant: maxnorm}", "{variant: norm_scale_gradient}"))
    study = load_study("catch_stress", conf)
    record = json.loads(register(study, config_dir=conf, results_dir=tmp_path / "b").read_text())
    assert record["plugins"] == {
        "norm_scale_gradient": {
            "distribution": EXAMPLE_DIST,
            "version": "0.1.0",
            "entry_point": "norm_scale_gradient:SPEC",
        }
    }
    assert record["arm_configs"]["norm_scale_gradient"]["variant.max_norm"] == 2.0
    assert check(study, config_dir=conf, results_dir=tmp_path / "b") == []
    # the plug-in upgraded after registration: the study's runs are refused
    info = example / f"{EXAMPLE_DIST.replace('-', '_')}-0.1.0.dist-info"
    meta = info / "METADATA"
    meta.write_text(meta.read_text().replace("Version: 0.1.0", "Version: 0.2.0"))
    VARIANTS.reload()
    with pytest.raises(
        ConfigError,
        match=f"'norm_scale_gradient' of study 'catch_stress' was registered from {EXAMPLE_DIST} "
        f"0.1.0; installed now: {EXAMPLE_DIST} 0.2.0",
    ):
        check(study, config_dir=conf, results_dir=tmp_path / "b")


def test_the_audit_compares_each_runs_plugin_version_with_the_record():
    from experiments.jobs.summary import Summary
    from experiments.protocols.study.audit import _check_plugins, _Run

    pin = {"distribution": EXAMPLE_DIST, "version": "0.1.0", "entry_point": "m:SPEC"}
    record = {"plugins": {"norm_scale_gradient": pin}}

    def run(folder, variant, version):
        versions = {} if version is None else {f"plugin:{EXAMPLE_DIST}": version}
        summary = Summary(status="completed", variant=variant, versions=versions)
        return _Run(folder, summary, variant, 0)

    runs = [run("a", "norm_scale_gradient", "0.1.0"), run("b", "none", None)]
    (ok,) = _check_plugins(record, runs)
    assert ok.ok and ok.name == "plug-ins" and ok.line.startswith("1 run(s) ran the pinned")
    runs += [run("c", "norm_scale_gradient", "0.2.0"), run("d", "norm_scale_gradient", None)]
    (breach,) = _check_plugins(record, runs)
    assert not breach.ok and "2 of 3 run(s)" in breach.line and "c, d" in breach.line
    assert _check_plugins({}, runs) == []  # a record without plug-ins: no such check
