"""Rendering the table: Markdown and LaTeX cells and captions, CSV/JSON numbers, number formats,
and a LaTeX compile in a plain article and a two-column one (skipped when no TeX engine is
installed)."""

from __future__ import annotations

import dataclasses
import io
import itertools
import json
import re

import pandas as pd
import pytest
from _latex import compile_table, engine, problems

from experiments.base.errors import ConfigError
from experiments.report.runs.results import load_results
from experiments.report.table.markup import latex_escape, markdown_table
from experiments.report.table.render import format_number, format_p, render
from experiments.report.table.summarize import Confirmed, summarize


def _job(root, name, *, status="completed", group, seed, stability, **extra):
    job = root / name
    job.mkdir(parents=True)
    summary = {"status": status, "job": name, "ablation": "hidden_scale", "group": group,
               "seed": seed, "task": "catch", "threshold": 0.9, "stability": stability}  # fmt: skip
    summary.update(extra)
    (job / "summary.json").write_text(json.dumps(summary))


def _separated(root):
    """Two regimes, 6 seeds, default metrics: stress none fails every run, sg none; the others in
    between; returns, gradient norms and growth separated by variant in stress, equal in tuned."""
    fails = {"none": 6, "clip": 3, "sg": 0}
    for regime, variant, seed in itertools.product(["tuned", "stress"], fails, range(6)):
        bad = regime == "stress" and seed < fails[variant]
        shift = {"none": 0.0, "clip": 0.2, "sg": 0.4}[variant] if regime == "stress" else 0.0
        stability = {
            "unstable": int(bad), "diverged": int(bad), "diverged_step": 800 if bad else None,
            "reached_threshold": int(not bad), "steps_to_threshold": None if bad else 500 + seed,
            "steps": 800 if bad else 1000,
            "final_return": None if bad else 0.5 + shift + seed / 100,
            "grad_norm_p99": 1.0 + 10 * shift + seed / 100, "hidden_norm_growth": 1.0 + shift,
        }  # fmt: skip
        group = {"regime": regime, "variant": variant}
        _job(root, f"{regime}-{variant}-{seed}", status="diverged" if bad else "completed",
             group=group, seed=seed, stability=stability)  # fmt: skip
    return root


def _stress(root):
    """regime=stress, 5 seeds: unstable none 5/5, clip 2/5, sg 0/5; sg's returns above all."""
    unstable = {"none": [1] * 5, "clip": [1, 1, 0, 0, 0], "sg": [0] * 5}
    offset = {"none": 0.1, "clip": 0.15, "sg": 0.6}
    for variant, seed in itertools.product(unstable, range(5)):
        stability = {
            "unstable": unstable[variant][seed],
            "final_return": offset[variant] + seed / 10,
        }
        group = {"regime": "stress", "variant": variant}
        _job(root, f"{variant}-{seed}", group=group, seed=seed, stability=stability)
    _job(root, "sg-5", status="running", group={"regime": "stress", "variant": "sg"}, seed=5,
         stability={})  # fmt: skip
    return root


def _wide(root):
    """The widest default table a real sweep gives: two regimes x five variants with the longest
    names, five seeds, diverged runs without a final return, and runs not averaged."""
    variants = ["none", "global_clipnorm", "maxnorm_kernel", "scale_gradient", "stop_gradient"]
    for i, (regime, variant, seed) in enumerate(
        itertools.product(["tuned", "stress"], variants, range(5))
    ):
        diverged = regime == "stress" and seed < variants.index(variant) % 3
        stability = {
            "unstable": int(diverged), "diverged": int(diverged),
            "final_return": None if diverged else 0.0635 + (i % 7) * 0.137,
            "steps_to_threshold": None if seed == 4 else 1020.0 + 37 * i,
            "reached_threshold": int(seed != 4), "steps": 900 if diverged else 5000,
            "diverged_step": 900 if diverged else None,
            "grad_norm_p99": 1.3 + (i % 5) * 0.37, "hidden_norm_growth": 1.1 + (i % 3) * 0.07,
        }  # fmt: skip
        status = "diverged" if diverged else "completed"
        group = {"regime": regime, "variant": variant}
        _job(root, f"{regime}-{variant}-{seed}", status=status, group=group, seed=seed,
             stability=stability)  # fmt: skip
    for status, seed in [("running", 5), ("failed", 6), ("timeout", 7)]:
        group = {"regime": "stress", "variant": "maxnorm_kernel"}
        _job(root, f"x-{seed}", status=status, group=group, seed=seed, stability={})
    return root


