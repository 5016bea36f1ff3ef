"""A study across tasks is one design and one record: its tasks' seeds, its confirmatory family,
its normalisation; its jobs, its running order and its audit, per task."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from experiments.base.errors import ConfigError
from experiments.jobs import store
from experiments.protocols.study.audit import audit
from experiments.protocols.study.design import load_study
from experiments.protocols.study.record import (
    RECORD,
    check,
    check_fresh_seeds,
    check_jobs,
    register,
)
from experiments.protocols.study.run import run_study, study_sweeps

STUDY = """\
name: across_test
ablation: study_across_test
regime: tuned
tasks:
  - {task: catch, seeds: [9000, 9003]}
  - {task: cartpole, seeds: [9100, 9102]}
calibration_seeds: [100, 110]
baseline: none
arms:
  - {variant: depth_loss_scale}
  - {variant: none}
  - {variant: scale_gradient}
confirmatory:
  pooled:
    - arm: scale_gradient
      endpoint: normalised_return
      test: welch_equal_weights
      alpha: 0.05
      margin: 0.05
      margin_reason: "5% of the learned gain, declared before any run"
  per_task: exploratory
normalisation:
  catch: {r_ref: 0.95, r_rand: -0.5998}
  cartpole: {r_ref: 480.0, r_rand: 22.057}
final_window: 3
planning: {effect: -0.1, sd: 0.2, power: 0.8}
overrides: [logger=none]
"""

PRESET = """\
# @package _global_
hydra:
  sweeper:
    params:
      regime: tuned
