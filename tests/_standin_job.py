"""A tiny stand-in for the MuZero job, for the runner and sweep tests only.

Tests pass :data:`JOB` where gradlab takes a job (``CliRunner().invoke(app, args, obj=JOB)``,
``plan(..., job=JOB)``, ``isolation.execute(..., job=JOB)``), with a config folder from
:func:`make_conf`. Its losses are a closed form of the step, seed and variant parameters, so tests
can compute them by hand; it can be told to fail, blow up or go NaN at a given step. It runs no
TensorFlow (:attr:`~experiments.jobs.job.Job.tensorflow` False): nor do its job processes or
their process servers, which its rows say (``env/tensorflow``). :data:`MUZERO_PROCESS_JOB` is the
stand-in in the MuZero job's process (TensorFlow preloaded, threads and seeds set, its variant
bound).

Fault injection that fires once (so that re-running the same command completes the job):
``GRADLAB_STANDIN_FAULTS=<file.json>`` holding ``{"<variant>/<seed>": {"raise_at": 2}}`` or
``{"...": {"kill_at": 3}}`` (SIGKILL of the job's own process); a fault fires the first time its
job reaches that step, recorded by a marker file ``<file.json>.<variant>-<seed>.fired``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from experiments.base.errors import ConfigError
from experiments.jobs.job import MUZERO, Job

PATH = Path(__file__).resolve()
CONF = PATH.parents[1] / "conf"
FAULTS_ENV = "GRADLAB_STANDIN_FAULTS"


@dataclasses.dataclass(frozen=True)
class MuZeroConfig:
    training_steps: int = 5
    base_loss: float = 1.0
    fail_at: int = 0  # raise RuntimeError at this step (0: never)
    nan_at: int = 0  # yield a NaN loss at this step (0: never)
    blow_up_at: int = 0  # loss x 1e6 from this step on (0: never)
    sleep_s: float = 0.0  # per step
    q_form: str = "normalized"  # recorded in the summary, as MuZero's

    def __post_init__(self) -> None:
        if self.training_steps < 1:
            raise ConfigError(f"muzero.training_steps={self.training_steps} must be >= 1")


def loss_at(step: int, *, seed: int, base_loss: float, scale: float) -> float:
    """The stand-in's ``loss/total`` at ``step``: ``base * (1 + seed/10) * scale' / step``."""
    return base_loss * (1.0 + seed / 10.0) * (1.0 + scale) / step


def _fault(variant: str, seed: int) -> tuple[dict[str, int], Path | None]:
    """This job's one-shot fault from :data:`FAULTS_ENV` (empty when none or already fired)."""
    ref = os.environ.get(FAULTS_ENV)
    if not ref:
        return {}, None
    key = f"{variant}/{seed}"
    fault = json.loads(Path(ref).read_text()).get(key, {})
    marker = Path(f"{ref}.{key.replace('/', '-')}.fired")
    return ({}, None) if marker.exists() else (fault, marker)


def _fire(marker: Path) -> None:
    marker.write_text("fired\n")  # before acting: a SIGKILL leaves no chance afterwards


def train(
    config: MuZeroConfig, task: Any, variant: Any, placement: Any, *, seed: int
) -> Iterator[dict[str, float]]:
    del task, placement
    scale = float(variant.params.get("scale", 0.0))
    fault, marker = _fault(variant.name, seed)
    for step in range(1, config.training_steps + 1):
        if config.sleep_s:
            time.sleep(config.sleep_s)
        if marker is not None and step == fault.get("raise_at"):
            _fire(marker)
            raise RuntimeError(f"injected failure at step {step}")
        if marker is not None and step == fault.get("kill_at"):
            _fire(marker)
            os.kill(os.getpid(), signal.SIGKILL)
        if step == config.fail_at:
            raise RuntimeError(f"stand-in failure at step {step}")
        loss = loss_at(step, seed=seed, base_loss=config.base_loss, scale=scale)
        if config.blow_up_at and step >= config.blow_up_at:
            loss *= 1e6
        if step == config.nan_at:
            loss = float("nan")
        yield {
            "step": step,
            "loss/total": loss,
            "grad/global_norm": 2.0 * loss,
            "nonfinite": 0.0 if loss == loss else 1.0,
            "eval/return": 0.1 * step,
            "env/threads": float(os.environ.get("TF_NUM_INTRAOP_THREADS", 0)),
            "env/tensorflow": float("tensorflow" in sys.modules),  # imported in this process
        }