@pytest.fixture()
def stress(tmp_path):
    return summarize(
        load_results(_stress(tmp_path / "hs")),
        metrics=["unstable", "final_return"],
        n_resamples=999,
    )


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


# --- Markdown ----------------------------------------------------------------------------------


def test_markdown_cells(stress):
    lines = render(stress, fmt="md").splitlines()
    assert _cells(lines[0]) == [
        "variant", "unstable ↓", "unstable Δ", "unstable p_adj", "final return ↑",
        "final return Δ", "final return p_adj", "excluded",
    ]  # fmt: skip
    none, clip, sg = (_cells(line) for line in lines[2:5])
    assert none[:4] == ["none", "5/5 [0.48, 1.00]", "base", "base"]
    # clip 2/5 vs 5/5: Fisher 42/252 = 0.167, Holm over m = 2: max(0.167, 2 x 2/252) = 0.17: plain
    assert clip[1] == "2/5 [0.05, 0.85]" and clip[3] == "0.17"
    assert clip[2].startswith("-0.60 [")  # 2/5 - 5/5
    # sg 0/5 vs 5/5: 2/252 x 2 = 0.0159 < 0.05: bold; Newcombe RD -1 with CI [-1.00, -0.39]
    assert sg[1:4] == ["**0/5** [0.00, 0.52]", "-1.00 [-1.00, -0.39]", "0.016"]
    # final return: sg 0.8 vs none 0.3 (means of 0.6..1.0 and 0.1..0.5): +0.500, p = 2/252 x 2
    assert sg[4].startswith("**0.800** [") and sg[5].startswith("+0.500 [") and sg[6] == "0.016"
    assert "**" not in "".join(clip + none)
    assert sg[7] == "1 running" and none[7] == "—"


def test_markdown_caption_names_everything(stress):
    caption = render(stress, fmt="md").strip().splitlines()[-1]
    for piece in [
        "hidden_scale (regime=stress, task=catch).",  # the keys every run shares
        "n = 5 runs per group, every completed or diverged run counted (intention to treat); "
        "1 more excluded (1 running)",
        "unstable: diverged, or collapsed (final-window return fell ≥ 25% of the return range",
        "exact Clopper–Pearson 95% CI",
        "Contrasts: each variant against variant=none (independent samples).",
        "risk difference with Newcombe hybrid-score 95% CI, two-sided Fisher's exact test",
        "difference of the means with 95% percentile-bootstrap CI",
        "Mann–Whitney U",
        "p_adj: Holm-adjusted over the table, over that stratum's contrasts in the column (m=2)",
        "Bold: p_adj < α = 0.05, and nothing else.",
        "Final return: every run counts; a diverged run, or one without a final return, counts "
        "as the mean return of its task's uniformly random policy",
    ]:
        assert piece in caption, piece
    assert "best value" not in caption and "not significantly worse" not in caption
    assert "P(better)" not in caption


def test_caption_names_the_analysis_test_strata_and_confirmatory(tmp_path):
    results = load_results(_separated(tmp_path / "hs"))
    table = summarize(results, metrics=["failed", "steps_to_threshold"], analysis="paired",
                      confirmatory=[({"regime": "stress"}, "sg", "failed")],
                      n_resamples=99, alpha=0.1)  # fmt: skip
    text = render(table, fmt="md")
    caption = text.strip().splitlines()[-1]
    for piece in [
        "runs paired by seed (paired analysis)",
        "mean paired difference with 95% paired-bootstrap CI, exact McNemar p",
        "reached by end (CIF): difference of the cumulative incidences with 95% MOVER CI from "
        "the two arms' CIs, Gray's test (rho = 0) (unpaired)",
        "Holm-adjusted within each regime",
        "stress: m=2 (failed m=1); tuned: m=2",  # the confirmatory contrast left stress's family
        "*: confirmatory, declared before the runs, tested alone (m=1): "
        "regime=stress, variant=sg on failed",
        "Reached by end (CIF) (steps_to_threshold): the Aalen–Johansen cumulative incidence of "
        "reaching the threshold (0.9) before diverging, by the end of the budget",
        "divergence is a competing event",
        "failed: did not learn and hold: never reached the task's competence threshold (0.9)",
        "α = 0.1",
    ]:
        assert piece in caption, piece
    row = next(line for line in text.splitlines() if "stress | sg" in line)
    # sg 0/6 vs none 6/6 paired: 6 discordant pairs one way, McNemar 2 x 0.5^6 = 0.03125, alone
    assert _cells(row)[4] == "0.031*" and _cells(row)[2].startswith("**0/6**")
    barnard = summarize(results, metrics=["failed"], rate_test="barnard", n_resamples=99)
    assert "two-sided Barnard's exact test" in render(barnard, fmt="md")


