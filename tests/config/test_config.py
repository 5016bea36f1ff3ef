"""The config schema: conf/ composed by Hydra on the registered dataclasses, then one conversion to
frozen objects, with one wording per mistake wherever it is made."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from conftest import compose_config

from experiments.base.errors import ConfigError
from experiments.config import (
    BudgetConfig,
    RunConfig,
    VariantConfig,
    to_run_config,
    variant_schema,
)
from experiments.config.errors import composition_error
from experiments.gradients import VARIANTS
from experiments.launch.hydra_app import CONF_DIR
from experiments.muzero.config import SEED_AXIS_REMOVED, MuZeroConfig
from experiments.protocols.study.design import load_study
from experiments.protocols.study.record import check, read_record
from experiments.verdicts.stopping import DivergenceRule


def _compose(overrides, conf=CONF_DIR):
    return compose_config(conf, overrides, schema=MuZeroConfig)


def _run(overrides, conf=CONF_DIR):
    try:
        cfg = _compose(overrides, conf)
    except ConfigError:
        raise
    except Exception as err:  # noqa: BLE001 - what plan() does with Hydra's errors
        raise composition_error(err) from None
    return to_run_config(cfg)


def test_default_config_becomes_frozen_dataclasses():
    run = _run(["seed=3", "budget.max_steps=100", "logger.tags=[a,b]"])
    assert isinstance(run, RunConfig) and run.seed == 3
    assert run.muzero == MuZeroConfig()  # the YAML restates the dataclass defaults
    assert run.muzero.temperature_schedule == ((0, 1.0), (400, 0.5), (800, 0.25))
    assert run.variant.name == "none" and run.variant.params == {}
    assert run.budget == BudgetConfig(max_wall_s=None, max_steps=100)
    assert run.divergence == DivergenceRule()
    assert run.logger.tags == ("a", "b") and run.task.name == "catch"
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.seed = 1  # type: ignore[misc]


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_every_registered_variant_is_a_config_node_with_its_parameters(name):
    spec = VARIANTS[name]
    run = _run([f"variant={name}"])
    assert type(run.variant) is variant_schema(name) and isinstance(run.variant, VariantConfig)
    assert run.variant.name == name and run.variant.placement == "pseudocode"
    assert run.variant.params == {p.name: p.default for p in spec.params}
    for p in spec.params:
        changed = _run([f"variant={name}", f"variant.{p.name}={p.default + 1}"])
        assert changed.variant.params[p.name] == p.default + 1


def test_variant_node_binds_to_the_registry():
    run = _run(["variant=scale_gradient", "variant.scale=0.25", "variant.placement=hook"])
    variant, placement = run.variant.build()
    assert variant.params == {"scale": 0.25} and placement.name == "hook"


def test_int_is_accepted_where_a_float_is_expected():
    run = _run(["divergence.factor=50", "variant=scale_gradient", "variant.scale=0"])
    assert run.divergence.factor == 50.0 and isinstance(run.divergence.factor, float)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["seed=-1"], r"seed=-1 is out of range; expected an integer from 0 to 4294967295"),
        (["seed=4294967296"], r"seed=4294967296 is out of range; expected an integer from 0 to"),
        (["seed=zero"], "seed='zero' has the wrong type; expected an integer"),
        (["budget.max_steps=0"], r"budget.max_steps=0 is out of range; expected a number > 0"),
        (["budget.max_wall_s=-5.0"], r"budget.max_wall_s=-5.0 is out of range"),
        (["budget.max_steps=2.5"], r"budget.max_steps=2.5 has the wrong type; expected an int"),
        (["budget.max_stpes=3"], r"unknown key budget.max_stpes; valid keys under budget: max_"),
        (["divergence.factor=1.0"], r"divergence.factor=1.0 is out of range"),
        (["divergence.reference_steps=0"], r"divergence.reference_steps=0 is out of range"),
        (["logger.mode=cloud"], r"unknown logger.mode 'cloud'; choose one of: none, offline"),
        (["logger.tags=x"], r"logger.tags='x' has the wrong type; expected a list"),
        (["runtime.threads=0"], r"runtime.threads=0 is out of range"),
        (["runtime.force=maybe"], r"runtime.force='maybe' has the wrong type; expected true"),
        (["variant=scale_gradiant"], r"unknown variant 'scale_gradiant'; choose one of: clip"),
        (["variant.placement=here"], r"unknown placement 'here'; choose one of: hook, paper"),
        (["variant=scale_gradient", "variant.scale=-0.5"], r"variant.scale=-0.5 is out of range"),
        (["variant=scale_gradient", "variant.scale=half"], r"variant.scale='half' has the wrong"),
        (["variant=scale_gradient", "variant.clipnorm=1"], r"unknown key variant.clipnorm; valid"),
        (["muzero.training_steps=0"], r"muzero.training_steps=0 is invalid; expected an integer"),
        (["muzero.training_stpes=5"], r"unknown key muzero.training_stpes; valid keys under mu"),
        (["+muzero.extra=5"], r"unknown key muzero.extra; valid keys under muzero: network"),
        (["muzero.network.widht=5"], r"unknown key muzero.network.widht; valid keys under muze"),
        (["muzero.q_form=exact"], r"unknown q_form 'exact'; choose one of: normalized, pseudo"),
        (["muzero.loss_scale=x"], r"unknown loss_scale 'x'; choose one of: none, pseudocode"),
        (["muzero.optimizer=lbfgs"], r"unknown optimizer 'lbfgs'; choose one of: adam, momentum"),
        (["regime=pseudocode", "muzero.momentum=2"], r"muzero.momentum=2.0 is invalid; expected"),
        (["muzero.lr_decay_steps=0"], r"muzero.lr_decay_steps=0 is invalid; expected an integ"),
        (["muzero.network.normalisation=x"], r"unknown normalisation 'x'; choose one of: layer"),
        (["muzero.temperature_schedule=[[0,1],[5]]"], r"temperature_schedule=\[\[0, 1\], \[5\]"),
        (["task=nope"], r"unknown task 'nope'; choose one of: asterix, breakout, cartpole"),
        (["regime=nope"], r"unknown regime 'nope'; choose one of: "),
        (["extra=1"], r"unknown key extra; valid keys at the top level: seed, task, muzero"),
        (["hydra/launcher=nosuch"], r"unknown hydra/launcher 'nosuch'; choose one of: basic"),
        (["seed=[1"], r"cannot parse override"),
    ],
)
def test_bad_values_name_the_value_in_one_line(overrides, message):
    with pytest.raises(ConfigError, match=message) as info:
        _run(overrides)
    assert "\n" not in str(info.value)


def test_a_mistake_in_a_yaml_file_reads_as_the_same_mistake_on_the_command_line(tmp_path):
    conf = tmp_path / "conf"
    shutil.copytree(CONF_DIR, conf, ignore=shutil.ignore_patterns("__pycache__"))
    with (conf / "muzero" / "default.yaml").open("a") as f:
        f.write("simulations: 8\n")
    with pytest.raises(ConfigError) as from_file:
        _run([], conf)
    with pytest.raises(ConfigError) as from_line:
        _run(["muzero.simulations=8"])
    assert str(from_file.value) == str(from_line.value)
    assert str(from_line.value).startswith("unknown key muzero.simulations; valid keys under")


def test_a_config_without_the_schema_is_refused(tmp_path):
    conf = tmp_path / "conf"
    shutil.copytree(CONF_DIR, conf, ignore=shutil.ignore_patterns("__pycache__"))
    text = (conf / "config.yaml").read_text().replace("  - gradlab_schema", "")
    (conf / "config.yaml").write_text(text)
    with pytest.raises(ConfigError, match="must list 'gradlab_schema' first"):
        _run([], conf)


REGIMES = sorted(p.stem for p in (CONF_DIR / "regime").glob("*.yaml"))


@pytest.mark.parametrize("regime", REGIMES)
def test_every_regime_composes_and_validates_on_every_task(regime):
    from experiments.jobs.job import MUZERO

    for task in ("catch", "cartpole"):
        run = _run([f"regime={regime}", f"task={task}"])
        MUZERO.validate(run)  # supports cover the (possibly scaled) returns
        assert run.task.name == task


def test_regimes_change_what_they_say():
    paper = _run(["regime=tuned"])
    assert paper == _run([])  # the tuned setting, unchanged
    assert _run(["regime=long_unroll"]).muzero.unroll_steps == 10
    assert _run(["regime=no_norm"]).muzero.network.normalisation == "none"
    assert _run(["regime=high_lr"]).muzero.learning_rate == 0.03
    large = _run(["regime=large_reward"])
    assert large.task.reward_scale == 100.0 and large.task.threshold == 90.0
    assert large.muzero.network.value_support_size is None  # sized from the scaled returns


def test_regime_pseudocode_changes_the_optimizer_l2_and_search_value_only():
    import dataclasses as dc

    tuned = _run(["regime=tuned"]).muzero
    run = _run(["regime=pseudocode"]).muzero
    assert (run.optimizer, run.momentum, run.q_form) == ("momentum", 0.9, "pseudocode")
    # The pseudocode adds 1e-4 * l2_loss once to the loss summed over the batch; gradlab's loss
    # is the batch mean, so the same ratio of L2 to data is 1e-4 / 256 = 3.90625e-7.
    assert run.weight_decay * run.batch_size == pytest.approx(1e-4, rel=1e-12)
    changed = {f.name for f in dc.fields(run) if getattr(run, f.name) != getattr(tuned, f.name)}
    regime_keys = {"optimizer", "learning_rate", "lr_decay_rate", "lr_decay_steps", "q_form"}
    assert changed <= regime_keys | {"weight_decay"}
    assert {"optimizer", "q_form", "lr_decay_rate", "weight_decay"} <= changed


@pytest.mark.parametrize(
    ("overrides", "steps"),
    [([], 2500), (["task=cartpole"], 6000), (["muzero.training_steps=400"], 400)],
)
def test_regime_pseudocode_decays_a_tenth_every_35_percent_of_the_run(overrides, steps):
    # The pseudocode's Atari schedule: x0.1 every 350e3 of its 1e6 steps. Per run:
    # lr_decay_rate ** (0.35 T / T) = (0.1 ** (1 / 0.35)) ** 0.35 = 0.1.
    muzero = _run(["regime=pseudocode", *overrides]).muzero
    assert muzero.lr_decay_steps == steps
    assert muzero.lr_decay_rate ** (0.35 * steps / muzero.lr_decay_steps) == pytest.approx(0.1)


def test_the_seed_axis_is_refused_in_one_line_naming_why():
    with pytest.raises(ConfigError) as info:
        _run(["muzero.seed_axis=true"])
    assert str(info.value) == SEED_AXIS_REMOVED
    assert "the seed axis was removed" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ConfigError, match=r"unknown key runtime.seed_group; valid keys under"):
        _run(["runtime.seed_group=4"])
    assert _run(["muzero.seed_axis=false"]) == _run([])


def test_a_study_registered_with_the_seed_axis_key_still_runs_as_registered():
    # Study 6's record was written while the seed axis existed: each arm holds
    # muzero.seed_axis: false. The retired key keeps it, so the arms compare equal key for key
    # (a key gone would read "no longer runs as registered") and a run's config hash is kept.
    study = load_study("minatar_return", CONF_DIR)
    results = Path(__file__).resolve().parents[2] / "results" / "findings"
    record = read_record(study, results)
    assert all(c["muzero.seed_axis"] is False for c in record["arm_configs"].values())
    check(study, config_dir=CONF_DIR, results_dir=results)  # raises on any difference
