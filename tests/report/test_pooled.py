"""The pooled contrast across strata: CMH, Mantel-Haenszel odds ratio and Breslow-Day against
hand computation; gradlab pool's cross-task table on real summary files (within-stratum p_adj
by hand, task labels, settings within a folder, a study's primary, every format); bad input as
one-line errors."""

import hashlib
import json
import math
import shutil

import numpy as np
import pytest
from scipy import stats

from experiments.base.errors import ConfigError
from experiments.protocols.study.pooled import registrations
from experiments.report.pool.across import across_table
from experiments.report.pool.render import across_records, render_across
from experiments.report.statistics.pooled_rates import Stratum, exact_conditional_p, pooled_contrast
from experiments.report.table.render import format_p

# Two strata, arm vs baseline events: 2/10 vs 6/10 and 1/8 vs 5/8.
STRATA = {"a": Stratum(2, 10, 6, 10), "b": Stratum(1, 8, 5, 8)}


def _across(folders, **options):
    """:func:`across_table` given each folder's registration as ``gradlab pool`` reads it."""
    ask = {k: options.get(k, d) for k, d in (("endpoint", "failed"), ("baseline", "none"),
                                             ("alpha", 0.05))}  # fmt: skip
    return across_table(folders, registrations=registrations(folders, **ask), **options)


def test_cmh_and_mantel_haenszel_by_hand():
    # CMH without continuity correction: sum(a - E[a])^2 / sum Var[a], per stratum
    # E = r1 c1 / n and Var = r1 r2 c1 c2 / (n^2 (n - 1)):
    #   stratum a: E = 10 * 8 / 20 = 4, Var = 10 * 10 * 8 * 12 / (400 * 19) = 1.2631579
    #   stratum b: E = 8 * 6 / 16 = 3,  Var = 8 * 8 * 6 * 10 / (256 * 15) = 1
    # chi2 = (-2 - 2)^2 / 2.2631579 = 7.0697674
    # MH odds ratio = sum(a d / n) / sum(b c / n) = (8/20 + 3/16) / (48/20 + 35/16) = 0.128065
    c = pooled_contrast(STRATA)
    assert c.statistic == pytest.approx(16 / (9600 / 7600 + 1.0), rel=1e-9)
    assert c.pvalue == pytest.approx(stats.chi2.sf(16 / (9600 / 7600 + 1.0), 1), rel=1e-9)
    assert c.pvalue == pytest.approx(0.0078397, rel=1e-4)
    assert c.odds_ratio == pytest.approx((8 / 20 + 3 / 16) / (48 / 20 + 35 / 16), rel=1e-9)
    low, high = c.odds_ratio_ci
    assert low < c.odds_ratio < high < 1
    assert 0 <= c.homogeneity_p <= 1 and c.left_out == ()


def test_exact_conditional_test_by_hand_and_by_enumeration():
    from itertools import product
    from math import comb

    # arm 0/10 vs baseline 2/10 and 0/10 vs 5/10: the arm's total events T = 0 has probability
    # C(10,2)/C(20,2) * C(10,5)/C(20,5); equal arm sizes make T symmetric about 3.5, so T = 7 is
    # as likely, and every other sum is likelier: p = 2 * P(T = 0)
    zero = comb(10, 2) / comb(20, 2) * comb(10, 5) / comb(20, 5)
    strata = [Stratum(0, 10, 2, 10), Stratum(0, 10, 5, 10)]
    assert exact_conditional_p(strata) == pytest.approx(2 * zero, rel=1e-9)
    assert 2 * zero == pytest.approx(0.0076992, rel=1e-4)
    # one stratum: Fisher's two-sided exact test
    for s in (
        Stratum(2, 5, 5, 5),
        Stratum(2, 10, 6, 10),
        Stratum(0, 7, 3, 9),
        Stratum(6, 10, 5, 10),
    ):
        assert exact_conditional_p([s]) == pytest.approx(stats.fisher_exact(s.table).pvalue)
    # three unequal strata against brute-force enumeration of every table with the margins
    three = [Stratum(1, 6, 4, 7), Stratum(3, 9, 2, 5), Stratum(0, 4, 3, 8)]

    def pmf(s, k):
        events, total = s.arm_events + s.base_events, s.arm_n + s.base_n
        return comb(s.arm_n, k) * comb(s.base_n, events - k) / comb(total, events)

    sums: dict[int, float] = {}
    ranges = [range(0, min(s.arm_n, s.arm_events + s.base_events) + 1) for s in three]
    for ks in product(*ranges):
        prob = 1.0
        for s, k in zip(three, ks, strict=True):
            prob *= pmf(s, k) if s.arm_events + s.base_events - k <= s.base_n else 0.0
        sums[sum(ks)] = sums.get(sum(ks), 0.0) + prob
    observed = sums[sum(s.arm_events for s in three)]
    by_hand = sum(v for v in sums.values() if v <= observed * (1 + 1e-7))
    assert exact_conditional_p(three) == pytest.approx(by_hand, rel=1e-9)
    # pooled_contrast carries it over the informative strata only
    c = pooled_contrast({"a": strata[0], "b": strata[1], "none": Stratum(4, 4, 4, 4)})
    assert c.exact_p == pytest.approx(2 * zero) and c.left_out == ("none",)


