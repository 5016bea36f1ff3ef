"""Performance profiles of the final return, with bootstrap confidence bands.

A group's profile is ``tau -> fraction of its runs whose final return is above tau`` (strictly
above: ``final_return > tau``), as rliable draws it (Agarwal et al., 2021, "Deep RL at the Edge of
the Statistical Precipice", Sec. 4.2): one curve shows the whole distribution of outcomes, so a
variant that wins on average by a few lucky seeds cannot hide a mass of failed runs. The band is a
95% percentile bootstrap over the group's runs (the report's one bootstrap call,
:func:`~experiments.report.statistics.intervals.percentile_bootstrap`: runs resampled with a
generator seeded
per call; one interval per tau).

**Only where each arm has at least** :data:`MIN_PROFILE_RUNS` **runs.** A profile over 2 or 5
runs is a staircase of 2 or 5 steps that reads as a distribution it is not, and its band is not
informative (issue 37): below that, :func:`performance_profiles` refuses with one line naming the
smallest arm, and ``gradlab plot`` prints that line instead of drawing the figure. Bands follow
the figures' rule (:data:`~experiments.report.figures.bands.MIN_BAND_RUNS`).

Which runs: those whose status is in :data:`~experiments.report.runs.results.AVERAGED` (completed
and
diverged), each with its **intention-to-treat** final return, as the table counts it: the mean
evaluation return over the final window, or, for a run that diverged (or has no final return),
its task's random-policy return times its reward scale (:mod:`experiments.report.figures.itt`).
Leaving
diverged runs out, or below the axis, would hide the instability the profile is meant to show.

The grid of tau spans every run's value in the figure (all panels; intention-to-treat values
included), padded by 5% of the range on each side, with every value on the grid: the x axis
starts below the lowest run and ends above the highest, so no run falls off a panel; curves are
drawn as steps, so the drawing is exact, not interpolated.
"""

from __future__ import annotations

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from experiments.base.errors import ConfigError
from experiments.report.figures.bands import MIN_BAND_RUNS
from experiments.report.figures.itt import run_random_return
from experiments.report.figures.layout import Layout, layout_of, panel_grid
from experiments.report.figures.style import STYLE, figure_legend
from experiments.report.runs.results import Results
from experiments.report.statistics.intervals import percentile_bootstrap

__all__ = [
    "MIN_PROFILE_RUNS",
    "check_profile_runs",
    "itt_final_returns",
    "performance_profile",
    "performance_profiles",
    "profile_band",
    "tau_grid",
]

MIN_PROFILE_RUNS = 10
"""The fewest runs every arm needs for a performance profile to be drawn."""
_CONFIDENCE = 0.95
_PAD = 0.05
_GRID = 101
_GREY = "#555555"


def _scores(scores: np.ndarray) -> np.ndarray:
    """``[N]`` the runs' final returns, a missing one (NaN) as -inf: below every level."""
    scores = np.asarray(scores, dtype=float).ravel()
    return np.where(np.isnan(scores), -np.inf, scores)


def performance_profile(scores: np.ndarray, taus: np.ndarray) -> np.ndarray:
    """The fraction of runs whose score is above each tau.

    Args:
      scores: ``[N]`` one final return per run; NaN (no value) is below every tau.
      taus: ``[T]`` the return levels.

    Returns:
      ``[T]`` fractions in [0, 1]; NaN everywhere when there is no run.
    """
    scores, taus = _scores(scores), np.asarray(taus, dtype=float)
    if not len(scores):
        return np.full(taus.shape, np.nan)
    return (scores[:, None] > taus[None, :]).mean(axis=0)


