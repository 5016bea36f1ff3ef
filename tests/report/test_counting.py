"""Issue 39's counting probes on copies of committed folders: every run counted once, none
silently; and item 7's smaller points (seed range, --jobs, --out, non-ASCII overrides, pool
--baseline, file modes, a sweep whose jobs another sweep runs).

Expected counts are read off the committed summaries by hand (``results/findings/hidden_scale``:
regime stress, variant none, seeds 0-4: seeds 0, 1, 2 unstable, 3 and 4 stable).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import stat
from pathlib import Path

import _standin_job as standin
import numpy as np
import pytest
from typer.testing import CliRunner

from cli._sweep import parallel_jobs
from cli.main import app
from experiments.base.errors import ConfigError
from experiments.base.process import cores
from experiments.config import MAX_SEED
from experiments.jobs import store
from experiments.jobs.summary import Summary
from experiments.protocols.study.pooled import registrations
from experiments.report.pool.across import across_table
from experiments.report.runs.results import load_results

FINDINGS = Path(__file__).resolve().parents[2] / "results" / "findings"
NONE0 = "regime=stress__variant=none__seed=0"
NONE1 = "regime=stress__variant=none__seed=1"


def _across(folders, **options):
    """:func:`across_table` given each folder's registration as ``gradlab pool`` reads it."""
    ask = {k: options.get(k, d) for k, d in (("endpoint", "failed"), ("baseline", "none"),
                                             ("alpha", 0.05))}  # fmt: skip
    return across_table(folders, registrations=registrations(folders, **ask), **options)


def _invoke(*args, **kw):
    return CliRunner().invoke(app, [str(a) for a in args], **kw)


def _copy(tmp_path, name="hidden_scale"):
    return Path(shutil.copytree(FINDINGS / name, tmp_path / name))


def _edit(folder, name, **changes):
    path = folder / name / "summary.json"
    data = json.loads(path.read_text())
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path.write_text(json.dumps(data))


def _stress_none(result, column="unstable ↓"):
    """A cell of the row regime stress, variant none, from a Markdown table."""
    lines = result.stdout.splitlines()
    header = [c.strip() for c in lines[0].split("|")]
    row = next(line for line in lines if "| stress | none " in line)
    return [c.strip() for c in row.split("|")][header.index(column)]


def _error_line(result):
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def test_the_committed_folder_counts_three_of_five(tmp_path):
    result = _invoke("table", _copy(tmp_path), "-m", "unstable")
    assert result.exit_code == 0, result.output
    assert _stress_none(result).startswith("3/5 ")


# --------------------------------------------------------------------------------------------
# duplicates


def test_a_copied_run_folder_is_refused_naming_both_folders(tmp_path):
    folder = _copy(tmp_path)
    shutil.copytree(folder / NONE0, folder / f"copy_of_{NONE0}")
    result = _invoke("table", folder, "-m", "unstable")
    assert result.exit_code == 2
    line = _error_line(result)
    assert "the same run (regime=stress, variant=none, seed 0, same config)" in line
    assert f"'{folder / NONE0}'" in line and f"'{folder / ('copy_of_' + NONE0)}'" in line
    assert "--keep-duplicates first" in line


def test_keep_duplicates_first_counts_the_original_once_and_lists_the_copy(tmp_path):
    folder = _copy(tmp_path)
    shutil.copytree(folder / NONE0, folder / f"copy_of_{NONE0}")
    result = _invoke("table", folder, "-m", "unstable", "--keep-duplicates", "first")
    assert result.exit_code == 0, result.output
    assert _stress_none(result).startswith("3/5 ")  # not 4/6
    assert (
        f"1 duplicate run(s) left out (--keep-duplicates first): '{folder / ('copy_of_' + NONE0)}'"
        f" (regime=stress, variant=none, seed 0, same run as '{folder / NONE0}')"
    ) in result.stdout
    bad = _invoke("table", folder, "--keep-duplicates", "last")
    assert bad.exit_code == 2
    assert "unknown --keep-duplicates 'last'; choose one of: first" in _error_line(bad)