def test_breslow_day_sees_opposite_effects_and_one_stratum_has_none():
    # one stratum where the arm fails less, one where it fails more: the odds ratios differ
    opposite = pooled_contrast({"a": Stratum(1, 20, 15, 20), "b": Stratum(12, 20, 4, 20)})
    assert opposite.homogeneity_p < 0.001
    same = pooled_contrast({"a": Stratum(2, 10, 6, 10), "b": Stratum(4, 20, 12, 20)})
    assert same.homogeneity_p > 0.9  # the same table twice over: equal odds ratios
    single = pooled_contrast({"a": STRATA["a"]})
    assert math.isnan(single.homogeneity_p)
    # with one stratum, CMH is the (n - 1)/n-scaled Pearson chi-square of the 2x2 table
    pearson = stats.chi2_contingency(STRATA["a"].table, correction=False)[0]
    assert single.statistic == pytest.approx(pearson * 19 / 20, rel=1e-9)


def test_a_stratum_without_variation_is_left_out_and_named():
    c = pooled_contrast({**STRATA, "flat": Stratum(5, 5, 5, 5)})
    assert c.left_out == ("flat",)
    assert c.statistic == pytest.approx(pooled_contrast(STRATA).statistic)
    nothing = pooled_contrast({"flat": Stratum(5, 5, 5, 5)})
    assert math.isnan(nothing.pvalue) and nothing.left_out == ("flat",)
    with pytest.raises(ConfigError, match="at least one stratum"):
        pooled_contrast({})


def _write(folder, variant, seed, *, unstable, reached, task="catch", threshold=0.9,
           task_override=False, fields=None, **group):  # fmt: skip
    if task_override:  # as a study's sweep runs it: task=... is one of the job's overrides
        group = {**group, "task": task}
    job = folder / "__".join([*(f"{k}={v}" for k, v in group.items()), f"variant={variant}",
                              f"seed={seed}"])  # fmt: skip
    job.mkdir(parents=True)
    summary = {
        "status": "diverged" if unstable else "completed",
        "job": job.name,
        "ablation": folder.name,
        "overrides": {**group, "variant": variant, "seed": str(seed)},
        "group": {**group, "variant": variant},
        "seed": seed,
        "task": task,
        "variant": variant,
        "threshold": threshold,
        "training_steps": 100,
        "steps": 100,
        # an unstable run here diverged (at step 50, before any reach); a reached run held
        "stability": {
            "unstable": int(unstable),
            "diverged": int(unstable),
            "diverged_step": 50 if unstable else None,
            "reached_threshold": int(reached),
            "steps_to_threshold": 10 if reached else None,
            "final_return": (1.0 if reached else 0.0) if not unstable else None,
        },
        **(fields or {}),
    }
    (job / "summary.json").write_text(json.dumps(summary))


def _folder(root, name, counts, *, settings=None, **where):
    """counts: variant -> (failed runs, total runs); a failed run here diverged. settings:
    variant -> the overrides its runs carry besides ``where`` (every run's)."""
    folder = root / name
    seed = 0
    for variant, (failed, total) in counts.items():
        extra = (settings or {}).get(variant, {})
        for i in range(total):
            _write(folder, variant, seed, unstable=i < failed, reached=i >= failed,
                   **where, **extra)  # fmt: skip
            seed += 1
    return folder


def _md(folders, **options):
    text = render_across(_across(folders, **options), fmt="md")
    table, caption = text.strip().split("\n\n")
    return table, caption


def _rows(table):
    lines = table.splitlines()
    header = [c.strip() for c in lines[0].split("|")[1:-1]]
    return header, {
        line.split("|")[1].strip(): [c.strip() for c in line.split("|")[1:-1]] for line in lines[2:]
    }