"""


@pytest.fixture
def across(conf: Path) -> Path:
    (conf / "study" / "across_test.yaml").write_text(STUDY)
    (conf / "ablation" / "study_across_test.yaml").write_text(PRESET)
    return conf


def _edited(conf: Path, old: str, new: str) -> Path:
    path = conf / "study" / "across_test.yaml"
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new))
    return conf


def test_design_reads_tasks_family_and_normalisation(across):
    study = load_study("across_test", across)
    assert study.across_tasks and [s.task for s in study.strata] == ["catch", "cartpole"]
    assert [list(s.seeds) for s in study.strata] == [[9000, 9001, 9002], [9100, 9101]]
    assert study.n_jobs == 3 * 5
    assert study.primary.endpoint == "normalised_return" and study.primary.margin == 0.05
    assert study.family.per_task == "exploratory"
    assert study.normalisation["cartpole"].r_ref == 480.0
    assert study.final_window == 3


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("{task: cartpole, seeds: [9100, 9102]}", "{task: catch, seeds: [9100, 9102]}",
         "lists task 'catch' twice"),
        ("seeds: [9100, 9102]", "seeds: [9001, 9005]", "are also task 'catch''s"),
        ("seeds: [9100, 9102]", "seeds: [105, 107]", "are also calibration seeds"),
        ("endpoint: normalised_return", "endpoint: return", "unknown confirmatory.pooled endpoint"),
        ("test: welch_equal_weights", "test: fisher", "unknown confirmatory.pooled test"),
        ("arm: scale_gradient", "arm: none", "unknown confirmatory.pooled arm"),
        ("  per_task: exploratory", "  per_task: all", "unknown confirmatory.per_task"),
        ("cartpole: {r_ref: 480.0, r_rand: 22.057}", "cartpole: {r_ref: 20.0, r_rand: 22.057}",
         "r_ref=20.0 is not above r_rand=22.057"),
        ("confirmatory:", "primary: {}\nconfirmatory:", "also gives 'primary'"),
        ("final_window: 3", "final_window: 0", "final_window=0"),
    ],
)  # fmt: skip
def test_bad_designs_are_one_line_naming_the_field(across, old, new, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        load_study("across_test", _edited(across, old, new))


def test_register_refuses_a_normalised_endpoint_without_every_task_s_normalisation(
    across, tmp_path
):
    conf = _edited(
        across,
        "normalisation:\n  catch: {r_ref: 0.95, r_rand: -0.5998}\n"
        "  cartpole: {r_ref: 480.0, r_rand: 22.057}\n",
        "",
    )
    study = load_study("across_test", conf)  # a plan may read it from the calibration
    with pytest.raises(ConfigError, match="no normalisation for task 'catch'"):
        register(study, config_dir=conf, results_dir=tmp_path / "r", code_root=tmp_path)
    assert not (tmp_path / "r").exists()


def test_no_family_is_refused(across):
    text = STUDY[: STUDY.index("confirmatory:")] + STUDY[STUDY.index("normalisation:") :]
    (across / "study" / "across_test.yaml").write_text(text)
    with pytest.raises(ConfigError, match="declares no confirmatory family"):
        load_study("across_test", across)


def test_one_record_holds_the_family_every_task_and_each_arm_per_task(across, tmp_path):
    study = load_study("across_test", across)
    results = tmp_path / "results"
    path = register(study, config_dir=across, results_dir=results, code_root=tmp_path)
    record = json.loads(path.read_text())
    design = record["design"]
    assert "primary" not in design and "task" not in design and "seeds" not in design
    assert design["tasks"] == [{"task": "catch", "seeds": [9000, 9003]},
                               {"task": "cartpole", "seeds": [9100, 9102]}]  # fmt: skip
    pooled = design["family"]["pooled"]
    reason = "5% of the learned gain, declared before any run"
    assert pooled == [{"arm": "scale_gradient", "endpoint": "normalised_return",
                       "test": "welch_equal_weights", "alpha": 0.05, "margin": 0.05,
                       "margin_reason": reason}]  # fmt: skip
    assert design["family"]["per_task"] == "exploratory"
    assert design["normalisation"]["catch"] == {"r_ref": 0.95, "r_rand": -0.5998}
    assert design["final_window"] == 3
    assert set(record["arm_configs"]) == {
        f"{t}: {v}" for t in ("catch", "cartpole") for v in ("none", "scale_gradient",
                                                                 "depth_loss_scale")
    }  # fmt: skip
    assert record["arm_configs"]["cartpole: none"]["task.name"] == "cartpole"
    assert {"task/catch.yaml", "task/cartpole.yaml"} <= set(record["files"])
    assert set(record["planned_power"]) == {"difference", "equivalence"}
    assert check(study, config_dir=across, results_dir=results) == []
    # the seeds of every task are registered: another study may not take them
    other = _edited(across, "name: across_test", "name: across_other")
    (other / "study" / "across_test.yaml").rename(other / "study" / "across_other.yaml")
    with pytest.raises(ConfigError, match="registered by study 'across_test'"):
        check_fresh_seeds(load_study("across_other", other), results)


def _job(study, task, variant, seed):
    return [f"task={task}", "regime=tuned", f"variant={variant}", f"seed={seed}",
            f"ablation={study.ablation}", "logger=none"]  # fmt: skip


def test_jobs_outside_a_task_s_seeds_or_tasks_are_refused(across):
    study = load_study("across_test", across)
    check_jobs(study, [_job(study, "catch", "none", 9002), _job(study, "cartpole", "none", 9101)])
    with pytest.raises(
        ConfigError, match=r"seed=9100 is outside .* \(seeds 9000-9002 in task catch"
    ):
        check_jobs(study, [_job(study, "catch", "none", 9100)])
    with pytest.raises(ConfigError, match="task=breakout is not a task of study across_test"):
        check_jobs(study, [_job(study, "breakout", "none", 9000)])
    with pytest.raises(ConfigError, match="seed=09000 is outside"):
        check_jobs(study, [_job(study, "catch", "none", "09000")])


def test_sweeps_run_the_confirmatory_arms_task_by_task_first(across, tmp_path):
    study = load_study("across_test", across)
    sweeps = study_sweeps(study, tmp_path)
    assert [(s.stratum.task, s.arm.variant) for s in sweeps] == [
        ("catch", "none"), ("catch", "scale_gradient"),
        ("cartpole", "none"), ("cartpole", "scale_gradient"),
        ("catch", "depth_loss_scale"), ("cartpole", "depth_loss_scale"),
    ]  # fmt: skip
    assert "task=cartpole" in sweeps[2].overrides
    assert "seed=range(9100,9102)" in sweeps[2].overrides
    assert sweeps[0].header == "== across_test: catch: arm none (3 seeds)"
    # a refused sweep is one line and the next still runs; a stop ends the study at once
    said, errors, ran = [], [], []

    def sweep(overrides):
        ran.append(overrides)
        if len(ran) == 2:
            raise ConfigError("refused")
        return 130 if len(ran) == 4 else 0

    code = run_study(study, tmp_path, sweep=sweep, say=said.append, error=errors.append,
                     stopped=frozenset({130}))  # fmt: skip
    assert code == 130 and len(ran) == 4 and errors == ["error: refused"]


def _summary(folder: Path, task: str, variant: str, seed: int, **fields) -> None:
    settings = {"regime": "tuned", "task": task, "variant": variant}
    name = store.job_name({**settings, "seed": str(seed)})
    job = folder / name
    job.mkdir(parents=True)
    summary = {"status": "completed", "job": name, "ablation": "study_across_test",
               "overrides": {**settings, "seed": str(seed)}, "group": settings, "seed": seed,
               "task": task, "regime": "tuned", "variant": variant, "steps": 10,
               "stability": {}, **fields}  # fmt: skip
    (job / "summary.json").write_text(json.dumps(summary))


def test_audit_counts_every_task_s_arms(across, tmp_path):
    study = load_study("across_test", across)
    results = tmp_path / "results"
    register(study, config_dir=across, results_dir=results, code_root=tmp_path)
    folder = results / study.ablation
    for seed in (9000, 9001, 9002):
        _summary(folder, "catch", "none", seed)
    _summary(folder, "cartpole", "scale_gradient", 9100)
    _summary(folder, "cartpole", "none", 9000)  # a catch seed in cartpole: outside the design
    result = audit(folder, config_dir=across)
    flow = {f.arm: (f.registered, f.started, f.missing) for f in result.flow}
    assert flow["catch: none"] == (3, 3, 0)
    assert flow["cartpole: scale_gradient"] == (2, 1, 1)
    assert flow["catch: depth_loss_scale"] == (3, 0, 3)
    assert len(result.flow) == 6
    job_set = next(c for c in result.breaches if c.name == "job set")
    assert (
        "outside the registered job set: regime=tuned__task=cartpole__variant=none__seed=9000"
        in (job_set.line)
    )
    # the record declares a final window of 3 evaluations: these runs record none
    figures = next(c for c in result.breaches if c.name == "figures")
    assert "its final window holds None evaluations, not the declared 3" in figures.line
    assert (folder / RECORD).is_file()


def _run(folder: Path, task: str, variant: str, seed: int, final: float, diverged: int = 0):
    """A finished run's summary as a sweep writes it (schema 2: no identity, which the family
    table does not need), with its final return."""
    settings = {"regime": "tuned", "task": task, "variant": variant}
    name = store.job_name({**settings, "seed": str(seed)})
    stability = {"diverged": diverged, "diverged_step": 5 if diverged else None, "collapsed": 0,
                 "unstable": diverged, "steps": 10, "final_return": final, "final_evals": 2,
                 "reached_threshold": 0, "steps_to_threshold": None}  # fmt: skip
    summary = {"schema": 2, "status": "diverged" if diverged else "completed", "job": name,
               "ablation": "study_across_test", "overrides": {**settings, "seed": str(seed)},
               "group": settings, "seed": seed, "task": task, "regime": "tuned",
               "variant": variant, "variant_params": {}, "steps": 10, "threshold": None,
               "reward_scale": 1.0, "stability": stability}  # fmt: skip
    store.write_json_atomic(folder / name / "summary.json", summary)


def test_pool_tables_the_registered_family_from_the_record_alone(across, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from cli.main import app
    from experiments.report.statistics.welch_pooled import welch_pooled

    # the normalised values by hand: _scaled_runs
    folder, scaled = _scaled_runs(across, tmp_path)
    want = welch_pooled(
        [(scaled[t, "scale_gradient"], scaled[t, "none"]) for t in ("catch", "cartpole")],
        margin=0.05,
    )
    # the * follows the folder's audit, whatever it finds (these synthetic runs carry no
    # identity); the numbers are the pooled Welch difference of the values by hand
    from experiments.protocols.study.analysis import audit_note

    result = CliRunner().invoke(app, ["pool", str(folder), "-f", "json"])
    assert result.exit_code == 0, result.output
    table = json.loads(result.stdout)
    assert table["estimate"] == pytest.approx(want.estimate, rel=1e-12)
    assert table["ci"] == pytest.approx(list(want.ci), rel=1e-12)
    assert table["tost_p"] == pytest.approx(want.tost_p, rel=1e-12)
    assert table["margin"] == 0.05 and table["arm"] == "scale_gradient"
    assert table["confirmatory"] == (audit_note(folder) is None)
    starred = any("*" in str(v) for row in table["rows"] for v in row.values())
    assert starred == table["confirmatory"]
    # a margin other than the registered one, or another arm, is refused in one line
    other = CliRunner().invoke(app, ["pool", str(folder), "--margin", "normalised_return=0.1"])
    assert other.exit_code == 2 and "disagrees with study across_test's registered margin" in (
        other.output
    )
    arm = CliRunner().invoke(app, ["pool", str(folder), "--primary", "depth_loss_scale"])
    assert arm.exit_code == 2 and "is not study across_test's registered arm" in arm.output


def _scaled_runs(across, tmp_path, per_task="exploratory"):
    """A registered study across tasks with three arms' runs (one depth_loss_scale run
    diverged), and its values on the normalised scale, by hand."""
    if per_task != "exploratory":
        _edited(across, "per_task: exploratory", f"per_task: {per_task}")
    study = load_study("across_test", across)
    results = tmp_path / "results"
    register(study, config_dir=across, results_dir=results, code_root=tmp_path)
    folder = results / study.ablation
    finals = {
        ("catch", "none"): [0.9, 0.95, 1.0], ("catch", "scale_gradient"): [0.7, 0.8, 0.75],
        ("catch", "depth_loss_scale"): [0.6, 0.9, None],
        ("cartpole", "none"): [480.0, 470.0], ("cartpole", "scale_gradient"): [400.0, 460.0],
        ("cartpole", "depth_loss_scale"): [300.0, 450.0],
    }  # fmt: skip
    norm = {"catch": (0.95, -0.5998), "cartpole": (480.0, 22.057)}
    scaled = {}
    for (task, variant), values in finals.items():
        ref, rand = norm[task]
        for seed, value in zip(study.stratum(task).seeds, values, strict=False):
            # the diverged run's summary says 0.5; the table must count it at R_rand
            _run(folder, task, variant, seed, 0.5 if value is None else value,
                 diverged=int(value is None))  # fmt: skip
        # a diverged run counts at R_rand: 0 on the normalised scale
        scaled[task, variant] = [0.0 if v is None else (v - rand) / (ref - rand) for v in values]
    return folder, scaled


def _stars(table: dict) -> dict[str, list[str]]:
    """Each row's cells that carry a *, by column."""
    return {row["row"]: [k for k, v in row.items() if "*" in str(v)] for row in table["rows"]}


