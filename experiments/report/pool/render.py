"""``gradlab pool``'s table (:class:`~experiments.report.pool.table.Across`) as Markdown, LaTeX,
CSV or JSON, with its caption.

Markdown: a column per stratum's ``k/n`` and ``p_adj``, then the pooled odds ratio, CMH p_adj,
the exact conditional test's p_adj and Breslow-Day p, caption below; for a value endpoint, each
stratum's mean and ``p_adj``, then the pooled ``P(> base)`` and van Elteren p_adj. LaTeX: a
``table`` float that needs only booktabs, one column per stratum (``k/n`` or the mean, with its
``p`` below, a stacked cell) under the stratum's label, and the pooled group, so three tasks fit a
one-column text width. CSV and JSON: one record per variant and stratum and one per variant
pooled, every number (undefined as an empty cell or null; an infinite odds ratio as ``inf``).
"""

from __future__ import annotations

import dataclasses
import json
import math

import pandas as pd

from experiments.base.errors import unknown_choice
from experiments.report.pool.table import Across
from experiments.report.runs.endpoints import MEANING
from experiments.report.statistics.pooled_ranks import RankContrast
from experiments.report.statistics.pooled_rates import PooledContrast
from experiments.report.table.latex_grid import GridCell, grid_floats, wrap_label
from experiments.report.table.markup import markdown_table
from experiments.report.table.metrics import METRICS
from experiments.report.table.render import format_number, format_p

__all__ = ["FORMATS", "across_caption", "across_records", "render_across"]

FORMATS = ("md", "latex", "csv", "json")
_DASH = "—"


def _ratio(value: float) -> str:
    return "∞" if value == math.inf else format_number(value)


def _ci(c: PooledContrast) -> str:
    low, high = c.odds_ratio_ci
    return f"[{_ratio(low)}, {_ratio(high)}]"


def _p(value: float, t: Across, star: bool) -> str:
    text = format_p(value, alpha=t.alpha)
    return text + ("*" if star and text != _DASH else "")


def _figure(t: Across, cell) -> str:
    """A stratum's figure: ``k/n``, or a value endpoint's mean."""
    return f"{cell.k}/{cell.n}" if t.rate else format_number(cell.value)


def _pooled_texts(t: Across, pooled) -> tuple[str, ...]:
    """The pooled columns' texts: ``(odds ratio, CI, CMH p_adj, exact p_adj, Breslow-Day p)``,
    or for a value ``(P(> base), "", van Elteren p_adj)``; ``base`` for the baseline."""
    if pooled is None:
        extra = ("base",) * 3 if _margin(t) else ()
        return ("base", "", "base", "base", "base", *extra) if t.rate else ("base", "", "base")
    c = pooled.contrast
    p = _p(pooled.p_adjusted, t, pooled.primary)
    if not t.rate:
        return format_number(c.superiority), "", p
    exact = format_p(pooled.exact_p_adjusted, alpha=t.alpha)
    texts = (_ratio(c.odds_ratio), _ci(c), p, exact, format_p(c.homogeneity_p))
    return texts + _equivalence_texts(t, pooled)


def _equivalence_texts(t: Across, pooled) -> tuple[str, ...]:
    """With a margin: ``(pooled RD [90% CI], TOST p_adj, verdict)``; else nothing."""
    if not _margin(t):
        return ()
    q = pooled.equivalence
    if q is None:
        return ("base", "base", "base")
    rd = f"{q.difference:+.2f} [{q.low:+.2f}, {q.high:+.2f}]"
    return rd, _p(q.p_adjusted, t, pooled.primary), q.verdict


def _margin(t: Across) -> float | None:
    """The pooled margin, when one was given (every arm's equivalence has it)."""
    margins = {p.equivalence.margin for p in t.pooled.values() if p.equivalence is not None}
    return margins.pop() if margins else None


def _pooled_headers(t: Across) -> list[str]:
    if t.rate:
        extra = ["RD [90% CI]", "TOST p_adj", "verdict"] if _margin(t) else []
        return ["OR [95% CI]", "CMH p_adj", "exact p_adj", "BD p", *extra]
    return ["P(> base)", "vE p_adj"]


