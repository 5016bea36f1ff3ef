"""``gradlab pool -f latex`` (experiments/report/pool/render.py, family.py through
experiments/report/table/latex_grid.py): a pooled table too wide for the text width goes into
blocks that each fit, every row in each; long stratum names break after ``_``; a short caption,
the whole one as the method paragraph after the table; compiled with a LaTeX engine where one is
installed (a plain article and a two-column one with ``table*``): no overfull box, no float
taller than the page."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _latex import compile_table, engine, problems

from experiments.report.pool.family import FamilySpec, family_table, render_family
from experiments.report.pool.render import across_caption, render_across
from experiments.report.table.latex_grid import wrap_label
from experiments.report.table.markup import latex_breakable

FINDINGS = Path(__file__).resolve().parents[2] / "results" / "findings"
NO_ENGINE = "no LaTeX engine (pdflatex, lualatex, tectonic)"


def _study(root: Path, name: str, failures: dict[str, int], runs: int = 12) -> Path:
    """A folder of ``runs`` runs an arm on catch; ``failures[arm]`` of them diverge."""
    for arm, failed in failures.items():
        for seed in range(runs):
            bad = seed < failed
            job = root / name / f"{arm}-{seed}"
            job.mkdir(parents=True)
            variant, _, setting = arm.partition(" ")
            group = {"variant": variant, **dict([setting.split("=")] if setting else [])}
            summary = {"status": "diverged" if bad else "completed", "job": job.name,
                       "ablation": name, "group": group, "seed": seed, "task": "catch",
                       "threshold": 0.9, "steps": 100, "training_steps": 100,
                       "stability": {"unstable": int(bad), "diverged": int(bad),
                                     "diverged_step": 50 if bad else None,
                                     "reached_threshold": int(not bad),
                                     "steps_to_threshold": None if bad else 10,
                                     "final_return": None if bad else 1.0}}  # fmt: skip
            (job / "summary.json").write_text(json.dumps(summary))
    return root / name


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    """Four strata with long names, five arms (one with a setting), and an equivalence margin:
    the case that overflowed a 345pt text width by 197pt."""
    from gradlab._api import pool

    root = tmp_path_factory.mktemp("pool")
    arms = {"none": 6, "scale_gradient": 2, "stop_gradient": 3, "maxnorm": 4,
            "clipnorm variant.clipnorm=0.6": 5}  # fmt: skip
    names = ["study_catch_stress", "study_catch_pseudocode_stress", "study_cartpole_stress",
             "study_space_invaders_stress"]  # fmt: skip
    folders = [_study(root, name, arms) for name in names]
    return pool(folders, margin=0.1, primary="scale_gradient")


def test_wrap_label_breaks_after_underscores():
    assert wrap_label("catch") == "catch"
    assert wrap_label("space_invaders") == "space_\ninvaders"
    assert wrap_label("study_catch_pseudocode_stress") == "study_\ncatch_\npseudocode_\nstress"
    assert wrap_label("study_catch_pseudocode_stress", 12) == "study_catch_\npseudocode_\nstress"
    assert wrap_label("study (2)") == "study (2)"


def test_a_wide_pool_goes_into_blocks_each_with_every_row(wide):
    text = render_across(wide, fmt="latex")
    assert text.count(r"\begin{table}") == 1 and text.count(r"\begin{tabular}{@{}l") == 2
    # every arm in each block (bold or not), its setting on a second line
    plain = re.sub(r"\\textbf\{([^}]*)\}", r"\1", text)
    for arm in ["none", "maxnorm", r"scale\_gradient", r"stop\_gradient"]:
        assert len(re.findall(rf"^{re.escape(arm)} & ", plain, re.M)) == 2, arm
    clip = r"\begin{tabular}[t]{@{}l@{}}clipnorm\\{}(clipnorm=0.6)"
    assert len(re.findall(rf"^{re.escape(clip)}", plain, re.M)) == 2
    # long stratum names broken after _; the pooled columns (the RD's interval below it)
    assert r"\begin{tabular}[t]{@{}c@{}}study\_\\{}catch\_\\{}pseudocode\_\\{}stress" in text
    assert "& verdict \\\\" in text and r"\scriptsize [" in text
    # a short caption; the whole one after the table as the method paragraph
    caption = re.search(r"\\caption\{(.*)\}\n", text).group(1)
    assert len(caption.replace(r"\allowbreak{}", "")) < 700  # the whole one: 2,000 and more
    assert caption.endswith("Method: after the table.")
    assert text.endswith(
        r"\par\medskip\noindent{\sloppy\textbf{Table~\ref{tab:pooled_failed}, method.} "
        + latex_breakable(across_caption(wide))
        + "\\par}\n"
    )


@pytest.mark.skipif(engine() is None, reason=NO_ENGINE)
def test_a_wide_pool_compiles_within_the_text_width(wide, tmp_path):
    text = render_across(wide, fmt="latex")
    assert problems(compile_table(text, tmp_path)) == []
    assert problems(compile_table(text, tmp_path, two_column=True)) == []


@pytest.mark.skipif(engine() is None, reason=NO_ENGINE)
def test_the_committed_faithful_studies_pooled_with_a_margin_compile(tmp_path):
    from gradlab._api import pool

    names = ["catch", "cartpole", "breakout", "space_invaders"]
    table = pool([FINDINGS / f"study_faithful_{n}" for n in names], by_name=True,
                 primary="scale_gradient", margin=0.1)  # fmt: skip
    text = render_across(table, fmt="latex")  # was 197pt too wide
    assert problems(compile_table(text, tmp_path)) == []
    assert problems(compile_table(text, tmp_path, two_column=True)) == []


@pytest.fixture(scope="module")
def family():
    rng = np.random.default_rng(0)
    tasks = ["catch", "cartpole", "breakout", "space_invaders", "asterix", "freeway", "seaquest"]
    runs = pd.DataFrame(
        [{"status": "completed", "task": task, "variant": arm,
          "normalised_return": rng.normal(0.5, 0.2)}
         for task in tasks for arm in ("none", "scale_gradient") for _ in range(10)]
    )  # fmt: skip
    spec = FamilySpec("minatar_return", "scale_gradient", "none", "normalised_return", 0.05,
                      0.1, per_task="holm")  # fmt: skip
    return family_table(runs, spec, tasks)


def test_a_family_table_stacks_its_intervals_and_tost(family):
    text = render_family(family, fmt="latex")
    assert text.count(r"\begin{table}") == 1 and text.count(r"\begin{tabular}{@{}l") == 1
    rows = re.findall(r"^(\w+|space\\_invaders) & ", text.split(r"\midrule")[1], re.M)
    assert rows == ["catch", "cartpole", "breakout", r"space\_invaders", "asterix", "freeway",
                    "seaquest", "pooled"]  # fmt: skip
    pooled = next(line for line in text.splitlines() if line.startswith("pooled & "))
    assert re.search(r"\\scriptsize \[[-+]0\.\d+, [-+]0\.\d+\]\\\\\{\}\\scriptsize "
                     r"(equivalent|different|not separated|lower|higher)", pooled)  # fmt: skip
    assert "Method: after the table." in text and r"Table~\ref{tab:family_minatar_return}" in text


@pytest.mark.skipif(engine() is None, reason=NO_ENGINE)
def test_a_family_table_compiles_within_the_text_width(family, tmp_path):
    text = render_family(family, fmt="latex")
    assert problems(compile_table(text, tmp_path)) == []
    assert problems(compile_table(text, tmp_path, two_column=True)) == []
