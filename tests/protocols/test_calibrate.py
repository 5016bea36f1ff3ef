"""Tests of `gradlab calibrate`: ladders (experiments/protocols/calibration/ladder.py), seed lists
(experiments/protocols/seeds.py), counts, rule and record
(experiments/protocols/calibration/record.py), the protocol
(experiments/protocols/calibration/calibrate.py) and the command (cli/calibrate.py) on the stand-in
job. The real calibration is not a test (docs/calibration.md gives its command and counts)."""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib

import _standin_job as standin
import pytest
import yaml
from conftest import compose_config

from experiments.base.errors import ConfigError
from experiments.config import to_run_config
from experiments.jobs import store
from experiments.jobs.summary import Summary
from experiments.muzero.config import MuZeroConfig
from experiments.protocols.calibration.calibrate import prepare, run_calibration
from experiments.protocols.calibration.ladder import Ladder, Rung, load_ladder, rung_settings
from experiments.protocols.calibration.record import (
    CalibrationRecord,
    RungCounts,
    RungRecord,
    cannot_meet,
    check_rule,
    count_rung,
    decide_after,
    meets_rule,
    preset_text,
    record_markdown,
)
from experiments.protocols.seeds import check_disjoint, parse_seeds, preset_seeds

CONF = pathlib.Path(__file__).resolve().parents[2] / "conf"

STANDIN_LADDER = """\
# a stand-in ladder: the first rung changes nothing that matters, the second goes NaN at step 2
rungs:
  - name: heavier
    times: {muzero.base_loss: 2}
  - name: nan
    overrides: [muzero.nan_at=2]
"""


# ---------------------------------------------------------------------------------------------
# ladders


def test_rungs_accumulate_and_times_multiply_the_base_not_the_rung_before():
    ladder = Ladder(
        "t",
        "",
        (
            Rung("a", overrides=("x.k=10", "x.norm=none")),
            Rung("b", times=(("x.lr", 2.0),)),
            Rung("c", times=(("x.lr", 3.0),), overrides=("x.k=12",)),
        ),
    )
    base = {"x.lr": 0.01}
    assert rung_settings(ladder, 0, base) == {"x.k": "10", "x.norm": "none"}
    assert rung_settings(ladder, 1, base) == {"x.k": "10", "x.norm": "none", "x.lr": "0.02"}
    # 0.01 * 3 = 0.030000000000000002 in floating point; rounded to 12 digits: 0.03, not 0.06
    # (x3 of the base, not of rung b's 0.02); x.k given again replaces 10
    assert rung_settings(ladder, 2, base) == {"x.norm": "none", "x.k": "12", "x.lr": "0.03"}


def test_times_of_a_value_that_is_not_a_number_is_refused():
    ladder = Ladder("t", "", (Rung("a", times=(("x.mode", 2.0),)),))
    with pytest.raises(ConfigError, match="multiplies x.mode, whose base value is 'none'"):
        rung_settings(ladder, 0, {"x.mode": "none"})


def test_default_ladder_rederives_todays_catch_stress_regime():
    cal = prepare(["task=catch"], config_dir=CONF)
    assert [r.name for r in cal.ladder.rungs][:3] == ["long_unroll_no_norm", "lr_x2", "lr_x3"]
    # docs/stress_calibration.md's ladder 1-3 on Catch's Adam at 0.01: 0.02 (x2), 0.03 (x3)
    assert cal.settings[1]["muzero.learning_rate"] == "0.02"
    assert cal.settings[2] == {
        "muzero.unroll_steps": "10",
        "muzero.network.normalisation": "none",
        "muzero.learning_rate": "0.03",
    }
    text = preset_text(cal.settings[2], header=["x"], base=cal.base_settings)
    stress = yaml.safe_load((CONF / "regime" / "stress.yaml").read_text())
    assert yaml.safe_load(text) == stress
    assert cal.seeds == tuple(range(100, 110)) and cal.rule == 0.4
    assert len(cal.jobs[2]) == 10 and not any(j.job_dir.exists() for j in cal.jobs[2])
    # and rung 3's runs are regime=stress's runs: the same config, field for field
    rung3 = [o for o in cal.sweep_overrides(2) if o.startswith(("task=", "regime=", "muzero."))]
    stress_run = compose_config(CONF, ["task=catch", "regime=stress"], schema=MuZeroConfig)
    rung3_run = compose_config(CONF, rung3, schema=MuZeroConfig)
    assert to_run_config(rung3_run) == to_run_config(stress_run)


