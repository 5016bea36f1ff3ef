"""`gradlab pool`: one rate endpoint across several results folders (tasks, regimes, optimizers),
each arm's contrast with the baseline pooled over them, stratified by folder
(:mod:`experiments.report.pooled`). TensorFlow is never imported; bad input is one line, exit 2.
"""

from pathlib import Path
from typing import Annotated

import typer

from cli._errors import guarded

__all__ = ["pool"]


@guarded
def pool(
    folders: Annotated[
        list[Path],
        typer.Argument(help="Two or more results folders, e.g. one study per task."),
    ],
    endpoint: Annotated[
        str, typer.Option("--endpoint", "-e", help="A rate: failed, unstable, diverged, ...")
    ] = "failed",
    baseline: Annotated[str, typer.Option("--baseline", help="The baseline variant.")] = "none",
    alpha: Annotated[
        float, typer.Option("--alpha", help="Bold where the pooled CMH p_adj is below this.")
    ] = 0.05,
    primary: Annotated[
        str | None,
        typer.Option(
            "--primary",
            help="The arm whose pooled contrast was declared before the runs: tested alone "
            "(m = 1), marked *; Holm over the others.",
        ),
    ] = None,
) -> None:
    """One table across folders: per folder each variant's k/n on a rate endpoint, then each
    variant against the baseline pooled over the folders, stratified by folder
    (Cochran-Mantel-Haenszel test, Holm over the variants; Mantel-Haenszel odds ratio with its
    95% CI; Breslow-Day test of equal odds ratios across folders).

    Examples:

      gradlab pool results/findings/study_catch_stress results/findings/study_catch_pseudo*

      gradlab pool results/catch/hidden_scale results/cartpole/hidden_scale -e unstable

      gradlab pool results/findings/study_cartpole_stress results/findings/study_breakout_stress
      --primary scale_gradient
    """
    from experiments.report.pooled import pooled_table

    table, caption = pooled_table(
        folders, endpoint=endpoint, baseline=baseline, alpha=alpha, primary=primary
    )
    typer.echo(table)
    typer.echo("")
    typer.echo(caption)