def _bold_agrees_with_printed_p(text: str, alpha: float) -> int:
    """Checks every metric cell of a Markdown table: its estimate is bold iff the printed p_adj
    beside it is < alpha; returns how many bold cells there were."""
    lines = text.splitlines()
    header = _cells(lines[0])
    bold = 0
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        cells = _cells(line)
        for j, name in enumerate(header):
            if name.endswith("p_adj"):
                continue
            if any("**" in c for c in [cells[j]]) and not name.endswith(("↑", "↓", "K/0")):
                raise AssertionError(f"bold outside an estimate: {name}: {cells[j]}")
        for j, name in enumerate(header):
            if not name.endswith("p_adj"):
                continue
            metric = name[: -len(" p_adj")]
            k = next(i for i, h in enumerate(header) if h.startswith(metric) and i < j)
            printed = cells[j].rstrip("*")
            significant = printed not in ("base", "—") and (
                printed == "<0.001" or float(printed) < alpha
            )
            assert cells[k].startswith("**") == significant, (line, name)
            bold += significant
    return bold


@pytest.mark.parametrize("alpha", [0.05, 0.2])
def test_every_rendered_cell_is_bold_iff_its_printed_p_adj_is_below_alpha(tmp_path, alpha):
    results = load_results(_separated(tmp_path / "hs"))
    table = summarize(results, n_resamples=199, alpha=alpha, diverged_return=-0.6)
    assert _bold_agrees_with_printed_p(render(table, fmt="md"), alpha) >= 3  # the test sees bold
    for line in render(table, fmt="latex").splitlines():  # LaTeX: \textbf iff p=... < alpha
        for cell in line.split(" & ")[2:]:
            p = re.search(r"p=(\$<\$)?([0-9.]+)", cell)
            significant = p is not None and (p.group(1) is not None or float(p.group(2)) < alpha)
            assert (r"\textbf" in cell) == significant, cell


def test_format_p_never_rounds_across_alpha():
    assert format_p(0.0496, alpha=0.05) == "0.0496"  # .2g would print 0.05: not < 0.05
    assert format_p(0.0504, alpha=0.05) == "0.05"  # printed 0.05 is not < 0.05, nor is 0.0504
    assert format_p(0.0456, alpha=0.05) == "0.046"
    assert format_p(0.1496, alpha=0.15) == "0.1496"
    assert format_p(0.0004, alpha=0.001) == "0.0004" and format_p(0.0004) == "<0.001"


def test_markdown_n_column_when_seeds_differ(tmp_path):
    for variant, seeds in [("none", 3), ("sg", 2)]:
        for seed in range(seeds):
            _job(tmp_path, f"{variant}-{seed}", group={"variant": variant}, seed=seed,
                 stability={"final_return": 0.5 + seed})  # fmt: skip
    text = render(summarize(load_results(tmp_path), metrics=["final_return"]), fmt="md")
    assert _cells(text.splitlines()[0])[:2] == ["variant", "n"]
    assert _cells(text.splitlines()[3])[:2] == ["sg", "2"]
    assert "n: runs per group" in text