def test_default_ladder_is_relative_to_the_task():
    cal = prepare(["task=cartpole"], config_dir=CONF)
    # CartPole's preset: Adam at 0.005; x3 = 0.015; rung 5 (after rewards x10): x5 = 0.025
    assert cal.settings[2]["muzero.learning_rate"] == "0.015"
    assert cal.settings[4]["muzero.learning_rate"] == "0.025"
    assert cal.settings[4]["task.reward_scale"] == "10.0"


def test_harsh_ladder_continues_the_default_ladder_where_it_ran_out():
    default = prepare(["task=breakout"], config_dir=CONF)
    harsh = prepare(["task=breakout", "ladder=harsh"], config_dir=CONF)
    # rung 1: the default ladder's last rung (MinAtar's Adam at 0.001, x5 = 0.005) at x10
    assert harsh.settings[0] == {**default.settings[-1], "muzero.learning_rate": "0.01"}
    assert [s["muzero.learning_rate"] for s in harsh.settings] == ["0.01", "0.02", "0.05"]
    assert all(s["task.reward_scale"] == "10.0" for s in harsh.settings)
    # its own folder and preset: the default ladder's record is never overwritten
    assert harsh.name == "breakout_harsh" and default.name == "breakout"
    assert harsh.folder.parent.name == "breakout_harsh"
    assert harsh.regime == "calibrated/breakout_harsh"
    cartpole = prepare(["task=cartpole", "ladder=harsh"], config_dir=CONF)
    # CartPole's Adam at 0.005: x10, x20, x50
    assert [s["muzero.learning_rate"] for s in cartpole.settings] == ["0.05", "0.1", "0.25"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rungs: []\n", "has no rungs"),
        ("steps: 1\n", "needs a list 'rungs'"),
        ("rungs:\n  - {name: a}\n", "rung 'a' changes nothing"),
        ("rungs:\n  - {overrides: [a=1]}\n", "rung 1 needs a name"),
        ("rungs:\n  - {name: a, times: {x: -2}}\n", "times x=-2; expected a finite number > 0"),
        ("rungs:\n  - {name: a, overrides: [a1]}\n", "overrides must be a list of key=value"),
        ("rungs:\n  - {name: a, overrides: [a=1]}\n  - {name: a, overrides: [a=2]}\n", "differ"),
        ("rungs:\n  - {name: a, over: [a=1]}\n", "must be a mapping of name, overrides"),
    ],
)
def test_malformed_ladders_are_one_line(tmp_path, text, message):
    (tmp_path / "ladder").mkdir()
    (tmp_path / "ladder" / "bad.yaml").write_text(text)
    with pytest.raises(ConfigError, match=message) as err:
        load_ladder(tmp_path, "bad")
    assert "\n" not in str(err.value)


def test_unknown_ladder_names_the_choices():
    choices = "default, faithful, harsh"
    with pytest.raises(ConfigError, match=rf"^unknown ladder 'nope'; choose one of: {choices}$"):
        load_ladder(CONF, "nope")


# ---------------------------------------------------------------------------------------------
# seeds


@pytest.mark.parametrize(
    ("spec", "seeds"),
    [
        ("100-109", tuple(range(100, 110))),
        ("100-100", (100,)),
        ("range(3,5)", (3, 4)),
        ("range(5)", (0, 1, 2, 3, 4)),
        ("7,3,7", (7, 3)),
        ([1, 2], (1, 2)),
    ],
)
def test_seed_lists(spec, seeds):
    assert parse_seeds(spec) == seeds


@pytest.mark.parametrize("spec", ["5-3", "a-b", "1.5", "-3", "", "range(4,4)", [1, -1]])
def test_bad_seed_lists_are_refused(spec):
    with pytest.raises(ConfigError, match="seeds"):
        parse_seeds(spec)


def test_overlap_with_a_study_is_refused_naming_it():
    check_disjoint((100, 101), {"study/s": tuple(range(5))})
    with pytest.raises(ConfigError) as err:
        check_disjoint(tuple(range(100, 110)), {"study/s": (0, 1), "--study-seeds": (105, 120)})
    assert str(err.value) == (
        "calibration seeds 100-109 overlap the seeds of --study-seeds (105,120) at 105; choose "
        "seeds outside every study's, e.g. --seeds 100-109"
    )


def test_study_and_ablation_presets_declare_seeds():
    seeds = preset_seeds(CONF, skip=["calibration"])
    assert seeds["ablation/hidden_scale"] == (0, 1, 2, 3, 4)
    assert "ablation/calibration" not in seeds
    if (CONF / "study" / "catch_stress.yaml").is_file():
        assert seeds["study/catch_stress"] == tuple(range(1000, 1070))