def profile_band(
    scores: np.ndarray,
    taus: np.ndarray,
    *,
    confidence: float = _CONFIDENCE,
    n_resamples: int = 2000,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile-bootstrap confidence band of :func:`performance_profile`, resampling runs.

    Args:
      scores: ``[N]`` one final return per run (NaN: below every tau).
      taus: ``[T]`` the return levels.
      confidence: the level, in (0, 1).
      n_resamples: bootstrap resamples.
      seed: seeds the ``np.random.default_rng`` of this band only.

    Returns:
      ``(low [T], high [T])``; NaN with fewer than
      :data:`~experiments.report.figures.bands.MIN_BAND_RUNS` runs.
    """
    scores, taus = _scores(scores), np.asarray(taus, dtype=float)
    if len(scores) < MIN_BAND_RUNS:
        nan = np.full(taus.shape, np.nan)
        return nan, nan.copy()

    def fractions(sample: np.ndarray, axis: int = -1) -> np.ndarray:
        sample = np.moveaxis(sample, axis, -1)  # [..., N]
        above = sample[..., None, :] > taus[:, None]  # [..., T, N]
        return np.moveaxis(above.mean(axis=-1), -1, 0)  # [T, ...]

    low, high = percentile_bootstrap(
        (scores,), fractions, confidence=confidence, n_resamples=n_resamples, seed=seed
    )
    return np.asarray(low), np.asarray(high)


def tau_grid(scores: np.ndarray, *, points: int = _GRID) -> np.ndarray:
    """``[T]`` levels spanning the finite scores, padded by 5% of their range each side, with
    every finite score on the grid; empty when no score is finite."""
    finite = np.asarray(scores, dtype=float)
    finite = finite[np.isfinite(finite)]
    if not len(finite):
        return np.zeros(0)
    low, high = float(finite.min()), float(finite.max())
    pad = _PAD * (high - low) if high > low else max(_PAD * abs(high), _PAD)
    return np.unique(np.concatenate([np.linspace(low - pad, high + pad, points), finite]))


def itt_final_returns(
    runs: pd.DataFrame, *, random_return_value: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Every run's final return, intention to treat: a run that diverged, or has no final return,
    counts as its task's random-policy return times its reward scale.

    Args:
      runs: ``[N]`` rows of ``Results.averaged`` (``final_return``, ``diverged``, ``status``,
        ``path``).
      random_return_value: the random-policy return (unscaled) for every task; None: the task
        registry's (:func:`~experiments.report.figures.itt.run_random_return`).

    Returns:
      ``(values [N], imputed [N] bool)``.

    Raises:
      ConfigError: a run needs a random-policy return and none is known for its task.
    """
    values = pd.to_numeric(runs["final_return"], errors="coerce").to_numpy(dtype=float).copy()
    diverged = pd.to_numeric(runs["diverged"], errors="coerce").to_numpy(dtype=float) >= 0.5
    diverged |= (runs["status"] == "diverged").to_numpy()
    imputed = diverged | ~np.isfinite(values)
    paths = runs["path"].to_numpy(dtype=object)
    for i in np.flatnonzero(imputed):
        values[i] = run_random_return(paths[i], explicit=random_return_value)
    return values, imputed


def check_profile_runs(runs: pd.DataFrame, layout: Layout) -> None:
    """Refuses a profile where an arm (a line of a panel) has fewer than
    :data:`MIN_PROFILE_RUNS` runs.

    Raises:
      ConfigError: one line naming the smallest arm, its n and the minimum.
    """
    counts = []
    for title, panel in layout.panels(runs):
        for value, members in layout.lines(panel):
            counts.append((len(members), f"{value}" + (f" ({title})" if title else "")))
    if not counts:
        raise ConfigError("performance profile not drawn: no completed or diverged run")
    n, arm = min(counts, key=lambda c: c[0])
    if n < MIN_PROFILE_RUNS:
        small = sum(c[0] < MIN_PROFILE_RUNS for c in counts)
        raise ConfigError(
            f"performance profile not drawn: it needs >= {MIN_PROFILE_RUNS} runs per arm, and "
            f"{small} of {len(counts)} arms have fewer (smallest: {arm}, n={n})"
        )


def _draw_panel(
    ax, panel: pd.DataFrame, layout: Layout, taus: np.ndarray, *, n_resamples: int, seed: int
) -> None:
    """One step line per line value among the ``panel``'s runs, in the value's look, with its
    band (at least :data:`~experiments.report.figures.bands.MIN_BAND_RUNS` runs)."""
    for value, members in layout.lines(panel):
        scores = members["_itt"].to_numpy(dtype=float)
        style = {k: v for k, v in layout.styles[value].items() if k != "marker"}
        ax.plot(taus, performance_profile(scores, taus), drawstyle="steps-post",
                label=f"{value} (n={len(scores)})", **style)  # fmt: skip
        low, high = profile_band(scores, taus, n_resamples=n_resamples, seed=seed)
        if np.isfinite(low).any():
            ax.fill_between(taus, low, high, step="post", alpha=0.12, color=style["color"],
                            linewidth=0)  # fmt: skip


def performance_profiles(
    results: Results,
    *,
    random_return_value: float | None = None,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Figure:
    """One panel per regime (per combination of the varying keys but the compared one); in each,
    one step line per variant with its 95% bootstrap band; one legend below the panels. Every
    run counts, with its intention-to-treat final return (module docstring); a dotted vertical
    line marks the random-policy return(s) the diverged runs count as.

    Args:
      results: from :func:`~experiments.report.runs.results.load_results`.
      random_return_value: the random-policy return (unscaled); None: the task registry's.
      n_resamples: bootstrap resamples per band.
      seed: seeds every band (same folder, same figure).

    Returns:
      The figure; ``fig.axes`` holds one panel per stratum (titled ``k=v``), each line labelled
      ``value (n=N)`` on one tau grid spanning every run of the figure (``line.get_xdata()``,
      ``line.get_ydata()``); the shared x limits are the grid's ends.

    Raises:
      ConfigError: an arm has fewer than :data:`MIN_PROFILE_RUNS` runs
        (:func:`check_profile_runs`), or a diverged run's random-policy return is unknown.
    """
    runs = results.averaged
    layout = layout_of(runs, results.group_keys)
    check_profile_runs(runs, layout)
    values, imputed = itt_final_returns(runs, random_return_value=random_return_value)
    runs = runs.assign(_itt=values)
    taus = tau_grid(values)
    levels = sorted(set(values[imputed].tolist()))
    panels = list(layout.panels(runs))
    with mpl.rc_context(STYLE):
        fig, axes = panel_grid(len(panels))
        for ax, (title, panel) in zip(axes, panels, strict=False):
            _draw_panel(ax, panel, layout, taus, n_resamples=n_resamples, seed=seed)
            for level in levels:
                ax.axvline(level, color=_GREY, linestyle=":", linewidth=0.8)
            ax.set_title(title, loc="left")
            ax.set_xlabel(r"final return $\tau$")
            ax.set_ylim(-0.02, 1.02)
            ax.set_xlim(taus[0], taus[-1])
        for ax in axes[:: min(2, len(axes))]:
            ax.set_ylabel(r"fraction of runs $> \tau$")
        handles = [Line2D([], [], **{k: v for k, v in layout.styles[v].items() if k != "marker"})
                   for v in layout.values]  # fmt: skip
        labels = list(layout.values)
        if levels:
            handles.append(Line2D([], [], color=_GREY, linestyle=":", linewidth=0.8))
            labels.append("random policy (diverged runs)")
        title = None if layout.line_key == "group" else layout.line_key
        figure_legend(fig, handles, labels, title=title)
    return fig