JOB = Job(
    name="stand-in",
    train=train,
    muzero_schema=MuZeroConfig,
    # what each job's process imports anyway (curves: pandas), once per process server
    preload=("experiments.jobs.process.isolation", "experiments.jobs.curves"),
    tensorflow=False,
)
"""The stand-in job: pass it where gradlab takes a job. Its process imports no TensorFlow (its
variant is handed over unbound: ``name`` and ``params``, all :func:`train` reads)."""


def train_hosted(*args: Any, cache: dict, **kwargs: Any) -> Iterator[dict[str, float]]:
    """:func:`train` for :data:`HOSTED_JOB`: counts the jobs its host ran in ``cache``."""
    cache["jobs"] = cache.get("jobs", 0) + 1
    return train(*args, **kwargs)


HOSTED_JOB = dataclasses.replace(JOB, name="stand-in (hosted)", train=train_hosted, cache=dict)
"""The stand-in with :attr:`Job.cache`: a launcher worker runs its jobs in one host process."""


def variant_programs(run: Any) -> str:
    """A stand-in :attr:`Job.programs`: its "compiled programs" depend on the variant alone."""
    return repr(run.variant)


PER_VARIANT_JOB = dataclasses.replace(HOSTED_JOB, programs=variant_programs)
"""The hosted stand-in whose configurations are its variants: one host per variant."""


def train_in_muzero_process(
    config: MuZeroConfig, task: Any, variant: Any, placement: Any, *, seed: int, **kept: Any
) -> Iterator[dict[str, float]]:
    """:func:`train` for :data:`MUZERO_PROCESS_JOB`; each row also says what the job's process
    was set up with: TensorFlow's thread pools as ``tf.config`` holds them (0: its default),
    ``TF_XLA_FLAGS`` (``env/xla_cache``: 1 when it names the XLA cache) and the bound variant
    (``env/bound``: 1 for a :class:`~experiments.gradients.Variant`)."""
    del kept  # MuZero's cache= and overlap=
    imported = float("tensorflow" in sys.modules)  # by the job's process, before this
    import tensorflow as tf

    from experiments.gradients import Variant

    threads = tf.config.threading
    setup = {
        "env/intra_op": float(threads.get_intra_op_parallelism_threads()),
        "env/inter_op": float(threads.get_inter_op_parallelism_threads()),
        "env/xla_cache": float("--tf_xla_persistent_cache_directory=" in os.environ.get(
            "TF_XLA_FLAGS", "")),
        "env/bound": float(isinstance(variant, Variant)),
        "env/tensorflow": imported,
    }  # fmt: skip
    for row in train(config, task, variant, placement, seed=seed):
        yield {**row, **setup}


MUZERO_PROCESS_JOB = dataclasses.replace(
    MUZERO,
    name="stand-in (MuZero's process)",
    train=train_in_muzero_process,
    muzero_schema=MuZeroConfig,
    check=None,
)
"""The stand-in's training in the MuZero job's process: MuZero's preload, cache (a job host),
overlap and TensorFlow set-up (:attr:`~experiments.jobs.job.Job.tensorflow`), so a test sees
the process a MuZero job gets without training MuZero."""

STANDIN_MUZERO_YAML = """\
defaults:
  - schema
  - _self_
training_steps: 5
base_loss: 1.0
fail_at: 0
nan_at: 0
blow_up_at: 0
sleep_s: 0.0
"""


def sweep_args(conf: Path, res: Path, *overrides: str) -> list[str]:
    """``gradlab sweep`` arguments for the main job's ablation in one of its two regimes
    (``paper``) on the stand-in config folder ``conf``, results under ``res``."""
    return [
        "sweep",
        "ablation=hidden_scale",
        "regime=tuned",
        f"runtime.results_dir={res}",
        *overrides,
        "--config-dir",
        str(conf),
    ]


def make_conf(root: Path) -> Path:
    """A copy of gradlab's ``conf/`` with the stand-in's ``muzero/`` and ``task/`` sections, and
    every regime of ``conf/regime/`` under its own name but empty (real regimes set MuZero keys
    the stand-in does not have).

    Returns:
      The new config folder, ``root / "conf"``.
    """
    conf = root / "conf"
    skip = shutil.ignore_patterns("__pycache__", "muzero", "task", "regime")
    shutil.copytree(CONF, conf, ignore=skip)
    (conf / "regime").mkdir()
    for regime in sorted((CONF / "regime").glob("*.yaml")):
        (conf / "regime" / regime.name).write_text(
            f"# @package _global_\n# stand-in {regime.stem}\n"
        )
    (conf / "muzero").mkdir()
    (conf / "task").mkdir()
    (conf / "muzero" / "default.yaml").write_text(STANDIN_MUZERO_YAML)
    (conf / "task" / "catch.yaml").write_text("# stand-in catch\nname: catch\n")
    return conf
