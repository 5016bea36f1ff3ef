"""The pooled contrast across folders: CMH, Mantel-Haenszel odds ratio and Breslow-Day against
hand computation; the table on real summary files; bad input as one-line errors."""

import json
import math

import pytest
from scipy import stats

from experiments.errors import ConfigError
from experiments.report.pooled import Stratum, pooled_contrast, pooled_table, strata_counts
from experiments.report.render import format_p

# Two strata, arm vs baseline events: 2/10 vs 6/10 and 1/8 vs 5/8.
STRATA = {"a": Stratum(2, 10, 6, 10), "b": Stratum(1, 8, 5, 8)}


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
    with pytest.raises(ConfigError, match="at least one folder"):
        pooled_contrast({})


def _write(folder, variant, seed, *, unstable, reached):
    job = folder / f"variant={variant}__seed={seed}"
    job.mkdir(parents=True)
    summary = {
        "status": "diverged" if unstable else "completed",
        "job": job.name,
        "ablation": folder.name,
        "overrides": {"variant": variant, "seed": str(seed)},
        "group": {"variant": variant},
        "seed": seed,
        "task": "catch",
        "variant": variant,
        "threshold": 0.9,
        "training_steps": 100,
        "steps": 100,
        "stability": {"unstable": int(unstable), "reached_threshold": int(reached)},
    }
    (job / "summary.json").write_text(json.dumps(summary))


def _folder(root, name, counts):
    """counts: variant -> (failed runs, total runs); a failed run here diverged."""
    folder = root / name
    seed = 0
    for variant, (failed, total) in counts.items():
        for i in range(total):
            _write(folder, variant, seed, unstable=i < failed, reached=i >= failed)
            seed += 1
    return folder


def test_table_from_summary_files(tmp_path):
    one = _folder(tmp_path, "one", {"none": (6, 10), "scale_gradient": (2, 10), "maxnorm": (5, 10)})
    two = _folder(tmp_path, "two", {"none": (5, 8), "scale_gradient": (1, 8), "maxnorm": (5, 8)})
    frames = {}
    from experiments.report.results import load_results

    for f in (one, two):
        frames[f.name] = load_results(f).averaged
    counts = strata_counts(frames, endpoint="failed", arm="scale_gradient", baseline="none")
    assert counts == {"one": Stratum(2, 10, 6, 10), "two": Stratum(1, 8, 5, 8)}
    table, caption = pooled_table([one, two], endpoint="failed")
    lines = table.splitlines()
    assert [c.strip() for c in lines[0].split("|")[1:4]] == ["variant", "one", "two"]
    row = {line.split("|")[1].strip(): line for line in lines[2:]}
    assert "6/10" in row["none"] and "5/8" in row["none"] and "base" in row["none"]
    # Holm over 2 arms: scale_gradient's CMH p 0.00784 x 2 = 0.016 < 0.05 -> bold
    assert "**scale_gradient**" in row and "0.016" in row["**scale_gradient**"]
    assert "0.128" in row["**scale_gradient**"]
    assert "maxnorm" in row and "**maxnorm**" not in row
    assert "Holm-adjusted over the 2 arms" in caption and "Breslow-Day" in caption


def test_declared_primary_is_tested_alone_and_marked(tmp_path):
    counts_one = {"none": (6, 10), "scale_gradient": (2, 10), "maxnorm": (5, 10), "sg": (1, 10)}
    counts_two = {"none": (5, 8), "scale_gradient": (1, 8), "maxnorm": (5, 8), "sg": (1, 8)}
    one, two = _folder(tmp_path, "one", counts_one), _folder(tmp_path, "two", counts_two)

    def rows(table):
        return {
            line.split("|")[1].strip(): [c.strip() for c in line.split("|")[1:-1]]
            for line in table.splitlines()[2:]
        }

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
    table, caption = pooled_table([one, two], endpoint="failed", primary="scale_gradient")
    row = rows(table)
    # m = 1 for the declared arm: its CMH p unadjusted (0.0078), marked *
    assert row["**scale_gradient**"][-2] == "0.0078*"
    # Holm over the other two by hand: the smaller p times 2, the larger times 1 (monotone)
    small, large = sorted((p["sg"], p["maxnorm"]))
    assert p["sg"] == small
    assert row["**sg**" if 2 * small < 0.05 else "sg"][-2] == format_p(2 * small, alpha=0.05)
    assert row["maxnorm"][-2] == format_p(max(large, 2 * small), alpha=0.05)
    assert "Holm-adjusted over the 2 arms other than scale_gradient" in caption
    assert "variant=scale_gradient on failed, the pooled contrast declared" in caption
    # without a declaration: Holm over all three, no *: sg (smallest) x3, scale_gradient x2
    # (monotone: at least sg's)
    assert p["sg"] < p["scale_gradient"] < p["maxnorm"]
    plain, plain_caption = pooled_table([one, two], endpoint="failed")
    assert "*" not in plain.replace("**", "")
    holm = max(3 * p["sg"], 2 * p["scale_gradient"])
    assert rows(plain)["**scale_gradient**"][-2] == format_p(holm, alpha=0.05)
    assert "Exploratory unless a study declared" in plain_caption
    with pytest.raises(ConfigError, match="unknown primary arm 'lr_scale'"):
        pooled_table([one, two], primary="lr_scale")


def test_bad_input_is_one_line(tmp_path):
    one = _folder(tmp_path, "one", {"none": (1, 2), "scale_gradient": (0, 2)})
    two = _folder(tmp_path, "two", {"scale_gradient": (0, 2)})
    with pytest.raises(ConfigError, match="at least two results folders"):
        pooled_table([one])
    with pytest.raises(ConfigError, match="unknown endpoint 'final_return'"):
        pooled_table([one, one], endpoint="final_return")
    with pytest.raises(ConfigError, match="has no run of the baseline variant=none"):
        pooled_table([one, two])


def test_command_line_errors_are_one_line_with_exit_2(tmp_path):
    from typer.testing import CliRunner

    from cli.main import app

    one = _folder(tmp_path, "one", {"none": (1, 2), "scale_gradient": (0, 2)})
    two = _folder(tmp_path, "two", {"none": (2, 2), "scale_gradient": (0, 2)})
    runner = CliRunner()
    ok = runner.invoke(app, ["pool", str(one), str(two)])
    assert ok.exit_code == 0, ok.output
    assert "scale_gradient" in ok.output and "Cochran-Mantel-Haenszel" in ok.output
    for args, message in [
        ([str(one)], "at least two results folders"),
        ([str(one), str(tmp_path / "nope")], "does not exist"),
        ([str(one), str(two), "-e", "grad_norm_p99"], "unknown endpoint 'grad_norm_p99'"),
        ([str(one), str(two), "--alpha", "1.5"], "alpha=1.5 is out of range"),
    ]:
        bad = runner.invoke(app, ["pool", *args])
        assert bad.exit_code == 2, (args, bad.output)
        assert message in bad.output and "Traceback" not in bad.output
        assert len(bad.output.strip().splitlines()) == 1


def test_one_informative_folder_uses_fishers_exact_test_and_excluded_runs_are_named(tmp_path):
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
    table, caption = pooled_table([one, two])
    assert "**scale_gradient**" not in table and "0.17" in table
    assert "Not runs of the design, left out of k/n: two: 1 running." in caption
    with pytest.raises(ConfigError, match="is given twice"):
        pooled_table([one, tmp_path / "one"])