# ---------------------------------------------------------------------------------------------
# counts and the rule


def _summary(status="completed", *, diverged=0, collapsed=0, reached=1):
    unstable = 1 if diverged else collapsed
    return Summary(
        status=status,
        stability={
            "diverged": diverged,
            "collapsed": collapsed,
            "unstable": unstable,
            "reached_threshold": reached,
        },
    )


def test_counts_by_hand():
    summaries = [
        _summary(diverged=1, collapsed=1, reached=0),  # diverged (its collapse not counted again)
        _summary("diverged", diverged=1, collapsed=None, reached=1),
        _summary(collapsed=1, reached=1),
        _summary(reached=0),  # stable, never learned
        _summary(collapsed=None, reached=0),  # no evaluation: undetermined
        _summary("failed"),  # not finished
        None,  # never ran
    ]
    summaries[4].stability["unstable"] = None
    counts = count_rung(summaries, has_threshold=True)
    # unstable = 2 diverged + 1 collapsed; never learned among the 5 finished: runs 0, 3, 4
    assert counts == RungCounts(
        runs=7, finished=5, unstable=3, diverged=2, collapsed=1, never_learned=3, undetermined=1
    )
    assert count_rung(summaries, has_threshold=False).never_learned is None


def test_grad_norm_median_is_the_median_of_the_runs_medians():
    summaries = [_summary(), _summary("diverged", diverged=1), _summary(), _summary(), None]
    for s, norm in zip(summaries, [0.5, 9.0, 0.7, float("nan")], strict=False):
        s.stability["grad_norm_median"] = norm
    # finished runs with a finite value: 0.5, 9.0, 0.7 -> median 0.7 (the NaN run left out)
    assert count_rung(summaries, has_threshold=True).grad_norm_median == 0.7
    assert count_rung([_summary()], has_threshold=True).grad_norm_median is None
    # rule (e): the diverged run (9.0) left out as well -> median of 0.5, 0.7 = 0.6
    assert count_rung(summaries, has_threshold=True).grad_norm_median_not_diverged == 0.6
    # a collapsed run did not diverge: it stays in -> median of 0.5, 0.7, 0.8 = 0.7
    collapsed = _summary(collapsed=1)
    collapsed.stability["grad_norm_median"] = 0.8
    with_collapse = count_rung([*summaries, collapsed], has_threshold=True)
    assert with_collapse.grad_norm_median_not_diverged == 0.7
    only_diverged = summaries[1:2]
    assert count_rung(only_diverged, has_threshold=True).grad_norm_median_not_diverged is None


@pytest.mark.parametrize(
    ("folder", "jobs", "unstable", "all_runs", "not_diverged"),
    [
        # Study 1's clip threshold, 0.602 (docs/studies.md), from the stress calibration's runs
        ("results/findings/calibration/catch_stress/learning", "*", 6, 0.602355, 0.688183),
        # Study 2's, 0.3997 (conf/study/catch_pseudocode_stress.yaml)
        ("results/findings/catch_pseudocode/calibration", "*", 8, 0.399658, 0.377367),
        # CartPole's threshold by amendment (e), 203.3 (docs/studies.md), and Study 1's 5.8e6
        ("results/findings/cartpole_harsh/calibration", "muzero.learning_rate=0.1__*", 5,
         5.83562e6, 203.288),
        # Breakout's registered 113 (Study 1's rule); amendment (e) notes 14.9 by its rule
        ("results/findings/breakout_harsh/calibration", "muzero.learning_rate=0.05__*", 9,
         112.806, 14.8498),
        # Space Invaders' registered 2.46 by amendment (g) (rule (e)); Study 1's rule gives 4.86
        ("results/findings/space_invaders_harsh/calibration", "muzero.learning_rate=0.05__*", 6,
         4.86049, 2.46297),
    ],
)  # fmt: skip
def test_committed_calibrations_give_the_studies_clip_thresholds(
    folder, jobs, unstable, all_runs, not_diverged
):
    # a rung's runs: the folder's (one rung), or those of one learning rate (a ladder's rung);
    # both rules' medians recomputed by hand from the summaries, to 6 significant figures
    root = pathlib.Path(__file__).resolve().parents[2] / folder
    found = sorted(p for p in root.glob(jobs) if (p / "summary.json").exists())
    counts = count_rung([store.read_summary(j) for j in found], has_threshold=True)
    assert (counts.runs, counts.unstable) == (10, unstable)
    assert counts.grad_norm_median == pytest.approx(all_runs, rel=1e-5)
    assert counts.grad_norm_median_not_diverged == pytest.approx(not_diverged, rel=1e-5)