def test_markdown_fewer_runs_and_imputed(tmp_path):
    for variant, seed in itertools.product(["none", "sg"], range(3)):
        diverged = (variant, seed) == ("sg", 2)
        _job(tmp_path, f"{variant}-{seed}", group={"variant": variant}, seed=seed,
             status="diverged" if diverged else "completed",
             stability={"final_return": None if diverged else seed + (variant == "sg"),
                        "grad_norm_p99": None if diverged else 1.0,
                        "diverged": int(diverged)})  # fmt: skip
    table = summarize(load_results(tmp_path), metrics=["final_return", "grad_norm_p99"],
                      n_resamples=99, diverged_return=-1.0)  # fmt: skip
    sg = _cells(render(table, fmt="md").splitlines()[3])
    assert sg[1].endswith("(1 imputed)") and sg[1].startswith("0.667 [")  # (1 + 2 - 1) / 3
    assert sg[4].endswith("(n=2)")  # a gradient figure is no return: the diverged run has none
    assert "(catch -1; imputed: their count)" in render(table, fmt="md")


def test_single_seed_shows_no_interval(tmp_path):
    _job(tmp_path, "a", group={"variant": "none"}, seed=0, stability={"final_return": 0.25})
    text = render(summarize(load_results(tmp_path), metrics=["final_return"]), fmt="md")
    assert "0.250 [—]" in text


def test_markdown_is_stable(tmp_path):
    results = load_results(_wide(tmp_path / "hs"))
    kw = {"n_resamples": 99, "diverged_return": -0.6}
    assert render(summarize(results, **kw), fmt="md") == render(summarize(results, **kw), fmt="md")


# --- LaTeX -------------------------------------------------------------------------------------


def test_latex_structure(stress):
    text = render(stress, fmt="latex", layout="full")
    for piece in (r"\begin{table}", r"\toprule", r"\midrule", r"\bottomrule", r"\caption{"):
        assert text.count(piece) == 1, piece
    assert text.index(r"\toprule") < text.index(r"\midrule") < text.index(r"\bottomrule")
    assert r"\label{tab:hidden_scale}" in text and r"\footnotesize" in text
    assert text.isascii()  # compiles with any engine, no inputenc or fonts needed
    assert "\n & unstable & final & excluded \\\\\n" not in text
    assert r"k/n $\downarrow$ & return $\uparrow$ & excluded \\" in text  # two-line headers
    row = next(line for line in text.splitlines() if line.startswith("sg &"))
    assert (r"\textbf{0/5}\\{}\scriptsize [0.00, 0.52]\\{}\scriptsize $\Delta$=-1.00\\{}"
            r"\scriptsize [-1.00, -0.39]\\{}\scriptsize p=0.016") in row  # fmt: skip
    assert row.count(r"\textbf{") == 2 and row.endswith(r"& 1 \\")  # 1 run excluded
    assert r"\textbf" not in next(line for line in text.splitlines() if line.startswith("none &"))


def test_latex_compact_cells_hold_the_estimate_its_ci_and_p(stress):
    text = render(stress, fmt="latex")  # compact: -m unstable,final_return are both shown
    assert text.count(r"\begin{table}") == 1 and "$\\Delta$=" not in text.split("\\label")[1]
    row = next(line for line in text.splitlines() if line.startswith("sg &"))
    # the lines after the first 8pt apart (\\[-1.5pt]), no Delta and no Delta interval
    assert (r"\textbf{0/5}\\[-1.5pt]{}\scriptsize [0.00, 0.52]\\[-1.5pt]{}\scriptsize p=0.016"
            r"\rule") in row  # fmt: skip
    assert row.count(r"\textbf{") == 2 and row.endswith(r"& 1 \\")
    assert text.startswith("% compact layout, not shown: Delta and its CI; every endpoint with ")
    caption = text[text.index(r"\caption{") : text.index(r"\footnotesize")]
    assert "Below each estimate: its 95\\% CI and p of the contrast against variant=none" in caption
    assert caption.endswith(r"Not shown: $\Delta$ with its 95\% CI.}" + "\n")
    assert render(stress, fmt="latex", layout="full").startswith(r"\begin{table}")


