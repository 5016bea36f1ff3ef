"""The metrics a table can show: each figure's header, direction and kind (a rate, a time to the
threshold, or a value), the default six, and the four of them a compact LaTeX table shows."""

from __future__ import annotations

import dataclasses

__all__ = ["DEFAULT_METRICS", "HEADLINE_METRICS", "METRICS", "Metric"]


@dataclasses.dataclass(frozen=True)
class Metric:
    """How a stability figure is summarised and shown.

    Attributes:
      header: two short header lines (the LaTeX table stacks them; Markdown joins them).
      higher_is_better: the direction shown by the header's arrow; None: no direction.
      kind: ``rate`` (a 0/1 verdict per run: k/n, exact interval, risk difference), ``time``
        (reaching the threshold, divergence competing: cumulative incidence by the end of the
        budget, its difference, Gray's test) or ``value``.
      itt: the figure is a final return: a diverged run, or one without a value, counts as the
        declared return for diverged runs.
    """

    header: tuple[str, str]
    higher_is_better: bool | None
    kind: str = "value"
    itt: bool = False

    @property
    def rate(self) -> bool:
        """A 0/1 verdict per run."""
        return self.kind == "rate"

    @property
    def label(self) -> str:
        """The header as one line, e.g. ``steps to threshold``."""
        return " ".join(h for h in self.header if h)


METRICS = {
    "failed": Metric(("failed", ""), False, kind="rate"),
    "lost_after_learning": Metric(("lost after", "learning"), False, kind="rate"),
    "never_learned": Metric(("never", "learned"), False, kind="rate"),
    "learned": Metric(("learned", ""), True, kind="rate"),
    "failed_v1": Metric(("failed", "(v1)"), False, kind="rate"),
    "unstable": Metric(("unstable", ""), False, kind="rate"),
    "diverged": Metric(("diverged", ""), False, kind="rate"),
    "collapsed": Metric(("collapsed", ""), False, kind="rate"),
    "reached_threshold": Metric(("reached", "threshold"), True, kind="rate"),
    "final_return": Metric(("final", "return"), True, itt=True),
    "final_return_last": Metric(("last", "return"), True, itt=True),
    # (R - R_rand) / (R_ref - R_rand) of the final return, a diverged run at 0, each task's
    # R_ref and R_rand from a study's record (experiments/report/runs/normalised.py)
    "normalised_return": Metric(("normalised", "return"), True),
    "best_return": Metric(("best", "return"), True),
    "final_evals": Metric(("final", "evals"), None),
    "return_auc": Metric(("return", "AUC"), True),
    "steps_to_threshold": Metric(("reached by", "end (CIF)"), True, kind="time"),
    "final_loss": Metric(("final", "loss"), False),
    "loss_auc": Metric(("loss", "AUC"), False),
    "grad_norm_median": Metric(("grad norm", "median"), False),
    "grad_norm_p99": Metric(("grad norm", "p99"), False),
    "grad_norm_max": Metric(("grad norm", "max"), False),
    "spike_count": Metric(("grad", "spikes"), False),
    "grad_hidden_ratio": Metric(("hidden", "grad K/0"), None),
    "hidden_norm_growth": Metric(("hidden", "norm K/0"), None),
    "wall_time_s": Metric(("wall", "time (s)"), False),
}
"""The table's metrics (figure name -> display); see :mod:`experiments.verdicts.stability` and
``failed`` in
:mod:`experiments.report.runs.results`."""

DEFAULT_METRICS = (
    "failed",
    "lost_after_learning",
    "never_learned",
    "final_return",
    "steps_to_threshold",
    "grad_norm_p99",
)

HEADLINE_METRICS = ("failed", "final_return", "steps_to_threshold", "grad_norm_p99")
"""Of :data:`DEFAULT_METRICS`, those the compact LaTeX table shows (one page for the main job):
``failed`` without its two kinds (``lost_after_learning``, ``never_learned``), the final return,
reaching the threshold and the gradient norm; ``--layout full`` shows all six."""
