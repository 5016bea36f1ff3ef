"""The `gradlab` command line: thin Typer commands over the library.

Heavy imports (TensorFlow, Hydra and OmegaConf, pandas and SciPy, matplotlib, NumPy) happen
inside the commands that need them, so `gradlab --help`, `gradlab list` and `gradlab table` start
fast and never import TensorFlow: an import inside a function of cli/ is such a start-up cost, and
says which beside it (``# deferred: pandas, SciPy (~2 s)``: what it loads, measured with
``python -X importtime`` after ``import cli.main``); every other import is at the top.
"""

from __future__ import annotations

import typer

app = typer.Typer(
    name="gradlab",
    help=(
        "Measure, don't guess, what a gradient trick does to training: MuZero's scale_gradient "
        "and its look-alikes (clipnorm, MaxNorm, stop_gradient, ...) swept over seeds.\n\n"
        "Main job: gradlab sweep ablation=hidden_scale (5 variants x regimes tuned and stress x "
        "5 seeds on Catch; then gradlab table results/hidden_scale)\n\n"
        "Elsewhere: gradlab table DIR --wandb (the table into a W&B run of the sweep's group), "
        "gradlab export DIR -f csv|parquet|rliable (runs and curves for pandas and R, the score "
        "matrix for rliable), import gradlab in a notebook (examples/notebook.ipynb)"
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",  # docstring paragraphs reflow to the terminal's width
)


@app.callback()
def _root() -> None:
    """Measure, don't guess, what a gradient trick does to training."""


# Commands are registered from their own modules below (one module per concern).
from cli import explain as _explain  # noqa: E402

app.command("explain")(_explain.explain)

from cli import report as _report  # noqa: E402

app.command("table")(_report.table)
app.command("plot")(_report.plot)

from cli import jobs as _jobs  # noqa: E402

app.command("run")(_jobs.run)
app.command("sweep")(_jobs.sweep)
app.command("list")(_jobs.list_)

from cli import bench as _bench  # noqa: E402

app.command("bench")(_bench.bench)

from cli import study as _study  # noqa: E402

app.add_typer(_study.app, name="study")

from cli import calibrate as _calibrate  # noqa: E402

app.command("calibrate")(_calibrate.calibrate)

from cli import pool as _pool  # noqa: E402

app.command("pool")(_pool.pool)

from cli import export as _export  # noqa: E402

app.command("export")(_export.export)

if __name__ == "__main__":  # ``python -m cli.main``, as ``python -m cli`` and ``gradlab``
    app(prog_name="gradlab")