def test_pooling_a_folder_with_a_renamed_copy_of_itself_is_refused(tmp_path):
    one = _copy(tmp_path)
    two = Path(shutil.copytree(one, tmp_path / "renamed"))
    result = _invoke("pool", one, two, "-e", "unstable")
    assert result.exit_code == 2
    line = _error_line(result)
    assert "is in two pooled folders" in line and f"'{one}/" in line and f"'{two}/" in line
    kept = _invoke("pool", one, two, "-e", "unstable", "--keep-duplicates", "first")
    assert kept.exit_code == 2
    assert f"every run of '{two}' is also in an earlier folder" in _error_line(kept)


def test_a_pool_keeps_the_first_of_a_run_in_two_folders_and_lists_the_other(tmp_path):
    one = _copy(tmp_path)
    two = Path(shutil.copytree(one, tmp_path / "both_regimes"))
    for job in one.glob("regime=tuned__*"):
        shutil.rmtree(job)  # one: the 25 stress runs; two: the same 25 and 25 tuned runs
    with pytest.raises(ConfigError, match="the same run .* is in two pooled folders"):
        _across([one, two], endpoint="unstable")
    table = _across([one, two], endpoint="unstable", keep_duplicates="first")
    assert [s.label for s in table.strata] == ["hidden_scale", "both_regimes"]
    assert table.excluded["both_regimes"].startswith(
        "25 duplicate run(s) left out (--keep-duplicates first): "
        f"'{two / NONE0.replace('none', 'clipnorm')}' (regime=stress, variant=clipnorm, seed 0, "
        f"same run as '{one / NONE0.replace('none', 'clipnorm')}')"
    )
    assert "hidden_scale" not in table.excluded
    assert table.cells[("both_regimes", "none")].n == 5  # the tuned runs only, not 10


@pytest.mark.parametrize("change", ["config deleted", "config key added"])
def test_a_copy_with_its_config_deleted_or_edited_is_still_the_same_run(tmp_path, change):
    # issue 49 item 6: the committed runs predate config_sha256, so a copy whose config.yaml is
    # gone or has one key more has another config; its execution (process id, wall time,
    # figures) is the original's
    one = _copy(tmp_path)
    two = Path(shutil.copytree(one, tmp_path / "copy"))
    for config in two.glob("*/config.yaml"):
        if change == "config deleted":
            config.unlink()
        else:
            config.write_text(config.read_text() + "added_key: 1\n")
    with pytest.raises(ConfigError, match=r"same execution: a copy\) is in two pooled folders"):
        _across([one, two], endpoint="unstable")
    result = _invoke("pool", one, two, "-e", "unstable")
    assert result.exit_code == 2 and "is in two pooled folders" in _error_line(result)


def test_a_copy_under_another_job_name_without_config_counts_once(tmp_path):
    # issue 49 item 6: in one folder, a copy named dup whose summary says job "dup" and that has
    # no config.yaml gave n = 5 instead of 4 for its arm (here 6 instead of 5)
    folder = _copy(tmp_path)
    dup = Path(shutil.copytree(folder / NONE0, folder / "dup"))
    (dup / "config.yaml").unlink()
    _edit(folder, "dup", job="dup")
    result = _invoke("table", folder, "-m", "unstable")
    assert result.exit_code == 2
    line = _error_line(result)
    assert "seed 0, same execution: a copy) is in two folders" in line and "/dup'" in line
    kept = _invoke("table", folder, "-m", "unstable", "--keep-duplicates", "first")
    assert kept.exit_code == 0, kept.output
    assert _stress_none(kept).startswith("3/5 ")  # not 4/6


def test_a_rerun_of_the_same_config_and_seed_in_another_folder_is_the_same_run(tmp_path):
    # the same design point (config hash, seed) run twice: deterministic per seed, a replay, so
    # one run; its execution differs (another process and wall time)
    one = _copy(tmp_path)
    two = Path(shutil.copytree(one, tmp_path / "replay"))
    for job in two.iterdir():
        if job.is_dir():
            data = json.loads((job / "summary.json").read_text())
            _edit(two, job.name, pid=data["pid"] + 1, wall_time_s=data["wall_time_s"] + 1.0)
    with pytest.raises(ConfigError, match=r"same config\) is in two pooled folders"):
        _across([one, two], endpoint="unstable")


