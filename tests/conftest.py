"""Shared fixtures: the stand-in job and its config folder, Hydra's compose API, and the
scripts of benchmarks/ as modules."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import sys
import types
from pathlib import Path

import _standin_job as standin
import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from typer.testing import CliRunner

from cli.main import app
from experiments.config import register_schema


def compose_config(conf: str | Path, overrides: list[str], *, schema: type) -> object:
    """``conf/config.yaml`` composed by Hydra's compose API on gradlab's schema (with ``hydra``)."""
    register_schema(schema)
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
            return compose("config", overrides=list(overrides), return_hydra_config=True)
    finally:
        GlobalHydra.instance().clear()


@pytest.fixture
def conf(tmp_path: Path) -> Path:
    """A copy of gradlab's conf/ in tmp_path, to edit (a study file, a preset) without touching
    the repository's."""
    copy = tmp_path / "conf"
    shutil.copytree(Path(__file__).resolve().parents[1] / "conf", copy)
    return copy


@pytest.fixture
def standin_env(tmp_path):
    """A stand-in config folder; results under ``tmp_path / "res"``; ``invoke`` runs the CLI
    with the stand-in job (passed as the Click context's object, as a caller would)."""
    conf = standin.make_conf(tmp_path)
    res = tmp_path / "res"

    def invoke(args, **kwargs):
        return CliRunner().invoke(app, [str(a) for a in args], obj=standin.JOB, **kwargs)

    return types.SimpleNamespace(
        conf=str(conf),
        res=res,
        common=[f"runtime.results_dir={res}", "logger=none"],
        invoke=invoke,
        compose=lambda overrides: compose_config(conf, overrides, schema=standin.MuZeroConfig),
    )


BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@contextlib.contextmanager
def benchmark_script(name: str):
    """``benchmarks/NAME.py`` imported as the module ``NAME`` (a script, not a package member),
    registered in ``sys.modules`` while in use (dataclasses look their module up there)."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(name, None)


@pytest.fixture(autouse=True, scope="module")
def _no_wandb_service_outlives_its_module():
    """A W&B service a test module started in the pytest process is shut down with the module:
    left running, a later module's signals to its process group (the stop tests) could end it,
    and the tests after would find the pytest process's W&B connection dead."""
    yield
    wandb = sys.modules.get("wandb")
    if wandb is not None:
        try:
            wandb.teardown()
        except Exception:  # noqa: BLE001 - a service already gone: nothing left to shut down
            pass
        os.environ.pop("WANDB_SERVICE", None)