def test_latex_compact_shows_the_headline_of_the_default_endpoints(tmp_path):
    table = summarize(load_results(_separated(tmp_path / "hs")), n_resamples=99)
    compact, full = (render(table, fmt="latex", layout=x) for x in ("compact", "full"))
    heads = " ".join(re.findall(r"^regime & variant & (.*)$", compact, re.M))
    assert heads.count("&") == 3  # failed, final return, reached by end, grad norm p99
    assert "lost after" not in compact.split("\n", 1)[1].split("Not shown")[0]
    assert "Not shown: $\\Delta$ with its 95\\% CI; lost after learning, never learned." in compact
    assert "lost after" in full and "Not shown" not in full
    # a confirmatory contrast's endpoint is shown, whichever it is
    starred = dataclasses.replace(table, confirmatory=(Confirmed("variant=sg", "never_learned"),))
    text = render(starred, fmt="latex")
    assert re.search(r"^\\multicolumn\{2\}\{c\}\{\} & failed & never & final & ", text, re.M)
    assert "Not shown: $\\Delta$ with its 95\\% CI; lost after learning." in text


def test_latex_bad_layout_names_the_choices(stress):
    with pytest.raises(ConfigError, match=r"^unknown layout 'wide'; choose one of: compact, full$"):
        render(stress, fmt="latex", layout="wide")


def test_latex_caption_is_short_and_full_adds_the_method(stress):
    short = render(stress, fmt="latex", layout="full")
    caption = short[short.index(r"\caption{") : short.index(r"\footnotesize")]
    for words in ("n = 5 runs per group", "Fisher's exact test (rates)", "Mann--Whitney U",
                  "Holm-adjusted over the table (m=2)", r"p\_\allowbreak{}adj $<$ $\alpha$ = 0.05",
                  "1 more excluded (last column)", "random-policy return"):  # fmt: skip
        assert words in caption, words
    assert len(caption) < 900 and "percentile-bootstrap" not in short  # the method is not in it
    full = render(stress, fmt="latex", methods="full", layout="full")
    assert full.startswith(short)  # the same table, then the method as a paragraph
    method = full[len(short) :]
    assert method.startswith(r"\par\medskip\noindent{\sloppy\textbf{Table~\ref{tab:hidden_scale}")
    assert r"95\% percentile-bootstrap" in method and "CI below" in method
    assert r"p\_\allowbreak{}adj (below)" in method


def test_latex_caption_stars_only_a_confirmatory_contrast(stress):
    assert "*: confirmatory" not in render(stress, fmt="latex")
    starred = dataclasses.replace(stress, confirmatory=(Confirmed("variant=sg", "unstable"),))
    text = render(starred, fmt="latex")
    assert "*: confirmatory, declared before the runs, tested alone (m=1)." in text


def test_latex_bad_caption_choice_names_the_choices(stress):
    with pytest.raises(ConfigError, match=r"^unknown caption 'long'; choose one of: full, short$"):
        render(stress, fmt="latex", methods="long")


def test_latex_escapes_names(tmp_path):
    _job(tmp_path, "a", group={"variant": "scale_gradient"}, seed=0, stability={"unstable": 0})
    text = render(summarize(load_results(tmp_path), metrics=["unstable"]), fmt="latex")
    assert r"scale\_gradient" in text and "scale_gradient &" not in text


@pytest.mark.skipif(engine() is None, reason="no LaTeX engine (pdflatex, lualatex, tectonic)")
def test_latex_compiles_and_fits_the_text_width(tmp_path):
    results = load_results(_wide(tmp_path / "hidden_scale"))
    table = summarize(results, n_resamples=199, diverged_return=-0.6)
    assert table.shown_keys == ("regime", "variant")
    for methods, two_column, layout in itertools.product(
        ["short", "full"], [False, True], ["compact", "full"]
    ):
        text = render(table, fmt="latex", methods=methods, layout=layout)
        assert problems(compile_table(text, tmp_path, two_column=two_column)) == []
    # every metric at once: blocks of at most three metric columns (full; compact: as many as
    # the width takes, here four), each within the width
    every = ["failed", "unstable", "diverged", "final_return", "best_return", "return_auc",
             "steps_to_threshold", "grad_norm_p99", "hidden_norm_growth"]  # fmt: skip
    summary = summarize(results, metrics=every, n_resamples=99, diverged_return=-0.6)
    for layout, most in [("full", 3), ("compact", 4)]:
        wide = render(summary, fmt="latex", layout=layout)
        heads = re.findall(r"\\begin\{tabular\}\{@\{\}(l+)(r+)@\{\}\}", wide)
        assert len(heads) >= 3 and max(len(r) for _, r in heads) == most + 1  # (+ excluded)
        assert problems(compile_table(wide, tmp_path)) == []
    separated = summarize(load_results(_separated(tmp_path / "separated")), n_resamples=99)
    assert problems(compile_table(render(separated, fmt="latex"), tmp_path)) == []
    # the check does see a table that is too wide: a group name longer than the text width
    _job(tmp_path / "long", "a", group={"variant": "x" * 120}, seed=0, stability={"unstable": 0})
    long = summarize(load_results(tmp_path / "long"), metrics=["unstable"])
    assert "Overfull \\hbox" in problems(compile_table(render(long, fmt="latex"), tmp_path))[0]


