"""Tests of `gradlab calibrate --endpoint lost_after_learning` (issue 38, item 3) and of the
faithful ladder (conf/ladder/faithful.yaml): counts by hand on hand-built summaries, the rule and
its early stop on the same count, the record (version 2; ``unstable`` records unchanged), the
ladder's rungs on Catch, Breakout and CartPole (normalisation kept at every rung), ``times`` on
integer settings and schedules, and bad input."""

from __future__ import annotations

import dataclasses
import json
import pathlib

import _standin_job as standin
import pytest
from conftest import compose_config

from experiments.base.errors import ConfigError
from experiments.config import to_run_config
from experiments.jobs import store
from experiments.jobs.summary import Summary
from experiments.muzero.config import MuZeroConfig
from experiments.protocols.calibration.calibrate import (
    check_endpoint_task,
    prepare,
    run_calibration,
)
from experiments.protocols.calibration.ladder import Ladder, Rung, load_ladder, rung_settings
from experiments.protocols.calibration.record import (
    CalibrationRecord,
    RungCounts,
    cannot_meet,
    check_endpoint,
    count_rung,
    counts_record,
    meets_rule,
    record_markdown,
    run_class,
)
from experiments.tasks.registry import task_facts

CONF = pathlib.Path(__file__).resolve().parents[2] / "conf"

STANDIN_LADDER = """\
rungs:
  - name: heavier
    times: {muzero.base_loss: 2}
  - name: heavier_still
    times: {muzero.base_loss: 3}
"""


def _run(kind, *, status=None, threshold=0.9, task="catch", scale=1.0):
    """A finished Catch run (threshold 0.9) of one outcome class, its figures by hand."""
    figures = {
        # reached 0.9 at step 500, final-window mean 0.95: held
        "held": dict(reached_threshold=1, steps_to_threshold=500, diverged=0, final_return=0.95),
        # reached 0.9 at 500, fell back to 0.2 by the end (and collapsed): lost
        "lost": dict(
            reached_threshold=1, steps_to_threshold=500, diverged=0, collapsed=1, final_return=0.2
        ),
        # reached 0.9 at 500, diverged at 900: diverged after learning
        "div_after": dict(
            reached_threshold=1, steps_to_threshold=500, diverged=1, diverged_step=900
        ),
        # never reached 0.9, diverged at 300: diverged before learning
        "div_before": dict(reached_threshold=0, diverged=1, diverged_step=300),
        # crossed 0.9 only at step 1000, after diverging at 900: not learned (before learning)
        "cross_after_div": dict(
            reached_threshold=1, steps_to_threshold=1000, diverged=1, diverged_step=900
        ),
        # ran to its end below 0.9: never learned
        "never": dict(reached_threshold=0, diverged=0, collapsed=0, final_return=0.1),
        # reached 0.9, no final window (e.g. stopped short): no outcome
        "no_window": dict(reached_threshold=1, steps_to_threshold=500, diverged=0),
    }[kind]
    stability = {"collapsed": 0, "diverged_step": None, **figures}
    stability["unstable"] = 1 if stability["diverged"] else stability["collapsed"]
    if status is None:
        status = "diverged" if stability["diverged"] else "completed"
    return Summary(
        status=status, task=task, threshold=threshold, reward_scale=scale, stability=stability
    )


# ---------------------------------------------------------------------------------------------
# the outcome of one run and the counts of a rung


@pytest.mark.parametrize(
    ("kind", "outcome"),
    [
        ("held", "held"),
        ("lost", "lost"),
        ("div_after", "diverged_after_learning"),
        ("div_before", "diverged_before_learning"),
        ("cross_after_div", "diverged_before_learning"),
        ("never", "never_learned"),
        ("no_window", None),
    ],
)
def test_run_class_by_hand(kind, outcome):
    assert run_class(_run(kind)) == outcome


def test_a_run_without_a_recorded_threshold_is_read_against_the_declared_one():
    # Catch declares 0.9; at reward scale 100 the threshold is 90 (registry x scale)
    run = _run("held", threshold=None, scale=100.0)
    run.stability["final_return"] = 85.0  # reached it at 500, ended below 90: lost
    assert run_class(run) == "lost"
    run.stability["final_return"] = 95.0
    assert run_class(run) == "held"
    # a recorded threshold wins over the declared one: 80 recorded, 85 holds it
    run = dataclasses.replace(run, threshold=80.0)
    run.stability["final_return"] = 85.0
    assert run_class(run) == "held"
    # not measured (reached_threshold None): no outcome
    run.stability["reached_threshold"] = None
    assert run_class(run) is None