def test_record_markdown_shows_the_median_grad_norm():
    counts = RungCounts(10, 10, 4, 4, 0, None, 0, grad_norm_median=0.60235)
    rung = RungRecord("r", {"a": "1"}, counts, meets_rule=False, jobs=())
    record = CalibrationRecord(
        task="t", ladder="l", ladder_description="", base_regime="tuned", rule=0.4,
        seeds=(100, 109), extra_overrides=(), command="gradlab calibrate task=t",
        rungs=(rung,), status="exhausted",
    )  # fmt: skip
    text = record_markdown(record)
    assert "| median grad norm | not diverged |" in text
    # finished, then 4 significant figures; rule (e)'s median not counted: n/a
    assert "| 10/10 | 0.6024 | n/a |" in text
    counts = dataclasses.replace(counts, grad_norm_median_not_diverged=2.5)
    record = dataclasses.replace(record, rungs=(dataclasses.replace(rung, counts=counts),))
    assert "| 10/10 | 0.6024 | 2.5 |" in record_markdown(record)


def test_rule_is_exact_at_the_boundary():
    def counts(unstable, runs=10):
        return RungCounts(runs, runs, unstable, unstable, 0, None, 0)

    # 0.3 * 10 = 3.0000000000000004 in floating point: 3 of 10 must still meet 0.3
    assert meets_rule(counts(3), 0.3) and not meets_rule(counts(2), 0.3)
    assert meets_rule(counts(4), 0.4) and not meets_rule(counts(3), 0.4)
    assert meets_rule(counts(0), 0.0) and not meets_rule(counts(9), 1.0)
    assert not meets_rule(counts(0, runs=0), 0.0)


@pytest.mark.parametrize("rule", [-0.1, 1.5, float("nan"), True, "1.01", "nan"])
def test_rule_outside_0_1_is_refused(rule):
    with pytest.raises(ConfigError, match="is out of range; expected a fraction in \\[0, 1\\]"):
        check_rule(rule)


def test_rule_text_is_read_as_a_number():
    assert check_rule("0.4") == 0.4 and check_rule("1") == 1.0 and check_rule(0) == 0.0


# ---------------------------------------------------------------------------------------------
# the protocol, with a run_sweep that writes the runs' summaries (the edge of the unit)


@pytest.fixture
def conf(standin_env):
    conf = pathlib.Path(standin_env.conf)
    (conf / "ladder" / "standin.yaml").write_text(STANDIN_LADDER)
    # the stand-in ladder as the default too: a default-ladder calibration's folder is the task's
    (conf / "ladder" / "default.yaml").write_text(STANDIN_LADDER)
    return conf


def _writer(cal, verdicts):
    """A run_sweep that writes, for rung i, summaries with ``verdicts[i]`` per seed."""
    calls = []

    def run_sweep(overrides):
        index = len(calls)
        calls.append(overrides)
        for job, summary in zip(cal.jobs[index], verdicts[index], strict=True):
            if summary is not None:
                job.job_dir.mkdir(parents=True, exist_ok=True)
                store.write_summary(job.job_dir, summary)

    return run_sweep, calls


def _prepare(conf, tmp_path, *more, seeds="100-104"):
    args = ["task=catch", "logger=none", f"runtime.results_dir={tmp_path}/r"]
    return prepare([*args, *more], seeds=seeds, config_dir=conf, job=standin.JOB)


def test_stops_at_the_first_rung_meeting_the_rule(conf, tmp_path):
    cal = _prepare(conf, tmp_path)
    stable, bad = _summary(), _summary("diverged", diverged=1)
    run_sweep, calls = _writer(cal, [[stable] * 5, [bad, bad, stable, stable, stable]])
    outcome = run_calibration(cal, run_sweep, echo=lambda line: None)
    assert outcome.status == "chosen" and len(calls) == 2  # 2/5 = 0.4 >= 0.4
    assert calls[1][:3] == ["ablation=calibration", "task=catch", "regime=tuned"]
    assert "muzero.nan_at=2" in calls[1] and "seed=100,101,102,103,104" in calls[1]
    record = json.loads((cal.folder / "calibration.json").read_text())
    assert record["status"] == "chosen" and record["chosen_rung"] == 2
    assert record["regime"] == "calibrated/catch"
    assert [r["counts"]["unstable"] for r in record["rungs"]] == [0, 2]
    assert [r["counts"]["diverged"] for r in record["rungs"]] == [0, 2]
    preset = yaml.safe_load((conf / "regime" / "calibrated" / "catch.yaml").read_text())
    # 1.0 x 2 on the first rung, NaN at 2 on the second; logger=none is bookkeeping, left out
    assert preset == {"muzero": {"base_loss": 2.0, "nan_at": 2}}
    assert (cal.folder / "regime.yaml").read_text() == (
        conf / "regime" / "calibrated" / "catch.yaml"
    ).read_text()
    assert record["command"].endswith(f"--seeds 100-104 --rule 0.4 --config-dir {conf}")
    md = (cal.folder / "calibration.md").read_text()
    assert "| 2 nan | `muzero.base_loss=2.0` `muzero.nan_at=2` | **2/5** | 2 | 0 | 0 | 5/5 |" in md


