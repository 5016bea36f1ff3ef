"""The LaTeX table (experiments/report/table/latex.py): a table too tall for a page split into
"continued" floats by endpoint and stratum, wide keys stacked, the method paragraph; and every
committed results folder that ``gradlab table`` reads compiled with a LaTeX engine where one is
installed (a plain article and a two-column one with ``table*``): no float taller than the page,
no overfull box."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest
from _latex import compile_table, engine, pages, problems

from experiments.report.runs.results import load_results
from experiments.report.table.render import render
from experiments.report.table.summarize import summarize

ROOT = Path(__file__).resolve().parents[2]
FINDINGS = ROOT / "results" / "findings"


def _job(root: Path, name: str, *, group: dict, seed: int, stability: dict, status="completed"):
    job = root / name
    job.mkdir(parents=True)
    summary = {"status": status, "job": name, "ablation": "tall", "group": group, "seed": seed,
               "task": "catch", "threshold": 0.9, "stability": stability}  # fmt: skip
    (job / "summary.json").write_text(json.dumps(summary))


def _tall(root: Path, *, regimes=("tuned", "stress", "harsh"), variants=8, seeds=3) -> Path:
    """Three regimes x ``variants`` arms x ``seeds`` seeds: too tall for one page."""
    names = ["none", *(f"arm{i}" for i in range(1, variants))]
    for i, (regime, variant, seed) in enumerate(itertools.product(regimes, names, range(seeds))):
        bad = (i % 4) == 0
        stability = {"unstable": int(bad), "diverged": int(bad), "final_return": 0.1 * (i % 9),
                     "grad_norm_p99": 1.0 + (i % 5) / 3}  # fmt: skip
        _job(root, f"{regime}-{variant}-{seed}", group={"regime": regime, "variant": variant},
             seed=seed, stability=stability, status="diverged" if bad else "completed")  # fmt: skip
    return root


def _floats(text: str) -> list[str]:
    return re.findall(r"\\begin\{table\}.*?\\end\{table\}", text, re.S)


@pytest.fixture(scope="module")
def tall(tmp_path_factory):
    folder = _tall(tmp_path_factory.mktemp("tall") / "tall")
    metrics = ["unstable", "diverged", "final_return", "grad_norm_p99"]
    return summarize(load_results(folder), metrics=metrics, n_resamples=99, diverged_return=-1.0)


def test_a_tall_table_is_split_into_continued_floats(tall):
    text = render(tall, fmt="latex", layout="full")
    floats = _floats(text)
    n = len(floats)
    assert n >= 3 and text.count(r"\caption{") == n
    assert r"\label{tab:tall}" in floats[0] and f"Part 1 of {n}:" in floats[0]
    for k, float_ in enumerate(floats[1:], start=2):
        assert rf"Table~\ref{{tab:tall}} continued. Part {k} of {n}:" in float_
        assert rf"\label{{tab:tall:{k}}}" in float_
    # never cut: each row once per block of metrics, each metric in as many blocks as strata
    for regime, variant in itertools.product(["tuned", "stress", "harsh"], ["none", "arm7"]):
        assert len(re.findall(rf"^{regime} & {variant} &", text, re.M)) == 2  # 2 metric blocks
    heads = re.findall(r"^\\multicolumn\{2\}\{c\}\{\} & (.*) \\\\$", text, re.M)
    assert {h for head in heads for h in head.split(" & ")} == {
        "unstable", "diverged", "final", "grad norm"}  # fmt: skip


def test_a_split_float_names_its_endpoints_and_strata(tall):
    floats = _floats(render(tall, fmt="latex", layout="full"))
    names = [re.search(r"Part \d+ of \d+: ([^.]*)\.", f).group(1) for f in floats]
    assert all("regime=" in name for name in names)  # each float holds some regimes, not all
    assert all(re.search(r"regime=(tuned|stress|harsh)", name) for name in names)
    # by endpoint first: the floats with unstable hold every row, then those with grad norm
    with_unstable = [f for f in floats if "& unstable &" in f]
    assert floats[: len(with_unstable)] == with_unstable
    rows = [r for f in with_unstable for r in re.findall(r"^(\w+ & \w+) & \\begin", f, re.M)]
    assert len(rows) == len(set(rows)) == 24  # every row once


def test_the_compact_layout_puts_the_endpoints_side_by_side(tall):
    # the four endpoints asked for (-m) all shown, in one block per chunk of rows, each row once
    text = render(tall, fmt="latex")
    heads = re.findall(r"^\\multicolumn\{2\}\{c\}\{\} & (.*) \\\\$", text, re.M)
    assert heads and all(h == "unstable & diverged & final & grad norm" for h in heads)
    rows = re.findall(r"^(\w+ & \w+) & \\begin", text, re.M)
    assert len(rows) == len(set(rows)) == 24
    assert len(_floats(text)) < len(_floats(render(tall, fmt="latex", layout="full")))


def test_a_table_that_fits_is_one_float_without_parts(tmp_path):
    table = summarize(load_results(_tall(tmp_path / "small", regimes=("tuned",), variants=3)),
                      metrics=["unstable"], n_resamples=99)  # fmt: skip
    text = render(table, fmt="latex")
    assert len(_floats(text)) == 1 and "Part " not in text and "continued" not in text


def test_wide_keys_are_stacked_into_one_group_cell(tmp_path):
    long = {"muzero.network.reward_support_size": "null", "muzero.temperature_schedule": "[[0,1]]"}
    for lr, seed in itertools.product(["0.1", "0.01"], range(2)):
        group = {**long, "muzero.learning_rate": lr, "muzero.network.value_support_size": lr}
        _job(tmp_path / "wide", f"{lr}-{seed}", group=group, seed=seed,
             stability={"unstable": seed})  # fmt: skip
    table = summarize(load_results(tmp_path / "wide"), metrics=["unstable"], baseline=None)
    assert len(table.shown_keys) == 2
    text = render(table, fmt="latex")
    assert r"\begin{tabular}{@{}lr@{}}" in text and "\n & k/n $\\downarrow$ \\\\" not in text
    # each key by its last name; the caption names the prefixes left out
    assert r"\begin{tabular}[t]{@{}l@{}}learning\_rate=0.1\\{}value\_support\_size=0.1" in text
    caption = text.replace(r"\allowbreak{}", "")
    assert "Group: the settings its runs set, named without muzero., muzero.network.; " in caption


def test_a_group_cell_lists_the_settings_its_runs_set(tmp_path):
    # the second arm leaves muzero.unroll_steps and task.learning_rate at their defaults (—)
    arms = [
        {"muzero.learning_rate": "0.1", "muzero.unroll_steps": "10", "task.learning_rate": "3"},
        {"muzero.learning_rate": "0.01"},
        {},
    ]
    for a, group in enumerate(arms):
        for seed in range(2):
            _job(tmp_path / "ladder", f"{a}-{seed}", group={"x": "y" * 30, **group}, seed=seed,
                 stability={"unstable": seed})  # fmt: skip
    table = summarize(load_results(tmp_path / "ladder"), metrics=["unstable"], baseline=None)
    text = render(table, fmt="latex")
    cells = re.findall(r"^\\begin\{tabular\}\[t\]\{@\{\}l@\{\}\}(.*?)\\rule", text, re.M)
    cells += re.findall(r"^([^\\\s]\S*) & \\begin", text, re.M)  # one line: no stack
    # two keys end in learning_rate: they keep their names; unroll_steps loses its prefix
    assert sorted(cells) == sorted([
        r"muzero.learning\_rate=0.1\\{}unroll\_steps=10\\{}task.learning\_rate=3",
        r"muzero.learning\_rate=0.01",
        "(defaults)",
    ])  # fmt: skip
    caption = text.replace(r"\allowbreak{}", "")
    assert "Group: the settings its runs set, named without muzero.; the others at " in caption


def _committed() -> list[Path]:
    """Every committed folder ``gradlab table`` reads: one holding job folders with a summary."""
    found = [
        d
        for d in sorted([*FINDINGS.glob("*"), *FINDINGS.glob("*/*")])
        if d.is_dir() and any(d.glob("*/summary.json"))
    ]
    return found


def test_the_committed_folders_include_the_main_job_and_the_studies():
    names = {str(d.relative_to(FINDINGS)) for d in _committed()}
    assert {"hidden_scale", "study_faithful_catch", "study_catch_stress"} <= names
    assert _EVERY_RUN <= names and len(names) >= 20


_EVERY_RUN = {
    "hidden_scale",  # the main job: one float (--layout full: four)
    "study_faithful_space_invaders",  # a study across arms with a registered primary
    "study_catch_stress",  # Study 1: six arms x 70 seeds
    "breakout_faithful_lost_after_learning/calibration",  # stacked wide keys, 2 floats
}
"""The folders compiled in every run; the others are marked slow (each table is computed from
its summaries, minutes on CI's two cores in all): ``pytest -m slow`` compiles them too."""


def _cases() -> list:
    return [
        d if str(d.relative_to(FINDINGS)) in _EVERY_RUN else pytest.param(d, marks=pytest.mark.slow)
        for d in _committed()
    ]


@pytest.mark.skipif(engine() is None, reason="no LaTeX engine (pdflatex, lualatex, tectonic)")
@pytest.mark.parametrize("folder", _cases(), ids=lambda d: str(d.relative_to(FINDINGS)))
def test_committed_table_compiles_within_the_page(folder, tmp_path):
    from gradlab._api import table as build

    table = build(folder, note=lambda line: None)  # as gradlab table DIR -f latex
    short, full = (render(table, fmt="latex", methods=m) for m in ("short", "full"))
    assert problems(compile_table(short, tmp_path)) == []
    assert problems(compile_table(short, tmp_path, two_column=True)) == []
    assert problems(compile_table(full, tmp_path)) == []
    every = render(table, fmt="latex", layout="full")  # --layout full
    assert problems(compile_table(every, tmp_path)) == []


@pytest.fixture(scope="module")
def main_job():
    from gradlab._api import table as build

    return build(FINDINGS / "hidden_scale", note=lambda line: None)  # gradlab table's table


def test_the_main_job_is_one_float_of_the_headline_endpoints(main_job):
    text = render(main_job, fmt="latex")  # gradlab table results/findings/hidden_scale -f latex
    (float_,) = _floats(text)
    assert "Part " not in text and "continued" not in text and r"\label{tab:hidden_scale}" in text
    heads = re.findall(r"^regime & variant & (.*) \\\\$", text, re.M)
    assert heads == [r"k/n $\downarrow$ & return $\uparrow$ & end (CIF) $\uparrow$ & p99 "
                     r"$\downarrow$"]  # fmt: skip
    rows = re.findall(r"^(stress|tuned) & ([\w\\]+) & \\begin", text, re.M)
    variants = ["none", "clipnorm", "maxnorm", r"scale\_gradient", r"stop\_gradient"]
    assert rows == [(r, v) for r in ("stress", "tuned") for v in variants]  # each row once
    # what is left out is named, and how to get it
    caption = float_[float_.index(r"\caption{") : float_.index(r"\footnotesize")]
    assert caption.endswith(r"Not shown: $\Delta$ with its 95\% CI; lost after learning, never "
                            "learned.}\n")  # fmt: skip
    assert text.splitlines()[0] == (
        "% compact layout, not shown: Delta and its CI, lost after learning, never learned; every "
        "endpoint with Delta and its CI: gradlab table DIR -f latex --layout full "
        "(Table.to_latex(layout='full'))"
    )
    assert main_job.to_latex() == text


@pytest.mark.skipif(engine() is None, reason="no LaTeX engine (pdflatex, lualatex, tectonic)")
def test_the_main_job_compiles_on_one_page(main_job, tmp_path):
    for methods, two_column in itertools.product(["short", "full"], [False, True]):
        log = compile_table(render(main_job, fmt="latex", methods=methods), tmp_path,
                            two_column=two_column)  # fmt: skip
        assert problems(log) == []
        if methods == "short":
            assert pages(log) == 1, "twocolumn" if two_column else "article"


def test_the_main_job_in_full_splits_by_endpoint_then_regime(main_job):
    text = render(main_job, fmt="latex", layout="full")
    parts = [re.search(r"Part \d of 4: ([^.]*)\.", f).group(1) for f in _floats(text)]
    assert parts == [
        "failed, lost after learning, never learned; regime=stress",
        "failed, lost after learning, never learned; regime=tuned",
        "final return, reached by end (CIF), grad norm p99; regime=stress",
        "final return, reached by end (CIF), grad norm p99; regime=tuned",
    ]
    assert not text.startswith("%") and "Not shown" not in text


@pytest.mark.skipif(engine() is None, reason="no LaTeX engine (pdflatex, lualatex, tectonic)")
def test_the_main_job_in_full_takes_a_page_a_float(main_job, tmp_path):
    text = render(main_job, fmt="latex", layout="full")
    log = compile_table(text, tmp_path)
    assert problems(log) == [] and pages(log) == len(_floats(text)) == 4
