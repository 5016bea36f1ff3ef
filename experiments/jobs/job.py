"""What a gradlab job runs (its training generator and the schema of its settings), and one job
to run (:class:`JobRequest`: its folder, overrides and typed config).

The command line, planning and launching take a :class:`Job` as a parameter (default
:data:`MUZERO`), so tests can run the whole machinery around a tiny stand-in job: they pass
theirs in; nothing is looked up from the environment. A Job is picklable by reference (module-level
functions and classes), so it travels to launcher workers and to each job's own process; so does
a JobRequest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from experiments.jobs import store
from experiments.muzero import MuZeroConfig

if TYPE_CHECKING:
    from experiments.config import RunConfig

__all__ = ["MUZERO", "Job", "JobRequest", "TrainFn"]

TrainFn = Callable[..., Iterator[Mapping[str, float]]]
"""``train(config, task, variant, placement, *, seed) -> Iterator[row]``: one metrics row per
training step; the caller may stop iterating at any time (budget, divergence)."""


@dataclasses.dataclass(frozen=True)
class Job:
    """A job's training function and settings schema.

    Attributes:
      name: for messages.
      train: the training generator (see :data:`TrainFn`).
      muzero_schema: the dataclass of the ``muzero`` config section (registered in Hydra's
        ConfigStore as ``muzero/schema``); its ``training_steps`` (int: the steps planned) and
        ``q_form`` (str) are recorded in each job's summary.
      preload: modules each job process finds imported already (its process server imports them
        once, so a job does not pay for importing TensorFlow).
      check: checks across sections of a validated run config (e.g. that the value support
        covers the task's returns), raising ConfigError; run before anything is launched.
      cache: makes what a job process keeps between the jobs it runs, handed to ``train`` as
        ``cache=``; with it, a launcher worker runs its jobs one after another in one process
        (:class:`~experiments.jobs.process.hosting.JobHost`) instead of a process each. None:
        nothing kept.
      overlap: ``train`` takes ``overlap=``: whether to run work that does not feed the next
        training step on worker threads beside it (the runner says so when the job has more
        than one thread, :func:`experiments.jobs.process.isolation.overlap_for`); the numbers
        are the same.
      programs: with :attr:`cache`, what a validated run config's compiled programs depend on
        (everything but what changes between runs of the same shapes, the seed): jobs with
        the same value share a host process, others get a host of their own
        (:func:`~experiments.jobs.process.hosting.run_hosted`). None: one host for all.
      tensorflow: the job runs TensorFlow: its process imports it (quietly, before its thread
        settings), seeds it (:func:`~experiments.base.process.seed_everything`, with op
        determinism as ``runtime.deterministic`` says) and binds the config's variant
        (:meth:`~experiments.config.VariantConfig.build`: its TensorFlow transforms). False: the
        job's process imports no TensorFlow: Python's and NumPy's generators are seeded, and
        ``train`` gets the variant's config unbound (its ``name`` and ``params``) with its
        placement.
    """

    name: str
    train: TrainFn
    muzero_schema: type
    preload: tuple[str, ...] = ()
    check: Callable[[Any], None] | None = None
    cache: Callable[[], Any] | None = None
    overlap: bool = False
    programs: Callable[[Any], Hashable] | None = None
    tensorflow: bool = True

    def validate(self, run: Any) -> None:
        """Runs :attr:`check` on a validated :class:`~experiments.config.RunConfig`."""
        if self.check is not None:
            self.check(run)


@dataclasses.dataclass(frozen=True)
class JobRequest:
    """One job to run, as the launcher hands it over: built from Hydra's config at the entry
    (:func:`experiments.launch.hydra_app.job_request`), typed from there on.

    Attributes:
      job_dir: the job's folder (Hydra's output dir for it).
      overrides: the job's ``key=value`` overrides (Hydra's ``overrides.task``).
      choices: Hydra's config-group choices (``task``, ``ablation``, ``regime``...).
      config: the validated config; None when it was refused (:attr:`error`).
      resolved: the resolved config as plain dicts (saved as ``config.yaml``, sent to W&B).
      force: re-run even a finished job (``runtime.force``).
      error: why the config was refused, in one line (the job is then recorded ``failed``);
        None when it was not.
      trace: the refusal's traceback (the job's ``error.txt``).
    """

    job_dir: Path
    overrides: tuple[str, ...]
    choices: Mapping[str, str | None]
    config: RunConfig | None
    resolved: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    force: bool = False
    error: str | None = None
    trace: str = ""

    @property
    def name(self) -> str:
        """The job's name (:func:`experiments.jobs.store.job_name` of its overrides)."""
        return store.job_name(list(self.overrides))

    @property
    def ablation(self) -> str | None:
        """The sweep's ablation (Hydra's ``ablation`` choice), or None for a single run."""
        return self.choices.get("ablation")


def _train_muzero(*args: Any, **kwargs: Any) -> Iterator[Mapping[str, float]]:
    from experiments.muzero.train import train

    return train(*args, **kwargs)


def _check_muzero(run: Any) -> None:
    from experiments.muzero import resolve_support_sizes

    resolve_support_sizes(run.task, run.muzero.network, discount=run.muzero.discount)


def _muzero_programs(run: Any) -> tuple[str, str, str]:
    """What a MuZero run's compiled train step and search depend on: its MuZero settings, task
    and variant (with its parameters and placement), not its seed; the agent cache's key
    (``experiments.muzero.train``) names the same, from the bound variant."""
    return repr(run.muzero), repr(run.task), repr(run.variant)


def _agent_cache() -> Any:
    """Agents kept between a host's jobs, their traced train steps and searches beside the XLA
    programs (``runtime.xla_cache``, set before a host makes its cache; none without it)."""
    from experiments.base.process import xla_cache_dir
    from experiments.muzero import AgentCache
    from experiments.muzero.runtime import GraphStore

    return AgentCache(graphs=GraphStore.beside(xla_cache_dir()))


MUZERO = Job(
    name="muzero",
    train=_train_muzero,
    muzero_schema=MuZeroConfig,
    preload=("experiments.jobs.process._preload_tensorflow", "experiments.muzero.train", "wandb"),
    check=_check_muzero,
    cache=_agent_cache,
    overlap=True,
    programs=_muzero_programs,
)
"""The MuZero job (``experiments.muzero.train.train``)."""
