"""A value endpoint pooled across strata: van Elteren's stratified rank-sum test against hand
computation, scipy's Mann-Whitney U and an enumeration of every within-stratum relabelling;
``gradlab pool -e final_return`` on real summary files (means and p_adj as gradlab table gives
them, the pooled P(> base) by counting pairs, every format, the command line)."""

import itertools
import json
import math

import numpy as np
import pytest
from scipy import stats

from experiments.base.errors import ConfigError
from experiments.protocols.study.pooled import registrations
from experiments.report.pool.across import across_table
from experiments.report.pool.render import across_records, render_across
from experiments.report.statistics.pooled_ranks import Sample, van_elteren
from experiments.report.statistics.significance import mann_whitney_p

# stratum a: arm [3, 5] vs baseline [1, 2, 4]; stratum b: arm [1] vs baseline [2, 2] (a tie)
HAND = {"a": Sample.of([3, 5], [1, 2, 4]), "b": Sample.of([1], [2, 2])}


def _across(folders, **options):
    """:func:`across_table` given each folder's registration as ``gradlab pool`` reads it."""
    ask = {k: options.get(k, d) for k, d in (("endpoint", "failed"), ("baseline", "none"),
                                             ("alpha", 0.05))}  # fmt: skip
    return across_table(folders, registrations=registrations(folders, **ask), **options)


def test_van_elteren_by_hand():
    # a: ranks 1..5, W = 3 + 5 = 8, E = 2 * 6 / 2 = 6, Var = 2 * 3 / 12 * 6 = 3, weight 1/6
    # b: ranks 1, 2.5, 2.5, W = 1, E = 1 * 4 / 2 = 2, ties 2^3 - 2 = 6 over N(N-1) = 6:
    #    Var = 1 * 2 / 12 * (4 - 1) = 0.5, weight 1/4
    # sum w (W - E) = 2/6 - 1/4 = 1/12; sum w^2 Var = 3/36 + 0.5/16 = 11/96
    c = van_elteren(HAND)
    assert c.statistic == pytest.approx((1 / 12) / math.sqrt(11 / 96), rel=1e-12)
    assert c.statistic == pytest.approx(0.246183, rel=1e-5)
    assert c.pvalue == pytest.approx(2 * stats.norm.sf(0.246183), rel=1e-5)
    # P(arm > base): a: 5 of 6 pairs, b: 0 of 2; weighted (5/6 * ... ) = (5/6 + 0) / (1 + 0.5)
    assert c.superiority == pytest.approx((5 / 6) / 1.5, rel=1e-12)
    assert c.test == "van_elteren" and c.left_out == ()


def test_one_stratum_is_mann_whitney():
    rng = np.random.default_rng(7)
    for _ in range(20):
        x = rng.integers(0, 6, size=rng.integers(3, 12)).astype(float)  # ties on purpose
        y = rng.integers(0, 6, size=rng.integers(3, 12)).astype(float)
        if len(set(x) | set(y)) < 2:
            continue
        c = van_elteren({"only": Sample.of(x, y)})
        # its z is the asymptotic U test's without continuity correction (tie-corrected)
        asymptotic = stats.mannwhitneyu(x, y, method="asymptotic", use_continuity=False)
        assert 2 * stats.norm.sf(abs(c.statistic)) == pytest.approx(asymptotic.pvalue, rel=1e-9)
        # the p is gradlab table's (scipy's default method), as the rate path uses Fisher's
        assert c.test == "mann_whitney" and c.pvalue == mann_whitney_p(x, y)
        u = stats.mannwhitneyu(x, y).statistic
        assert c.superiority == pytest.approx(u / (len(x) * len(y)), rel=1e-12)


