"""`gradlab pool`: one endpoint across tasks (or any results folders): a row per variant, a
column group per stratum with its k/n (or mean) and within-stratum p_adj, and each variant's
contrast with the baseline pooled over the strata (:mod:`experiments.report.pool.across`).
TensorFlow is never imported; bad input is one line, exit 2.
"""

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli._errors import guarded
from cli._output import (
    FormatOption,
    KeepDuplicatesOption,
    OutOption,
    emit,
    output_format,
    refuse_inputs,
)
from experiments.base.errors import ConfigError

if TYPE_CHECKING:
    from experiments.report.pool.table import Registration

__all__ = ["pool", "registrations"]


def registrations(
    folders: Sequence[str | Path], *, endpoint: str, baseline: str, alpha: float
) -> "list[Registration]":
    """What each folder's study declared, for the pooled table of ``endpoint`` against
    ``variant=BASELINE`` (the independent analysis, Fisher's test, ``alpha``): its registered
    primary when those are the registered ones (else a note), and its declaration whatever the
    table (a ``--primary`` that differs gets a note). A folder of no study declares nothing."""
    from experiments.protocols.study.analysis import declared_analysis, registered_contrast
    from experiments.report.pool.table import Registration

    out = []
    for folder in folders:
        confirmatory, _, note = registered_contrast(
            folder,
            [endpoint],
            analysis="independent",
            rate_test="fisher",
            alpha=alpha,
            baseline=f"variant={baseline}",
        )
        out.append(Registration(confirmatory, note, declared_analysis(folder)))
    return out


def _registered_margin(folders: Sequence[Path], endpoint: str, margin: float | None):
    """The equivalence margin the pooled studies registered on ``endpoint`` (all the same),
    applied without a flag; a ``--margin`` that disagrees with a registered one is refused."""
    from experiments.protocols.study.analysis import declared_analysis

    declared = {
        (d.study, d.margin)
        for d in (declared_analysis(f) for f in folders)
        if d is not None and d.endpoint == endpoint and d.margin is not None
    }
    margins = {m for _, m in declared}
    if margin is not None and margins and margins != {margin}:
        study, registered = sorted(declared)[0]
        raise ConfigError(
            f"--margin {margin:g} disagrees with study {study}'s registered margin "
            f"{registered:g} on {endpoint}; leave --margin out to apply the registered one"
        )
    if margin is None and len(margins) == 1:
        return margins.pop()
    return margin


def _family(folder: Path, *, primary: str | None, margin: float | None, fmt: str) -> str:
    """The registered confirmatory family of a study across tasks' folder, rendered."""
    from experiments.report.pool.family import render_family
    from gradlab._api import family_table_of

    table = family_table_of(folder, primary=primary, margin=margin,
                            note=lambda line: typer.echo(line, err=True))  # fmt: skip
    return render_family(table, fmt=fmt)