def test_counts_by_hand():
    kinds = ["held", "lost", "div_after", "div_before", "cross_after_div", "never", "no_window"]
    summaries = [_run(k) for k in kinds] + [_run("lost", status="failed"), None]
    counts = count_rung(summaries, has_threshold=True, endpoint="lost_after_learning")
    # 9 planned, 7 finished (a failed run and one never run are not); learned: held, lost,
    # div_after = 3; lost after learning: lost, div_after = 2; no outcome: no_window = 1;
    # unstable: 3 diverged (div_after, div_before, cross_after_div) + 1 collapsed (lost) = 4;
    # never learned (reached_threshold != 1): div_before, never = 2
    assert (counts.runs, counts.finished) == (9, 7)
    assert (counts.learned, counts.lost_after_learning, counts.no_outcome) == (3, 2, 1)
    assert (counts.unstable, counts.diverged, counts.collapsed) == (4, 3, 1)
    assert counts.never_learned == 2
    assert counts.events("lost_after_learning") == 2 and counts.events("unstable") == 4
    none = count_rung(summaries, has_threshold=False, endpoint="lost_after_learning")
    assert (none.learned, none.lost_after_learning, none.no_outcome) == (None, None, None)
    # the endpoint unstable does not count outcomes (its record does not hold them)
    plain = count_rung(summaries, has_threshold=True)
    assert (plain.learned, plain.lost_after_learning, plain.unstable) == (None, None, 4)


def test_the_rule_and_the_early_stop_count_the_endpoint():
    def counts(unstable, lost, finished, runs=10):
        return RungCounts(runs, finished, unstable, unstable, 0, 0, 0, lost_after_learning=lost)

    # 5 of 10 unstable, 3 lost: unstable meets 0.4, lost after learning does not
    c = counts(5, 3, 10)
    assert meets_rule(c, 0.4) and meets_rule(c, 0.4, "unstable")
    assert not meets_rule(c, 0.4, "lost_after_learning")
    assert meets_rule(c, 0.3, "lost_after_learning")  # 3/10 >= 0.3 exactly (Fraction)
    # 8 of 10 run: 1 lost + 2 to come = 3 < 4: cannot meet 0.4; 2 lost + 2 = 4: still can
    assert cannot_meet(counts(6, 1, 8), 0.4, "lost_after_learning")
    assert not cannot_meet(counts(6, 1, 8), 0.4)  # on unstable, 6 already meets it
    assert not cannot_meet(counts(0, 2, 8), 0.4, "lost_after_learning")