def test_out_of_rungs_writes_the_record_and_no_regime(conf, tmp_path):
    cal = _prepare(conf, tmp_path)
    stable = _summary()
    one = _summary("diverged", diverged=1)
    run_sweep, calls = _writer(cal, [[stable] * 5, [one] + [stable] * 4])  # 1/5 < 0.4

    def sweep_and_look(overrides):  # the record after rung 1, before rung 2 runs
        if calls:
            record = json.loads((cal.folder / "calibration.json").read_text())
            assert record["status"] == "running" and len(record["rungs"]) == 1
            md = (cal.folder / "calibration.md").read_text()
            assert "Running: 1 rung(s) done, none meeting the rule so far." in md
        run_sweep(overrides)

    outcome = run_calibration(cal, sweep_and_look, echo=lambda line: None)
    assert outcome.status == "exhausted" and len(calls) == 2
    record = json.loads((cal.folder / "calibration.json").read_text())
    assert record["status"] == "exhausted" and record["regime"] is None
    assert not (conf / "regime" / "calibrated").exists()
    assert (
        "the ladder ran out of rungs, and no regime was written"
        in (cal.folder / "calibration.md").read_text()
    )


def test_unfinished_runs_stop_the_calibration_undecided(conf, tmp_path):
    cal = _prepare(conf, tmp_path)
    bad = _summary("diverged", diverged=1)
    run_sweep, calls = _writer(cal, [[bad, bad, bad, _summary("failed"), None]])
    outcome = run_calibration(cal, run_sweep, echo=lambda line: None)
    assert outcome.status == "incomplete" and len(calls) == 1  # 3/5 unstable, 2 not finished
    assert not (conf / "regime" / "calibrated").exists()


@pytest.mark.parametrize(
    ("runs", "rule", "batch", "first"),
    [
        (10, 0.4, 2, 8),  # need 4: 7 stable rule it out, rounded up to whole pairs
        (10, 0.4, 1, 7),
        (10, 0.4, 3, 9),
        (10, 0.3, 2, 8),  # need 3: 8 stable
        (10, 1.0, 2, 2),  # need all 10: one stable run rules it out
        (10, 0.0, 2, 10),  # every rung meets rule 0: nothing to decide early
        (5, 0.4, 2, 4),
        (10, 0.4, 16, 10),  # a batch larger than the rung: all at once
    ],
)
def test_decide_after_by_hand(runs, rule, batch, first):
    assert decide_after(runs, rule, batch) == first


def test_cannot_meet_by_hand():
    def counts(unstable, finished, runs=10):
        return RungCounts(runs, finished, unstable, unstable, 0, None, 0)

    assert cannot_meet(counts(1, 8), 0.4)  # at best 1 + 2 = 3 of 10 < 4
    assert not cannot_meet(counts(2, 8), 0.4)  # 2 + 2 = 4 of 10 still possible
    assert not cannot_meet(counts(0, 7), 0.3)  # 0 + 3 = 3 of 10 meets 0.3 exactly
    assert cannot_meet(counts(0, 8), 0.3)


def _seed_writer(cal, verdicts):
    """A run_sweep that writes, for the rung its overrides name, the summaries of the seeds they
    name (``verdicts[i][j]``: rung i, seed j)."""
    calls = []

    def run_sweep(overrides):
        calls.append(overrides)
        settings = [o for o in overrides if o.startswith("muzero.")]
        index = next(i for i, s in enumerate(cal.settings)
                     if sorted(f"{k}={v}" for k, v in s.items()) == sorted(settings))  # fmt: skip
        seeds = next(o for o in overrides if o.startswith("seed=")).removeprefix("seed=")
        for j, seed in enumerate(cal.seeds):
            if str(seed) in seeds.split(","):
                job = cal.jobs[index][j]
                job.job_dir.mkdir(parents=True, exist_ok=True)
                store.write_summary(job.job_dir, verdicts[index][j])

    return run_sweep, calls