@guarded
def pool(
    folders: Annotated[
        list[Path],
        typer.Argument(help="Results folders, e.g. one study per task."),
    ],
    endpoint: Annotated[
        str | None,
        typer.Option(
            "--endpoint",
            "-e",
            help="A rate (failed, unstable, diverged, ...: CMH) or a value (final_return, "
            "grad_norm_p99, normalised_return, ...: van Elteren). Default: failed; for the folder "
            "of a study across tasks, its registered family's endpoint.",
        ),
    ] = None,
    baseline: Annotated[str, typer.Option("--baseline", help="The baseline variant.")] = "none",
    alpha: Annotated[
        float, typer.Option("--alpha", help="Bold where a p_adj is below this.")
    ] = 0.05,
    primary: Annotated[
        str | None,
        typer.Option(
            "--primary",
            help="The arm whose pooled contrast was declared before the runs: tested alone "
            "(m = 1), marked *; Holm over the others. A note on stderr names each study "
            "folder that registered another arm or endpoint.",
        ),
    ] = None,
    by_name: Annotated[
        bool,
        typer.Option(
            "--by-name",
            help="Match arms across strata by the variant's name alone (clipnorm at each task's "
            "own threshold); the caption names each stratum's setting.",
        ),
    ] = False,
    keep_duplicates: KeepDuplicatesOption = None,
    margin: Annotated[
        str | None,
        typer.Option(
            "--margin",
            help="ENDPOINT=VALUE, as gradlab table takes it: the pooled endpoint's equivalence "
            "margin (for a rate, a risk difference, e.g. failed=0.1): adds the pooled "
            "difference with its 90% CI, two one-sided tests against ±margin and the verdict "
            "(equivalent, different, not separated). A study's registered margin applies "
            "without it.",
        ),
    ] = None,
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """One table across tasks: a row per variant; per stratum (a folder, or a setting a folder
    varies, e.g. regime=stress) its k/n on a rate endpoint and its contrast with the baseline
    there (Fisher's exact test, Holm within the stratum, as gradlab table gives it); then each
    variant against the baseline pooled over the strata (Cochran-Mantel-Haenszel test, Holm over
    the variants, with the exact conditional test beside it; Mantel-Haenszel odds ratio with its
    95% CI; Breslow-Day test of equal odds ratios across strata). A value endpoint
    (final_return, grad_norm_p99, ...) shows each stratum's mean and Mann-Whitney p_adj, and
    pools by ranks within each stratum, so tasks on other scales need no rescaling: P(> base),
    the chance a run of the variant beats one of the baseline, and van Elteren's stratified
    rank-sum test. Strata are labelled by task when each folder holds its own task.

    Examples:

      gradlab pool results/findings/study_catch_stress results/findings/study_catch_pseudo*

      gradlab pool results/catch/hidden_scale results/cartpole/hidden_scale -e unstable

      gradlab pool results/findings/*/study3_tuned --by-name -e final_return

      gradlab pool results/findings/study_faithful_* --by-name --primary scale_gradient
      --margin failed=0.1

      gradlab pool results/findings/study_cartpole_stress results/findings/study_breakout_stress
      --primary scale_gradient --by-name -o pooled.tex
    """
    from experiments.protocols.study.analysis import declared_family
    from experiments.report.pool.across import across_table
    from experiments.report.pool.render import render_across
    from experiments.report.statistics.equivalence import parse_pool_margin

    fmt = output_format(fmt, out)
    refuse_inputs(out, folders)  # before any work: an output never overwrites an input
    endpoint, margin = parse_pool_margin(margin, endpoint)  # one syntax with gradlab table
    family = declared_family(folders[0]) if len(folders) == 1 else None
    if family is not None and endpoint in (None, family.pooled[0]["endpoint"]):
        text = _family(folders[0], primary=primary, margin=margin, fmt=fmt)
        emit(text, out, folders)
        return
    endpoint = endpoint or "failed"
    margin = _registered_margin(folders, endpoint, margin)
    regs = registrations(folders, endpoint=endpoint, baseline=baseline, alpha=alpha)
    failing = [r.note for r in regs if r.declared is not None and r.confirmatory is None and r.note
               and "audit fails" in r.note]  # fmt: skip
    if primary is not None and failing:
        for note in failing:
            typer.echo(note, err=True)
        typer.echo(
            f"note: --primary {primary}: no pooled contrast is confirmatory while a pooled "
            "study's audit fails; every pooled row is exploratory",
            err=True,
        )
        primary = None
    table = across_table(
        folders,
        endpoint=endpoint,
        baseline=baseline,
        alpha=alpha,
        primary=primary,
        by_name=by_name,
        keep_duplicates=keep_duplicates,
        margin=margin,
        registrations=regs,
    )
    for note in table.notes:
        typer.echo(note, err=True)
    conservative = _holm_over_strata(table)
    if conservative:
        typer.echo(conservative, err=True)
    emit(render_across(table, fmt=fmt), out, folders)


def _holm_over_strata(table) -> str | None:
    """Where two or more strata each mark their own registered primary (``*``, m = 1, one
    record per task with no family across them, as Study 4's), the conservative reading: Holm
    over those strata's p, in one note naming each."""
    from statsmodels.stats.multitest import multipletests

    starred = [(c.label, cell) for c in table.strata for (label, arm), cell in table.cells.items()
               if label == c.label and cell.confirmatory]  # fmt: skip
    if len(starred) < 2:
        return None
    adjusted = multipletests([cell.p_adjusted for _, cell in starred], method="holm")[1]
    shown = ", ".join(f"{label} {p:.2g}" for (label, _), p in zip(starred, adjusted, strict=True))
    return (
        f"note: {len(starred)} records each declare their own stratum's test alone (m = 1) and no "
        f"family across them; read conservatively, Holm over the {len(starred)} strata: {shown}"
    )