def test_the_protocol_on_lost_after_learning_stops_early_on_the_same_count(standin_env, tmp_path):
    conf = pathlib.Path(standin_env.conf)
    (conf / "ladder" / "two.yaml").write_text(STANDIN_LADDER)
    cal = prepare(
        ["task=catch", "ladder=two", "logger=none", f"runtime.results_dir={tmp_path}/r"],
        seeds="100-104",
        endpoint="lost_after_learning",
        config_dir=conf,
        job=standin.JOB,
    )
    assert cal.name == "catch_two_lost_after_learning"
    assert cal.folder == tmp_path / "r" / "catch_two_lost_after_learning" / "calibration"
    assert cal.regime == "calibrated/catch_two_lost_after_learning"
    # rung 1: every run diverges before learning: unstable 4/4, which the unstable rule would
    # take, but lost after learning 0: with 5 seeds and rule 0.4 (2 needed), after 4 seeds
    # (two pairs) at best 0 + 1 < 2: stopped there. Rung 2: lost, diverged after, held x3: 2/5.
    verdicts = [
        [_run("div_before")] * 5,
        [_run("lost"), _run("div_after"), _run("held"), _run("held"), _run("held")],
    ]
    calls = []

    def run_sweep(overrides):
        calls.append(overrides)
        loss = next(o for o in overrides if o.startswith("muzero.base_loss="))
        index = 0 if loss.endswith("=2.0") else 1
        seeds = next(o for o in overrides if o.startswith("seed=")).removeprefix("seed=")
        for j, seed in enumerate(cal.seeds):
            if str(seed) in seeds.split(","):
                job = cal.jobs[index][j]
                job.job_dir.mkdir(parents=True, exist_ok=True)
                store.write_summary(job.job_dir, verdicts[index][j])

    lines = []
    outcome = run_calibration(cal, run_sweep, echo=lines.append, batch=2)
    assert [c[-2] for c in calls] == [
        "seed=100,101,102,103",
        "seed=100,101,102,103",
        "seed=100,101,102,103,104",
    ]
    assert outcome.status == "chosen" and outcome.record.chosen_rung == 2
    record = json.loads((cal.folder / "calibration.json").read_text())
    assert record["version"] == 2 and record["endpoint"] == "lost_after_learning"
    first, second = record["rungs"]
    assert first["stopped_early"] and not first["meets_rule"]
    assert (first["counts"]["unstable"], first["counts"]["lost_after_learning"]) == (4, 0)
    assert first["counts"]["learned"] == 0
    assert second["meets_rule"]
    c = second["counts"]
    assert (c["lost_after_learning"], c["learned"], c["unstable"], c["no_outcome"]) == (2, 5, 2, 0)
    assert "--rule 0.4 --endpoint lost_after_learning" in record["command"]
    assert any("lost after learning 0 of the 4 seeds run" in x for x in lines)
    md = (cal.folder / "calibration.md").read_text()
    assert "| lost after learning | learned | unstable |" in md
    assert (
        "| 2 heavier_still | `muzero.base_loss=3.0` | **2/5** | 5 | 2 | 1 | 1 | 0 | 0 | 5/5 |" in md
    )
    assert "| 0/5 | 0 | 4 | 4 | 0 | 4 | 0 | 4/5 (stopped: cannot meet the rule) |" in md
    preset = (conf / "regime" / "calibrated" / "catch_two_lost_after_learning.yaml").read_text()
    assert "lost what it learned in 2/5 of seeds 100-104 (5 learned; 2 unstable)" in preset


def test_unstable_records_keep_their_shape(standin_env, tmp_path):
    conf = pathlib.Path(standin_env.conf)
    (conf / "ladder" / "two.yaml").write_text(STANDIN_LADDER)
    cal = prepare(
        ["task=catch", "ladder=two", "logger=none", f"runtime.results_dir={tmp_path}/r"],
        seeds="100-101",
        config_dir=conf,
        job=standin.JOB,
    )
    assert cal.name == "catch_two" and "--endpoint" not in cal.command()

    def run_sweep(overrides):
        for job in cal.jobs[0]:
            job.job_dir.mkdir(parents=True, exist_ok=True)
            store.write_summary(job.job_dir, _run("div_before"))

    assert run_calibration(cal, run_sweep, echo=lambda x: None).status == "chosen"
    record = json.loads((cal.folder / "calibration.json").read_text())
    assert record["version"] == 1 and "endpoint" not in record
    # the counts of a version-1 record, and no more
    assert list(record["rungs"][0]["counts"]) == [
        "runs", "finished", "unstable", "diverged", "collapsed", "never_learned",
        "undetermined", "grad_norm_median", "grad_norm_median_not_diverged",
    ]  # fmt: skip
    md = (cal.folder / "calibration.md").read_text()
    assert "| rung | settings | unstable | diverged | collapsed | never learned |" in md


def test_counts_record_drops_the_new_counts_for_unstable_only():
    counts = RungCounts(10, 10, 1, 1, 0, 0, 0, learned=7, lost_after_learning=3, no_outcome=0)
    assert "learned" not in counts_record(counts, "unstable")
    assert counts_record(counts, "lost_after_learning")["lost_after_learning"] == 3


def test_a_committed_version_1_record_still_reads():
    path = CONF.parent / "results" / "findings" / "catch" / "calibration" / "calibration.json"
    text = record_markdown(CalibrationRecord.from_json(json.loads(path.read_text())))
    assert "| 3 lr_x3 |" in text and "**6/10**" in text


# ---------------------------------------------------------------------------------------------
# the faithful ladder


