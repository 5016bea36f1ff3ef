"""Normalised learning curves of a study across tasks: one panel per task, the arms overlaid.

A study that declares a normalisation (each task's ``R_ref`` and ``R_rand`` in its record: Study
6) compares arms on ``(R - R_rand) / (R_ref - R_rand)``, 0 a random policy and 1 the reference.
This figure draws that quantity at every evaluation: each run's evaluation returns (divided by
its reward scale first, as the endpoint divides them) as one faint line, a diverged run at 0 from
its divergence on (intention to treat, as the endpoint counts it: :mod:`.itt`; an ``x`` marks
where), at the evaluation steps every run of the arm has (as in the ``return`` figure), and over
each arm's runs of the task its **mean**, with a 95% percentile-bootstrap band where the arm has at
least :data:`~experiments.report.figures.bands.MIN_BAND_RUNS` runs there
(:func:`~experiments.report.figures.bands.mean_band`).

Unlike the ``return`` figure, a mean is drawn: the study's endpoint is a difference of means of
this very quantity (over its final window), so the mean curve is the trajectory of what is
tested, and the faint lines show the runs it averages (a bimodal arm is visible as such). The
normalisation is the caller's (a study's record, read by the command line): the report reads no
protocol.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from experiments.base.errors import ConfigError
from experiments.report.figures.bands import mean_band
from experiments.report.figures.drawing import (
    GREY,
    diverged_steps,
    divergence_handle,
    mark_run_divergences,
    panel_title,
    plot_line,
    variant_legend,
    with_lines,
)
from experiments.report.figures.itt import itt_matrix
from experiments.report.figures.layout import Layout, panel_grid
from experiments.report.figures.style import STYLE, in_registry_order, value_styles
from experiments.report.runs.results import Results

__all__ = ["normalised_curves"]

_RUN_ALPHA = 0.22
_PANEL_HEIGHT = 1.6  # inches per row: a three-line title above each panel


def normalised_curves(
    results: Results,
    curves: pd.DataFrame,
    normalisation: Mapping[str, tuple[float, float]],
    *,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Figure:
    """Normalised evaluation return per task and arm (see the module docstring).

    Args:
      results: the study's folder (one or more tasks).
      curves: from :func:`~experiments.report.figures.curves.run_curves`, with ``eval/return``.
      normalisation: task -> ``(r_ref, r_rand)``, unscaled, for every task of the runs.
      n_resamples: bootstrap resamples per band.
      seed: seeds every band.

    Returns:
      The figure: one axes per task (and combination of the other varying keys but the
      variant), titled ``task[, key=value]``, ``R_ref r, R_rand r``, ``n=N each, k diverged``;
      in each, one line labelled ``run`` per run (``get_ydata``: its normalised returns at the
      evaluation steps every run of its arm has), an ``x`` where each diverged run diverged,
      then per arm its mean, labelled with the arm.

    Raises:
      ConfigError: a task without a normalisation, or with ``r_ref <= r_rand``.
    """
    runs = results.averaged
    layout = _task_layout(runs, results.group_keys)
    panels = list(layout.panels(with_lines(runs, layout)))
    evals = curves.dropna(subset=["eval/return"]) if "eval/return" in curves else curves
    any_diverged = bool(diverged_steps(runs).notna().any())
    with mpl.rc_context(STYLE):
        fig, axes = panel_grid(len(panels), height=_PANEL_HEIGHT)
        for ax, (label, panel) in zip(axes, panels, strict=False):
            task, ref, rand = _task_normalisation(panel, normalisation)
            panel = panel.assign(diverged_step=diverged_steps(panel))
            means = []
            for value, members in layout.lines(panel):
                own = evals[evals["job"].isin(members["job"])]
                scale = dict(zip(members["job"], _scales(members), strict=True))
                own = own.assign(**{"eval/return": (own["eval/return"] / own["job"].map(scale)
                                                    - rand) / (ref - rand)})  # fmt: skip
                steps, values = itt_matrix(own, members, {job: 0.0 for job in members["job"]})
                style = layout.styles[value]
                for row in values:  # under every arm's mean (zorder 1)
                    ax.plot(steps, row, color=style["color"], linewidth=0.4, alpha=_RUN_ALPHA,
                            zorder=1, label="run")  # fmt: skip
                mark_run_divergences(ax, steps, values, members["diverged_step"].to_numpy(float))
                if len(values) and len(steps):
                    means.append((value, steps, values))
            for order, (value, steps, values) in enumerate(means):
                mean, low, high = mean_band(values, n_resamples=n_resamples, seed=seed)
                plot_line(ax, steps, mean, low, high, layout.styles[value], order=order)
                ax.get_lines()[-1].set_label(value)
            for level in (0.0, 1.0):
                ax.axhline(level, color=GREY, linestyle=":", linewidth=0.7, zorder=0)
            others = ", ".join(part for part in label.split(", ")[1:])
            panel_title(ax, f"{task}{', ' + others if others else ''}\n"
                            f"R_ref {ref:.4g}, R_rand {rand:.4g}", panel)  # fmt: skip
        for ax in axes[-min(2, len(axes)) :]:
            ax.set_xlabel("training step")
        for ax in axes[:: min(2, len(axes))]:
            ax.set_ylabel("normalised return")
        extra = [
            (Line2D([], [], color=GREY, linewidth=0.4), "one run"),
            (Line2D([], [], color=GREY, linestyle=":", linewidth=0.7), "0 random, 1 R_ref"),
        ]
        if any_diverged:
            extra.append(divergence_handle())
        variant_legend(fig, layout, extra)
    return fig


def _task_layout(runs: pd.DataFrame, group_keys) -> Layout:
    """The arms (``variant``, varying or not) as lines; the task, then every other varying key,
    as panels: one task per panel whatever else varies."""
    others = [k for k in group_keys if k not in ("task", "variant") and runs[k].nunique() > 1]
    values = [str(v) for v in runs["variant"].unique()]
    return Layout(
        "variant",
        ("task", *others),
        in_registry_order("variant", values),
        value_styles("variant", values),
    )


def _task_normalisation(
    panel: pd.DataFrame, normalisation: Mapping[str, tuple[float, float]]
) -> tuple[str, float, float]:
    """The one task of a panel and its ``(r_ref, r_rand)``."""
    tasks = sorted(panel["task"].astype(str).unique())
    if len(tasks) != 1:
        raise ConfigError(f"a panel of the normalised figure holds several tasks: {tasks}")
    (task,) = tasks
    if task not in normalisation:
        known = ", ".join(sorted(normalisation)) or "none"
        raise ConfigError(f"no R_ref and R_rand declared for task {task!r}; declared for: {known}")
    ref, rand = (float(v) for v in normalisation[task])
    if not ref > rand:
        raise ConfigError(f"task {task!r}: R_ref {ref} is not above R_rand {rand}")
    return task, ref, rand


def _scales(members: pd.DataFrame) -> np.ndarray:
    """Each run's reward scale (1 where none is recorded)."""
    if "reward_scale" not in members:
        return np.ones(len(members))
    return pd.to_numeric(members["reward_scale"], errors="coerce").fillna(1.0).to_numpy(float)
