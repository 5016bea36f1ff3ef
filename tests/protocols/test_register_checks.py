"""gradlab study register's design checks (issue 38): a study claiming MuZero's own setting
must keep the normalisation and K = 5; a confirmatory study's seeds are fresh."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.base.errors import ConfigError
from experiments.protocols.study.design import load_study
from experiments.protocols.study.record import RECORD, register

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"


def _edit(conf: Path, old: str, new: str) -> None:
    path = conf / "study" / "catch_stress.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_a_faithful_claim_on_a_regime_without_normalisation_is_refused(conf, tmp_path):
    _edit(conf, "regime: stress\n", "regime: stress\nfaithful: true\n")
    study = load_study("catch_stress", conf)
    assert study.faithful
    with pytest.raises(ConfigError, match=r"claims to be faithful, but arm 'none' runs with "
                       r"muzero.network.normalisation='none' \(faithful: 'minmax'\)"):  # fmt: skip
        register(study, config_dir=conf, results_dir=tmp_path / "results")
    assert not any((tmp_path / "results").rglob(RECORD))


def test_a_faithful_claim_on_the_tuned_regime_is_recorded(conf, tmp_path):
    _edit(conf, "regime: stress\n", "regime: tuned\nfaithful: true\n")
    path = register(
        load_study("catch_stress", conf), config_dir=conf, results_dir=tmp_path / "results"
    )
    record = json.loads(path.read_text())
    assert record["design"]["faithful"] is True
    configs = record["arm_configs"].values()
    assert {c["muzero.network.normalisation"] for c in configs} == {"minmax"}
    assert {c["muzero.unroll_steps"] for c in configs} == {5}


def test_faithful_must_be_a_boolean(conf):
    _edit(conf, "regime: stress\n", "regime: tuned\nfaithful: yes please\n")
    with pytest.raises(ConfigError, match="faithful='yes please' of study 'catch_stress'"):
        load_study("catch_stress", conf)


def test_seeds_a_run_used_are_refused(conf, tmp_path):
    results = tmp_path / "results"
    job = results / "older" / "regime=stress__variant=none__seed=1042"
    job.mkdir(parents=True)
    (job / "summary.json").write_text(json.dumps({"seed": 1042, "status": "completed"}))
    with pytest.raises(ConfigError, match=r"seed 1042 of study 'catch_stress' was used by the "
                       r"run '.*seed=1042'"):  # fmt: skip
        register(load_study("catch_stress", conf), config_dir=conf, results_dir=results)


def test_seeds_another_study_registered_are_refused(conf, tmp_path):
    results = tmp_path / "results"
    other = results / "study_other"
    other.mkdir(parents=True)
    (other / RECORD).write_text(json.dumps({"design": {"name": "other", "seeds": [1060, 1100]}}))
    with pytest.raises(ConfigError, match="seeds 1060..1069 of study 'catch_stress' are "
                       "registered by study 'other'"):  # fmt: skip
        register(load_study("catch_stress", conf), config_dir=conf, results_dir=results)


def test_the_committed_findings_used_study_1s_seeds(conf):
    """Against the repository's own results, Study 1's seeds are taken: registering it again
    (a replay) is refused."""
    results = Path(__file__).resolve().parents[2] / "results" / "findings"
    _edit(conf, "ablation: study_catch_stress", "ablation: study_catch_replay")
    with pytest.raises(ConfigError, match="seed 10[0-6][0-9] of study 'catch_stress' was used"):
        register(load_study("catch_stress", conf), config_dir=conf, results_dir=results)


def _plan(*args: str):
    """``gradlab study plan ARGS`` through the real app."""
    from typer.testing import CliRunner

    from cli.main import app

    return CliRunner().invoke(app, ["study", "plan", *args])


def test_plan_gives_the_pooled_equivalence_power_of_summed_strata():
    """gradlab study plan --margin --strata S: the power of gradlab pool --margin's test on S x n
    runs per arm, equal to equivalence_power at S x n, and the runs per arm per stratum that
    reach the target (the first n whose S x n does)."""
    from experiments.protocols.study.power import equivalence_power

    out = _plan("catch_stress", "--margin", "0.1", "--rates", "0.12,0.12", "--strata", "4",
                "--power", "0.8")  # fmt: skip
    assert out.exit_code == 0, out.output
    got = equivalence_power(0.12, 0.12, 4 * 70, margin=0.1)
    need = next(k for k in range(1, 200) if equivalence_power(0.12, 0.12, 4 * k, margin=0.1) >= 0.8)
    assert f"70 runs per arm each: equivalence power {got:.3f}" in out.output
    assert f"{need} runs per arm per stratum reach 0.8" in out.output
    assert need == 47  # 188 runs per arm in all: 0.12 vs 0.12 within ±0.1


def test_plan_gives_the_pooled_runs_where_one_stratum_would_need_more_than_400():
    """0.5 vs 0.5 within ±0.1 at power 0.9 needs about 430 runs per arm: more than the single
    stratum's search (400), so its line says so, and the pooled line over 8 strata still gives its
    answer (it used to end the whole plan with that line's error)."""
    from experiments.protocols.study.power import equivalence_power

    out = _plan("faithful_catch", "--margin", "0.1", "--true-rates", "0.5,0.5", "--strata", "8",
                "--power", "0.9")  # fmt: skip
    assert out.exit_code == 0, out.output
    assert equivalence_power(0.5, 0.5, 400, margin=0.1) < 0.9
    assert "power 0.000 with 47 runs per arm; no n up to 400 runs per arm reaches 0.9" in out.output
    # 68 per stratum: the first n whose 8 x n runs per arm reach 0.9
    assert equivalence_power(0.5, 0.5, 8 * 68, margin=0.1) >= 0.9
    assert equivalence_power(0.5, 0.5, 8 * 67, margin=0.1) < 0.9
    assert "equivalence power 0.742; 68 runs per arm per stratum reach 0.9" in out.output
    assert f"{equivalence_power(0.5, 0.5, 8 * 47, margin=0.1):.3f}" == "0.742"


def test_a_margin_study_records_its_equivalence_power(conf, tmp_path):
    """Study 4's design: the record's planned power is the pooled TOST's (47 runs per arm in
    each of 4 strata, summed), the figure gradlab study plan prints."""
    from experiments.protocols.study.power import equivalence_power

    results = tmp_path / "results"  # a copy of conf/ beside it: the repository's runs (which
    # used these seeds) are not its results folder's
    study = load_study("faithful_catch", conf)
    assert study.faithful and study.primary.margin == 0.1 and study.primary.margin_reason
    assert len(study.seeds) == 47 and study.planning.strata == 4
    path = register(study, config_dir=conf, results_dir=results, code_root=tmp_path)
    record = json.loads(path.read_text())
    assert record["planned_power"] == pytest.approx(equivalence_power(0.12, 0.12, 188, margin=0.1))
    assert record["planned_power"] >= 0.8


def test_plan_refuses_a_bad_margin_before_printing_anything():
    out = _plan("faithful_catch", "--margin", "2")
    assert out.exit_code == 2
    assert out.output.strip() == (
        "error: --margin 2.0; expected a risk difference in (0, 1), e.g. 0.2"
    )


def test_seeds_are_fresh_against_the_repository_s_runs_whatever_folder_is_given(tmp_path):
    # issue 49: registering Study 1's design into another folder passed, though its seeds were
    # used by the committed runs under results/
    from experiments.launch.hydra_app import CONF_DIR
    from experiments.protocols.study.design import load_study
    from experiments.protocols.study.record import register

    findings = Path(CONF_DIR).parent / "results" / "findings" / "study_catch_stress"
    if not findings.is_dir():
        pytest.skip("no committed runs here")
    with pytest.raises(ConfigError, match="seed 1000 of study 'catch_stress' was used by the run"):
        register(load_study("catch_stress", CONF_DIR), config_dir=CONF_DIR,
                 results_dir=tmp_path / "elsewhere", code_root=tmp_path)  # fmt: skip
    assert not (tmp_path / "elsewhere").exists()