def _holm(ps):
    """Holm's step-down adjustment by hand (monotone, capped at 1)."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out, running = [0.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        out[i] = running
    return out


def test_table_from_summary_files(tmp_path):
    one = _folder(tmp_path, "one", {"none": (6, 10), "scale_gradient": (2, 10), "maxnorm": (5, 10)})
    two = _folder(tmp_path, "two", {"none": (5, 8), "scale_gradient": (1, 8), "maxnorm": (5, 8)})
    across = _across([one, two], endpoint="failed")
    # both folders are Catch: labelled by folder, one stratum each
    assert [s.label for s in across.strata] == ["one", "two"]
    assert across.cells[("one", "scale_gradient")].k == 2
    assert (across.cells[("two", "none")].k, across.cells[("two", "none")].n) == (5, 8)
    table, caption = _md([one, two], endpoint="failed")
    header, row = _rows(table)
    assert header[:5] == ["variant", "one k/n", "one p_adj", "two k/n", "two p_adj"]
    assert row["none"][1:5] == ["6/10", "base", "5/8", "base"]
    # within each folder: Fisher's exact test against none, Holm over its two arms, by hand
    first = {"scale_gradient": (2, 10), "maxnorm": (5, 10), "none": (6, 10)}
    second = {"scale_gradient": (1, 8), "maxnorm": (5, 8), "none": (5, 8)}
    for j, counts in ((2, first), (4, second)):
        base_k, base_n = counts["none"]
        raw = [stats.fisher_exact([[k, n - k], [base_k, base_n - base_k]]).pvalue
               for k, n in (counts["scale_gradient"], counts["maxnorm"])]  # fmt: skip
        sg, mx = _holm(raw)
        sg_row = row["**scale_gradient**"]
        assert sg_row[j] == format_p(sg, alpha=0.05)
        assert row["maxnorm"][j] == format_p(mx, alpha=0.05)
        assert ("**" in sg_row[j - 1]) == (sg < 0.05)  # bold k/n exactly when its p_adj < alpha
    # pooled: Holm over 2 arms: scale_gradient's CMH p 0.00784 x 2 = 0.016 < 0.05 -> bold
    assert row["**scale_gradient**"][-3] == "0.016"
    assert row["**scale_gradient**"][-4].startswith("0.128 [")
    # the exact conditional test beside it, Holm over the same 2 arms
    exact = _holm([exact_conditional_p([Stratum(2, 10, 6, 10), Stratum(1, 8, 5, 8)]),
                   exact_conditional_p([Stratum(5, 10, 6, 10), Stratum(5, 8, 5, 8)])])  # fmt: skip
    assert row["**scale_gradient**"][-2] == format_p(exact[0], alpha=0.05)
    assert row["maxnorm"][-2] == format_p(exact[1], alpha=0.05)
    assert header[-4:] == ["pooled OR [95% CI]", "pooled CMH p_adj", "pooled exact p_adj",
                           "pooled BD p"]  # fmt: skip
    assert "maxnorm" in row and "**maxnorm**" not in row
    assert "Holm-adjusted over the 2 variants" in caption and "Breslow-Day" in caption
    assert "Fisher's exact test, Holm-adjusted over the stratum's variants" in caption
    assert "competence threshold (0.9)" in caption


def test_within_stratum_p_is_gradlab_tables(tmp_path):
    # the same function computes both: a folder's column equals gradlab table's on that folder
    from experiments.report.runs.results import load_results
    from experiments.report.table.summarize import summarize

    one = _folder(tmp_path, "one", {"none": (6, 10), "scale_gradient": (2, 10), "sg": (0, 10)})
    two = _folder(tmp_path, "two", {"none": (5, 8), "scale_gradient": (1, 8)})
    across = _across([one, two])
    table = summarize(load_results(one), metrics=["failed"])
    for _, r in table.rows[~table.rows["is_baseline"]].iterrows():
        cell = across.cells[("one", r["variant"])]
        assert cell.p_adjusted == r["failed_p_adjusted"] and cell.m == r["failed_m"] == 2


def test_strata_are_tasks_with_their_thresholds_and_settings_within_a_folder(tmp_path):
    cartpole = _folder(tmp_path, "study_cartpole", {"none": (4, 5), "scale_gradient": (1, 5)},
                       task="cartpole", threshold=475.0)  # fmt: skip
    breakout = _folder(tmp_path, "study_breakout", {"none": (3, 5), "scale_gradient": (2, 5)},
                       task="breakout", threshold=None)  # fmt: skip
    # as Study 3 registered it (failed_v1): the threshold each run recorded, none on MinAtar then
    table, caption = _md([cartpole, breakout], endpoint="failed_v1")
    header, _ = _rows(table)
    assert header[1:5] == ["cartpole k/n", "cartpole p_adj", "breakout k/n", "breakout p_adj"]
    assert "(cartpole: 475; breakout: no threshold: failed = unstable)" in caption
    # the outcome endpoint reads the declared threshold (2 x random on MinAtar): these runs have
    # no curves to recompute a reach from, so breakout's failed is undefined, never guessed
    _, new_caption = _md([cartpole, breakout], endpoint="failed")
    assert "(cartpole: 475; breakout: 0.7604)" in new_caption
    # a folder that varies the regime: one stratum per regime, never pooled into one
    main = tmp_path / "main"
    for regime, failed in (("stress", 4), ("tuned", 0)):
        for variant, k in (("none", failed), ("scale_gradient", 0)):
            for seed in range(4):
                _write(main, variant, seed, unstable=seed < k, reached=seed >= k, regime=regime)
    across = _across([main])
    assert [s.label for s in across.strata] == ["catch, stress", "catch, tuned"]
    stress = across.cells[("catch, stress", "scale_gradient")]
    assert (stress.k, stress.n) == (0, 4)
    # 0/4 vs 4/4 in stress; 0/4 vs 0/4 in tuned adds nothing to the pooled test
    pooled = across.pooled["scale_gradient"].contrast
    assert pooled.left_out == ("catch, tuned",)
    assert pooled.pvalue == pytest.approx(stats.fisher_exact([[0, 4], [4, 0]]).pvalue)


def test_declared_primary_is_tested_alone_and_marked(tmp_path):
    counts_one = {"none": (6, 10), "scale_gradient": (2, 10), "maxnorm": (5, 10), "sg": (1, 10)}
    counts_two = {"none": (5, 8), "scale_gradient": (1, 8), "maxnorm": (5, 8), "sg": (1, 8)}
    one, two = _folder(tmp_path, "one", counts_one), _folder(tmp_path, "two", counts_two)
    p = {
        arm: pooled_contrast(
            {
                "one": Stratum(*counts_one[arm], *counts_one["none"]),
                "two": Stratum(*counts_two[arm], *counts_two["none"]),
            }  # fmt: skip
        ).pvalue
        for arm in ("scale_gradient", "maxnorm", "sg")
    }
    # k/n -> Stratum(arm_k, arm_n, base_k, base_n): scale_gradient's are the by-hand strata
    assert p["scale_gradient"] == pytest.approx(0.00784, abs=5e-5)
    table, caption = _md([one, two], endpoint="failed", primary="scale_gradient")
    _, row = _rows(table)
    # m = 1 for the declared arm: its CMH p unadjusted (0.0078), marked *
    assert row["**scale_gradient**"][-3] == "0.0078*"
    # Holm over the other two by hand: the smaller p times 2, the larger times 1 (monotone)
    small, large = sorted((p["sg"], p["maxnorm"]))
    assert p["sg"] == small
    assert row["**sg**" if 2 * small < 0.05 else "sg"][-3] == format_p(2 * small, alpha=0.05)
    assert row["maxnorm"][-3] == format_p(max(large, 2 * small), alpha=0.05)
    assert "Holm-adjusted over the 2 variants other than scale_gradient" in caption
    assert "variant=scale_gradient on failed, the pooled contrast declared" in caption
    # without a declaration: Holm over all three, no *: sg (smallest) x3, scale_gradient x2
    # (monotone: at least sg's)
    assert p["sg"] < p["scale_gradient"] < p["maxnorm"]
    plain, plain_caption = _md([one, two], endpoint="failed")
    assert "*" not in plain.replace("**", "")
    holm = max(3 * p["sg"], 2 * p["scale_gradient"])
    assert _rows(plain)[1]["**scale_gradient**"][-3] == format_p(holm, alpha=0.05)
    assert "exploratory unless a study declared" in plain_caption
    with pytest.raises(ConfigError, match="unknown primary arm 'lr_scale'"):
        _across([one, two], primary="lr_scale")


def _study(root, counts):
    """Study 1 (catch_stress: scale_gradient against none on ``failed``, Fisher's exact test,
    alpha 0.05) registered now under ``root`` (a copy of conf/, no git), with runs of its
    registered jobs (regime=stress__task=catch__variant=V__seed=S, seeds from 1000) as its sweep
    names them. counts: variant -> (failed runs, total runs); a failed run diverged before
    learning, the others learned and held. Returns the study's folder, study_catch_stress."""
    from experiments.launch.hydra_app import CONF_DIR
    from experiments.protocols.study.audit import audit
    from experiments.protocols.study.design import load_study
    from experiments.protocols.study.record import RECORD, register

    conf = root / "conf"
    shutil.copytree(CONF_DIR, conf)
    # the design cut to these arms and to as many seeds as the runs written: a complete study
    # (every registered job has its run), whose audit can pass
    path = conf / "study" / "catch_stress.yaml"
    n = max(total for _, total in counts.values())

    def kept(line: str) -> bool:
        return "{variant:" not in line or any(
            f"variant: {v}}}" in line or f"variant: {v}," in line for v in counts
        )

    lines = [line for line in path.read_text().splitlines() if kept(line)]
    path.write_text("\n".join(lines).replace("seeds: [1000, 1070]", f"seeds: [1000, {1000 + n}]")
                    + "\n")  # fmt: skip
    study = load_study("catch_stress", conf)
    assert sorted(a.variant for a in study.arms) == sorted(counts)
    folder = register(study, config_dir=conf, results_dir=root / "results").parent
    record = json.loads((folder / RECORD).read_text())
    # registered today: endpoints version 2, where failed = did not learn and hold
    assert record["endpoints"] == 2 and record["design"]["primary"]["endpoint"] == "failed"
    identity = {  # the record pins code: each run carries its identity, as the audit requires
        "schema": 3, "started_at": record["registered_at"], "ended_at": record["registered_at"],
        "code": record["code"], "config_sha256": "not compared here",
        "record_sha256": hashlib.sha256((folder / RECORD).read_bytes()).hexdigest(),
    }  # fmt: skip
    for variant, (failed, total) in counts.items():
        for i, seed in enumerate(range(1000, 1000 + total)):
            # one config per arm: runs of two arms sharing a config and seed would be one run
            fields = {**identity, "config_sha256": f"config of {variant} (not compared here)"}
            _write(folder, variant, seed, unstable=i < failed, reached=i >= failed,
                   task_override=True, regime="stress", fields=fields)  # fmt: skip
    # the folder is exactly what was registered: its audit (against this gradlab's conf/, as
    # gradlab table and pool run it) passes, so its primary may be starred
    assert not audit(folder, config_dir=CONF_DIR).breaches
    return folder


