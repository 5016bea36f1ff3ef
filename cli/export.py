"""`gradlab export`: results folders as files other tools read (pandas, seaborn, R, rliable).

pandas is imported inside the command (``gradlab --help`` stays fast); TensorFlow is never
imported. Bad input raises ConfigError: one line on stderr, exit code 2, nothing written.
"""

from pathlib import Path
from typing import Annotated

import typer

from cli._errors import guarded
from cli._output import refuse_inputs
from experiments.base.errors import ConfigError

__all__ = ["export"]


def _outside(out: Path, folders: list[Path]) -> None:
    """Refuses an ``out`` that is an input folder or lies anywhere inside one (an export never
    writes among the runs it reads)."""
    refuse_inputs(out, folders)
    target = out.resolve()
    for folder in folders:
        if folder.resolve() in target.parents:
            raise ConfigError(
                f"--out '{out}' lies inside the input '{folder}'; an export is written outside "
                "the results folders it reads: choose another folder"
            )


@guarded
def export(
    results_dirs: Annotated[
        list[Path],
        typer.Argument(
            help="Results folders, e.g. results/hidden_scale; several (a study's tasks, each in "
            "its folder): one export of them all.",
            show_default=False,
        ),
    ],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="csv | parquet: runs.EXT (one row per run) and curves.EXT (long format); "
            "rliable: scores.npz ({arm: array[runs, tasks]}) and scores.json (what it holds).",
        ),
    ] = "csv",
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            help="Folder for the files (made if missing; its parent must exist; files of the "
            "same names are replaced). Never inside an input folder.",
        ),
    ] = ...,
) -> None:
    """Export runs for pandas, seaborn, R and rliable.

    `csv` / `parquet` (pyarrow): `runs` has one row per run (the folder, settings, seed,
    status, outcome class, every endpoint, the normalised return where a study's record declares
    it, identity and times), `curves` one row per run, step and metric (`eval/return`,
    `grad/global_norm`, `loss/total`).

    `rliable`: per arm, its scores as a `[runs, tasks]` array (`scores.npz`, keyed by arm), each
    the run's normalised return where the folders' study records declare each task's R_ref and
    R_rand, else its raw final return (a diverged run: its task's random-policy return); every
    completed or diverged run counts. In each task's column, row i is the arm's run with the
    i-th smallest seed. `scores.json` says all of this, the seeds of every row and each arm's
    IQM as gradlab computes it (`rliable.metrics.aggregate_iqm` gives the same).

    Examples:

      gradlab export results/hidden_scale -o exports/hidden_scale

      gradlab export results/hidden_scale -f parquet -o exports/hidden_scale

      gradlab export results/findings/study_faithful_{catch,cartpole} -f rliable -o exports/s4
    """
    from gradlab._export import export as write  # deferred: pandas (~0.5 s)

    _outside(out, results_dirs)  # before any work: an export never writes among its inputs
    written = write(results_dirs, fmt=fmt, out=out, note=lambda line: typer.echo(line, err=True))
    for path in written:
        typer.echo(f"wrote {path}")