# --- CSV and JSON --------------------------------------------------------------------------------


def test_csv_and_json(stress):
    back = pd.read_csv(io.StringIO(render(stress, fmt="csv")))
    assert list(back["variant"]) == ["none", "clip", "sg"]
    assert back["unstable_k"].tolist() == [5, 2, 0] and back["unstable_n"].tolist() == [5] * 3
    data = json.loads(render(stress, fmt="json"))
    assert data["ablation"] == "hidden_scale" and data["baseline"] == "variant=none"
    assert data["alpha"] == 0.05 and data["constants"] == {"regime": "stress", "task": "catch"}
    assert data["analysis"] == "independent" and data["rate_test"] == "fisher"
    assert data["m"] == {"unstable": {"all": 2}, "final_return": {"all": 2}}
    none, clip, sg = data["rows"]
    assert none["unstable_p"] is None and none["is_baseline"]  # NaN -> null
    assert sg["unstable_p"] == pytest.approx(2 / 252) and sg["unstable_p_adjusted"] == (
        pytest.approx(4 / 252))  # fmt: skip
    assert (sg["unstable_ci_low"], sg["unstable_ci_high"]) == (0.0, pytest.approx(0.5218, abs=1e-4))
    assert sg["unstable_delta"] == -1.0 and sg["unstable_delta_high"] == pytest.approx(
        -0.3855, abs=1e-4
    )
    assert sg["unstable_bold"] and not clip["unstable_bold"] and not none["unstable_bold"]
    assert sg["excluded"] == 1 and sg["excluded_note"] == "1 running"
    with pytest.raises(ConfigError, match="unknown format 'xml'"):
        render(stress, fmt="xml")


# --- numbers and markup ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, text",
    [(0.8123, "0.812"), (0.8, "0.800"), (0.0635, "0.0635"), (3.14159, "3.14"), (12.34, "12.3"),
     (475.3, "475"), (12345.6, "12,346"), (1.5e6, "1.5e+06"), (-0.5, "-0.500"),
     (float("nan"), "—")],
)  # fmt: skip
def test_format_number(value, text):
    assert format_number(value) == text


@pytest.mark.parametrize(
    "p, text",
    [(34 / 70, "0.49"), (1.0, "1.00"), (0.1, "0.10"), (0.0456, "0.046"), (2 / 252, "0.0079"),
     (0.0002, "<0.001"), (float("nan"), "—")],
)  # fmt: skip
def test_format_p(p, text):
    assert format_p(p) == text


def test_markup_helpers():
    assert latex_escape("a_b 5% {x} #1 & $") == r"a\_b 5\% \{x\} \#1 \& \$"
    table = markdown_table(["name", "n"], [["a|b", "10"], ["c", "2"]], align=["left", "right"])
    expected = ["| name |   n |", "| ---- | --: |", r"| a\|b |  10 |", "| c    |   2 |"]
    assert table.splitlines() == expected
    with pytest.raises(ValueError):
        markdown_table(["a"], [["1", "2"]])


def test_rate_without_values_is_a_dash(tmp_path):
    """Summaries written before ``unstable`` existed, with no metrics file to recompute it from."""
    for variant, seed in itertools.product(["none", "sg"], range(2)):
        _job(tmp_path, f"{variant}-{seed}", group={"variant": variant}, seed=seed,
             stability={"final_return": 0.5})  # fmt: skip
    table = summarize(load_results(tmp_path), metrics=["unstable"])
    lines = render(table, fmt="md").splitlines()
    assert _cells(lines[3]) == ["sg", "—", "—", "—"]
    assert _cells(lines[2]) == ["none", "—", "base", "base"]
    assert "(m=0)" in lines[-1]
