"""A job's life: what it runs (:mod:`job`), its row loop (:mod:`runner`), its results folder,
names, resume and locks (:mod:`store`), its ``summary.json`` (:mod:`summary`), its W&B mirror
(:mod:`tracking`); and, in its own room, the process plumbing around it (:mod:`process`: a job in
its own process on a process server, and how the job's processes end with their sweep), which the
job's own modules never import.

Nothing here composes a config (:mod:`experiments.launch.plan` does), deals jobs to workers or
holds a sweep's signals (:mod:`experiments.launch`), or trains (``experiments/muzero``).

The face (``__all__``) is what the packages above use: the job (:class:`Job`, :data:`MUZERO`), its
folder through the store, its summary, identity and curves; its names load at first use, each from
its module (PEP 562: :func:`experiments.base.faces.lazy_face`), so that importing the package loads
none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from experiments.base.faces import lazy_face

if TYPE_CHECKING:
    from experiments.jobs.curves import CURVE_KEYS, CURVES_FILE, read_curves
    from experiments.jobs.identity import (
        code_identity,
        config_fingerprint,
        dirty_paths,
        file_sha256,
        flat_config,
        package_root,
        parse_utc,
    )
    from experiments.jobs.job import MUZERO, Job, JobRequest
    from experiments.jobs.runner import run_job
    from experiments.jobs.store import (
        FINISHED,
        SUMMARY_FILE,
        ablation_dir,
        is_bookkeeping,
        job_locked,
        job_name,
        load_summary,
        mark_interrupted,
        parse_overrides,
        read_metrics,
        read_summary,
        should_run,
        write_json_atomic,
        write_text_atomic,
    )
    from experiments.jobs.summary import STATUSES, Summary, error_line
    from experiments.jobs.tracking import online_problem

__all__ = [
    "CURVES_FILE",
    "CURVE_KEYS",
    "FINISHED",
    "Job",
    "JobRequest",
    "MUZERO",
    "STATUSES",
    "SUMMARY_FILE",
    "Summary",
    "ablation_dir",
    "code_identity",
    "config_fingerprint",
    "dirty_paths",
    "error_line",
    "file_sha256",
    "flat_config",
    "is_bookkeeping",
    "job_locked",
    "job_name",
    "load_summary",
    "mark_interrupted",
    "online_problem",
    "package_root",
    "parse_overrides",
    "parse_utc",
    "read_curves",
    "read_metrics",
    "read_summary",
    "run_job",
    "should_run",
    "write_json_atomic",
    "write_text_atomic",
]

__getattr__, __dir__ = lazy_face(
    __name__,
    {
        "curves": (
            "CURVES_FILE",
            "CURVE_KEYS",
            "read_curves",
        ),
        "identity": (
            "code_identity",
            "config_fingerprint",
            "dirty_paths",
            "file_sha256",
            "flat_config",
            "package_root",
            "parse_utc",
        ),
        "job": (
            "Job",
            "JobRequest",
            "MUZERO",
        ),
        "runner": ("run_job",),
        "store": (
            "FINISHED",
            "SUMMARY_FILE",
            "ablation_dir",
            "is_bookkeeping",
            "job_locked",
            "job_name",
            "load_summary",
            "mark_interrupted",
            "parse_overrides",
            "read_metrics",
            "read_summary",
            "should_run",
            "write_json_atomic",
            "write_text_atomic",
        ),
        "summary": (
            "STATUSES",
            "Summary",
            "error_line",
        ),
        "tracking": ("online_problem",),
    },
    __all__,
)
