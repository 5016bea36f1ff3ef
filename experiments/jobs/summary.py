"""A job's ``summary.json``: one typed :class:`Summary`, its schema version and its JSON form.

The runner writes a summary when a job starts (status ``running``) and when it ends; the store
records the jobs that end without one of their own (:func:`experiments.jobs.store.record_failed`,
:func:`experiments.jobs.store.mark_interrupted`); the report, the calibration and the command line
read them. All of them go through :meth:`Summary.to_json` and :meth:`Summary.from_json`, and the
file itself through the store (:func:`experiments.jobs.store.write_summary`,
:func:`experiments.jobs.store.read_summary`, :func:`experiments.jobs.store.load_summary`).

Schema versions (the ``schema`` key; a file without one is version 1):

* 1: the fields below, without ``schema`` (every summary written before it was recorded; the
  committed findings).
* 2: the same fields, with ``schema``.
* 3: with the run's identity (:mod:`experiments.jobs.identity`): ``config_sha256`` (its resolved
  config, as an arm is compared), ``started_at`` and ``ended_at`` (UTC, ISO 8601), ``code`` (git
  commit, dirty flag, the hash of ``experiments/`` and ``conf/``) and, in a study's folder,
  ``record_sha256`` (of its ``preregistration.json`` when the run started). The arm is
  ``variant`` with ``variant_params`` (and ``placement``), the seed ``seed``, as before. Files of
  schemas 1 and 2 read with these as None.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import os
import platform
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from experiments.base.cpu import cpuinfo, isa_of_flags
from experiments.base.errors import ConfigError, unknown_choice
from experiments.gradients import VARIANTS
from experiments.jobs.identity import (
    CodeIdentity,
    code_identity,
    config_fingerprint,
    file_sha256,
    flat_config,
    utc_now,
)

if TYPE_CHECKING:
    from experiments.config import RunConfig

__all__ = [
    "SCHEMA",
    "STATUSES",
    "Summary",
    "error_line",
    "finite_or_none",
    "library_versions",
    "plugin_version",
]

SCHEMA = 3
"""The schema version this gradlab writes (and the newest it reads)."""

STATUSES = ("completed", "diverged", "failed", "timeout", "interrupted", "running")
"""Every ``status`` a ``summary.json`` can hold (``interrupted``: stopped by a signal or by its
sweep's stop, at a step boundary, its rows so far kept; ``running``: being run, or its process
was killed)."""

RECORD_NAME = "preregistration.json"
"""A study's record in its folder (:data:`experiments.protocols.study.record.RECORD`)."""

_VERSIONED = ("tensorflow", "keras", "numpy", "hydra-core", "omegaconf", "wandb", "gradlab")
_OBJECTS = ("overrides", "variant_params", "versions", "stability")  # read as {} unless objects


