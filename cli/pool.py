"""`gradlab pool`: one endpoint across tasks (or any results folders): a row per variant, a
column group per stratum with its k/n (or mean) and within-stratum p_adj, and each variant's
contrast with the baseline pooled over the strata (:mod:`experiments.report.pool.across`).
TensorFlow is never imported; bad input is one line, exit 2.
"""

from pathlib import Path
from typing import Annotated

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

__all__ = ["pool"]


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
            "folder that registered another arm or endpoint. A study across tasks' folder: only "
            "its registered arm, on its family's endpoint.",
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
    arm: Annotated[
        str | None,
        typer.Option(
            "--arm",
            help="For the folder of a study across tasks: table this arm of its record "
            "against the baseline as the family is (endpoint, test, margin, per-task Holm), "
            "exploratory, no *; e.g. the depth-matched control. Default: the registered arm.",
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

      gradlab pool results/findings/study_minatar_return --arm depth_loss_scale
    """
    from experiments.protocols.study import pool_folders  # deferred: pandas, SciPy (~2 s)
    from experiments.report.pool import (  # deferred: pandas, SciPy, statsmodels (~2 s)
        render_across,
        render_family,
    )
    from experiments.report.statistics import parse_pool_margin  # deferred: pandas, SciPy (~2 s)

    fmt = output_format(fmt, out)
    refuse_inputs(out, folders)  # before any work: an output never overwrites an input
    endpoint, margin = parse_pool_margin(margin, endpoint)  # one syntax with gradlab table
    pooled = pool_folders(folders, endpoint=endpoint, baseline=baseline, alpha=alpha,
                          primary=primary, by_name=by_name, keep_duplicates=keep_duplicates,
                          margin=margin, arm=arm)  # fmt: skip
    for note in pooled.notes:
        typer.echo(note, err=True)
    render = render_family if pooled.family else render_across
    emit(render(pooled.table, fmt=fmt), out, folders)