def test_a_studys_registered_primary_is_starred_in_its_stratum(tmp_path):
    # maxnorm fails as often as scale_gradient: alone in the exploratory family (m = 1) its p is
    # the raw p; had the primary stayed in the family (m = 2) it would be doubled
    counts = {"none": (6, 10), "scale_gradient": (2, 10), "maxnorm": (2, 10)}
    one = _study(tmp_path, counts)
    two = _folder(tmp_path, "two", {"none": (5, 8), "scale_gradient": (1, 8), "maxnorm": (5, 8)})
    table, caption = _md([one, two])
    header, rows = _rows(table)
    assert header[1:5] == ["study_catch_stress k/n", "study_catch_stress p_adj", "two k/n",
                           "two p_adj"]  # fmt: skip
    row = {name.strip("*"): cells for name, cells in rows.items()}
    assert [row[v][1] for v in counts] == ["6/10", "2/10", "2/10"]
    raw = stats.fisher_exact([[2, 8], [6, 4]]).pvalue
    assert 0.05 < raw < 0.5 and format_p(raw, alpha=0.05) != format_p(2 * raw, alpha=0.05)
    assert row["scale_gradient"][2] == format_p(raw, alpha=0.05) + "*"
    assert row["maxnorm"][2] == format_p(raw, alpha=0.05)
    assert "*" not in row["scale_gradient"][4]  # the other folder registered nothing
    assert "study_catch_stress (study catch_stress)" in caption
    # on another endpoint than the registered one nothing is confirmatory
    unstable = render_across(_across([one, two], endpoint="unstable"), fmt="md")
    assert "*" not in unstable.split("\n\n")[0].replace("**", "")


