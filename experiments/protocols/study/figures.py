"""A run's summary bound to its own curves: the figures the tables use, recomputed.

A table counts what a run's ``summary.json`` says (its status, whether it diverged and when, its
final return, whether and when it reached the threshold). :func:`run_mismatches` recomputes
those from the run's own evaluations (``curves.csv.gz``, which keeps every evaluation, or
``metrics.jsonl`` where it is kept, through :func:`experiments.jobs.curves.read_curves`) with
the same function that wrote them (:func:`experiments.verdicts.stability.stability_summary`),
and checks the summary's own consistency:

* ``curves_sha256`` (runs since 2026-11-28): the curves file hashes as the summary binds it;
* the status agrees with ``stability.diverged``; a diverged run's divergence step is its curves'
  last step; a completed run's curves end at its planned steps;
* ``unstable`` is ``diverged`` or ``collapsed``;
* the evaluation figures (:data:`EVAL_KEYS`) equal their recomputation.

An edited summary (a status, a final return, a reached threshold) or rewritten curves give a
mismatch, which the audit reports as a breach. A run without curves (none kept) cannot be
recomputed: said, not passed in silence.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

from experiments.jobs import CURVES_FILE, Summary, read_curves
from experiments.verdicts import DivergenceRule, stability_summary

__all__ = ["EVAL_KEYS", "NO_CURVES", "run_mismatches"]

EVAL_KEYS = ("final_return", "final_return_last", "final_evals", "best_return", "return_auc",
             "reached_threshold", "steps_to_threshold", "collapsed")  # fmt: skip
"""The summary figures that come from the evaluations alone (every one kept in the curves)."""

NO_CURVES = "no curves to recompute from"

_NEVER = DivergenceRule(factor=1e300)  # the divergence verdict is the summary's, checked apart


def _same(a: object, b: object) -> bool:
    if a is None or b is None:
        return a is None and b is None
    x, y = float(a), float(b)
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)


def run_mismatches(job_dir: Path, summary: Summary) -> list[str]:
    """What in ``summary`` disagrees with the run's own curves, one short phrase each; ``[]``
    when everything agrees; ``[NO_CURVES]`` when there is nothing to recompute from."""
    out: list[str] = []
    path = Path(job_dir) / CURVES_FILE
    if summary.curves_sha256 is not None:
        if not path.is_file():
            out.append(f"{CURVES_FILE} is missing")
        elif hashlib.sha256(path.read_bytes()).hexdigest() != summary.curves_sha256:
            out.append(f"{CURVES_FILE} does not hash as its summary binds it")
    st = summary.stability or {}
    diverged = st.get("diverged")
    if (summary.status == "diverged") != (diverged == 1):
        out.append(f"status {summary.status} but stability.diverged={diverged}")
    if st.get("unstable") not in (None, max(int(diverged or 0), int(st.get("collapsed") or 0))):
        out.append(f"unstable={st.get('unstable')} is not diverged or collapsed")
    curves = read_curves(Path(job_dir))
    if curves.empty:
        return out or [NO_CURVES]
    last = int(curves["step"].max())
    if summary.status == "diverged" and st.get("diverged_step") != last:
        out.append(f"diverged at step {st.get('diverged_step')} but its curves end at {last}")
    if summary.status == "completed" and summary.training_steps and last != summary.training_steps:
        out.append(f"completed, but its curves end at step {last} of {summary.training_steps}")
    rows = [{k: v for k, v in r.items() if not (isinstance(v, float) and math.isnan(v))}
            for r in curves.to_dict("records")]  # fmt: skip
    again = stability_summary(rows, threshold=summary.threshold, divergence=_NEVER,
                              training_steps=summary.training_steps,
                              return_range=summary.return_range)  # fmt: skip
    changed = [k for k in EVAL_KEYS if k in st and not _same(st[k], again[k])]
    if changed:
        shown = ", ".join(f"{k} {st[k]!r} (recomputed {again[k]!r})" for k in changed[:3])
        out.append(f"figures differ from its curves: {shown}")
    return out