def test_the_family_s_per_task_tests_are_holm_adjusted_as_declared(across, tmp_path):
    """The record declares the per-task differences exploratory, Holm across the tasks (as
    Study 6's does): each task's Welch p (scipy) adjusted by Holm by hand, with no *."""
    from scipy import stats

    from gradlab._api import pool

    folder, scaled = _scaled_runs(across, tmp_path)
    raw = [stats.ttest_ind(scaled[t, "scale_gradient"], scaled[t, "none"], equal_var=False).pvalue
           for t in ("catch", "cartpole")]  # fmt: skip
    low, high = sorted(raw)
    holm = {low: min(1.0, 2 * low), high: max(min(1.0, 2 * low), high)}  # m = 2
    table = pool(folder)
    assert table.p_adj == pytest.approx([holm[p] for p in raw], rel=1e-12)
    assert 2 * low < 1 and table.p_adj[raw.index(low)] == pytest.approx(2 * low)  # adjusted
    assert "Holm-adjusted across the tasks (exploratory)" in table.to_markdown()


@pytest.mark.parametrize("per_task", ["exploratory", "holm"])
def test_stars_mark_exactly_the_registered_contrasts(across, tmp_path, monkeypatch, per_task):
    """With the audit passing: * on the pooled p and TOST p, on the per-task p only where the
    record declares them confirmatory (``per_task: holm``); none at all for another arm, whose
    caption then says its per-task tests are exploratory."""
    from typer.testing import CliRunner

    from cli.main import app

    folder, _ = _scaled_runs(across, tmp_path, per_task)
    monkeypatch.setattr("experiments.protocols.study.pooled.audit_note", lambda folder: None)
    plain = json.loads(CliRunner().invoke(app, ["pool", str(folder), "-f", "json"]).stdout)
    pooled = "pooled (2 tasks, equal weights)"
    per_task = ["p"] if per_task == "holm" else []
    assert plain["confirmatory"] is True
    assert _stars(plain) == {"catch": per_task, "cartpole": per_task, pooled: ["p", "TOST p"]}
    other = CliRunner().invoke(app, ["pool", str(folder), "--arm", "depth_loss_scale", "-f",
                                     "json"])  # fmt: skip
    other = json.loads(other.stdout)
    assert other["confirmatory"] is False
    assert _stars(other) == {"catch": [], "cartpole": [], pooled: []}
    assert "across the tasks (exploratory)" in other["caption"]
    assert (
        "Nothing is confirmatory here: depth_loss_scale is not the registered arm"
        in (other["caption"])
    )