def _rows(t: Across) -> list[dict]:
    """Per variant: its name and bold, per stratum ``(k/n or mean, bold, p_adj)``, and the
    pooled texts (:func:`_pooled_texts`), in the columns' order; ``base`` for the baseline."""
    rows = []
    for variant in t.variants:
        is_base = variant == t.baseline
        pooled = t.pooled.get(variant)
        strata = []
        for s in t.strata:
            cell = t.cells.get((s.label, variant))
            if cell is None:
                strata.append((_DASH, False, _DASH))
                continue
            p = "base" if is_base else _p(cell.p_adjusted, t, cell.confirmatory)
            strata.append((_figure(t, cell), cell.bold, p))
        summary = _pooled_texts(t, None if is_base else pooled)
        rows.append(
            {"name": variant, "bold": bool(pooled and pooled.bold), "strata": strata,
             "pooled": summary}
        )  # fmt: skip
    return rows


def _thresholds(t: Across) -> str:
    words = {s.threshold for s in t.strata}
    if len(words) == 1:
        return words.pop()
    return "; ".join(f"{s.label}: {s.threshold}" for s in t.strata)


def _settings_words(t: Across) -> str:
    """Where arms were matched by name: each such arm's setting per stratum."""
    if not t.settings:
        return ""
    arms = "; ".join(
        f"{variant}: " + ", ".join(f"{shown} in {label}" for label, shown in where.items())
        for variant, where in t.settings.items()
    )
    return f" Arms matched across strata by {t.key} name, each with its stratum's setting: {arms}."


def across_caption(t: Across) -> str:
    """What every column, test and correction is, with the numbers used."""
    n_arms = max((p.m for p in t.pooled.values() if not p.primary), default=0)
    arms_word = "variant" if n_arms == 1 else "variants"
    declared = "" if t.primary is None else f" other than {t.primary}"
    holm = f"Holm-adjusted over the {n_arms} {arms_word}{declared}" if n_arms else "unadjusted"
    meaning = ""
    if t.endpoint in MEANING:
        words = f" ({_thresholds(t)})"
        meaning = f"{t.endpoint}: {MEANING[t.endpoint].format(threshold=words)}. "
    left_out = [
        f"{variant} in {label}" for variant, p in t.pooled.items() for label in p.contrast.left_out
    ]
    notes = _settings_words(t)
    if left_out:
        notes += f" Adding nothing to the pooled test: {'; '.join(left_out)}."
    if t.excluded:
        listed = "; ".join(f"{label}: {note}" for label, note in t.excluded.items())
        counts = "k/n" if t.rate else "the means"
        notes += f" Not runs of the design, left out of {counts}: {listed}."
    marked = ""
    if t.declared:
        studies = "; ".join(f"{label} (study {study})" for label, study in t.declared.items())
        marked = (
            " Within a stratum, *: that study's registered primary contrast, tested alone "
            f"(m = 1): {studies}."
        )
    status = (
        "The pooled contrasts are exploratory unless a study declared this pooled test."
        if t.primary is None
        else f"Pooled *: {t.key}={t.primary} on {t.endpoint}, the pooled contrast declared "
        "before the runs, tested alone (m = 1); every other pooled row is exploratory."
    )
    if not t.rate:
        return _value_caption(t, holm, notes, marked, status)
    return (
        f"{meaning}{t.endpoint}: k of n runs per stratum, n every completed or diverged run "
        f"whose {t.endpoint} is defined. Per stratum, p_adj: each {t.key} against "
        f"{t.key}={t.baseline} there, "
        "two-sided Fisher's exact test, Holm-adjusted over the stratum's variants, as gradlab "
        f"table gives it.{marked} Pooled over the {len(t.strata)} strata, stratified by "
        "stratum: Mantel-Haenszel odds ratio (OR; below 1: fewer events than the baseline) "
        "with its Robins-Breslow-Greenland 95% CI; Cochran-Mantel-Haenszel test (asymptotic, "
        "no continuity correction; a variant with one informative stratum: Fisher's exact test "
        f"of that stratum), {holm}; exact p_adj: the exact conditional test of the same null "
        "(the arm's events summed over the strata, given each stratum's margins: a convolution "
        "of hypergeometric distributions; Fisher's exact test with one stratum), adjusted in "
        "the same family, a small-sample check on the asymptotic CMH p; Breslow-Day "
        "test of equal odds ratios across the strata with Tarone's adjustment (BD; a small p: "
        "the effect differs between them). A stratum where either arm has no run with a "
        "defined endpoint, or both arms are all events or none, adds nothing to the pooled "
        f"test.{_equivalence_words(t)}{notes} {status} Bold: a k/n whose p_adj "
        f"< alpha = {t.alpha:g} in its stratum; a {t.key} whose pooled CMH p_adj < alpha; "
        "nothing else."
    )