def test_a_pooled_primary_other_than_a_studys_registered_one_is_noted(tmp_path):
    counts = {"none": (6, 10), "scale_gradient": (2, 10), "maxnorm": (5, 10)}
    one, two = _study(tmp_path, counts), _folder(tmp_path, "two", counts)  # scale_gradient, failed
    agrees = _across([one, two], primary="scale_gradient")
    assert agrees.notes == ()
    for options, asked in [
        ({"primary": "scale_gradient", "endpoint": "unstable"}, "scale_gradient on unstable"),
        ({"primary": "maxnorm"}, "maxnorm on failed"),
    ]:
        across = _across([one, two], **options)
        assert across.notes == (
            f"note: --primary {asked}, but study catch_stress registered scale_gradient on "
            "failed: the pooled * is your declaration, not that study's",
        )
    assert _across([one, two], endpoint="unstable").notes == ()  # no --primary: no claim


@pytest.mark.parametrize(("options", "why"), [({"baseline": "maxnorm"}, "baseline none"),
                                              ({"alpha": 0.01}, "alpha 0.05")])  # fmt: skip
def test_another_baseline_or_alpha_than_registered_stars_nothing_and_says_so(
    tmp_path, options, why
):
    counts = {"none": (6, 10), "scale_gradient": (2, 10), "maxnorm": (5, 10)}
    one, two = _study(tmp_path, counts), _folder(tmp_path, "two", counts)
    # the registered analysis stars its primary: what the other baseline or alpha takes away
    assert _across([one, two]).declared == {"study_catch_stress": "catch_stress"}
    across = _across([one, two], **options)
    assert not any(cell.confirmatory for cell in across.cells.values())
    assert across.declared == {}
    assert len(across.notes) == 1 and why in across.notes[0] and "catch_stress" in across.notes[0]
    # gradlab table on the study's folder says the same, the same way
    from typer.testing import CliRunner

    from cli.main import app

    registered = CliRunner().invoke(app, ["table", str(one), "-m", "failed"])
    assert registered.exit_code == 0, registered.output
    assert "*" in registered.stdout.split("\n\n")[0].replace("**", "")  # starred as registered
    args = ["-b", options["baseline"]] if "baseline" in options else ["--alpha", "0.01"]
    result = CliRunner().invoke(app, ["table", str(one), "-m", "failed", *args])
    assert result.exit_code == 0, result.output
    assert "not study catch_stress's registered analysis" in result.output
    assert "*" not in result.output.split("\n\n")[0].replace("**", "")


def test_an_arm_without_a_defined_endpoint_adds_nothing_and_is_named(tmp_path):
    one = _folder(tmp_path, "one", {"none": (6, 10), "scale_gradient": (2, 10)})
    two = _folder(tmp_path, "two", {"none": (5, 8), "scale_gradient": (1, 8)})
    for folder in (one, two):  # runs whose stability was never measured: failed undefined
        for seed in (50, 51):
            job = folder / f"variant=blind__seed={seed}"
            job.mkdir()
            (job / "summary.json").write_text(json.dumps({
                "status": "completed", "job": job.name, "ablation": folder.name,
                "overrides": {"variant": "blind"}, "group": {"variant": "blind"}, "seed": seed,
                "task": "catch", "variant": "blind", "threshold": 0.9, "training_steps": 100,
                "steps": 100, "stability": {}}))  # fmt: skip
    across = _across([one, two])
    blind = across.pooled["blind"]
    assert blind.contrast.test == "none" and math.isnan(blind.p_adjusted)
    assert blind.contrast.left_out == ("one", "two")
    assert (across.cells[("one", "blind")].k, across.cells[("one", "blind")].n) == (0, 0)
    assert "Adding nothing to the pooled test: blind in one; blind in two." in _md([one, two])[1]
    # the other arm's pooled test is unchanged by it (Holm over the arms with a test: m = 1)
    assert across.pooled["scale_gradient"].m == 1