def test_another_arm_is_tabled_as_the_family_exploratory(across, tmp_path):
    """``--arm depth_loss_scale``: the control against the baseline, pooled as the family is
    (mean of the per-task differences, SE from the Welch variances, Satterthwaite's df: all
    by hand here), with no *, and the caption says why, with the failing audit's note too."""
    from scipy import stats
    from typer.testing import CliRunner

    from cli.main import app
    from experiments.protocols.study.analysis import audit_note

    folder, scaled = _scaled_runs(across, tmp_path)
    diffs, variances, parts = [], [], []
    for task in ("catch", "cartpole"):
        a, b = np.array(scaled[task, "depth_loss_scale"]), np.array(scaled[task, "none"])
        diffs.append(a.mean() - b.mean())
        va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
        variances.append(va + vb)
        parts += [va**2 / (len(a) - 1), vb**2 / (len(b) - 1)]
    estimate = (diffs[0] + diffs[1]) / 2
    se = math.sqrt(sum(variances)) / 2
    df = sum(variances) ** 2 / sum(parts)
    half = stats.t.ppf(0.975, df) * se
    result = CliRunner().invoke(app, ["pool", str(folder), "--arm", "depth_loss_scale", "-f",
                                      "json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    table = json.loads(result.stdout)
    assert table["arm"] == "depth_loss_scale" and table["confirmatory"] is False
    assert table["estimate"] == pytest.approx(estimate, rel=1e-12)
    assert table["se"] == pytest.approx(se, rel=1e-12)
    assert table["ci"] == pytest.approx([estimate - half, estimate + half], rel=1e-10)
    assert "depth_loss_scale is not the registered arm (scale_gradient)" in table["caption"]
    # these synthetic runs fail the audit (no identity): its note is kept beside the arm's
    failing = audit_note(folder)
    assert failing and failing in table["caption"]
    # the registered arm by name is the registered family
    same = CliRunner().invoke(app, ["pool", str(folder), "--arm", "scale_gradient", "-f", "json"])
    plain = CliRunner().invoke(app, ["pool", str(folder), "-f", "json"])
    assert same.exit_code == 0 and json.loads(same.stdout) == json.loads(plain.stdout)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--arm", "none"], "--arm none is not an arm of study across_test other than its "
                            "baseline; valid: depth_loss_scale, scale_gradient"),
        (["--arm", "clipnorm"], "--arm clipnorm is not an arm of study across_test"),
        (["--arm", "depth_loss_scale", "-e", "final_return"],
         "--arm depth_loss_scale applies only to study across_test's family endpoint "
         "(normalised_return); on final_return every arm is tabled without it"),
        (["--primary", "scale_gradient", "-e", "failed"],
         "--primary scale_gradient applies only to study across_test's family endpoint"),
        (["--primary", "depth_loss_scale"],
         "--primary depth_loss_scale is not study across_test's registered arm (scale_gradient);"
         " its family is read from its record; --arm depth_loss_scale tables it, exploratory"),
        (["--primary", "scale_gradient", "--arm", "depth_loss_scale"],
         "--primary scale_gradient and --arm depth_loss_scale disagree"),
    ],
)  # fmt: skip
def test_a_bad_arm_is_one_line_and_writes_nothing(across, tmp_path, options, message):
    from typer.testing import CliRunner

    from cli.main import app

    folder, _ = _scaled_runs(across, tmp_path)
    out = tmp_path / "pooled.md"
    result = CliRunner().invoke(app, ["pool", str(folder), *options, "-o", str(out)])
    assert result.exit_code == 2 and message in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
    assert not out.exists()


