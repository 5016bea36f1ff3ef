"""Hydra's entry point: the task function every job (local, joblib, submitit, Slurm, Ray) runs.

``gradlab run`` / ``gradlab sweep`` call :func:`launch`, which registers the config schema, builds
the task function for the given :class:`~experiments.jobs.job.Job` and hands Hydra the argument list
it expects. The module can also be run directly, which is how a cluster job can be started by
hand::

    python -m experiments.launch.hydra_app --multirun ablation=hidden_scale
    hydra/launcher=submitit_slurm

Each job's folder is Hydra's output directory for it, named by two resolvers registered here
(``gradlab_ablation``, ``gradlab_job``) from :func:`experiments.jobs.store.job_name`, so Hydra and
gradlab agree on where a job's results are, and a re-run finds them.
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf

import conf as _conf_package
from experiments.config import register_schema, to_run_config, without_hydra
from experiments.jobs import MUZERO, Job, JobRequest, Summary, ablation_dir, error_line, job_name
from experiments.jobs.process import Skipped, execute

__all__ = ["CONF_DIR", "job_request", "launch", "main", "task_function"]

CONF_DIR = Path(_conf_package.__file__).resolve().parent
"""gradlab's own config folder (``conf/``, a package, so it is found when installed)."""


def _job_resolver(overrides: Any) -> str:
    return job_name(list(overrides or []))


def _ablation_resolver(ablation: Any) -> str:
    return ablation_dir("", ablation).as_posix()


OmegaConf.register_new_resolver("gradlab_job", _job_resolver, replace=True)
OmegaConf.register_new_resolver("gradlab_ablation", _ablation_resolver, replace=True)


def job_request(
    cfg: DictConfig, job_dir: str | Path, *, overrides: Sequence[str], choices: Mapping[str, Any]
) -> JobRequest:
    """The one place a job's ``DictConfig`` is read: the job as a typed
    :class:`~experiments.jobs.job.JobRequest` (:func:`~experiments.config.to_run_config`, and the
    resolved config as plain dicts). A config that cannot be converted is not raised: the request
    carries its one-line error, and the job is recorded ``failed`` with it.

    Args:
      cfg: the job's composed config (on gradlab's schema; a ``hydra`` node is left out).
      job_dir: the job's folder.
      overrides: the job's ``key=value`` overrides (Hydra's ``overrides.task``).
      choices: Hydra's config-group choices (``hydra.runtime.choices``).
    """
    common = dict(
        job_dir=Path(job_dir),
        overrides=tuple(overrides),
        choices={str(k): None if v is None else str(v) for k, v in choices.items()},
    )
    try:
        config = to_run_config(cfg)
        resolved = OmegaConf.to_container(without_hydra(cfg), resolve=True)
    except Exception as err:  # noqa: BLE001 - e.g. a bad config: one failed job
        force = OmegaConf.select(cfg, "runtime.force", throw_on_resolution_failure=False)
        return JobRequest(
            **common,
            config=None,
            force=force is True,
            error=error_line(err),
            trace=traceback.format_exc(),
        )
    return JobRequest(**common, config=config, resolved=resolved, force=config.runtime.force)


def task_function(job: Job = MUZERO, progress: Any = None) -> Callable[[DictConfig], Any]:
    """Hydra's task function for ``job``: runs (or skips) the job whose folder is Hydra's
    output dir for it (:func:`experiments.jobs.process.isolation.execute`).

    Args:
      job: what each job runs.
      progress: a :data:`experiments.jobs.runner.ProgressFactory` drawing a job's progress, or None.
    """

    def run_task(cfg: DictConfig) -> Summary | Skipped:
        from hydra.core.hydra_config import HydraConfig

        hc = HydraConfig.get()
        overrides, choices = list(hc.overrides.task), dict(hc.runtime.choices)
        request = job_request(cfg, hc.runtime.output_dir, overrides=overrides, choices=choices)
        return execute(request, job=job, progress=progress)

    return run_task


@contextlib.contextmanager
def _argv(argv: list[str]) -> Iterator[None]:
    saved = sys.argv
    sys.argv = argv
    try:
        yield
    finally:
        sys.argv = saved


def launch(
    overrides: Sequence[str],
    *,
    multirun: bool,
    config_dir: str | Path | None = None,
    job: Job = MUZERO,
    progress: Any = None,
) -> None:
    """Runs Hydra on ``overrides`` as if from its own command line.

    Args:
      overrides: Hydra overrides, e.g. ``["ablation=hidden_scale", "hydra/launcher=joblib"]``.
      multirun: ``--multirun`` (a sweep) instead of one run.
      config_dir: the config folder; default :data:`CONF_DIR`.
      job: what each job runs.
      progress: a progress factory for single runs on a terminal, or None.
    """
    from hydra.core.global_hydra import GlobalHydra

    register_schema(job.muzero_schema)
    path = str(Path(config_dir).resolve()) if config_dir else str(CONF_DIR)
    entry = hydra.main(config_path=path, config_name="config", version_base="1.3")(
        task_function(job, progress)
    )
    argv = ["gradlab", *(["--multirun"] if multirun else []), *overrides]
    GlobalHydra.instance().clear()
    saved = os.environ.get("HYDRA_FULL_ERROR")
    # Hydra would print a launcher error as a traceback and exit; raised instead, the caller can
    # report it in one line and keep the finished results.
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        with _argv(argv):
            entry()
    finally:
        GlobalHydra.instance().clear()
        if saved is None:
            os.environ.pop("HYDRA_FULL_ERROR", None)
        else:
            os.environ["HYDRA_FULL_ERROR"] = saved


def main() -> None:
    """``python -m experiments.launch.hydra_app [--multirun] OVERRIDES...`` (the MuZero job).

    A signal stops it as it stops ``gradlab sweep`` (:class:`experiments.launch.lifetime.Sweep`):
    the jobs at their next step, then the exit status ``128 + signal``."""
    from experiments.launch.lifetime import Sweep

    register_schema(MUZERO.muzero_schema)
    with Sweep() as stopping:
        hydra.main(config_path=str(CONF_DIR), config_name="config", version_base="1.3")(
            task_function()
        )()
    if stopping.exit_code is not None:
        sys.exit(stopping.exit_code)


if __name__ == "__main__":
    main()