def test_a_stratum_is_one_task_and_labels_stay_unique(tmp_path):
    mixed = tmp_path / "mixed"
    for seed, task in enumerate(["catch", "catch", "cartpole", "cartpole"]):
        for variant in ("none", "scale_gradient"):
            _write(mixed, variant, seed, unstable=False, reached=True, task=task)
    other = _folder(tmp_path, "other", {"none": (1, 2), "scale_gradient": (0, 2)})
    with pytest.raises(ConfigError, match=r"stratum 'mixed' holds runs of several tasks "
                       r"\(cartpole, catch\)"):  # fmt: skip
        _across([mixed, other])
    # two folders of one name (and one task): told apart by a number
    first = _folder(tmp_path / "a", "study", {"none": (1, 2), "scale_gradient": (0, 2)})
    second = _folder(tmp_path / "b", "study", {"none": (2, 2), "scale_gradient": (0, 2)})
    assert [s.label for s in _across([first, second]).strata] == ["study", "study (2)"]


def test_infinite_odds_ratio_is_written_as_inf(tmp_path):
    # the baseline never fails and the arm does: the MH odds ratio's denominator is 0
    one = _folder(tmp_path, "one", {"none": (0, 5), "scale_gradient": (3, 5)})
    two = _folder(tmp_path, "two", {"none": (0, 5), "scale_gradient": (2, 5)})
    across = _across([one, two])
    assert across.pooled["scale_gradient"].contrast.odds_ratio == math.inf
    pooled = [r for r in json.loads(render_across(across, fmt="json"))["rows"]
              if r["stratum"] == "pooled"]  # fmt: skip
    assert pooled[0]["odds_ratio"] == "inf"
    assert "∞" in _md([one, two])[0]
    assert r"$\infty$" in render_across(across, fmt="latex")


def test_csv_json_and_latex(tmp_path):
    folders = [
        _folder(tmp_path, f"study_{task}", {"none": (4, 5), "scale_gradient": (1, 5),
                "clipnorm": (3, 5), "maxnorm": (2, 5), "stop_gradient": (1, 5)}, task=task)
        for task in ("cartpole", "breakout", "space_invaders")
    ]  # fmt: skip
    across = _across(folders, primary="scale_gradient")
    records = across_records(across)
    assert len(records) == 5 * 3 + 4  # every variant in every stratum, then 4 pooled
    csv = render_across(across, fmt="csv")
    import io

    import pandas as pd

    frame = pd.read_csv(io.StringIO(csv))
    pooled = frame[frame["stratum"] == "pooled"].set_index("variant")
    # the declared arm alone (m = 1): its CMH p over the three 1/5 vs 4/5 strata, by statsmodels
    from statsmodels.stats.contingency_tables import StratifiedTable

    strata = np.stack([np.array([[1, 4], [4, 1]], dtype=float)] * 3, axis=2)
    cmh = StratifiedTable(strata).test_null_odds(correction=False).pvalue
    assert pooled.loc["scale_gradient", "p_adjusted"] == pytest.approx(cmh, rel=1e-9)
    assert bool(pooled.loc["scale_gradient", "confirmatory"])
    rows = frame[frame["stratum"] == "breakout"].set_index("variant")
    assert rows.loc["clipnorm", ["k", "n"]].tolist() == [3, 5]
    assert ",3,5," in csv  # counts as integers, not 3.0,5.0
    data = json.loads(render_across(across, fmt="json"))
    assert [s["label"] for s in data["strata"]] == ["cartpole", "breakout", "space_invaders"]
    base = [r for r in data["rows"] if r["variant"] == "none"]
    assert all(r["p_adjusted"] is None for r in base)  # NaN as null: valid JSON
    tex = render_across(across, fmt="latex")
    # each task heads its own column (a long name broken after _); the pooled group heads four
    space = r"\begin{tabular}[t]{@{}c@{}}space\_\\{}invaders\rule[-3pt]{0pt}{3pt}\end{tabular}"
    assert rf"& cartpole & breakout & {space} & \multicolumn{{4}}{{c}}{{pooled}} \\" in tex
    if _engine() is None:
        pytest.skip("no LaTeX engine (pdflatex, lualatex, tectonic) to compile the table")
    log = _compile(tex, tmp_path)
    assert "Overfull \\hbox" not in log  # three tasks fit a one-column text width


def _engine():
    import shutil

    return next((e for e in ("pdflatex", "lualatex", "tectonic") if shutil.which(e)), None)


def _compile(table_tex, folder):
    import subprocess

    doc = (
        "\\documentclass{article}\n\\usepackage{booktabs}\n\\hfuzz=0pt\n"
        f"\\begin{{document}}\n{table_tex}\n\\end{{document}}\n"
    )
    (folder / "doc.tex").write_text(doc)
    engine = _engine()
    args = ["-interaction=nonstopmode", "-halt-on-error", "doc.tex"]
    if engine == "tectonic":
        args = ["--keep-logs", "doc.tex"]
    done = subprocess.run([engine, *args], cwd=folder, capture_output=True, text=True, timeout=180)
    log = (folder / "doc.log").read_text(errors="replace")
    assert done.returncode == 0, log[-3000:]
    return log


