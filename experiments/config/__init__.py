"""The run's configuration schema: frozen dataclasses registered in Hydra's ConfigStore.

``conf/`` is checked by Hydra itself against these classes (OmegaConf structured configs): an
unknown key or a value of the wrong type is found while Hydra composes, and
:func:`to_run_config` turns the composed config into a :class:`RunConfig` with
``OmegaConf.to_object`` (each class's ``__post_init__`` then checks ranges and names). That is the
one conversion path; :mod:`experiments.config.errors` gives every error its one-line wording.

The ``muzero`` section is typed by the job's own schema (``muzero/schema`` in the ConfigStore,
named in ``conf/muzero/*.yaml``'s defaults list), and each ``variant=<name>`` option is a config
node of its class derived from its registry entry by :mod:`experiments.config.variants`
(:func:`variant_schema`), so adding a variant needs no YAML.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from omegaconf import MISSING

from experiments.base.errors import ConfigError, unknown_choice
from experiments.config.errors import composition_error, omegaconf_error
from experiments.config.variants import VARIANT_CONFIGS, VariantConfig
from experiments.gradients import VARIANTS
from experiments.tasks import TaskConfig
from experiments.verdicts import Budget, DivergenceRule

__all__ = [
    "LOGGER_MODES",
    "MAX_SEED",
    "BudgetConfig",
    "DivergenceConfig",
    "LoggerConfig",
    "RunConfig",
    "RuntimeConfig",
    "VariantConfig",
    "composition_error",
    "register_schema",
    "to_run_config",
    "variant_schema",
    "without_hydra",
]

LOGGER_MODES = ("offline", "online", "none")
"""W&B modes: ``offline`` (default, no account needed), ``online``, ``none`` (no W&B at all)."""

MAX_SEED = 2**32 - 1
"""The largest seed a job accepts: the job seeds NumPy's global generator
(``keras.utils.set_random_seed`` in :func:`experiments.base.process.seed_everything`), and
``np.random.seed`` takes 0 to 2**32 - 1 only (TensorFlow's ``set_seed`` and
``np.random.default_rng`` take more); a larger seed would pass the plan and fail at job start."""

BudgetConfig = Budget
"""The ``budget`` section: :class:`experiments.verdicts.stopping.Budget`."""

DivergenceConfig = DivergenceRule
"""The ``divergence`` section: :class:`experiments.verdicts.stopping.DivergenceRule`."""


def variant_schema(name: str) -> type[VariantConfig]:
    """The config node class of ``variant=<name>`` (derived from its registry entry by
    :mod:`experiments.config.variants`)."""
    VARIANTS.lookup(name)
    return VARIANT_CONFIGS[name]


@dataclasses.dataclass(frozen=True)
class LoggerConfig:
    """The W&B mirror of the results folder.

    Attributes:
      mode: one of :data:`LOGGER_MODES`.
      project: the W&B project.
      entity: the W&B entity (user or team), or None for the default.
      tags: extra tags of every run.
      every: W&B gets every ``every``-th row (steps that are multiples of it) and the run's last
        row; ``metrics.jsonl`` always has every row. Each logged row costs W&B CPU time (its
        client and its service process; measured in docs/performance.md), a sizeable part of a
        Catch training step, so the default is 10; ``logger.every=1`` mirrors every row.
    """

    mode: str = "offline"
    project: str = "gradlab"
    entity: str | None = None
    tags: list[str] = dataclasses.field(default_factory=list)
    every: int = 10

    def __post_init__(self) -> None:
        if self.mode not in LOGGER_MODES:
            raise unknown_choice("logger.mode", self.mode, LOGGER_MODES)
        if self.every < 1:
            raise ConfigError(
                f"logger.every={self.every!r} is out of range; expected an integer >= 1"
            )
        object.__setattr__(self, "tags", tuple(self.tags))


@dataclasses.dataclass(frozen=True)
class RuntimeConfig:
    """Where and how a job runs; none of it changes the job's numbers (nor its folder name).

    Attributes:
      results_dir: the results folder's root.
      threads: TensorFlow threads for this job; None: all cores (``gradlab sweep`` sets its share).
      force: re-run finished jobs.
      progress: show a progress bar on a terminal.
      deterministic: TensorFlow op determinism (same config and seed -> same numbers); False may
        be faster on a GPU, where some kernels then pick non-deterministic algorithms.
      xla_cache: a folder where XLA's compiled programs are kept and reused by later jobs of the
        same shapes (seconds saved per job; the numbers are the same), and in its ``graphs/``
        the traced train steps and searches (:mod:`experiments.muzero.runtime.graph_store`);
        None: trace and compile each time.
    """

    results_dir: str = "results"
    threads: int | None = None
    force: bool = False
    progress: bool = True
    deterministic: bool = True
    xla_cache: str | None = "~/.cache/gradlab/xla"

    def __post_init__(self) -> None:
        if self.threads is not None and self.threads < 1:
            raise ConfigError(
                f"runtime.threads={self.threads!r} is out of range; expected an integer >= 1 or "
                "null"
            )


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """Everything one job needs, typed and validated: the schema of ``conf/config.yaml``.

    Attributes:
      seed: the job's seed, ``0 <= seed <=`` :data:`MAX_SEED`; every generator in the job derives
        from it.
      task: the task (``task=<name>``).
      muzero: the job's settings, an instance of the job's schema (``MuZeroConfig``).
      variant: the gradient variant and its placement (``variant=<name>``).
      budget: limits past which the job stops with status ``timeout``.
      divergence: when the job counts as diverged.
      logger: the W&B mirror.
      runtime: where and how it runs.
    """

    seed: int = 0
    task: TaskConfig = dataclasses.field(default_factory=TaskConfig)
    muzero: Any = MISSING
    variant: Any = MISSING
    budget: Budget = dataclasses.field(default_factory=Budget)
    divergence: DivergenceRule = dataclasses.field(default_factory=DivergenceRule)
    logger: LoggerConfig = dataclasses.field(default_factory=LoggerConfig)
    runtime: RuntimeConfig = dataclasses.field(default_factory=RuntimeConfig)

    def __post_init__(self) -> None:
        if not 0 <= self.seed <= MAX_SEED:
            raise ConfigError(
                f"seed={self.seed!r} is out of range; expected an integer from 0 to {MAX_SEED} "
                "(2**32 - 1)"
            )
        if not isinstance(self.variant, VariantConfig):
            raise ConfigError("missing variant; pick one, e.g. variant=none")


def _writable(node: Any) -> Any:
    """Clears the read-only flag OmegaConf sets on every node of a frozen dataclass."""
    from omegaconf import DictConfig, ListConfig, OmegaConf

    OmegaConf.set_readonly(node, None)
    keys = node.keys() if isinstance(node, DictConfig) else range(len(node))
    for key in keys:
        if OmegaConf.is_missing(node, key):
            continue
        child = node[key]
        if isinstance(child, DictConfig | ListConfig):
            _writable(child)
    return node


def _node(cls: type) -> Any:
    """``cls`` as a ConfigStore node Hydra can merge into (a frozen dataclass is read-only)."""
    from omegaconf import OmegaConf

    return _writable(OmegaConf.structured(cls))


def register_schema(muzero_schema: type) -> None:
    """Registers the schema of ``conf/`` in Hydra's ConfigStore.

    ``gradlab_schema`` (the root, :class:`RunConfig`), ``muzero/schema`` (the job's settings
    class, named by ``conf/muzero/*.yaml``) and one ``variant/<name>`` node per registered
    variant. Call it before Hydra composes (planning and launching do); registering again
    replaces the entries.

    Args:
      muzero_schema: the job's settings dataclass (``experiments.muzero.config.MuZeroConfig``).
    """
    from hydra.core.config_store import ConfigStore

    store = ConfigStore.instance()
    store.store(name="gradlab_schema", node=_node(RunConfig))
    store.store(group="muzero", name="schema", node=_node(muzero_schema))
    for name, cls in VARIANT_CONFIGS.items():
        store.store(group="variant", name=name, node=_node(cls))


def without_hydra(cfg: Any) -> Any:
    """The job's own config: a copy without the ``hydra`` node that compose can return."""
    from omegaconf import open_dict

    if "hydra" not in cfg:
        return cfg
    cfg = cfg.copy()
    with open_dict(cfg):
        del cfg["hydra"]
    return cfg


def _refuse_added_keys(node: Any, where: str) -> None:
    """Keys added with Hydra's ``+key=value`` that the schema has no field for."""
    from omegaconf import DictConfig, OmegaConf

    fields = [f.name for f in dataclasses.fields(OmegaConf.get_type(node))]
    for key in node.keys():
        path = f"{where}{key}"
        if key not in fields:
            parent = f"under {where[:-1]}" if where else "at the top level"
            raise ConfigError(f"unknown key {path}; valid keys {parent}: {', '.join(fields)}")
        if OmegaConf.is_missing(node, key):
            continue
        child = node[key]
        if isinstance(child, DictConfig) and dataclasses.is_dataclass(OmegaConf.get_type(child)):
            _refuse_added_keys(child, f"{path}.")


def to_run_config(cfg: Any) -> RunConfig:
    """The composed config (a ``DictConfig`` built on the registered schema) as a RunConfig.

    Raises:
      ConfigError: a missing, unknown, mistyped or out-of-range value, in one line.
    """
    from omegaconf import DictConfig, OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    if not isinstance(cfg, DictConfig) or OmegaConf.get_type(cfg) is not RunConfig:
        raise ConfigError(
            "the config is not built on gradlab's schema: its config.yaml must list "
            "'gradlab_schema' first in its defaults"
        )
    cfg = without_hydra(cfg)
    _refuse_added_keys(cfg, "")
    try:
        return OmegaConf.to_object(cfg)
    except OmegaConfBaseException as err:
        raise omegaconf_error(err) from None