def test_null_mean_and_variance_by_enumerating_every_relabelling():
    # Under the null every split of a stratum's values into arm and baseline is equally likely,
    # independently per stratum: the statistic's exact mean and variance over all of them must
    # be the formula's (ties included).
    strata = {
        "a": Sample.of([1.0, 2.0, 2.0], [3.0, 5.0]),
        "b": Sample.of([4.0, 4.0], [4.0, 1.0, 0.5, 0.5]),
        "c": Sample.of([7.0], [2.0, 9.0, 9.0]),
    }

    def excess(samples):  # sum w (W - E): the numerator of z
        total = 0.0
        for s in samples:
            w, mean, _, n = s.rank_sum()
            total += (w - mean) / (n + 1)
        return total

    splits = []
    for s in strata.values():
        values = list(s.arm) + list(s.base)
        n1 = len(s.arm)
        splits.append(
            [
                Sample.of([values[i] for i in arm], [values[i] for i in range(len(values))
                                                     if i not in arm])
                for arm in itertools.combinations(range(len(values)), n1)
            ]
        )  # fmt: skip
    draws = np.array([excess(combo) for combo in itertools.product(*splits)])
    variance = sum(s.rank_sum()[2] / (s.rank_sum()[3] + 1) ** 2 for s in strata.values())
    assert draws.mean() == pytest.approx(0.0, abs=1e-12)
    assert draws.var() == pytest.approx(variance, rel=1e-12)
    c = van_elteren(strata)
    assert c.statistic == pytest.approx(excess(strata.values()) / math.sqrt(variance), rel=1e-12)


def test_pooled_superiority_counts_pairs():
    rng = np.random.default_rng(3)
    strata = {k: Sample.of(rng.normal(0.3, 1, n1), rng.normal(0, 1, n2))
              for k, (n1, n2) in {"a": (10, 10), "b": (6, 9), "c": (12, 4)}.items()}  # fmt: skip
    wins = weights = 0.0
    for s in strata.values():
        pairs = [(x > y) + 0.5 * (x == y) for x in s.arm for y in s.base]
        weight = 1 / (len(s.arm) + len(s.base) + 1)
        wins += weight * sum(pairs)
        weights += weight * len(pairs)
    assert van_elteren(strata).superiority == pytest.approx(wins / weights, rel=1e-12)


def test_strata_without_variation_or_an_empty_arm_add_nothing():
    c = van_elteren({**HAND, "flat": Sample.of([2, 2], [2]), "empty": Sample.of([], [1, 2])})
    assert c.left_out == ("flat", "empty")
    assert c.statistic == pytest.approx(van_elteren(HAND).statistic)
    none = van_elteren({"flat": Sample.of([1], [1])})
    assert none.test == "none" and math.isnan(none.pvalue) and math.isnan(none.superiority)
    with pytest.raises(ConfigError, match="at least one stratum"):
        van_elteren({})
    # NaN and infinite values are not values
    assert Sample.of([1.0, np.nan], [np.inf, 2.0]) == Sample((1.0,), (2.0,))


def _write(folder, task, variant, seed, final_return, *, diverged=False, grad_norm=False):
    job = folder / f"task={task}__variant={variant}__seed={seed}"
    job.mkdir(parents=True)
    stability = {"diverged": int(diverged), "unstable": int(diverged), "reached_threshold": 1}
    if not diverged:
        stability["final_return"] = final_return
        if grad_norm:
            stability["grad_norm_p99"] = final_return / 100
    summary = {
        "status": "diverged" if diverged else "completed",
        "job": job.name,
        "ablation": folder.name,
        "overrides": {"task": task, "variant": variant, "seed": str(seed)},
        "group": {"task": task, "variant": variant},
        "seed": seed,
        "task": task,
        "variant": variant,
        "threshold": None,
        "training_steps": 100,
        "steps": 100,
        "stability": stability,
    }
    (job / "summary.json").write_text(json.dumps(summary))


# returns per task and variant; catch's diverged run counts as its random return (-0.5998)
RETURNS = {
    "catch": {
        "none": [0.9, 0.8, 1.0, 0.7],
        "scale_gradient": [0.6, 0.5, 0.95, None],
        "maxnorm": [1.0, 0.9, 0.85],
    },
    "cartpole": {
        "none": [400.0, 450.0, 500.0],
        "scale_gradient": [380.0, 500.0, 300.0, 420.0],
        "maxnorm": [500.0, 490.0, 470.0],
    },
}


def _folders(root, grad_norm=False):
    folders = []
    for task, arms in RETURNS.items():
        folder = root / task
        seed = 0
        for variant, values in arms.items():
            for value in values:
                _write(folder, task, variant, seed, value, diverged=value is None,
                       grad_norm=grad_norm)  # fmt: skip
                seed += 1
        folders.append(folder)
    return folders


def _holm_by_hand(p, q):
    """Holm over two p's: the smaller times 2, the larger at least that (both capped at 1)."""
    low = min(1.0, 2 * min(p, q))
    high = min(1.0, max(low, max(p, q)))
    return (low, high) if p <= q else (high, low)


