"""The caption of a table: what every column, interval, test and correction is, in plain text.

The caption is part of the result: it names the runs that count (every run of the design, and the
excluded ones), the rule for diverged runs' returns, the declared contrasts, their tests, the
correction and its m per stratum, alpha, and the bold rule. Markdown puts it below the table.
LaTeX takes :func:`short_caption` into ``\\caption`` (what, n, the tests, the correction, bold
and ``*``: a few lines, so the float fits a page) and the full text, with ``--caption full``, as a
paragraph of its own after the table.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from experiments.report.runs.endpoints import MEANING
from experiments.report.statistics.equivalence import equivalence_sentences
from experiments.report.table.metrics import METRICS
from experiments.verdicts import COLLAPSE_FRACTION

if TYPE_CHECKING:
    from experiments.report.table.summarize import Table

__all__ = ["short_caption", "table_caption"]

STAT_LABEL = {"mean": "mean", "iqm": "IQM", "median": "median"}
_RATE_MEANING = {
    "unstable": "diverged, or collapsed (final-window return fell "
    f"≥ {COLLAPSE_FRACTION:.0%} of the return range below the run's best window)",
    "diverged": "stopped by the divergence rule (non-finite or exploding loss)",
    "collapsed": f"final-window return ≥ {COLLAPSE_FRACTION:.0%} of the return range below the "
    "run's best window",
    "reached_threshold": "evaluation return reached the task's threshold{threshold}",
}
_RATE_TEST = {"fisher": "Fisher's exact test", "barnard": "Barnard's exact test"}


def _runs(table: Table) -> str:
    seeds = table.rows["seeds"].unique()
    n = f"n = {seeds[0]} runs per group" if len(seeds) == 1 else "n: runs per group"
    text = f"{n}, every completed or diverged run counted (intention to treat)"
    total = int(table.rows["excluded"].sum())
    if total:
        text += (
            f"; {total} more excluded ({table.excluded}): crashed, timed-out or unfinished runs "
            "are not runs of the design and are never averaged (last column)"
        )
    return " ".join([text + ".", *table.counting])


def _cells(table: Table, where: str) -> list[str]:
    level = f"{round(100 * table.confidence)}%"
    kinds = {METRICS[m].kind for m in table.metrics}
    threshold = f" ({table.threshold:g})" if table.threshold is not None else ""
    recorded = table.threshold_recorded
    recorded = f" ({recorded:g})" if recorded is not None else ""
    parts = []
    for name in table.metrics:
        if METRICS[name].rate:
            words = recorded if name == "failed_v1" else threshold
            meaning = {**MEANING, **_RATE_MEANING}[name].format(threshold=words)
            if name == "failed_v1" and table.no_threshold_recorded:
                meaning = (
                    "the definition Studies 1-3 registered: unstable (the runs recorded no "
                    "threshold)"
                )
            parts.append(f"{METRICS[name].label}: {meaning}.")
    if "rate" in kinds:
        parts.append(f"Rates: k of n runs, exact Clopper–Pearson {level} CI {where}.")
    if "time" in kinds:
        label = METRICS["steps_to_threshold"].label
        parts.append(
            f"{label[0].upper()}{label[1:]} (steps_to_threshold): the Aalen–Johansen cumulative "
            f"incidence of reaching the threshold{threshold} before diverging, by the end of the "
            "budget, over every run; divergence is a competing event (a run that diverged first "
            "can never reach it), a run that did neither is censored at its last step; "
            f"{level} CI from the delta-method variance on the log(−log) scale {where} (— where "
            "the incidence is 0 or 1), then k/n: runs that reached it before diverging."
        )
    if "value" in kinds:
        parts.append(
            f"Other columns: {STAT_LABEL[table.stat]} over runs, {level} percentile-bootstrap CI "
            f"{where} (n= where fewer runs had a value)."
        )
    itt = [m for m in table.metrics if METRICS[m].itt]
    if itt:
        declared = table.diverged_return
        values = ", ".join(f"{task} {value:g}" for task, value in declared.items())
        names = " and ".join(METRICS[m].label for m in itt)
        parts.append(
            f"{names[0].upper()}{names[1:]}: every run counts; a diverged run, or one without a "
            "final return, counts as the mean return of its task's uniformly random policy, "
            "declared before the runs "
            + (f"({values}; imputed: their count)." if values else "(no run needed it).")
        )
    return parts


def _family_sizes(table: Table) -> str:
    """``tuned m=2, stress m=2`` (with the columns whose m differs named)."""
    out = []
    for stratum in dict.fromkeys(table.rows["stratum_label"]):
        sizes = {name: table.m[name][stratum] for name in table.metrics}
        counts = Counter(sizes.values())
        common = max(counts, key=lambda m: (counts[m], m))  # the usual m; ties: the larger
        odd = [f"{METRICS[n].label} m={m}" for n, m in sizes.items() if m != common]
        text = f"m={common}" + (f" ({', '.join(odd)})" if odd else "")
        out.append(text if stratum == "all" else f"{stratum}: {text}")
    return "; ".join(out)


def _contrasts(table: Table, *, stacked: bool) -> list[str]:
    if table.baseline is None:
        return ["No baseline: no contrast, no test, nothing bold."]
    level = f"{round(100 * table.confidence)}%"
    strata = table.strata_keys
    same = f" of the same {', '.join(strata)}" if strata else ""
    kinds = {METRICS[m].kind for m in table.metrics}
    stat = STAT_LABEL[table.stat]
    paired = table.analysis == "paired"
    parts = [
        f"Contrasts: each {table.compared_key} against {table.baseline}{same}"
        + (", runs paired by seed (paired analysis)." if paired else " (independent samples).")
    ]
    what = []
    if "rate" in kinds:
        what.append(
            f"rates: mean paired difference with {level} paired-bootstrap CI, exact McNemar p"
            if paired
            else f"rates: risk difference with Newcombe hybrid-score {level} CI, "
            f"two-sided {_RATE_TEST[table.rate_test]}"
        )
    if "value" in kinds:
        what.append(
            f"other columns: {stat} of the paired differences with {level} paired-bootstrap CI, "
            "Wilcoxon signed-rank p"
            if paired
            else f"other columns: difference of the {stat}s with {level} percentile-bootstrap CI "
            "(each arm resampled), two-sided Mann–Whitney U"
        )
    if "time" in kinds:
        what.append(
            f"{METRICS['steps_to_threshold'].label}: difference of the cumulative incidences with "
            f"{level} MOVER CI from the two arms' CIs, Gray's test (rho = 0)"
            + (" (unpaired)" if paired else "")
        )
    parts.append(f"Δ: {table.compared_key} minus baseline; " + "; ".join(what) + ".")
    parts.append(
        "Δ intervals are per contrast, not adjusted for multiplicity, and come from another "
        "method than p: one may exclude 0 while p_adj ≥ α."
    )
    where = f"within each {', '.join(strata)}" if strata else "over the table"
    below = " (below)" if stacked else ""
    parts.append(
        f"p_adj{below}: Holm-adjusted {where}, over that stratum's contrasts in the column "
        f"({_family_sizes(table)})."
    )
    if table.confirmatory:
        named = ", ".join(f"{c.group} on {METRICS[c.metric].label}" for c in table.confirmatory)
        parts.append(
            f"*: confirmatory, declared before the runs, tested alone (m=1): {named}; every other "
            "contrast is exploratory."
        )
    parts += equivalence_sentences(list(table.margins.values()), alpha=table.alpha)
    if table.audit:
        parts.append(f"No *: {table.audit}.")
    parts.append(f"Bold: p_adj < α = {table.alpha:g}, and nothing else.")
    return parts


def table_caption(table: Table, *, stacked: bool = False) -> str:
    """What the table shows, the tests, the correction and the bold rule, in plain text.

    Args:
      table: from :func:`~experiments.report.table.summarize.summarize`.
      stacked: intervals sit below their values (LaTeX) rather than beside them (Markdown).
    """
    fixed = ", ".join(f"{k}={v}" for k, v in table.constants.items())
    parts = [f"{table.ablation or 'runs'}" + (f" ({fixed})" if fixed else "") + "."]
    parts.append(_runs(table))
    parts += _cells(table, "below" if stacked else "in brackets")
    parts += _contrasts(table, stacked=stacked)
    return " ".join(parts)


def _short_tests(table: Table) -> str:
    """``Fisher's exact test (rates), Mann–Whitney U (other columns)``: each kind's test."""
    kinds = {METRICS[m].kind for m in table.metrics}
    paired = table.analysis == "paired"
    tests = []
    if "rate" in kinds:
        tests.append(("exact McNemar" if paired else _RATE_TEST[table.rate_test]) + " (rates)")
    if "value" in kinds:
        tests.append(("Wilcoxon signed-rank" if paired else "Mann–Whitney U") + " (other columns)")
    if "time" in kinds:
        tests.append(f"Gray's test ({METRICS['steps_to_threshold'].label})")
    return ", ".join(tests)


def _short_sizes(table: Table) -> str:
    """The families' sizes as :func:`_family_sizes` gives them, or their range where more than
    three strata would make a long list: ``m=2 to 4 per stratum and column``."""
    strata = list(dict.fromkeys(table.rows["stratum_label"]))
    if len(strata) <= 3:
        return _family_sizes(table)
    sizes = {table.m[name][s] for name in table.metrics for s in strata}
    low, high = min(sizes), max(sizes)
    return f"m={low} per stratum" if low == high else f"m={low} to {high} per stratum and column"


def short_caption(table: Table, *, compact: bool = False, left_out: Sequence[str] = ()) -> str:
    """The LaTeX caption: what the table shows, n, the tests, the correction, and the bold and
    ``*`` rules, in a few lines; the rest of :func:`table_caption` goes into the method text.

    Args:
      table: from :func:`~experiments.report.table.summarize.summarize`; ``table.metrics``: the
        endpoints shown.
      compact: the cells hold the estimate, its CI and p_adj, no Δ (the compact layout); the
        caption ends naming what is not shown.
      left_out: endpoints of the table not shown, named at the end.
    """
    fixed = ", ".join(f"{k}={v}" for k, v in table.constants.items())
    what = ", ".join(METRICS[m].label for m in table.metrics)
    by = ", ".join(table.shown_keys) or "group"
    parts = [
        f"{table.ablation or 'runs'}" + (f" ({fixed})" if fixed else "") + f": {what}, by {by}."
    ]
    seeds = table.rows["seeds"].unique()
    n = f"n = {seeds[0]} runs per group" if len(seeds) == 1 else "n: runs per group"
    total = int(table.rows["excluded"].sum())
    excluded = f"; {total} more excluded (last column)" if total else ""
    parts.append(f"{n}, every completed or diverged run counted{excluded}.")
    if any(METRICS[m].kind == "value" for m in table.metrics):
        parts.append(f"Other than rates: the {STAT_LABEL[table.stat]} over runs.")
    if any(METRICS[m].itt for m in table.metrics):
        parts.append("A diverged run's final return: its task's random-policy return.")
    level = f"{round(100 * table.confidence)}%"
    if table.baseline is None:
        parts.append(f"Below each estimate its {level} CI. No baseline: no test, nothing bold.")
        return " ".join(parts + _not_shown(table, compact=compact, left_out=left_out))
    same = f" of the same {', '.join(table.strata_keys)}" if table.strata_keys else ""
    where = f"within each {', '.join(table.strata_keys)}" if table.strata_keys else "over the table"
    tests = f"{_short_tests(table)}, Holm-adjusted {where} ({_short_sizes(table)})"
    parts.append(
        f"Below each estimate: its {level} CI and p of the contrast against {table.baseline}"
        f"{same}: {tests}."
        if compact
        else f"Below each estimate: its {level} CI, Δ against {table.baseline}{same} with its "
        f"{level} CI, and p: {tests}."
    )
    if table.margins:
        parts.append(
            "TOST: the verdict on equivalence within the declared margin."
            if compact
            else "TOST: equivalence within the declared margin."
        )
    if table.confirmatory:
        parts.append("*: confirmatory, declared before the runs, tested alone (m=1).")
    parts.append(f"Bold: p_adj < α = {table.alpha:g}, and nothing else.")
    return " ".join(parts + _not_shown(table, compact=compact, left_out=left_out))


def _not_shown(table: Table, *, compact: bool, left_out: Sequence[str]) -> list[str]:
    """``["Not shown: Δ with its 95% CI; lost after learning, never learned."]``, or nothing."""
    level = f"{round(100 * table.confidence)}%"
    missing = [f"Δ with its {level} CI"] if compact and table.baseline is not None else []
    missing += ["the TOST interval and p"] if compact and table.margins else []
    missing += [", ".join(METRICS[m].label for m in left_out)] if left_out else []
    return [f"Not shown: {'; '.join(missing)}."] if missing else []