@pytest.mark.parametrize(
    ("task", "lr", "budget"),
    [
        # task preset: (learning rate, training_steps, lr_decay_steps, temperature steps, eval)
        ("catch", 0.01, (2500, 10000, (400, 800), 50)),
        ("breakout", 0.001, (10000, 10000, (5000, 7500), 500)),
        ("cartpole", 0.005, (6000, 6000, (3000, 4500), 200)),
    ],
)
def test_faithful_ladder_keeps_the_normalisation_and_resolves(task, lr, budget):
    cal = prepare(
        [f"task={task}", "ladder=faithful"], endpoint="lost_after_learning", config_dir=CONF
    )
    names = [r.name for r in cal.ladder.rungs]
    assert names == ["lr_x3", "lr_x10", "long_unroll", "reward_x100", "budget_x4"]
    assert "2026-11-27" in (CONF / "ladder" / "faithful.yaml").read_text()
    steps, decay, (t1, t2), every = budget
    rates = [float(s["muzero.learning_rate"]) for s in cal.settings]
    assert rates == pytest.approx([3 * lr, 10 * lr, 10 * lr, 10 * lr, 10 * lr], rel=1e-12)
    assert cal.settings[4] == {
        "muzero.learning_rate": repr(float(f"{10 * lr:.12g}")),
        "muzero.unroll_steps": "10",
        "muzero.network.value_support_size": "null",
        "muzero.network.reward_support_size": "null",
        "task.reward_scale": "100.0",
        "muzero.training_steps": str(4 * steps),
        "muzero.lr_decay_steps": str(4 * decay),
        "muzero.temperature_schedule": f"[[0,1.0],[{4 * t1},0.5],[{4 * t2},0.25]]",
        "muzero.eval_every": str(4 * every),
    }
    for i in range(len(cal.settings)):
        assert not any("normalisation" in k for k in cal.settings[i])
        assert len(cal.jobs[i]) == 10
        overrides = [
            o
            for o in cal.sweep_overrides(i)
            if o.startswith(("task=", "task.", "regime=", "muzero."))
        ]
        run = to_run_config(compose_config(CONF, overrides, schema=MuZeroConfig))
        assert run.muzero.network.normalisation == "minmax"  # the preset's, kept
    m = run.muzero  # the last rung, as the run sees it
    assert (m.training_steps, m.lr_decay_steps, m.eval_every) == (4 * steps, 4 * decay, 4 * every)
    assert m.temperature_schedule == ((0, 1.0), (4 * t1, 0.5), (4 * t2, 0.25))
    assert (m.unroll_steps, run.task.reward_scale) == (10, 100.0)


def test_times_on_integers_and_schedules():
    ladder = Ladder(
        "t",
        "",
        (Rung("b", times=(("x.steps", 4.0), ("x.sched", 4.0), ("x.lr", 3.0))),),
    )
    base = {"x.steps": 2500, "x.sched": [[0, 1.0], [400, 0.5]], "x.lr": 0.01}
    assert rung_settings(ladder, 0, base) == {
        "x.steps": "10000",
        "x.sched": "[[0,1.0],[1600,0.5]]",
        "x.lr": "0.03",
    }
    half = Ladder("t", "", (Rung("h", times=(("x.steps", 1.5),)),))
    assert rung_settings(half, 0, {"x.steps": 10}) == {"x.steps": "15"}
    with pytest.raises(ConfigError, match=r"multiplies x.steps, an integer setting, to 7.5"):
        rung_settings(half, 0, {"x.steps": 5})
    for bad in ([[0, "hot"]], [[0.5, 1.0]], [1, 2], [], True):
        with pytest.raises(ConfigError, match="expected a number or a schedule"):
            rung_settings(half, 0, {"x.steps": bad})


def test_faithful_ladder_loads():
    ladder = load_ladder(CONF, "faithful")
    assert ladder.description.startswith("Normalisation kept")
    assert dict(ladder.rungs[4].times) == {
        "muzero.training_steps": 4.0,
        "muzero.lr_decay_steps": 4.0,
        "muzero.temperature_schedule": 4.0,
        "muzero.eval_every": 4.0,
    }


# ---------------------------------------------------------------------------------------------
# bad input


def test_unknown_endpoint_is_one_line():
    with pytest.raises(ConfigError) as err:
        check_endpoint("lost")
    assert str(err.value) == (
        "unknown --endpoint 'lost'; choose one of: unstable, lost_after_learning"
    )
    with pytest.raises(ConfigError, match="unknown --endpoint 'lost'"):
        prepare(["task=catch"], endpoint="lost", config_dir=CONF)