def _equivalence_words(t: Across) -> str:
    """The caption's sentence on the pooled margin; empty without one."""
    m = _margin(t)
    if m is None:
        return ""
    level = f"{round(100 * (1 - 2 * t.alpha))}%"
    return (
        f" Equivalence within ±{m:g} (a risk difference, declared with --margin): the counts "
        "summed over the strata (every arm has the same runs in every stratum, so the pooled "
        "difference is the mean of the strata's, and the unstratified variance makes the test "
        "conservative); pooled RD: arm minus baseline, with its "
        f"{level} Miettinen-Nurminen score interval; TOST p_adj: two one-sided score tests "
        "against ±margin, Holm-adjusted in the same family as the CMH p (alone for the "
        "declared pooled contrast); verdict: equivalent within ±margin when the TOST p_adj < "
        "alpha, else different when the CMH p_adj < alpha, else not separated."
    )


def _value_caption(t: Across, holm: str, notes: str, marked: str, status: str) -> str:
    """The caption of a value endpoint's table (a final return, a gradient norm)."""
    itt = ""
    if METRICS[t.endpoint].itt:
        imputed = dict.fromkeys((s.label for s in t.strata), 0)
        for (label, _), cell in t.cells.items():
            imputed[label] += cell.imputed or 0
        counted = "; ".join(f"{label}: {n}" for label, n in imputed.items())
        itt = (
            " Every completed or diverged run counts: a diverged run, or one without a value, "
            "counts as its task's declared random-policy return, as gradlab table counts it "
            f"(runs so counted, per stratum: {counted})."
        )
    return (
        f"{t.endpoint}: the mean over the runs with a value per stratum (n and the 95% CI in "
        f"gradlab table, and in the CSV and JSON).{itt} Per stratum, p_adj: each "
        f"{t.key} against {t.key}={t.baseline} there, two-sided Mann-Whitney U test, "
        f"Holm-adjusted over the stratum's variants, as gradlab table gives it.{marked} Pooled "
        f"over the {len(t.strata)} strata, stratified by stratum (ranks within each stratum, "
        "so tasks on other scales pool without rescaling): P(> base), the chance that a run "
        f"of the {t.key} has a higher {t.endpoint} than a run of the baseline in the same "
        "stratum (ties count half): the share of such pairs the variant wins, each pair "
        "weighted 1/(N + 1) (N: the stratum's runs of both arms), so a stratum weighs "
        "n1 n2 / (N + 1); above 0.5: higher values than the baseline. vE p_adj: "
        "van Elteren's stratified Wilcoxon rank-sum test of the same null (the arm's rank "
        "sums with the same weights, normal approximation, ties by midranks; a variant with "
        "one informative stratum: that stratum's Mann-Whitney U test), "
        f"{holm}. A stratum where either arm has no value, or every value is the same, adds "
        f"nothing to the pooled test.{notes} {status} Bold: a mean whose p_adj < alpha = "
        f"{t.alpha:g} in its stratum; a {t.key} whose pooled p_adj < alpha; nothing else."
    )