def test_runs_of_two_arms_sharing_nothing_are_two_runs():
    from experiments.report.runs.counting import run_identities

    a = Summary(status="completed", seed=1, pid=10, wall_time_s=2.0, stability={"x": 1})
    b = dataclasses.replace(a, pid=11)
    folder = Path("/nonexistent")  # no config.yaml: the execution key only
    assert run_identities(a, folder) != run_identities(b, folder)
    assert len(run_identities(a, folder)) == 1
    assert run_identities(Summary(status="completed", seed=1), folder) == ()
    hashed = dataclasses.replace(a, config_sha256="abc")
    assert run_identities(hashed, folder)[0] == "seed=1|config=abc"
    assert run_identities(dataclasses.replace(hashed, seed=2), folder)[0] == "seed=2|config=abc"


# --------------------------------------------------------------------------------------------
# runs without a summary or without figures


def test_a_deleted_summary_is_listed_and_counted_never_dropped(tmp_path):
    folder = _copy(tmp_path)
    (folder / NONE1 / "summary.json").unlink()
    result = _invoke("table", folder, "-m", "unstable")
    assert result.exit_code == 0, result.output
    assert _stress_none(result).startswith("2/4 ")  # seeds 0, 2 unstable of 0, 2, 3, 4
    assert _stress_none(result, "n") == "4"
    assert _stress_none(result, "excluded") == "1 without summary"
    assert "1 more excluded (1 without summary)" in result.stdout
    assert (
        f"1 job folder(s) without a summary.json, counted with the excluded runs (no figure to "
        f"average): '{folder / NONE1}'."
    ) in result.stdout


def test_a_folder_with_only_a_config_is_a_run_without_summary(tmp_path):
    folder = _copy(tmp_path)
    extra = folder / "regime=stress__variant=none__seed=5"
    extra.mkdir()
    shutil.copy(folder / NONE0 / "config.yaml", extra / "config.yaml")
    runs = load_results(folder).runs
    row = runs[runs["path"] == str(extra)].iloc[0]
    assert row["status"] == "without summary" and row["seed"] == 5
    assert row["regime"] == "stress" and row["variant"] == "none"
    assert len(runs) == 51


def test_a_folder_without_summary_and_without_a_jobs_name_is_an_error(tmp_path):
    folder = _copy(tmp_path)
    (folder / "stray").mkdir()
    (folder / "stray" / "metrics.jsonl").write_text("")
    with pytest.raises(ConfigError, match="'.*stray' has no summary.json and its name is not"):
        load_results(folder)


def test_a_folder_without_summary_naming_a_setting_no_run_has_is_an_error(tmp_path):
    folder = _copy(tmp_path)
    stray = folder / f"copy_of_{NONE0}"
    stray.mkdir()
    shutil.copy(folder / NONE0 / "config.yaml", stray / "config.yaml")
    with pytest.raises(ConfigError, match=f"'{stray}' has no summary.json and its name sets "
                       "copy_of_regime, which no run of the folder sets"):  # fmt: skip
        load_results(folder)


def test_a_pooled_folder_names_its_run_without_summary(tmp_path):
    one = _copy(tmp_path)
    two = Path(shutil.copytree(FINDINGS / "study_catch_stress", tmp_path / "study"))
    (one / NONE1 / "summary.json").unlink()
    table = _across([one, two], endpoint="unstable")
    assert table.excluded["hidden_scale"] == (
        "1 without summary; 1 job folder(s) without a summary.json, counted with the excluded "
        f"runs (no figure to average): '{one / NONE1}'."
    )


def test_folders_that_are_not_runs_are_not_counted(tmp_path):
    folder = _copy(tmp_path)
    (folder / "figures").mkdir()
    (folder / "figures" / "return.png").write_bytes(b"")
    (folder / ".hidden").mkdir()
    assert len(load_results(folder).runs) == 50


