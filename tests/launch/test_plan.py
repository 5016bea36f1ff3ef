"""Planning a sweep: jobs that differ only in their seed share one Hydra composition, and each
gets the config (and the errors) a composition of its own overrides gives."""

from __future__ import annotations

import pytest
from conftest import compose_config

from experiments.base.errors import ConfigError
from experiments.config import register_schema, to_run_config
from experiments.launch import plan
from experiments.launch.hydra_app import CONF_DIR
from experiments.muzero.config import MuZeroConfig

# Interleaved, so a shared composition is taken up again after another configuration's jobs.
JOBS = [
    ["ablation=hidden_scale", "regime=stress", "variant=none", "seed=0"],
    ["ablation=hidden_scale", "regime=stress", "variant=none", "seed=3"],
    ["ablation=hidden_scale", "regime=stress", "variant=maxnorm", "seed=1"],
    ["ablation=hidden_scale", "regime=stress", "variant=none", "seed=2"],
    ["ablation=hidden_scale", "regime=tuned", "variant=maxnorm", "seed=4"],
]


@pytest.fixture(autouse=True)
def _schema():
    register_schema(MuZeroConfig)  # as plan() does first: the variant nodes, the MuZero section


def test_jobs_that_differ_in_their_seed_share_a_composition_and_get_their_own_config():
    compositions = plan._Compositions(CONF_DIR, [])
    for overrides in JOBS:
        cached = compositions.job(overrides)
        cached_run, cached_choices = to_run_config(cached), dict(cached.hydra.runtime.choices)
        full = compose_config(CONF_DIR, overrides, schema=MuZeroConfig)
        assert cached_run == to_run_config(full), overrides
        assert cached_choices == dict(full.hydra.runtime.choices)
        assert cached_run.seed == int(overrides[-1].split("=")[1])
    assert len(compositions.shared) == 3  # stress/none, stress/maxnorm, tuned/maxnorm


@pytest.mark.parametrize("seed", ["abc", "1.5", "-1", "null"])
def test_a_bad_seed_gets_the_error_a_composition_of_its_own_gives(seed):
    def error(compose_job):
        with pytest.raises(ConfigError) as info:
            to_run_config(compose_job([*JOBS[0][:-1], f"seed={seed}"]))
        return str(info.value)

    compositions = plan._Compositions(CONF_DIR, [])
    compositions.job(JOBS[0])  # the shared composition exists
    shared = error(compositions.job)
    own = error(lambda o: plan._compose(CONF_DIR, o))
    assert shared == own
    assert "seed" in shared


def test_a_value_that_interpolates_the_seed_resolves_to_each_jobs_seed(tmp_path):
    jobs = plan.plan(
        [
            "ablation=hidden_scale",
            "regime=tuned",
            "variant=none",
            "seed=0,1",
            f"runtime.results_dir={tmp_path}/r${{seed}}",
        ],
        multirun=True,
        config_dir=CONF_DIR,
    )
    assert [j.job_dir.parent.parent for j in jobs] == [tmp_path / "r0", tmp_path / "r1"]


def test_a_plan_composes_once_per_configuration_on_the_private_path(monkeypatch, tmp_path):
    calls = []
    real = plan._compose

    def counting(config_dir, overrides):
        calls.append(list(overrides))
        return real(config_dir, overrides)

    monkeypatch.setattr(plan, "_compose", counting)
    jobs = plan.plan(
        ["ablation=hidden_scale", "regime=tuned", "variant=none,maxnorm", "seed=0,1,2",
         f"runtime.results_dir={tmp_path}"],
        multirun=True, config_dir=CONF_DIR, check_writable=False,
    )  # fmt: skip
    # 2 configurations x 3 seeds; compositions: the preset's (for its sweep params), then one
    # per configuration, each shared by its 3 seeds.
    assert len(jobs) == 6
    assert len(calls) == 1 + 2, calls
