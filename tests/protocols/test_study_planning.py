"""A study's ``planning:`` typed (experiments/protocols/study/design.py's Planning): the record's
design holds exactly the keys and values each committed YAML declares, as before it was typed, and a
bad planning key or value is one line naming it."""

from __future__ import annotations

import pathlib

import pytest
import yaml

from experiments.base.errors import ConfigError
from experiments.protocols.study.design import Planning, load_study, study_names
from experiments.protocols.study.record import _design

CONF = pathlib.Path(__file__).resolve().parents[2] / "conf"


@pytest.mark.parametrize("name", study_names(CONF))
def test_the_design_holds_the_yaml_planning_as_declared(name):
    raw = yaml.safe_load((CONF / "study" / f"{name}.yaml").read_text())["planning"]
    study = load_study(name, CONF)
    design = _design(study)
    assert design["planning"] == raw
    # same keys, and the same JSON types (an int stays an int, a float a float)
    assert {k: type(v) for k, v in design["planning"].items()} == {
        k: type(v) for k, v in raw.items()
    }
    if "baseline_rate" in raw:  # a rate design; a value design (Study 6) plans effect and sd
        assert study.planning.rates == (raw["baseline_rate"], raw["arm_rate"])
    else:
        assert (study.planning.effect, study.planning.sd) == (raw["effect"], raw["sd"])


def test_strata_absent_is_not_written_and_rates_need_both():
    want = {"baseline_rate": 0.6, "arm_rate": 0.3, "power": 0.9}
    assert Planning(0.6, 0.3, 0.9).to_json() == want
    assert Planning(baseline_rate=0.6).rates is None and Planning().to_json() == {}


def _write(tmp_path, planning):
    text = (CONF / "study" / "catch_stress.yaml").read_text()
    raw = yaml.safe_load(text)
    raw["planning"] = planning
    (tmp_path / "study").mkdir(exist_ok=True)
    (tmp_path / "study" / "catch_stress.yaml").write_text(yaml.safe_dump(raw))
    return tmp_path


@pytest.mark.parametrize(
    ("planning", "message"),
    [
        ({"baseline": 0.6}, "unknown planning key of study 'catch_stress': 'baseline'; choose"),
        ({"arm_rate": 1.5}, r"planning.arm_rate=1.5 of study 'catch_stress'; expected a number"),
        ({"power": "high"}, r"planning.power='high' of study"),
        ({"strata": 0}, r"planning.strata=0 of study 'catch_stress'; expected a positive"),
        ({"strata": 2.5}, r"planning.strata=2.5 of study"),
        ([0.6, 0.3], r"planning=\[0.6, 0.3\] of study 'catch_stress'; expected a mapping"),
    ],
)
def test_a_bad_planning_is_one_line(tmp_path, planning, message):
    with pytest.raises(ConfigError, match=message):
        load_study("catch_stress", _write(tmp_path, planning))


def test_no_planning_is_empty(tmp_path):
    assert load_study("catch_stress", _write(tmp_path, None)).planning == Planning()
