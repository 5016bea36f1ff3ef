"""Performance profiles of the final return, with bootstrap confidence bands.

A group's profile is ``tau -> fraction of its runs whose final return is above tau`` (strictly
above: ``final_return > tau``), as rliable draws it (Agarwal et al., 2021, "Deep RL at the Edge of
the Statistical Precipice", Sec. 4.2): one curve shows the whole distribution of outcomes, so a
variant that wins on average by a few lucky seeds cannot hide a mass of failed runs. The band is a
95% percentile bootstrap over the group's runs (:func:`scipy.stats.bootstrap`, resampling runs with
a generator seeded per call; one interval per tau), none with fewer than two runs.

Which runs: those whose status is in :data:`~experiments.report.results.AVERAGED` (completed and
diverged), with their ``final_return`` (the mean evaluation return over the final window). A run
without one (it diverged before the final window) counts as reaching no level: it stays in the
denominator, below every tau. Leaving it out would hide the instability the profile is meant to
show.

The grid of tau spans the panel's observed final returns, padded by 5% of their range on each side
(so every curve starts at its fraction of runs with a return and ends at 0), with every observed
value on the grid; curves are drawn as steps, so the drawing is exact, not interpolated.
"""

from __future__ import annotations

import matplotlib as mpl
import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from scipy import stats

from experiments.report.layout import Layout, layout_of, panel_grid
from experiments.report.results import Results
from experiments.report.style import STYLE, figure_legend

__all__ = ["performance_profile", "performance_profiles", "profile_band", "tau_grid"]

_CONFIDENCE = 0.95
_PAD = 0.05
_GRID = 101


def _scores(scores: np.ndarray) -> np.ndarray:
    """``[N]`` the runs' final returns, a missing one (NaN) as -inf: below every level."""
    scores = np.asarray(scores, dtype=float).ravel()
    return np.where(np.isnan(scores), -np.inf, scores)


def performance_profile(scores: np.ndarray, taus: np.ndarray) -> np.ndarray:
    """The fraction of runs whose score is above each tau.

    Args:
      scores: ``[N]`` one final return per run; NaN (no final return) is below every tau.
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
      ``(low [T], high [T])``; NaN with fewer than two runs.
    """
    scores, taus = _scores(scores), np.asarray(taus, dtype=float)
    if len(scores) < 2:
        nan = np.full(taus.shape, np.nan)
        return nan, nan.copy()

    def fractions(sample: np.ndarray, axis: int = -1) -> np.ndarray:
        sample = np.moveaxis(sample, axis, -1)  # [..., N]
        above = sample[..., None, :] > taus[:, None]  # [..., T, N]
        return np.moveaxis(above.mean(axis=-1), -1, 0)  # [T, ...]

    result = stats.bootstrap(
        (scores,),
        fractions,
        n_resamples=n_resamples,
        confidence_level=confidence,
        method="percentile",
        vectorized=True,
        rng=np.random.default_rng(seed),
    )
    return np.asarray(result.confidence_interval.low), np.asarray(result.confidence_interval.high)


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


def _draw_panel(ax, panel, layout: Layout, *, n_resamples: int, seed: int) -> None:
    """One step line and band per line value among the ``panel``'s runs, in the value's look."""
    taus = tau_grid(panel["final_return"].to_numpy(dtype=float))
    if not len(taus):
        ax.text(0.5, 0.5, "no run has a final return", ha="center", transform=ax.transAxes)
        return
    for value, members in layout.lines(panel):
        scores = members["final_return"].to_numpy(dtype=float)
        style = {k: v for k, v in layout.styles[value].items() if k != "marker"}
        ax.plot(taus, performance_profile(scores, taus), drawstyle="steps-post",
                label=f"{value} (n={len(scores)})", **style)  # fmt: skip
        low, high = profile_band(scores, taus, n_resamples=n_resamples, seed=seed)
        ax.fill_between(taus, low, high, step="post", alpha=0.15, color=style["color"],
                        linewidth=0)  # fmt: skip


def performance_profiles(results: Results, *, n_resamples: int = 2000, seed: int = 0) -> Figure:
    """One panel per regime (per combination of the varying keys but the compared one); in each,
    one step line per variant with its 95% bootstrap band; one legend below the panels.

    Args:
      results: from :func:`~experiments.report.results.load_results`.
      n_resamples: bootstrap resamples per band.
      seed: seeds every band (same folder, same figure).

    Returns:
      The figure; ``fig.axes`` holds one panel per stratum (titled ``k=v``), each line labelled
      ``value (n=N)`` and drawn on its own tau grid (``line.get_xdata()``, ``line.get_ydata()``).
    """
    runs = results.averaged
    layout = layout_of(runs, results.group_keys)
    panels = list(layout.panels(runs))
    with mpl.rc_context(STYLE):
        fig, axes = panel_grid(len(panels))
        for ax, (title, panel) in zip(axes, panels, strict=False):
            _draw_panel(ax, panel, layout, n_resamples=n_resamples, seed=seed)
            ax.set_title(title, loc="left")
            ax.set_xlabel(r"final return $\tau$")
            ax.set_ylim(-0.02, 1.02)
        for ax in axes[:: min(2, len(axes))]:
            ax.set_ylabel(r"fraction of runs $> \tau$")
        handles = [Line2D([], [], **{k: v for k, v in layout.styles[v].items() if k != "marker"})
                   for v in layout.values]  # fmt: skip
        title = None if layout.line_key == "group" else layout.line_key
        figure_legend(fig, handles, list(layout.values), title=title)
    return fig