def _markdown(t: Across) -> str:
    header = [t.key]
    figure = "k/n" if t.rate else "mean"
    for s in t.strata:
        header += [f"{s.label} {figure}", f"{s.label} p_adj"]
    header += [f"pooled {name}" for name in _pooled_headers(t)]
    body = []
    for row in _rows(t):
        line = [f"**{row['name']}**" if row["bold"] else row["name"]]
        for kn, bold, p in row["strata"]:
            line += [f"**{kn}**" if bold else kn, p]
        effect, ci, *tests = row["pooled"]
        line += [f"{effect} {ci}".strip(), *tests]
        body.append(line)
    align = ["left"] + ["right"] * (len(header) - 1)
    return markdown_table(header, body, align=align) + f"\n\n{across_caption(t)}\n"


def _name_lines(name: str) -> tuple[str, ...]:
    """An arm's label on two lines where it carries its settings: ``clipnorm (clipnorm=0.6)``
    -> ``clipnorm``, ``(clipnorm=0.6)``."""
    cut = name.find(" (")
    return (name,) if cut < 0 or not name.endswith(")") else (name[:cut], name[cut + 1 :])


def _latex(t: Across) -> str:
    """``table`` floats (:func:`~experiments.report.table.latex_grid.grid_floats`): per stratum a
    column under its label (broken after ``_`` where long) whose cell stacks ``k/n`` (or the
    mean) over its p_adj, then the pooled columns (an interval below its estimate); the columns
    in blocks within the text width, each repeating the variant column."""
    figure = "k/n, p" if t.rate else "mean, p"
    headers = [("", t.key)] + [(wrap_label(s.label), figure) for s in t.strata]
    headers += [("pooled", name.removesuffix("_adj")) for name in _pooled_headers(t)]
    body = []
    for row in _rows(t):
        line: list[GridCell] = [(_name_lines(row["name"]), row["bold"])]
        for kn, bold, p in row["strata"]:
            line.append(((kn,) if p == _DASH else (kn, p), bold))
        effect, ci, *tests = row["pooled"]
        line.append(((effect, ci) if ci else (effect,), False))
        for text in tests:  # the equivalence's RD with its interval below it
            estimate, _, interval = text.partition(" [")
            line.append(((estimate, f"[{interval}") if interval else (text,), False))
        body.append(line)
    label = f"tab:pooled_{t.endpoint}"
    return grid_floats(headers, body, caption=_short_caption(t), label=label,
                       method=across_caption(t))  # fmt: skip


def _short_caption(t: Across) -> str:
    """The LaTeX caption: what the columns are, the tests, bold and ``*``, in a few lines; the
    whole caption (:func:`across_caption`) follows the table as its method paragraph."""
    labels = ", ".join(s.label for s in t.strata)
    figure, test = ("k/n", "Fisher's exact test") if t.rate else ("the mean", "Mann-Whitney U")
    pooled = (
        "Mantel-Haenszel odds ratio (OR) with its 95% CI, Cochran-Mantel-Haenszel (CMH) p_adj, "
        "the exact conditional test's p_adj, Breslow-Day (BD) p"
        if t.rate
        else "P(> base), the chance a run beats one of the baseline, van Elteren (vE) p_adj"
    )
    margin = _margin(t)
    if margin is not None:
        level = f"{round(100 * (1 - 2 * t.alpha))}%"
        pooled += f"; equivalence within ±{margin:g}: RD with its {level} CI, TOST p_adj, verdict"
    star = " *: a contrast declared before the runs, tested alone (m = 1)." * bool(
        t.declared or t.primary
    )
    return (
        f"{t.endpoint} pooled over {len(t.strata)} strata ({labels}), by {t.key}: per stratum "
        f"{figure}, below it p_adj ({test} against {t.key}={t.baseline}, Holm within the "
        f"stratum); pooled, stratified by stratum: {pooled}.{star} Bold: p_adj < alpha = "
        f"{t.alpha:g}. Method: after the table."
    )


