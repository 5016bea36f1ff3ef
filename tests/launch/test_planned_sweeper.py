"""hydra/sweeper=planned: Hydra's basic sweeper without its second composition of every job,
chosen by `gradlab sweep` (which composed and validated every job in its plan) unless the command
line names a sweeper."""

from __future__ import annotations

import types

import _standin_job as standin
import yaml
from hydra._internal.core_plugins import basic_sweeper
from hydra.core.config_store import ConfigStore
from typer.testing import CliRunner

from cli.main import app
from hydra_plugins.gradlab_sweeper import planned_sweeper
from hydra_plugins.gradlab_sweeper.config import PlannedSweeperConf


class _CountingLoader:
    """Stands in for Hydra's config loader: records each composition it is asked for."""

    def __init__(self):
        self.composed = []

    def load_sweep_config(self, master_config, sweep_overrides):
        self.composed.append(list(sweep_overrides))


def _validated(sweeper, batch) -> list:
    loader = _CountingLoader()
    sweeper.hydra_context = types.SimpleNamespace(config_loader=loader)
    sweeper.config = object()
    sweeper.validate_batch_is_legal(batch)
    return loader.composed


def test_the_planned_sweeper_skips_only_the_second_composition():
    # The classes as the modules hold them now: Hydra's plugin scan re-executes both modules
    # (once a process), so names imported before a scan would be stale.
    basic, planned = basic_sweeper.BasicSweeper, planned_sweeper.PlannedSweeper
    batch = [["seed=0"], ["seed=1"], ["seed=2"]]
    assert _validated(basic(max_batch_size=None), batch) == batch  # Hydra's: one each
    sweeper = planned(max_batch_size=None)
    assert _validated(sweeper, batch) == []
    assert isinstance(sweeper, basic)  # expansion, batches, multirun.yaml: Hydra's own


def test_the_planned_sweeper_is_in_hydras_config_store():
    node = ConfigStore.instance().load("hydra/sweeper/planned.yaml").node
    assert node["_target_"] == "hydra_plugins.gradlab_sweeper.planned_sweeper.PlannedSweeper"
    assert set(node) == {"_target_", "max_batch_size", "params"}
    assert PlannedSweeperConf().params is None


def _sweeper_of(tmp_path, *extra):
    conf = standin.make_conf(tmp_path)
    res = tmp_path / "res"
    args = [
        *standin.sweep_args(conf, res, "variant=none", "seed=0,1", "logger=none", *extra),
        "--jobs",
        "1",
    ]
    result = CliRunner().invoke(app, args, obj=standin.JOB)
    assert result.exit_code == 0, result.output
    assert "2 jobs: 2 completed" in result.output
    multirun = yaml.safe_load((res / "hidden_scale" / "multirun.yaml").read_text())
    return multirun["hydra"]["sweeper"]


def test_gradlab_sweep_runs_on_the_planned_sweeper(tmp_path):
    sweeper = _sweeper_of(tmp_path)
    assert sweeper["_target_"].endswith(".PlannedSweeper")
    assert sweeper["params"]["variant"] == "none,scale_gradient,clipnorm,maxnorm,stop_gradient"


def test_a_sweeper_named_on_the_command_line_is_kept(tmp_path):
    sweeper = _sweeper_of(tmp_path, "hydra/sweeper=basic")
    assert sweeper["_target_"] == "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"