def test_a_rung_that_cannot_meet_the_rule_stops_after_whole_batches(conf, tmp_path):
    cal = _prepare(conf, tmp_path)  # 5 seeds, rule 0.4: 2 unstable needed
    stable, bad = _summary(), _summary("diverged", diverged=1)
    verdicts = [[stable] * 5, [bad, bad, stable, stable, stable]]
    run_sweep, calls = _seed_writer(cal, verdicts)
    lines = []
    outcome = run_calibration(cal, run_sweep, echo=lines.append, batch=2)
    # rung 1: 4 seeds (two pairs), all stable: at best 0 + 1 of 5 < 0.4, so seed 104 never runs;
    # rung 2: its first 4 hold 2 unstable, so all 5 run and it is chosen
    assert [c[-2] for c in calls] == [
        "seed=100,101,102,103",
        "seed=100,101,102,103",
        "seed=100,101,102,103,104",
    ]
    assert outcome.status == "chosen" and outcome.record.chosen_rung == 2
    first, second = outcome.record.rungs
    assert first.stopped_early and not first.meets_rule
    assert (first.counts.finished, first.counts.unstable) == (4, 0)
    assert not second.stopped_early and second.counts.finished == 5
    assert "stopped_early" not in outcome.record.to_json()["rungs"][1]
    assert not cal.jobs[0][4].job_dir.exists()
    assert any("the other 1 could not make it 0.4 of 5: stopped there" in x for x in lines)
    md = (cal.folder / "calibration.md").read_text()
    assert "| 0/5 | 0 | 0 | 0 | 4/5 (stopped: cannot meet the rule) |" in md
    # without batch: every seed of every rung in one sweep (as before)
    cal2 = _prepare(conf, tmp_path / "again")
    run_sweep, calls = _seed_writer(cal2, verdicts)
    assert run_calibration(cal2, run_sweep, echo=lambda line: None).status == "chosen"
    assert [c[-2] for c in calls] == ["seed=100,101,102,103,104"] * 2


def test_early_decision_keeps_finished_rungs_whole_and_stops_on_unfinished_runs(conf, tmp_path):
    stable, bad = _summary(), _summary("diverged", diverged=1)
    # a resumed calibration whose first rung ran every seed: counted whole, not "stopped early"
    cal = _prepare(conf, tmp_path)
    for job in cal.jobs[0]:
        job.job_dir.mkdir(parents=True)
        store.write_summary(job.job_dir, stable)
    run_sweep, calls = _seed_writer(cal, [[stable] * 5, [bad] * 5])
    outcome = run_calibration(cal, run_sweep, echo=lambda line: None, batch=2)
    first = outcome.record.rungs[0]
    assert not first.stopped_early and first.counts.finished == 5
    assert outcome.status == "chosen"
    # a first chunk that does not finish (stopped, failed): incomplete, the rest never started
    cal = _prepare(conf, tmp_path / "stopped")
    run_sweep, calls = _seed_writer(cal, [[stable, _summary("interrupted")] + [stable] * 3])
    outcome = run_calibration(cal, run_sweep, echo=lambda line: None, batch=2)
    assert outcome.status == "incomplete" and len(calls) == 1
    assert outcome.record.status == "incomplete"


def test_a_different_existing_preset_is_kept(conf, tmp_path):
    old = conf / "regime" / "calibrated" / "catch.yaml"
    old.parent.mkdir(parents=True)
    old.write_text("# @package _global_\nmuzero:\n  base_loss: 9.0\n")
    cal = _prepare(conf, tmp_path)
    bad = _summary("diverged", diverged=1)
    run_sweep, _ = _writer(cal, [[bad] * 5])
    outcome = run_calibration(cal, run_sweep, echo=lambda line: None)
    assert outcome.status == "chosen" and outcome.preset_kept
    assert "9.0" in old.read_text()
    assert yaml.safe_load((cal.folder / "regime.yaml").read_text()) == {
        "muzero": {"base_loss": 2.0}
    }


# ---------------------------------------------------------------------------------------------
# the command