@dataclasses.dataclass(frozen=True)
class Summary:
    """How a job ended, with what it ran and its stability figures (``docs/interfaces.md``).

    Attributes:
      status: one of :data:`STATUSES`.
      job: the job's name (its folder's).
      ablation: the sweep's ablation, or None for a single run.
      overrides: the job's overrides (key -> value), bookkeeping keys left out.
      group: the overrides without the seed: the job's configuration.
      seed: the job's seed.
      task: the task's name (``task.name``).
      regime: Hydra's ``regime`` choice.
      variant: the gradient variant's name.
      variant_params: its parameters, ``{name: value}``.
      placement: where the variant acts.
      q_form: the search's value score.
      steps: training steps run (rows written).
      diverged_step: the step the run diverged at, or None.
      wall_time_s: seconds the job ran; None when not recorded (a job that never started).
      threshold: the task's return threshold, or None.
      training_steps: the planned training steps, or None.
      return_range: the width of the task's return range, or None.
      reward_scale: the task's reward scale.
      pid: the job's process id.
      versions: the versions of Python and the libraries the job ran with, and, for a variant
        an installed plug-in gave, ``"plugin:<distribution>": "<version>"``.
      stability: the run's stability figures
      (:func:`experiments.verdicts.stability.stability_summary`).
      error: a failed or interrupted job's error, in one line; else None.
      warnings: what went wrong beside the job (e.g. the W&B mirror).
      config_sha256: the hash of its resolved config (:func:`~experiments.jobs.identity.
        config_fingerprint`), or None (schema < 3).
      started_at: when it started, UTC ISO 8601, or None (schema < 3).
      ended_at: when it ended, UTC ISO 8601, or None (running, or schema < 3).
      code: the code it ran (:class:`~experiments.jobs.identity.CodeIdentity`), or None.
      record_sha256: SHA-256 of its folder's ``preregistration.json`` when it started, or None
        (not in a study's folder, or schema < 3).
      curves_sha256: SHA-256 of the run's ``curves.csv.gz`` as its end wrote it (every
        evaluation, from which the audit recomputes the figures the tables use), or None
        (running, no curves, or written before 2026-11-28).
      schema: the schema version the file was written with (module docstring).
    """

    status: str
    job: str | None = None
    ablation: str | None = None
    overrides: dict[str, str] = dataclasses.field(default_factory=dict)
    group: dict[str, str] = dataclasses.field(default_factory=dict)
    seed: int | None = None
    task: str | None = None
    regime: str | None = None
    variant: str | None = None
    variant_params: dict[str, float] = dataclasses.field(default_factory=dict)
    placement: str | None = None
    q_form: str | None = None
    steps: int = 0
    diverged_step: int | None = None
    wall_time_s: float | None = None
    threshold: float | None = None
    training_steps: int | None = None
    return_range: float | None = None
    reward_scale: float | None = None
    pid: int | None = None
    versions: dict[str, str] = dataclasses.field(default_factory=dict)
    stability: dict[str, Any] = dataclasses.field(default_factory=dict)
    error: str | None = None
    warnings: list[str] = dataclasses.field(default_factory=list)
    config_sha256: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    code: CodeIdentity | None = None
    record_sha256: str | None = None
    curves_sha256: str | None = None  # SHA-256 of its curves.csv.gz (what its figures come from)
    schema: int = SCHEMA

    @classmethod
    def start(
        cls,
        cfg: RunConfig,
        *,
        job: str,
        overrides: Mapping[str, str],
        choices: Mapping[str, str | None],
        ablation: str | None,
        folder: str | Path | None = None,
        code: CodeIdentity | None = None,
    ) -> Summary:
        """The summary of a job starting now (status ``running``) in this process, with its
        identity (module docstring, schema 3).

        Args:
          cfg: the job's config; its settings (``cfg.muzero``) have ``training_steps`` and
            ``q_form`` (see :attr:`experiments.jobs.job.Job.muzero_schema`).
          job: the job's name.
          overrides: its overrides, bookkeeping keys left out.
          choices: Hydra's config-group choices (``regime``...).
          ablation: the sweep's ablation, or None.
          folder: the folder holding the job's folder: its ``preregistration.json``, if any,
            is hashed into ``record_sha256``; None: not looked for.
          code: the code's identity; None: :func:`~experiments.jobs.identity.code_identity`
            of this gradlab.
        """
        bounds = cfg.task.return_range
        record = None if folder is None else Path(folder) / RECORD_NAME
        record_hash = file_sha256(record.read_bytes()) if record and record.is_file() else None
        return cls(
            status="running",
            job=job,
            ablation=ablation,
            overrides=dict(overrides),
            group={k: v for k, v in overrides.items() if k != "seed"},
            seed=cfg.seed,
            task=cfg.task.name,
            regime=choices.get("regime"),
            variant=cfg.variant.name,
            variant_params=cfg.variant.params,
            placement=cfg.variant.placement,
            q_form=cfg.muzero.q_form,
            threshold=finite_or_none(cfg.task.threshold),
            training_steps=cfg.muzero.training_steps,
            return_range=None if bounds is None else float(bounds[1] - bounds[0]),
            reward_scale=cfg.task.reward_scale,
            pid=os.getpid(),
            versions={**library_versions(), **plugin_version(cfg.variant.name)},
            config_sha256=config_fingerprint(flat_config(cfg)),
            started_at=utc_now(),
            code=code if code is not None else code_identity(),
            record_sha256=record_hash,
        )

    def replace(self, **changes: Any) -> Summary:
        """A copy with ``changes`` (field -> value)."""
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        """The summary as ``summary.json`` holds it: ``schema`` first, then the fields in order."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if self.code is not None:
            fields["code"] = self.code.to_json()
        return {"schema": fields.pop("schema"), **fields}

    @classmethod
    def from_json(cls, data: Any, *, where: str) -> Summary:
        """A summary from its JSON object, of any schema version up to :data:`SCHEMA`; missing
        fields take their defaults, unknown keys are left out.

        Args:
          data: the parsed ``summary.json``.
          where: the file, for messages.

        Raises:
          ConfigError: not an object, no or an unknown ``status``, a ``group`` that is not an
            object, or a schema newer than this gradlab's.
        """
        if not isinstance(data, dict):
            raise ConfigError(f"corrupt summary file '{where}': expected a JSON object")
        if data.get("status") not in STATUSES:
            if "status" not in data:
                raise ConfigError(f"corrupt summary file '{where}': no 'status' key")
            raise unknown_choice(f"status in '{where}':", data["status"], STATUSES)
        if not isinstance(data.get("group", {}), dict):
            raise ConfigError(f"corrupt summary file '{where}': 'group' must be an object")
        schema = data.get("schema", 1)
        if not isinstance(schema, int) or not 1 <= schema <= SCHEMA:
            raise ConfigError(
                f"summary file '{where}' has schema {schema!r}; this gradlab reads schemas 1 to "
                f"{SCHEMA} (a newer gradlab wrote it?)"
            )
        names = {f.name for f in dataclasses.fields(cls)}
        kept = {k: v for k, v in data.items() if k in names}
        kept.update({k: {} for k in _OBJECTS if not isinstance(kept.get(k, {}), dict)})
        if not isinstance(kept.get("warnings", []), list):
            kept["warnings"] = []
        kept["code"] = CodeIdentity.from_json(kept.get("code"))
        for key in ("config_sha256", "started_at", "ended_at", "record_sha256", "curves_sha256"):
            if not isinstance(kept.get(key), str):
                kept[key] = None
        return cls(**{**kept, "schema": schema})


def finite_or_none(value: float | None) -> float | None:
    """``value`` as a float; None for None or NaN."""
    return None if value is None or value != value else float(value)


def cpu_identity() -> str:
    """The CPU a run's numbers depend on (oneDNN and XLA pick kernels by instruction set): its
    model name and widest vector extension, e.g. ``Intel(R) Xeon(R) Processor (AVX-512)``, with
    any ``ONEDNN_MAX_CPU_ISA`` cap; ``platform.machine()`` where /proc/cpuinfo is not there."""
    model, flags = cpuinfo()
    model = model or platform.machine() or "unknown"
    isa = isa_of_flags(flags)
    isa = isa if isa in ("AVX-512", "AVX2") else None
    cap = os.environ.get("ONEDNN_MAX_CPU_ISA")
    parts = [p for p in (isa, f"oneDNN capped at {cap}" if cap else None) if p]
    return f"{model} ({', '.join(parts)})" if parts else model


def library_versions() -> dict[str, str]:
    """Python's version and those of the libraries a job's numbers depend on (installed ones),
    and the CPU (:func:`cpu_identity`): the same versions on another CPU type give other
    numbers."""
    out = {"python": platform.python_version(), "cpu": cpu_identity()}
    for dist in _VERSIONED:
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def plugin_version(variant: str) -> dict[str, str]:
    """``{"plugin:<distribution>": "<version>"}`` for a variant an installed plug-in gave
    (:mod:`experiments.base.plugins`), recorded in a summary's ``versions``: its code is outside
    ``experiments/``, so the code identity does not cover it; empty for a built-in."""
    plugin = VARIANTS.plugin(variant)
    return {} if plugin is None else {f"plugin:{plugin.distribution}": plugin.version}


def error_line(err: BaseException) -> str:
    """The one line a summary records for an error: ``Type: message``, its first line, at most
    500 characters."""
    return f"{type(err).__name__}: {err}".splitlines()[0][:500]