def test_final_return_across_tasks(tmp_path):
    t = _across(_folders(tmp_path), endpoint="final_return")
    assert not t.rate and [s.label for s in t.strata] == ["catch", "cartpole"]
    catch_arm = [0.6, 0.5, 0.95, -0.5998]  # the diverged run at catch's declared return
    cell = t.cells[("catch", "scale_gradient")]
    assert cell.k is None and cell.n == 4 and cell.imputed == 1
    assert cell.value == pytest.approx(np.mean(catch_arm))
    assert t.cells[("cartpole", "none")].value == pytest.approx(450.0)
    # within a stratum: Mann-Whitney U, Holm over the two arms by hand
    base = RETURNS["catch"]["none"]
    p, q = mann_whitney_p(catch_arm, base), mann_whitney_p(RETURNS["catch"]["maxnorm"], base)
    holm_p, holm_q = _holm_by_hand(p, q)
    assert cell.p_adjusted == pytest.approx(holm_p) and cell.m == 2
    assert t.cells[("catch", "maxnorm")].p_adjusted == pytest.approx(holm_q)
    # pooled: van Elteren over both strata, the same numbers as by hand from the values
    expected = van_elteren(
        {
            "catch": Sample.of(catch_arm, RETURNS["catch"]["none"]),
            "cartpole": Sample.of(RETURNS["cartpole"]["scale_gradient"],
                                  RETURNS["cartpole"]["none"]),
        }
    )  # fmt: skip
    other = van_elteren(
        {
            task: Sample.of(RETURNS[task]["maxnorm"], RETURNS[task]["none"])
            for task in ("catch", "cartpole")
        }
    )
    pooled = t.pooled["scale_gradient"]
    assert pooled.contrast.statistic == pytest.approx(expected.statistic)
    assert pooled.contrast.test == "van_elteren" and pooled.m == 2
    holm_p, holm_q = _holm_by_hand(expected.pvalue, other.pvalue)
    assert pooled.p_adjusted == pytest.approx(holm_p)
    assert t.pooled["maxnorm"].p_adjusted == pytest.approx(holm_q)
    assert math.isnan(pooled.exact_p_adjusted)
    # declared before the runs: tested alone (m = 1), the other arm Holm over itself
    declared = _across(_folders(tmp_path / "again"), endpoint="final_return",
                            primary="scale_gradient")  # fmt: skip
    assert declared.pooled["scale_gradient"].p_adjusted == pytest.approx(expected.pvalue)
    assert declared.pooled["scale_gradient"].m == 1 and declared.pooled["maxnorm"].m == 1
    assert "vE p_adj" in render_across(declared, fmt="md")
    text = render_across(t, fmt="md")
    header = text.splitlines()[0]
    assert "catch mean" in header and "pooled P(> base)" in header and "pooled vE p_adj" in header
    assert "van Elteren" in text and "catch: 1; cartpole: 0" in text and "OR" not in header
    records = across_records(t)
    first = records[0]
    assert "k" not in first and {"value", "low", "high", "imputed"} <= set(first)
    last = records[-1]
    assert last["stratum"] == "pooled" and last["superiority"] == pytest.approx(
        expected.superiority
    )
    assert "odds_ratio" not in last
    # a metric without imputation (no declared return): imputed is empty, not 0
    norms = _across(_folders(tmp_path / "norms", grad_norm=True), endpoint="grad_norm_p99")
    assert all(c.imputed is None for c in norms.cells.values())
    assert "declared random-policy return" not in render_across(norms, fmt="md")
    assert json.loads(render_across(t, fmt="json"))["endpoint"] == "final_return"
    assert "imputed" in render_across(t, fmt="csv").splitlines()[0]
    latex = render_across(t, fmt="latex")
    assert "mean, p" in latex and "P(> base)" in latex


def test_final_return_on_the_command_line_and_a_censored_endpoint_is_refused(tmp_path):
    from typer.testing import CliRunner

    from cli.main import app

    one, two = _folders(tmp_path)
    result = CliRunner().invoke(app, ["pool", str(one), str(two), "-e", "final_return"])
    assert result.exit_code == 0, result.output
    assert "scale_gradient" in result.output and "van Elteren" in result.output
    bad = CliRunner().invoke(app, ["pool", str(one), str(two), "-e", "steps_to_threshold"])
    assert bad.exit_code == 2
    assert "unknown endpoint 'steps_to_threshold'" in bad.output and "final_return" in bad.output
    assert "Traceback" not in bad.output