def test_bad_input_is_one_line(tmp_path):
    one = _folder(tmp_path, "one", {"none": (1, 2), "scale_gradient": (0, 2)})
    two = _folder(tmp_path, "two", {"scale_gradient": (0, 2)})
    with pytest.raises(ConfigError, match="at least two strata"):
        _across([one])
    with pytest.raises(ConfigError, match="unknown endpoint 'steps_to_threshold'"):
        _across([one, one], endpoint="steps_to_threshold")
    with pytest.raises(ConfigError, match="has no run of the baseline variant=none"):
        _across([one, two])
    with pytest.raises(ConfigError, match="is given twice"):
        _across([one, tmp_path / "one"])
    with pytest.raises(ConfigError, match="unknown format 'html'"):
        render_across(_across([one, _folder(tmp_path, "three", {"none": (1, 2)})]),
                      fmt="html")  # fmt: skip


def test_command_line_writes_every_format_and_errors_are_one_line_with_exit_2(tmp_path):
    from typer.testing import CliRunner

    from cli.main import app

    one = _folder(tmp_path, "one", {"none": (1, 2), "scale_gradient": (0, 2)})
    two = _folder(tmp_path, "two", {"none": (2, 2), "scale_gradient": (0, 2)})
    runner = CliRunner()
    ok = runner.invoke(app, ["pool", str(one), str(two)])
    assert ok.exit_code == 0, ok.output
    assert "scale_gradient" in ok.output and "Cochran-Mantel-Haenszel" in ok.output
    out = tmp_path / "paper" / "pooled.tex"
    out.parent.mkdir()  # --out makes no folder
    wrote = runner.invoke(app, ["pool", str(one), str(two), "-o", str(out)])
    assert wrote.exit_code == 0 and f"wrote {out}" in wrote.output
    assert out.read_text().startswith("\\begin{table}")
    as_json = runner.invoke(app, ["pool", str(one), str(two), "-f", "json"])
    assert json.loads(as_json.output)["endpoint"] == "failed"
    for args, message in [
        ([str(one)], "at least two strata"),
        ([str(one), str(tmp_path / "nope")], "does not exist"),
        ([str(one), str(two), "-e", "steps"], "unknown endpoint 'steps'"),
        ([str(one), str(two), "--alpha", "1.5"], "alpha=1.5 is out of range"),
        ([str(one), str(two), "-f", "html"], "unknown format 'html'"),
    ]:
        bad = runner.invoke(app, ["pool", *args])
        assert bad.exit_code == 2, (args, bad.output)
        assert message in bad.output and "Traceback" not in bad.output
        assert len(bad.output.strip().splitlines()) == 1


def test_one_informative_stratum_uses_fishers_exact_test_and_excluded_runs_are_named(tmp_path):
    # an arm in one folder only: the exact test gradlab table uses there (2/5 vs 5/5: 0.167),
    # not the chi-square (which would give 0.0495, bold at 0.05)
    single = pooled_contrast({"a": Stratum(2, 5, 5, 5)})
    assert single.pvalue == pytest.approx(stats.fisher_exact([[2, 3], [5, 0]]).pvalue)
    assert single.pvalue == pytest.approx(1 / 6, rel=1e-9)
    one = _folder(tmp_path, "one", {"none": (5, 5), "scale_gradient": (2, 5)})
    two = _folder(tmp_path, "two", {"none": (1, 2)})
    running = two / "variant=none__seed=99"
    running.mkdir()
    (running / "summary.json").write_text(
        json.dumps({"status": "running", "job": running.name, "ablation": "two",
                    "overrides": {"variant": "none"}, "group": {"variant": "none"}, "seed": 99,
                    "task": "catch", "variant": "none", "stability": {}})
    )  # fmt: skip
    table, caption = _md([one, two])
    _, row = _rows(table)
    assert "**scale_gradient**" not in table
    assert row["scale_gradient"][-3] == "0.17"  # pooled: Fisher's 1/6, unadjusted (one arm)
    assert "Not runs of the design, left out of k/n: two: 1 running." in caption


def _clip_folder(root, name, task, threshold, counts):
    """counts: variant -> (failed, total); clipnorm's runs carry ``variant.clipnorm``."""
    clip = {"clipnorm": {"variant.clipnorm": threshold}}
    # a recorded threshold (any): the runs' reach is read from their summaries, as written
    return _folder(root, name, counts, settings=clip, task=task, threshold=1.0)