def _calibrate(standin_env, conf, *args):
    res = standin_env.res
    common = ["calibrate", "task=catch", "logger=none", f"runtime.results_dir={res}"]
    return standin_env.invoke([*common, *args, "--config-dir", conf])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["ladder=nope"],
            "unknown ladder 'nope'; choose one of: badkey, badtimes, default, faithful, harsh, "
            "standin",
        ),
        (["task=pong"], "unknown task 'pong'; choose one of: asterix, breakout, cartpole, catch"),
        (["--seeds", "1000-1009"], "overlap the seeds of study/catch_stress"),
        (["--seeds", "0-9"], "overlap the seeds of ablation/"),
        (["--study-seeds", "100-200"], "overlap the seeds of --study-seeds (100-200)"),
        (["--rule", "1.5"], "--rule 1.5 is out of range; expected a fraction in [0, 1]"),
        (["--rule", "-0.5"], "--rule -0.5 is out of range"),
        (["--rule", "most"], "--rule 'most' is not a number; expected a fraction in [0, 1]"),
        (["regime=nope"], "unknown regime 'nope'; choose one of: "),
        (["variant=clipnorm"], "'variant=clipnorm' cannot be given"),
        (["--seeds", "9-1"], "--seeds '9-1' is empty"),
        (["ladder=badkey"], "muzero.no_such_key"),
        (["ladder=badtimes"], "the ladder multiplies muzero.gone, which the config does not set"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(standin_env, conf, args, message):
    (conf / "ladder" / "badkey.yaml").write_text(
        "rungs:\n  - {name: a, overrides: [muzero.no_such_key=1]}\n"
    )
    (conf / "ladder" / "badtimes.yaml").write_text(
        "rungs:\n  - {name: a, times: {muzero.gone: 2}}\n"
    )
    if "--seeds" in args and args[1] == "1000-1009" and not (conf / "study").is_dir():
        pytest.skip("no study preset in this config folder")
    before = sorted(p.relative_to(conf) for p in conf.rglob("*"))
    result = _calibrate(standin_env, conf, *args)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines
    assert not standin_env.res.exists()
    assert sorted(p.relative_to(conf) for p in conf.rglob("*")) == before


def test_task_is_required(standin_env, conf):
    result = standin_env.invoke(["calibrate", "--config-dir", conf])
    assert result.exit_code == 2
    assert "gradlab calibrate needs task=NAME; choose one of: asterix" in result.output


def test_help_says_what_it_writes(standin_env):
    result = standin_env.invoke(["calibrate", "--help"])
    assert result.exit_code == 0
    for text in ("--rule", "--seeds", "--study-seeds", "calibrated/TASK", "Examples"):
        assert text in result.output


def test_calibrate_end_to_end_and_resume(standin_env, conf, monkeypatch):
    # Real stand-in sweeps, 1 seed: rung 1 completes (0/1 unstable), rung 2 goes NaN (1/1).
    # Each rung is one run of the sweep service, in this process (watched, not replaced).
    from experiments.launch import sweep as service

    ran, real = [], service.run_sweep

    def watched(plan, **kwargs):
        ran.append((os.getpid(), plan.request.overrides))
        return real(plan, **kwargs)

    monkeypatch.setattr(service, "run_sweep", watched)
    args = ["--seeds", "100-100", "--jobs", "1"]
    result = _calibrate(standin_env, conf, *args)
    assert result.exit_code == 0, result.output
    assert [pid for pid, _ in ran] == [os.getpid()] * 2
    assert all("ablation=calibration" in overrides for _, overrides in ran)
    assert result.output.count("1 jobs: 1 completed, 0 diverged") == 1  # rung 1, as sweep prints
    assert result.output.count("1 jobs: 0 completed, 1 diverged") == 1  # rung 2
    assert "rung 1/2 heavier: unstable 0/1" in result.output
    assert "rung 2/2 nan: unstable 1/1 (diverged 1, collapsed 0, never learned 1)" in result.output
    assert "regime=calibrated/catch" in result.output
    folder = standin_env.res / "catch" / "calibration"
    record = json.loads((folder / "calibration.json").read_text())
    assert record["status"] == "chosen" and record["chosen_rung"] == 2
    median = record["rungs"][1]["counts"]["grad_norm_median"]
    clip = "clip threshold by Study 1's rule (median gradient norm of the chosen rung's runs)"
    assert (clip in result.output) == (median is not None)
    if median is not None:
        assert f"{clip}: {median:.4g}" in result.output
    stable = record["rungs"][1]["counts"]["grad_norm_median_not_diverged"]
    assert stable is None  # rung 2's one run diverged: rule (e) has no run to take
    assert "by rule (e)" not in result.output.split("rung 2/2")[-1]
    again = _calibrate(standin_env, conf, *args)  # resumes: every run is skipped
    assert again.exit_code == 0, again.output
    assert again.output.count("1 skipped") == 2
    assert json.loads((folder / "calibration.json").read_text())["rungs"] == record["rungs"]


def test_an_exhausted_calibration_says_so_with_the_last_rungs_clip_threshold(standin_env, conf):
    (conf / "ladder" / "mild.yaml").write_text(
        "rungs:\n  - name: heavier\n    times: {muzero.base_loss: 2}\n"
    )
    result = _calibrate(standin_env, conf, "ladder=mild", "--seeds", "100-100", "--jobs", "1")
    assert result.exit_code == 0, result.output
    assert "no rung met the rule (>= 0.4 of 1 seeds unstable)" in result.output
    assert "no regime written" in result.output
    assert "a harsher ladder (e.g. ladder=harsh) is a new calibration" in result.output
    folder = standin_env.res / "catch_mild" / "calibration"
    record = json.loads((folder / "calibration.json").read_text())
    assert record["status"] == "exhausted"
    median = record["rungs"][-1]["counts"]["grad_norm_median"]
    assert median is not None  # a finished, finite run has gradient norms
    assert f"median gradient norm of the last rung's runs): {median:.4g}" in result.output
    stable = record["rungs"][-1]["counts"]["grad_norm_median_not_diverged"]
    assert stable == median  # its one run did not diverge: both rules take the same run
    rule_e = "by rule (e) (median gradient norm of the last rung's runs that did not diverge)"
    assert f"{rule_e}: {stable:.4g}" in result.output


def test_a_non_default_base_regime_gets_its_own_folder_and_preset(conf, tmp_path):
    # calibrating Catch on regime=pseudocode must not share Catch's (tuned) record or preset
    tuned = _prepare(conf, tmp_path)
    other = _prepare(conf, tmp_path, "regime=pseudocode")
    assert tuned.name == "catch" and other.name == "catch_pseudocode"
    assert tuned.folder == tmp_path / "r" / "catch" / "calibration"
    assert other.folder == tmp_path / "r" / "catch_pseudocode" / "calibration"
    assert other.regime == "calibrated/catch_pseudocode"
    assert other.preset_path == conf / "regime" / "calibrated" / "catch_pseudocode.yaml"
    # the runs go where the record goes: every rung's jobs in the folder of their own
    assert all(j.job_dir.parent == other.folder for rung in other.jobs for j in rung)
    assert all(j.job_dir.parent == tuned.folder for rung in tuned.jobs for j in rung)
    stable, bad = _summary(), _summary("diverged", diverged=1)
    run_sweep, calls = _writer(other, [[stable] * 5, [bad, bad, stable, stable, stable]])
    assert run_calibration(other, run_sweep, echo=lambda line: None).status == "chosen"
    assert calls[0][:3] == ["ablation=calibration", "task=catch", "regime=pseudocode"]
    assert (conf / "regime" / "calibrated" / "catch_pseudocode.yaml").is_file()
    assert not (conf / "regime" / "calibrated" / "catch.yaml").exists()


def test_a_non_default_ladder_gets_its_own_folder_record_and_preset(conf, tmp_path):
    # a second ladder on a task (Study 3's harsh ladder after the default one ran out) must not
    # overwrite the default ladder's record or preset
    default = _prepare(conf, tmp_path)
    other = _prepare(conf, tmp_path, "ladder=standin")
    both = _prepare(conf, tmp_path, "ladder=standin", "regime=pseudocode")
    assert default.name == "catch" and other.name == "catch_standin"
    assert both.name == "catch_pseudocode_standin"
    assert other.folder == tmp_path / "r" / "catch_standin" / "calibration"
    assert other.regime == "calibrated/catch_standin"
    assert other.preset_path == conf / "regime" / "calibrated" / "catch_standin.yaml"
    assert all(j.job_dir.parent == other.folder for rung in other.jobs for j in rung)
    assert "ladder=standin" in other.command()
    stable, bad = _summary(), _summary("diverged", diverged=1)
    run_sweep, _ = _writer(other, [[stable] * 5, [bad, bad, stable, stable, stable]])
    assert run_calibration(other, run_sweep, echo=lambda line: None).status == "chosen"
    assert (other.folder / "calibration.json").is_file()
    assert not default.folder.exists()
    assert not (conf / "regime" / "calibrated" / "catch.yaml").exists()


def test_the_exhausted_line_names_the_endpoint_the_rule_counted():
    """Study 5's Breakout calibration ended 'no rung met the rule (>= 0.4 of 10 seeds unstable)'
    while its rule counted lost_after_learning: the line now says what was counted."""
    from cli.calibrate import rule_event

    assert rule_event("unstable") == "unstable"
    assert rule_event("lost_after_learning") == "lost after learning"