_VALUE_FIELDS = ("value", "low", "high", "imputed")


def _cell_record(t: Across, cell) -> dict:
    """A cell's fields: ``k`` for a rate; the mean, its CI and ``imputed`` for a value."""
    record = dataclasses.asdict(cell)
    drop = ("k",) if not t.rate else _VALUE_FIELDS
    return {k: v for k, v in record.items() if k not in drop}


def _pooled_record(pooled) -> dict:
    """A pooled row's fields: a rate's odds ratio, CMH, exact and Breslow-Day figures; a value's
    ``P(> base)`` (``superiority``) and van Elteren's z and p."""
    c = pooled.contrast
    common = {"statistic": c.statistic, "p": c.pvalue, "p_adjusted": pooled.p_adjusted,
              "m": pooled.m, "confirmatory": pooled.primary, "bold": pooled.bold,
              "test": c.test, "left_out": "; ".join(c.left_out)}  # fmt: skip
    if isinstance(c, RankContrast):
        return {"superiority": c.superiority, **common}
    record = {"odds_ratio": c.odds_ratio, "odds_ratio_low": c.odds_ratio_ci[0],
              "odds_ratio_high": c.odds_ratio_ci[1], **common, "breslow_day_p": c.homogeneity_p,
              "exact_p": c.exact_p, "exact_p_adjusted": pooled.exact_p_adjusted}  # fmt: skip
    q = pooled.equivalence
    if q is not None:
        record.update({f"equivalence_{k}": v for k, v in dataclasses.asdict(q).items()})
    return record


def across_records(t: Across) -> list[dict]:
    """One record per variant and stratum (``k`` or the mean ``value`` with ``low``, ``high``
    and ``imputed``; ``n``, ``p_adjusted``, ``m``, ``confirmatory``, ``bold``), then one per
    variant with ``stratum`` ``pooled`` (a rate: the odds ratio and its CI, the CMH statistic, p
    and p_adjusted, m, Breslow-Day p, the exact p; a value: ``superiority``, the pooled
    ``P(> base)``, and van Elteren's z, p and p_adjusted)."""
    out = []
    for variant in t.variants:
        for s in t.strata:
            cell = t.cells.get((s.label, variant))
            if cell is not None:
                setting = t.settings.get(variant, {}).get(s.label, "")
                out.append(
                    {t.key: variant, "stratum": s.label, "task": s.task, "folder": s.folder,
                     **({"setting": setting} if t.by_name else {}), **_cell_record(t, cell)}
                )  # fmt: skip
        pooled = t.pooled.get(variant)
        if pooled is not None:
            out.append({t.key: variant, "stratum": "pooled", **_pooled_record(pooled)})
    return out


def _finite(value):
    """For JSON, which has neither: NaN (undefined) as null, an infinite odds ratio or bound as
    the string ``inf`` (or ``-inf``), in nested dicts and lists."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def _csv(t: Across) -> str:
    frame = pd.DataFrame(across_records(t))
    for column in ("k", "n", "m", "imputed"):
        if column in frame:
            frame[column] = frame[column].astype("Int64")  # counts, not 62.0
    return frame.to_csv(index=False)


def render_across(t: Across, *, fmt: str) -> str:
    """The table as ``md``, ``latex``, ``csv`` or ``json``.

    Raises:
      ConfigError: an unknown format.
    """
    if fmt == "md":
        return _markdown(t)
    if fmt == "latex":
        return _latex(t)
    if fmt == "csv":
        return _csv(t)
    if fmt == "json":
        meta = {
            "endpoint": t.endpoint,
            "key": t.key,
            "baseline": t.baseline,
            "alpha": t.alpha,
            "primary": t.primary,
            "strata": [dataclasses.asdict(s) for s in t.strata],
            "excluded": t.excluded,
            "by_name": t.by_name,
            "settings": t.settings,
            "caption": across_caption(t),
        }
        return json.dumps(_finite({**meta, "rows": across_records(t)}), indent=2, allow_nan=False)
    raise unknown_choice("format", fmt, FORMATS)