def test_a_task_without_a_threshold_is_refused_naming_it():
    facts = dataclasses.replace(task_facts("catch"), name="nothreshold", threshold=None)
    assert check_endpoint_task("unstable", facts) == "unstable"
    with pytest.raises(ConfigError) as err:
        check_endpoint_task("lost_after_learning", facts)
    assert "\n" not in str(err.value)
    assert "task 'nothreshold' declares none" in str(err.value)
    with pytest.raises(ConfigError, match="not counted for a task without"):
        RungCounts(1, 1, 0, 0, 0, None, 0).events("lost_after_learning")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--endpoint", "lost"], "unknown --endpoint 'lost'; choose one of: unstable, "),
        (["--endpoint", "lost_after_learning", "ladder=nope"], "unknown ladder 'nope'"),
        (["--endpoint", "lost_after_learning", "--rule", "2"], "--rule 2.0 is out of range"),
        # a dry run checks --jobs too (issue 49, item 8)
        (["--jobs", "-2", "--dry-run"], "--jobs -2 is out of range; expected auto or an integer"),
        (["--jobs", "abc", "--dry-run"], "--jobs"),
    ],
)
def test_bad_input_is_one_line_exit_2(standin_env, args, message):
    res = standin_env.res
    result = standin_env.invoke(
        ["calibrate", "task=catch", "logger=none", f"runtime.results_dir={res}", *args,
         "--config-dir", standin_env.conf]
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines
    assert not res.exists()


def test_dry_run_prints_every_rung_and_writes_nothing(standin_env):
    conf = pathlib.Path(standin_env.conf)
    (conf / "ladder" / "two.yaml").write_text(STANDIN_LADDER)
    res = standin_env.res
    result = standin_env.invoke(
        ["calibrate", "task=catch", "ladder=two", "logger=none", f"runtime.results_dir={res}",
         "--endpoint", "lost_after_learning", "--dry-run", "--config-dir", conf]
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "rung 1/2 heavier: muzero.base_loss=2.0 (10 runs)" in result.output
    assert "rung 2/2 heavier_still: muzero.base_loss=3.0 (10 runs)" in result.output
    assert "regime=calibrated/catch_two_lost_after_learning" in result.output
    assert not res.exists() and not (conf / "regime" / "calibrated").exists()


def test_a_run_that_recorded_no_threshold_is_re_measured_from_its_evaluations(
    standin_env, tmp_path
):
    # runs written before their task declared a threshold (MinAtar before 2026-11-27) recorded
    # none, so their reached_threshold (0) was measured against nothing: the calibration
    # re-reads their evaluations against the declared one (Catch 0.9 here)
    conf = pathlib.Path(standin_env.conf)
    (conf / "ladder" / "one.yaml").write_text(
        "rungs:\n  - {name: a, times: {muzero.base_loss: 2}}\n"
    )
    cal = prepare(
        ["task=catch", "ladder=one", "logger=none", f"runtime.results_dir={tmp_path}/r"],
        seeds="100-102",
        endpoint="lost_after_learning",
        config_dir=conf,
        job=standin.JOB,
    )
    # evaluations (step, return): seed 100 reaches 0.95 at 20 then ends at 0.1 (lost); seed 101
    # never reaches 0.9 (never learned); seed 102 crosses 0.9 at 30 only after diverging at 25
    curves = {
        100: [(10, 0.5), (20, 0.95), (30, 0.1)],
        101: [(10, 0.5), (20, 0.6), (30, 0.7)],
        102: [(10, 0.5), (30, 0.95)],
    }
    figures = {
        100: dict(diverged=0, final_return=0.1),
        101: dict(diverged=0, final_return=0.7),
        102: dict(diverged=1, diverged_step=25),
    }

    def run_sweep(overrides):
        for seed, job in zip(cal.seeds, cal.jobs[0], strict=True):
            job.job_dir.mkdir(parents=True, exist_ok=True)
            rows = [{"step": s, "eval/return": r} for s, r in curves[seed]]
            (job.job_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
            stability = {"reached_threshold": 0, "steps_to_threshold": None, "collapsed": 0,
                         "diverged_step": None, **figures[seed]}  # fmt: skip
            stability["unstable"] = stability["diverged"]
            status = "diverged" if stability["diverged"] else "completed"
            store.write_summary(
                job.job_dir,
                Summary(
                    status=status,
                    task="catch",
                    threshold=None,
                    reward_scale=1.0,
                    training_steps=30,
                    stability=stability,
                ),  # fmt: skip
            )

    outcome = run_calibration(cal, run_sweep, echo=lambda x: None)
    counts = outcome.record.rungs[0].counts
    # learned: seed 100 only (102's crossing came after its divergence); lost: seed 100
    assert (counts.learned, counts.lost_after_learning, counts.no_outcome) == (1, 1, 0)
    assert outcome.status == "exhausted"  # 1/3 < 0.4
    # the files are not changed
    assert store.read_summary(cal.jobs[0][0].job_dir).threshold is None


def test_a_minatar_run_without_a_threshold_is_re_measured_against_its_games(tmp_path):
    """A MinAtar summary says task 'minatar'; its game (and so its declared threshold, 2 x
    random x reward scale) is in config.yaml's task.id. Breakout at reward scale 10: 7.604.
    One run peaks at 6.25 (never reaches it), one reaches 8.0 at step 1000 then falls to 0."""
    from experiments.protocols.calibration.calibrate import _remeasured

    def job(name, returns):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "config.yaml").write_text("task:\n  name: minatar\n  id: breakout\n")
        rows = [{"step": 500 * (i + 1), "eval/return": r} for i, r in enumerate(returns)]
        (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        summary = Summary(status="completed", task="minatar", threshold=None, reward_scale=10.0,
                          stability={"reached_threshold": 0, "steps_to_threshold": None,
                                     "diverged": 0, "diverged_step": None})  # fmt: skip
        return _remeasured(summary, folder)

    peak = job("peak", [6.25, 0.0, 0.0])
    assert peak.threshold == pytest.approx(7.604)
    assert (peak.stability["reached_threshold"], peak.stability["steps_to_threshold"]) == (0, None)
    reach = job("reach", [1.0, 8.0, 0.0])
    assert (reach.stability["reached_threshold"], reach.stability["steps_to_threshold"]) == (
        1, 1000
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# where the threshold falls in a rung's runs (issue 47, item 4)


def test_threshold_check_of_a_rung_by_hand():
    import statistics
    import types

    from experiments.protocols.calibration.calibrate import threshold_check

    cal = types.SimpleNamespace(task="catch")
    random = task_facts("catch").random_return
    # held 0.95, held 0.95, lost 0.2, diverged after learning (at the random policy's return),
    # never learned 0.1; a failed job and one never run are not counted
    runs = [_run("held"), _run("held"), _run("lost"), _run("div_after"), _run("never"),
            _run("held", status="failed"), None]  # fmt: skip
    line = threshold_check(cal, runs)
    values = [0.95, 0.95, 0.2, random, 0.1]
    mean, sd = statistics.mean(values), statistics.stdev(values)
    assert line.startswith(f"catch: 5 baseline runs, R_ref {mean:.4g} (sd {sd:.3g}), ")
    # reached: held x2, lost, diverged after; held: 2; within +-5% of 0.9 ([0.855, 0.945]): none
    assert "threshold 0.9" in line and "reached by 4/5, held by 2/5, 0/5 end within" in line
    assert line.endswith("usable; the baseline does NOT learn (mean final return below it)")
    # every run held it: a floor; no run reached it: a ceiling; a run recording no threshold is
    # judged against the declared one
    floor = threshold_check(cal, [_run("held", threshold=None)] * 3)
    assert "held by 3/3" in floor and ": floor; the baseline learns" in floor
    assert ": ceiling;" in threshold_check(cal, [_run("never")] * 2)
    # near: final 0.93 and 0.88 within +-5% of 0.9, 2 of 3 >= a tenth: noise-sensitive
    near = [_run("held"), _run("held"), _run("held")]
    near = [dataclasses.replace(s, stability={**s.stability, "final_return": f})
            for s, f in zip(near, (0.93, 0.88, 1.0), strict=True)]  # fmt: skip
    assert "2/3 end within ±5% of it: noise-sensitive" in threshold_check(cal, near)
    assert threshold_check(cal, [None, _run("held", status="failed")]) is None