def test_a_summary_without_stability_figures_is_named_beside_n(tmp_path):
    folder = _copy(tmp_path)
    _edit(folder, NONE1, stability=None)  # no "stability" key, no metrics.jsonl
    result = _invoke("table", folder, "-m", "unstable")
    assert result.exit_code == 0, result.output
    assert _stress_none(result).startswith("2/4 ")
    assert (
        "1 run(s) without stability figures (their summary.json lacks them and no metrics.jsonl "
        f"is left to recompute them from), counted out of n where a column has no value: "
        f"'{folder / NONE1}'."
    ) in result.stdout
    # a column that does not need the missing figure names nothing
    assert load_results(folder).runs["figures_missing"].astype(bool).sum() == 1


# --------------------------------------------------------------------------------------------
# a summary that disagrees with its folder's name


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"variant": "clipnorm"}, "its name says variant=none but its summary.json's variant says "
                                  "variant=clipnorm"),
        ({"seed": 7}, "its name says seed=1 but its summary.json's seed says seed=7"),
        ({"group": {"regime": "stress", "variant": "maxnorm"}},
         "its name says variant=none but its summary.json's group says variant=maxnorm"),
        ({"job": "regime=stress__variant=maxnorm__seed=1"},
         f"its name says job={NONE1} but its summary.json's job says "
         "job=regime=stress__variant=maxnorm__seed=1"),
    ],
)  # fmt: skip
def test_a_summary_that_disagrees_with_its_folder_name_is_an_error(tmp_path, changes, said):
    folder = _copy(tmp_path)
    _edit(folder, NONE1, **changes)
    result = _invoke("table", folder, "-m", "unstable")
    assert result.exit_code == 2
    line = _error_line(result)
    assert f"run folder '{folder / NONE1}': {said}" in line


def test_a_renamed_folder_is_an_error_naming_both_values(tmp_path):
    folder = _copy(tmp_path)
    (folder / NONE1).rename(folder / "regime=stress__variant=maxnorm__seed=9")
    with pytest.raises(ConfigError, match="its name says job=regime=stress__variant=maxnorm__"
                       f"seed=9 but its summary.json's job says job={NONE1}"):  # fmt: skip
        load_results(folder)


# --------------------------------------------------------------------------------------------
# item 7


def test_pool_baseline_names_every_folder_without_it(tmp_path):
    one = _copy(tmp_path)
    two = FINDINGS / "study_catch_stress"
    result = _invoke("pool", one, two, "--baseline", "nosuch")
    assert result.exit_code == 2
    line = _error_line(result)
    assert f"folder '{one}' has no run of the baseline variant=nosuch (nor do '{two}')" in line
    assert "variant there: clipnorm, maxnorm, none, scale_gradient, stop_gradient" in line


def test_the_seed_range_is_numpys_global_seed_range():
    # keras.utils.set_random_seed (every job) seeds numpy's global generator: 0 to 2**32 - 1
    np.random.seed(MAX_SEED)
    with pytest.raises(ValueError):
        np.random.seed(MAX_SEED + 1)
    assert MAX_SEED == 4294967295


@pytest.mark.parametrize("seed", ["99999999999", str(2**32), "-1"])
def test_a_seed_out_of_range_is_refused_by_dry_run(tmp_path, seed):
    args = ["sweep", "ablation=clip", f"seed={seed}", f"runtime.results_dir={tmp_path}"]
    result = _invoke(*args, "--dry-run")
    assert result.exit_code == 2
    assert f"seed={seed} is out of range; expected an integer from 0 to 4294967295" in (
        _error_line(result)
    )
    assert not any(tmp_path.iterdir())


def test_the_largest_seed_passes_validation(tmp_path):
    args = ["sweep", "ablation=clip", "seed=4294967295", f"runtime.results_dir={tmp_path}"]
    result = _invoke(*args, "--dry-run")
    assert result.exit_code == 0, result.output
    assert "seed=4294967295  (new)" in result.stdout


