"""Pre-registered studies: the design file, the power computation, the record and its check."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import time
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from cli.main import app
from experiments.base.errors import ConfigError
from experiments.launch.hydra_app import CONF_DIR
from experiments.protocols.study.design import load_study
from experiments.protocols.study.power import (
    fisher_p_grid,
    fisher_power,
    pooled_power,
    seeds_for_power,
)
from experiments.protocols.study.record import RECORD, check, register
from experiments.report.statistics.pooled_rates import Stratum, pooled_contrast


def test_fisher_grid_equals_scipy_cell_by_cell():
    grid = fisher_p_grid(7, 9)
    for k1 in range(8):
        for k2 in range(10):
            ref = stats.fisher_exact([[k1, 7 - k1], [k2, 9 - k2]]).pvalue
            assert grid[k1, k2] == pytest.approx(ref, rel=1e-9, abs=1e-15)


def test_power_by_hand_for_certain_outcomes():
    # Rates 1 and 0: the outcome is certain, k1 = n, k2 = 0. Fisher's two-sided p of
    # [[n, 0], [0, n]] is 2 / C(2n, n): n = 3 -> 2/20 = 0.1 (not below 0.05: power 0);
    # n = 4 -> 2/70 = 0.0286 (below: power 1). So 4 runs per arm are the fewest.
    assert fisher_power(1.0, 0.0, 3) == pytest.approx(0.0)
    assert fisher_power(1.0, 0.0, 4) == pytest.approx(1.0)
    assert seeds_for_power(1.0, 0.0, power=0.9) == 4
    # Equal rates: the test's size, at most alpha (it is exact, so conservative).
    assert 0 < fisher_power(0.5, 0.5, 20) <= 0.05


def test_power_equals_a_direct_sum_over_outcomes():
    # Independent of fisher_p_grid: every outcome's probability times scipy's own decision.
    n, p1, p2 = 10, 0.6, 0.1
    direct = sum(
        stats.binom.pmf(a, n, p1) * stats.binom.pmf(b, n, p2)
        for a in range(n + 1)
        for b in range(n + 1)
        if stats.fisher_exact([[a, n - a], [b, n - b]]).pvalue < 0.05
    )
    assert fisher_power(p1, p2, n) == pytest.approx(direct, rel=1e-12)
    assert fisher_power(p1, p2, n) == pytest.approx(0.474, abs=0.001)


def test_bad_rates_refused():
    with pytest.raises(ConfigError, match="p1=1.5 is not a rate"):
        fisher_power(1.5, 0.2, 10)


def test_pooled_power_by_hand_for_certain_outcomes():
    # Rates 1 and 0, 3 runs an arm: every stratum is [[3, 0], [0, 3]]. Alone, Fisher's p is
    # 2 / C(6, 3) = 0.1: power 0. Two such strata: each has E = 3 * 3 / 6 = 1.5, events - E =
    # 1.5, V = 3 * 3 * 3 * 3 / (6^2 * 5) = 0.45, so CMH = (1.5 + 1.5)^2 / 0.9 = 10, p = 0.0016:
    # power 1.
    assert pooled_power([(1.0, 0.0)], 3) == pytest.approx(0.0)
    assert pooled_power([(1.0, 0.0)] * 2, 3) == pytest.approx(1.0)
    # A stratum whose every run fails (rates 1 and 1) adds nothing, and the one informative
    # stratum is tested by Fisher's test, as in gradlab pool: power 0. Its CMH chi-square alone
    # (1.5^2 / 0.45 = 5, p = 0.025) would reject: power 1.
    assert pooled_power([(1.0, 0.0), (1.0, 1.0)], 3) == pytest.approx(0.0)
    assert pooled_power([(0.6, 0.1), (1.0, 1.0)], 10) == pytest.approx(fisher_power(0.6, 0.1, 10))
    assert pooled_power([(0.6, 0.1)], 10) == pytest.approx(fisher_power(0.6, 0.1, 10), rel=1e-12)


@pytest.mark.parametrize(
    ("n", "rates"),
    [
        (3, [(0.7, 0.2), (0.5, 0.9)]),  # CMH rejections only (no Fisher p of 3 a side < 0.05)
        (5, [(0.9, 0.1), (0.97, 0.95)]),  # often one informative stratum: Fisher rejections too
    ],
)
def test_pooled_power_equals_a_direct_sum_over_gradlab_pools_decisions(n, rates):
    # Independent of pooled_power's arithmetic: every joint outcome of two strata weighted by its
    # binomial probabilities, times the decision of the function gradlab pool reports
    # (statsmodels' CMH; Fisher where one stratum is informative).
    direct, by_test = 0.0, set()
    for a, b, c, d in np.ndindex(n + 1, n + 1, n + 1, n + 1):
        prob = np.prod(
            [stats.binom.pmf(k, n, r) for k, r in zip((a, b, c, d), np.ravel(rates), strict=True)]
        )
        result = pooled_contrast({"x": Stratum(a, n, b, n), "y": Stratum(c, n, d, n)})
        if result.pvalue < 0.05:
            direct += prob
            by_test.add(result.test)
    assert direct > 0.01  # the sum is not vacuous: some outcomes reject
    assert "cmh" in by_test and ("fisher" in by_test) == (n == 5)
    assert pooled_power(rates, n) == pytest.approx(direct, rel=1e-12)


def test_pooled_power_refuses_what_it_cannot_enumerate():
    with pytest.raises(
        ConfigError, match=r"strata=4 with 10 runs per arm: 214,358,881 .* at most 3"
    ):
        pooled_power([(0.8, 0.4)] * 4, 10)
    with pytest.raises(ConfigError, match="stratum 1 baseline rate=-0.1 is not a rate"):
        pooled_power([(0.8, 0.4), (0.5, -0.1)], 10)


def test_catch_stress_design():
    study = load_study("catch_stress", CONF_DIR)
    assert study.seeds == range(1000, 1070)
    assert not set(study.seeds) & set(study.calibration_seeds)
    assert (study.primary.arm, study.primary.endpoint, study.primary.test) == (
        "scale_gradient",
        "failed",
        "fisher",
    )
    assert study.arms[0].variant == study.baseline == "none"
    assert fisher_power(0.6, 0.3, len(study.seeds)) >= study.planning.power


def _edit(conf: Path, old: str, new: str) -> None:
    path = conf / "study" / "catch_stress.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("seeds: [1000, 1070]", "seeds: [100, 120]", "are also calibration seeds"),
        ("arm: scale_gradient", "arm: nope", "unknown primary arm"),
        ("endpoint: failed", "endpoint: return", "unknown primary endpoint"),
        ("alpha: 0.05", "alpha: 5", "expected 0 < alpha < 1"),
        ("seeds: [1000, 1070]", "seeds: [1070, 1000]", "is empty"),
    ],
)
def test_bad_designs_one_line(conf, old, new, message):
    _edit(conf, old, new)
    with pytest.raises(ConfigError, match=message):
        load_study("catch_stress", conf)


def test_register_then_check_then_refuse_changes(conf, tmp_path):
    results = tmp_path / "results"
    study = load_study("catch_stress", conf)
    path = register(study, config_dir=conf, results_dir=results)
    record = json.loads(path.read_text())
    assert path.name == RECORD and record["study"] == "catch_stress"
    assert record["planned_power"] == pytest.approx(fisher_power(0.6, 0.3, 70))
    clip = record["arm_configs"]["clipnorm variant.clipnorm=0.6"]
    assert clip["variant.clipnorm"] == 0.6 and clip["muzero.unroll_steps"] == 10
    assert check(study, config_dir=conf, results_dir=results) == []
    before = path.read_bytes()
    with pytest.raises(ConfigError, match="already registered"):
        register(study, config_dir=conf, results_dir=results)
    assert path.read_bytes() == before
    # the design changed after registration: refused
    _edit(conf, "alpha: 0.05", "alpha: 0.1")
    with pytest.raises(ConfigError, match="differs from its pre-registration record in: primary"):
        check(load_study("catch_stress", conf), config_dir=conf, results_dir=results)
    _edit(conf, "alpha: 0.1", "alpha: 0.05")
    # a setting the arms run with changed after registration: refused
    stress = conf / "regime" / "stress.yaml"
    stress.write_text(stress.read_text().replace("learning_rate: 0.03", "learning_rate: 0.02"))
    with pytest.raises(ConfigError, match=r"muzero.learning_rate=0.03 -> 0.02"):
        check(study, config_dir=conf, results_dir=results)


def test_register_refuses_a_folder_with_runs(conf, tmp_path):
    study = load_study("catch_stress", conf)
    job = tmp_path / "results" / study.ablation / "regime=stress__variant=none__seed=1000"
    job.mkdir(parents=True)
    (job / "summary.json").write_text("{}")
    with pytest.raises(ConfigError, match="already holds runs"):
        register(study, config_dir=conf, results_dir=tmp_path / "results")
    assert not (job.parent / RECORD).exists()


def test_cli_plan_and_unregistered_run(tmp_path):
    runner = CliRunner()
    plan = runner.invoke(app, ["study", "plan", "catch_stress"])
    assert plan.exit_code == 0
    assert "power 0.934 with 70 runs per arm; 61 runs per arm reach 0.9" in plan.output
    assert "pooled over" not in plan.output
    pooled = runner.invoke(app, ["study", "plan", "breakout_stress", "--strata", "2"])
    assert pooled.exit_code == 0, pooled.output
    # breakout_stress plans 0.8 vs 0.2 with 10 seeds: pooled_power gives 0.98148 (checked
    # against direct sums over gradlab pool's decisions above, at smaller n)
    assert "pooled over 2 strata at these rates, 10 runs per arm each" in pooled.output
    assert "power 0.981" in pooled.output
    too_many = runner.invoke(app, ["study", "plan", "breakout_stress", "--strata", "4"])
    assert too_many.exit_code == 2
    assert too_many.output.count("\n") == 1 and "at most 3 strata" in too_many.output
    run = runner.invoke(app, ["study", "run", "catch_stress", "--results-dir", str(tmp_path)])
    assert run.exit_code == 2
    assert run.output.strip().splitlines() == [
        f"error: study 'catch_stress' is not registered in '{tmp_path}/study_catch_stress'; "
        "register it first: gradlab study register catch_stress"
    ]
    bad = runner.invoke(app, ["study", "plan", "nope"])
    studies = sorted(p.stem for p in (Path(CONF_DIR) / "study").glob("*.yaml"))
    assert {"catch_stress", "catch_pseudocode_stress"} <= set(studies)
    choices = f"choose one of: {', '.join(studies)}"
    assert bad.exit_code == 2 and f"unknown study 'nope'; {choices}" in bad.output
    assert not any(tmp_path.iterdir())


def test_manual_grid_helper_is_symmetric():
    grid = fisher_p_grid(6, 6)
    assert np.allclose(grid, grid.T)


def _summaries(folder: Path, variant: str, unstable: list[int], **fields) -> None:
    """Summaries as a study's sweep writes them (its overrides, its folder's name), with
    ``fields`` (e.g. ``started_at``) added."""
    for seed, u in enumerate(unstable, start=1000):
        job = folder / f"regime=stress__task=catch__variant={variant}__seed={seed}"
        job.mkdir(parents=True)
        summary = {
            **fields,
            "status": "diverged" if u else "completed",
            "job": job.name,
            "ablation": "study_catch_stress",
            "overrides": {
                "task": "catch",
                "regime": "stress",
                "seed": str(seed),
                "variant": variant,
            },  # fmt: skip
            "group": {"regime": "stress", "task": "catch", "variant": variant},
            "seed": seed,
            "task": "catch",
            "threshold": 0.9,
            # unstable runs diverged before learning (failed), the others learned and held
            "stability": {
                "unstable": u,
                "diverged": u,
                "diverged_step": 5 if u else None,
                "reached_threshold": 1 - u,
                "steps_to_threshold": None if u else 10,
                "final_return": -1.0 if u else 1.0,
            },
        }
        (job / "summary.json").write_text(json.dumps(summary))


def test_the_table_of_a_study_folder_tests_its_primary_contrast_alone(conf, tmp_path):
    results = tmp_path / "results"
    _edit(conf, "endpoint: failed", "endpoint: unstable")  # a rate whose definition is fixed
    # three arms of six seeds, every registered run written: a complete study, whose audit passes
    _edit(conf, "seeds: [1000, 1070]", "seeds: [1000, 1006]")
    for arm in ("stop_gradient}", "clipnorm, overrides", "global_clipnorm, overrides"):
        path = conf / "study" / "catch_stress.yaml"
        lines = path.read_text().splitlines()
        path.write_text("\n".join(x for x in lines if f"variant: {arm}" not in x) + "\n")
    study = load_study("catch_stress", conf)
    assert [a.variant for a in study.arms] == ["none", "scale_gradient", "maxnorm"]
    folder = register(study, config_dir=conf, results_dir=results).parent
    record = json.loads((folder / RECORD).read_text())
    identity = {  # the record pins code: each run carries its identity (study audit checks it)
        "schema": 3,
        "started_at": record["registered_at"],
        "ended_at": record["registered_at"],
        "code": record["code"],
        "config_sha256": "unchecked here",
        "record_sha256": hashlib.sha256((folder / RECORD).read_bytes()).hexdigest(),
    }
    # unstable: none 6/6, scale_gradient 0/6, maxnorm 0/6.
    # one config per arm (two arms' runs sharing a config and seed would be one run)
    for arm, unstable in (("none", 1), ("scale_gradient", 0), ("maxnorm", 0)):
        fields = {**identity, "config_sha256": f"config of {arm} (unchecked here)"}
        _summaries(folder, arm, [unstable] * 6, **fields)
    runner = CliRunner()
    declared = runner.invoke(app, ["table", str(folder), "-m", "unstable", "-f", "json"])
    assert declared.exit_code == 0, declared.output
    rows = {r["variant"]: r for r in json.loads(declared.stdout)["rows"]}
    # Fisher two-sided, 0/6 vs 6/6: p = 2 / C(12, 6) = 2/924. The primary contrast alone keeps
    # it (m = 1); maxnorm is exploratory, alone in its Holm family too (m = 1): the same p.
    assert rows["scale_gradient"]["unstable_p_adjusted"] == pytest.approx(2 / 924)
    assert rows["scale_gradient"]["unstable_confirmatory"] is True
    assert rows["maxnorm"]["unstable_confirmatory"] is False
    other = runner.invoke(app, ["table", str(folder), "-m", "unstable", "--rate-test", "barnard"])
    assert other.exit_code == 0
    assert "not study catch_stress's registered analysis" in other.stderr
    without = runner.invoke(app, ["table", str(folder), "-m", "diverged"])
    assert without.exit_code == 0 and "confirmatory" not in without.stdout, without.output
    marked = re.compile(r"\d\*\s*\|")  # a p cell marked confirmatory: "0.00216* |"
    assert not marked.search(other.stdout)
    assert "confirmatory" not in other.stdout.split("\n\n")[1]
    assert marked.search(runner.invoke(app, ["table", str(folder), "-m", "unstable"]).stdout)
    # the record edited after the runs (its alpha): the audit fails and the * is dropped
    path = folder / RECORD
    record = json.loads(path.read_text())
    record["design"]["primary"]["alpha"] = 0.1
    path.write_text(json.dumps(record))
    edited = runner.invoke(app, ["table", str(folder), "-m", "unstable"])
    assert edited.exit_code == 0 and not marked.search(edited.stdout), edited.output
    assert "study catch_stress's audit fails (record, record hash): no contrast is" in (
        edited.stderr
    )


def test_a_sweep_into_a_study_folder_refuses_a_changed_design(conf, tmp_path):
    results = tmp_path / "results"
    register(load_study("catch_stress", conf), config_dir=conf, results_dir=results)
    stress = conf / "regime" / "stress.yaml"
    stress.write_text(stress.read_text().replace("learning_rate: 0.03", "learning_rate: 0.02"))
    args = ["sweep", "ablation=study_catch_stress", "variant=none", "seed=1000",
            f"runtime.results_dir={results}", "--config-dir", str(conf), "--dry-run"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "no longer runs as registered: muzero.learning_rate=0.03 -> 0.02" in result.output
    assert sorted(p.name for p in (results / "study_catch_stress").iterdir()) == [RECORD]


def test_plan_from_a_pilot_folder(tmp_path):
    # Pilot in regime stress: none fails in 3 of 4 runs (0.75), scale_gradient in 0 of 4. Half
    # the difference (the default shrink): 0.75 vs 0.375. Runs of 10 s: 6 arms x 70 x 10 s / 2
    # at once = 2100 s = 0.6 h.
    pilot = tmp_path / "pilot"
    _summaries(pilot, "none", [1, 1, 1, 0])
    _summaries(pilot, "scale_gradient", [0, 0, 0, 0])
    for summary in pilot.glob("*/summary.json"):
        data = json.loads(summary.read_text())
        data["stability"]["wall_time_s"] = 10.0
        summary.write_text(json.dumps(data))
    result = CliRunner().invoke(app, ["study", "plan", "catch_stress", "--pilot", str(pilot)])
    assert result.exit_code == 0, result.output
    n = seeds_for_power(0.75, 0.375, power=0.9)
    assert "rates 0.75 vs 0.375" in result.output
    assert (
        f"power {fisher_power(0.75, 0.375, 70):.3f} with 70 runs per arm; {n} runs" in result.output
    )
    assert (
        "6 arms x 70 runs x 10 s (the pilot's median run) / 2 at once = about 0.6 h"
        in result.output
    )


def _registered(tmp_path: Path):
    """catch_stress registered under ``tmp_path/results``, and a Hydra launch that records each
    call (the process it ran in, its overrides) and runs nothing: the edge of the sweep service,
    so everything above it (the study's arms, the service's plan, counts and stop) is real."""
    results = tmp_path / "results"
    # registered from a copy of conf/ (the same files, so the same record) beside the results
    # folder: the repository's own runs used Study 1's seeds, and register refuses seen seeds
    conf = tmp_path / "conf"
    shutil.copytree(CONF_DIR, conf, ignore=shutil.ignore_patterns("__pycache__"))
    study = load_study("catch_stress", conf)
    # code_root: a folder outside git (this working tree may be mid-edit; the record's code
    # identity is not what these tests are about)
    register(study, config_dir=conf, results_dir=results, code_root=tmp_path)
    return study, results


def _recording_launch(monkeypatch, then=None) -> list[tuple[int, list[str]]]:
    from experiments.launch import hydra_app

    calls: list[tuple[int, list[str]]] = []

    def launch(overrides, **kwargs):
        calls.append((os.getpid(), list(overrides)))
        if then is not None:
            then()

    monkeypatch.setattr(hydra_app, "launch", launch)
    return calls


def test_study_run_sweeps_each_arm_through_the_sweep_service_in_this_process(tmp_path, monkeypatch):
    study, results = _registered(tmp_path)
    calls = _recording_launch(monkeypatch)
    args = ["study", "run", "catch_stress", "--results-dir", str(results), "--jobs", "1"]
    result = CliRunner().invoke(app, args)
    # every arm launched by this process (no child interpreter), primary contrast's arms first
    assert [pid for pid, _ in calls] == [os.getpid()] * len(study.arms), result.output
    variants = [next(o for o in overrides if o.startswith("variant=")) for _, overrides in calls]
    assert variants[:2] == ["variant=none", f"variant={study.primary.arm}"]
    assert sorted(variants) == sorted(f"variant={arm.variant}" for arm in study.arms)
    assert all("hydra/sweeper=planned" in overrides for _, overrides in calls)
    # nothing ran: each arm's sweep prints its counts (all unfinished) and the study exits 1
    n = len(study.seeds)
    line = f"{n} jobs: 0 completed, 0 diverged, 0 timeout, 0 failed, 0 skipped, {n} unfinished"
    assert result.output.count(line) == len(study.arms), result.output
    assert result.exit_code == 1


def test_study_run_and_calibrate_start_no_interpreter_of_their_own():
    # the code path: neither command imports subprocess nor names an interpreter or cli.main;
    # both reach the sweep service through cli._sweep.sweep_command, which no Typer command is,
    # and no command module imports another (issue 50 item 1)
    import ast

    import cli._sweep
    import cli.calibrate
    import cli.study

    for module in (cli.study, cli.calibrate):
        tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
        imported = {
            alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in node.names
        } | {
            node.module
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module
        }
        assert not imported & {"subprocess", "multiprocessing", "cli.main"}, module.__name__
        names = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        assert "executable" not in names and "Popen" not in names, module.__name__
        called = {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "cli._sweep"
            for alias in node.names
        }
        assert "sweep_command" in called, module.__name__
    assert not hasattr(cli._sweep.sweep_command, "__wrapped__")  # a function, not a command
    commands = ("bench", "calibrate", "explain", "export", "jobs", "pool", "report", "study")
    for name in commands:  # no command module imports another command module
        tree = ast.parse((Path(cli._sweep.__file__).parent / f"{name}.py").read_text())
        imported = {node.module for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and node.module}  # fmt: skip
        imported |= {a.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                     for a in node.names}  # fmt: skip
        assert not imported & {f"cli.{c}" for c in commands}, name


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_signal_to_study_run_stops_its_arm_and_the_study(tmp_path, monkeypatch, sig):
    # A signal to the study's process alone (kill -INT pid) is a stop request to the arm being
    # swept (once: a second would kill its jobs at once): the jobs a stop leaves "running" are
    # recorded interrupted, the stop's one line, exit 128 + signal, no later arm.
    from experiments.jobs import store
    from experiments.jobs.process import lifetime
    from experiments.launch import plan

    study, results = _registered(tmp_path)
    first = plan.plan(
        study.sweep_overrides(study.arms[0], results), multirun=True, config_dir=CONF_DIR
    )[0]

    def killed_mid_run():  # as a job killed while it ran leaves its folder, then the signal
        store.write_json_atomic(
            first.job_dir / "summary.json", {"status": "running", "job": first.name, "steps": 0}
        )
        with store.MetricsWriter(first.job_dir / "metrics.jsonl") as writer:
            for step in (1, 2):
                writer.append({"step": step})
        os.kill(os.getpid(), sig)
        deadline = time.monotonic() + 10
        while not lifetime.stop_requested() and time.monotonic() < deadline:
            time.sleep(0.01)

    calls = _recording_launch(monkeypatch, then=killed_mid_run)
    before = signal.getsignal(sig)
    args = ["study", "run", "catch_stress", "--results-dir", str(results), "--jobs", "1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 128 + sig, result.output
    assert len(calls) == 1 and calls[0][0] == os.getpid()
    head = "interrupted" if sig == signal.SIGINT else "interrupted by SIGTERM"
    n = len(study.seeds)
    stopped = [line for line in result.output.splitlines() if line.startswith("interrupted")]
    assert stopped == [
        f"{head}: 0 of {n} jobs completed, 1 interrupted, {n - 1} not started; "
        "the same command resumes them"
    ]
    summary = store.read_summary(first.job_dir)
    assert summary.status == "interrupted" and summary.steps == 2
    assert summary.error == f"stopped by {signal.Signals(sig).name} before its next step"
    assert signal.getsignal(sig) == before  # the service's handlers put back