def test_by_name_pools_an_arm_whose_setting_differs_per_task(tmp_path):
    # Study 3's clip arm: each task's own threshold by one rule; by default two rows, each in
    # one stratum; --by-name one row over both strata, each stratum's setting in the caption
    one = _clip_folder(tmp_path, "s1", "breakout", "113", {"none": (6, 8), "clipnorm": (2, 8)})
    two = _clip_folder(tmp_path, "s2", "cartpole", "203", {"none": (5, 8), "clipnorm": (1, 8)})
    apart = _across([one, two])
    assert apart.variants == ("none", "clipnorm (clipnorm=113)", "clipnorm (clipnorm=203)")
    alone = apart.pooled["clipnorm (clipnorm=113)"].contrast
    assert list(alone.strata) == ["breakout"] and alone.test == "fisher"
    joined = _across([one, two], by_name=True)
    assert joined.variants == ("none", "clipnorm")
    assert joined.settings == {"clipnorm": {"breakout": "clipnorm=113", "cartpole": "clipnorm=203"}}
    expected = pooled_contrast({"breakout": Stratum(2, 8, 6, 8), "cartpole": Stratum(1, 8, 5, 8)})
    got = joined.pooled["clipnorm"].contrast
    assert got.pvalue == pytest.approx(expected.pvalue) and got.test == "cmh"
    assert got.odds_ratio == pytest.approx(expected.odds_ratio)
    caption = _md([one, two], by_name=True)[1]
    assert ("matched across strata by variant name, each with its stratum's setting: clipnorm: "
            "clipnorm=113 in breakout, clipnorm=203 in cartpole.") in caption  # fmt: skip
    records = across_records(joined)
    assert {r["setting"] for r in records if r["stratum"] == "breakout"} == {"", "clipnorm=113"}
    assert json.loads(render_across(joined, fmt="json"))["settings"] == joined.settings
    # a stratum with two settings of one variant cannot be matched by name
    both = tmp_path / "both"
    for seed, threshold in enumerate(["0.4", "0.6"]):
        _write(
            both, "clipnorm", seed, unstable=False, reached=True, **{"variant.clipnorm": threshold}
        )
        _write(both, "none", seed, unstable=True, reached=False)
    other = _folder(tmp_path, "other", {"none": (1, 2), "clipnorm": (0, 2)})
    assert len(_across([both, other]).variants) == 4
    with pytest.raises(
        ConfigError, match="stratum 'both' holds two settings of variant 'clipnorm'"
    ):
        _across([both, other], by_name=True)


def test_by_name_on_the_command_line(tmp_path):
    from typer.testing import CliRunner

    from cli.main import app

    one = _clip_folder(tmp_path, "s1", "breakout", "113", {"none": (6, 8), "clipnorm": (2, 8)})
    two = _clip_folder(tmp_path, "s2", "cartpole", "203", {"none": (5, 8), "clipnorm": (1, 8)})
    runner = CliRunner()
    ok = runner.invoke(app, ["pool", str(one), str(two), "--by-name", "--primary", "clipnorm"])
    assert ok.exit_code == 0, ok.output
    table, caption = ok.output.strip().split("\n\n")
    _, row = _rows(table)
    assert set(row) == {"none", "**clipnorm**"}  # one row over both strata
    # 2/8 vs 6/8 and 1/8 vs 5/8: the CMH test alone (m = 1), starred
    expected = pooled_contrast({"a": Stratum(2, 8, 6, 8), "b": Stratum(1, 8, 5, 8)}).pvalue
    assert row["**clipnorm**"][-3] == format_p(expected, alpha=0.05) + "*"
    assert "clipnorm=113 in breakout, clipnorm=203 in cartpole" in caption
    # a baseline with parameters cannot be matched by name: one line, exit 2
    bad = runner.invoke(app, ["pool", str(one), str(two), "--by-name", "--baseline",
                              "clipnorm (clipnorm=113)"])  # fmt: skip
    assert bad.exit_code == 2 and len(bad.output.strip().splitlines()) == 1
    assert "baseline 'clipnorm (clipnorm=113)' has parameters" in bad.output


def test_by_name_names_a_stratum_where_the_arm_has_no_parameters(tmp_path):
    one = _clip_folder(tmp_path, "s1", "breakout", "113", {"none": (6, 8), "clipnorm": (2, 8)})
    two = _folder(tmp_path, "s2", {"none": (5, 8), "clipnorm": (1, 8)}, task="cartpole")
    joined = _across([one, two], by_name=True)
    assert joined.settings == {"clipnorm": {"breakout": "clipnorm=113", "cartpole": "its defaults"}}
    settings = {(r["stratum"], r["variant"]): r["setting"] for r in across_records(joined)
                if r["stratum"] != "pooled"}  # fmt: skip
    assert settings[("cartpole", "clipnorm")] == "its defaults"
    assert settings[("cartpole", "none")] == ""
    # the setting column is there under --by-name even when no arm has parameters
    plain = [_folder(tmp_path, n, {"none": (2, 4), "sg": (0, 4)}) for n in ("p", "q")]
    records = across_records(_across(plain, by_name=True))
    assert all(r.get("setting") == "" for r in records if r["stratum"] != "pooled")
    # a baseline whose runs carry parameters is refused rather than lost
    withp = tmp_path / "withp"
    for seed in range(2):
        _write(withp, "clipnorm", seed, unstable=False, reached=True, **{"variant.clipnorm": "1"})
        _write(withp, "none", seed, unstable=True, reached=False)
    other = _folder(tmp_path, "other", {"none": (1, 2), "clipnorm": (0, 2)})
    with pytest.raises(ConfigError, match="baseline 'clipnorm' has parameters"):
        _across([withp, other], baseline="clipnorm", by_name=True)