def test_jobs_above_the_cores_are_capped_with_a_note(capsys):
    assert parallel_jobs("100000", launcher_given=False) == cores()
    assert f"note: --jobs 100000 capped at {cores()}, the cores" in capsys.readouterr().err
    assert parallel_jobs(str(cores()), launcher_given=False) == cores()
    assert capsys.readouterr().err == ""


def test_out_into_a_missing_folder_is_refused_and_makes_none(tmp_path):
    out = tmp_path / "nonexistent" / "dir" / "t.md"
    result = _invoke("table", FINDINGS / "hidden_scale", "-m", "unstable", "-o", out)
    assert result.exit_code == 2
    assert f"cannot write '{out}': its folder '{out.parent}' does not exist" in (
        _error_line(result)
    )
    assert not (tmp_path / "nonexistent").exists()


def test_an_unquoted_non_ascii_override_gets_a_hint_to_quote_it(tmp_path):
    where = tmp_path / "résultats"
    result = _invoke("sweep", "ablation=clip", f"runtime.results_dir={where}", "--dry-run")
    assert result.exit_code == 2
    line = _error_line(result)
    assert "LexerNoViableAltException" in line
    assert f"""must be quoted for Hydra: 'runtime.results_dir="{where}"'""" in line
    quoted = _invoke("sweep", "ablation=clip", f'runtime.results_dir="{where}"', "--dry-run")
    assert quoted.exit_code == 0, quoted.output
    assert f"run   {where}/clip/" in quoted.stdout


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_summary_and_config_are_written_with_the_umasks_mode(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        store.write_summary(tmp_path, Summary(status="completed", job="j"))
        store.write_config(tmp_path, {"seed": 0})
    finally:
        os.umask(old)
    for name in ("summary.json", "config.yaml"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == mode, name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.yaml", "summary.json"]


def test_a_sweep_whose_job_another_sweep_is_running_exits_0(tmp_path, monkeypatch):
    monkeypatch.delenv("WANDB_MODE", raising=False)
    conf = standin.make_conf(tmp_path)
    res = tmp_path / "res"
    args = standin.sweep_args(conf, res, "variant=none", "seed=0", "logger=none")
    first = _invoke(*args, obj=standin.JOB)
    assert first.exit_code == 0, first.output
    job = res / "hidden_scale" / "regime=tuned__variant=none__seed=0"
    _edit(job.parent, job.name, status="running")  # another sweep runs it now ...
    with store.job_lock(job) as held:  # ... and holds its lock
        assert held
        second = _invoke(*args, obj=standin.JOB)
    assert second.exit_code == 0, second.output
    assert "1 jobs: 0 completed" in second.stdout and "1 running elsewhere" in second.stdout
    assert "unfinished" not in second.stdout
    # once no process holds it, a job left "running" is unfinished: planned to run again
    third = _invoke(*args, "--dry-run", obj=standin.JOB)
    assert third.exit_code == 0 and "run " in third.stdout


def test_a_run_without_summary_falls_in_its_arm_whatever_its_name_spells(tmp_path):
    # issue 49 item 3: a deleted summary under regime=calibrated/breakout_harsh made a phantom
    # stratum "calibrated-breakout_harsh" (the folder name writes "/" as "-")
    folder = _copy(tmp_path)
    for job in sorted(folder.glob("regime=stress__*")):
        data = json.loads((job / "summary.json").read_text())
        for part in ("group", "overrides"):
            data[part]["regime"] = "calibrated/stress"
        new = job.name.replace("regime=stress", "regime=calibrated-stress")
        data["job"] = new
        (job / "summary.json").write_text(json.dumps(data))
        job.rename(folder / new)
    gone = folder / NONE1.replace("regime=stress", "regime=calibrated-stress")
    (gone / "summary.json").unlink()
    runs = load_results(folder).runs
    assert set(runs["regime"]) == {"calibrated/stress", "tuned"}  # no phantom regime
    row = runs[runs["path"] == str(gone)].iloc[0]
    assert row["regime"] == "calibrated/stress" and row["status"] == "without summary"
    mine = runs[(runs["regime"] == "calibrated/stress") & (runs["variant"] == "none")]
    assert len(mine) == 5 and sorted(mine["seed"]) == [0, 1, 2, 3, 4]