def test_an_arm_needs_a_study_across_tasks(tmp_path):
    from typer.testing import CliRunner

    from cli.main import app

    folder = Path(__file__).resolve().parents[2] / "results" / "findings" / "study_catch_stress"
    result = CliRunner().invoke(app, ["pool", str(folder), "--arm", "scale_gradient"])
    assert result.exit_code == 2
    assert "--arm scale_gradient applies only to the one folder of a study across tasks" in (
        result.output
    )


def test_an_exploratory_endpoint_pools_the_one_folder_by_task(across, tmp_path):
    """``gradlab pool STUDY_DIR -e final_return`` (Study 6's declared exploratory endpoints):
    the one folder's tasks are its strata, each arm's mean per task, van Elteren pooled."""
    from typer.testing import CliRunner

    from cli.main import app

    folder, _ = _scaled_runs(across, tmp_path)
    result = CliRunner().invoke(app, ["pool", str(folder), "-e", "final_return", "-f", "csv"])
    assert result.exit_code == 0, result.output
    rows = pd.read_csv(io.StringIO(result.stdout))
    cells = rows[rows.stratum != "pooled"].set_index(["variant", "task"]).value
    # the means by hand; depth_loss_scale's diverged catch run at catch's R_rand, -0.5998
    want = {("none", "catch"): 0.95, ("none", "cartpole"): 475.0,
            ("scale_gradient", "catch"): 0.75, ("scale_gradient", "cartpole"): 430.0,
            ("depth_loss_scale", "catch"): (0.6 + 0.9 - 0.5998) / 3,
            ("depth_loss_scale", "cartpole"): 375.0}  # fmt: skip
    assert {k: cells[k] for k in want} == pytest.approx(want, rel=1e-12)
    pooled = rows[rows.stratum == "pooled"].set_index("variant")
    assert set(pooled.test) == {"van_elteren"}
    # every scale_gradient run is below every baseline run of its task: P(> base) = 0
    assert pooled.loc["scale_gradient", "superiority"] == 0.0
