"""The run's configuration: the Hydra config turned, once, into frozen and validated dataclasses.

Hydra composes ``conf/`` into a ``DictConfig``; :func:`build_run_config` converts it at the job's
entry into a :class:`RunConfig`, checking every key and type on the way, and inner code only ever
sees plain typed values. Every bad key, type or range raises
:class:`~experiments.errors.ConfigError` naming the value and what is accepted.

The MuZero and task sections are converted into the MuZero engineer's
``experiments.muzero.config.MuZeroConfig`` and ``experiments.tasks.TaskConfig`` with the same
generic checks (:func:`from_mapping`); the classes can be passed in (tests use stand-ins).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any

from experiments.errors import ConfigError, unknown_choice
from experiments.stopping import Budget, DivergenceRule

__all__ = [
    "LOGGER_MODES",
    "BudgetConfig",
    "DivergenceConfig",
    "LoggerConfig",
    "RunConfig",
    "RuntimeConfig",
    "VariantConfig",
    "build_run_config",
    "from_mapping",
    "to_plain",
]

LOGGER_MODES = ("offline", "online", "none")
"""W&B modes: ``offline`` (default, no account needed), ``online``, ``none`` (no W&B at all)."""


def _check_positive(where: str, value: float | None, *, allow_zero: bool = False) -> None:
    if value is None:
        return
    ok = value >= 0 if allow_zero else value > 0
    if not ok:
        bound = ">= 0" if allow_zero else "> 0"
        raise ConfigError(f"{where}={value!r} is out of range; expected a number {bound} or null")


@dataclasses.dataclass(frozen=True)
class VariantConfig:
    """Which gradient variant the job trains with, and where it acts.

    Attributes:
      name: a key of ``experiments.gradients.VARIANTS``.
      placement: a key of ``experiments.gradients.PLACEMENTS``.
      params: the variant's parameters (e.g. ``scale``), defaults filled in by the YAML.
    """

    name: str
    placement: str = "pseudocode"
    params: Mapping[str, float] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", types.MappingProxyType(dict(self.params)))
        self.build()  # validates name, parameters and placement

    def build(self) -> tuple[Any, Any]:
        """The bound ``(Variant, Placement)`` (imports TensorFlow)."""
        from experiments import gradients

        return gradients.make_variant(self.name, **self.params), gradients.get_placement(
            self.placement
        )


BudgetConfig = Budget
"""The ``budget`` section: :class:`experiments.stopping.Budget`."""

DivergenceConfig = DivergenceRule
"""The ``divergence`` section: :class:`experiments.stopping.DivergenceRule`."""


@dataclasses.dataclass(frozen=True)
class LoggerConfig:
    """The W&B mirror of the results folder."""

    mode: str = "offline"  # one of LOGGER_MODES
    project: str = "gradlab"
    entity: str | None = None
    tags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in LOGGER_MODES:
            raise unknown_choice("logger.mode", self.mode, LOGGER_MODES)


@dataclasses.dataclass(frozen=True)
class RuntimeConfig:
    """Where and how a job runs; none of it changes the job's numbers (nor its folder name).

    ``deterministic`` turns on TensorFlow's op determinism (``True``, the default: the same config
    and seed give the same figures on the same machine); ``False`` may be faster on a GPU, where
    some kernels then pick non-deterministic algorithms.
    """

    results_dir: str = "results"
    threads: int | None = None  # TensorFlow threads for this job; None: all cores
    force: bool = False  # re-run finished jobs
    progress: bool = True  # show a progress bar
    deterministic: bool = True  # TensorFlow op determinism (same seed -> same numbers)

    def __post_init__(self) -> None:
        _check_positive("runtime.threads", self.threads)


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """Everything one job needs, typed and validated.

    Attributes:
      seed: the job's seed (>= 0); every generator in the job derives from it.
      task_name: the task's name (``catch``, ``cartpole``, ``gym``).
      ablation: the sweep's ablation, or ``None`` for a single run.
      task: the task section as ``experiments.tasks.TaskConfig``.
      muzero: the MuZero section as ``experiments.muzero.config.MuZeroConfig``.
    """

    seed: int
    task_name: str
    ablation: str | None
    task: Any
    muzero: Any
    variant: VariantConfig
    budget: BudgetConfig = BudgetConfig()
    divergence: DivergenceConfig = DivergenceConfig()
    logger: LoggerConfig = LoggerConfig()
    runtime: RuntimeConfig = RuntimeConfig()

    def __post_init__(self) -> None:
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ConfigError(f"seed={self.seed!r} is not valid; expected an integer >= 0")


# --------------------------------------------------------------------------------------------
# Generic conversion: mapping -> frozen dataclass, with type checks


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp).replace("typing.", ""))


def _convert(where: str, value: Any, tp: Any) -> Any:
    """Checks ``value`` against the type hint ``tp`` and converts containers."""
    origin = typing.get_origin(tp)
    if tp is Any or tp is object:
        return value
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(where, value, arg)
            except ConfigError as err:
                errors.append(err)
        names = " or ".join(_type_name(a) if a is not type(None) else "null" for a in args)
        raise ConfigError(f"{where}={value!r} has the wrong type; expected {names}")
    if origin is typing.Literal:
        choices = typing.get_args(tp)
        if value not in choices:
            raise unknown_choice(where, value, [str(c) for c in choices])
        return value
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return from_mapping(tp, value, where=where)
    if origin in (tuple, list) or tp in (tuple, list):
        if not isinstance(value, list | tuple):
            raise ConfigError(f"{where}={value!r} has the wrong type; expected a list")
        args = typing.get_args(tp)
        if (origin or tp) is tuple and args and args[-1] is not Ellipsis:
            if len(value) != len(args):
                raise ConfigError(
                    f"{where}={value!r} has the wrong length; expected {len(args)} items"
                )
            types_ = list(args)
        else:
            types_ = [args[0] if args else Any] * len(value)
        items = [
            _convert(f"{where}[{i}]", v, t)
            for i, (v, t) in enumerate(zip(value, types_, strict=True))
        ]
        return tuple(items) if (origin or tp) is tuple else items
    if origin in (dict, Mapping) or tp in (dict, Mapping) or origin is typing.Mapping:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{where}={value!r} has the wrong type; expected a mapping")
        return dict(value)
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}={value!r} has the wrong type; expected true or false")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}={value!r} has the wrong type; expected an integer")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where}={value!r} has the wrong type; expected a number")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}={value!r} has the wrong type; expected a string")
        return value
    return value


def from_mapping(cls: type, node: Any, *, where: str) -> Any:
    """Builds the frozen dataclass ``cls`` from a plain mapping, checking keys and types.

    Args:
      cls: a dataclass type; nested dataclass fields are built recursively.
      node: a mapping (a plain dict; convert a ``DictConfig`` with :func:`to_plain` first).
      where: the dotted config path of ``node``, used in error messages (e.g. ``"muzero"``).

    Returns:
      An instance of ``cls``.

    Raises:
      ConfigError: an unknown or missing key, a value of the wrong type, or whatever the class's
        own ``__post_init__`` rejects (its ``ValueError``/``TypeError`` are re-raised as
        :class:`ConfigError` naming ``where``).
    """
    if not isinstance(node, Mapping):
        raise ConfigError(f"{where}={node!r} has the wrong type; expected a mapping of settings")
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = [k for k in node if k not in fields]
    if unknown:
        raise ConfigError(
            f"unknown key {where}.{unknown[0]!r}; valid keys under {where}: {', '.join(fields)}"
        )
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # unresolvable annotations: check nothing rather than fail
        hints = {}
    kwargs = {}
    for name, field in fields.items():
        if name not in node:
            no_default = field.default is dataclasses.MISSING
            if no_default and field.default_factory is dataclasses.MISSING:
                raise ConfigError(f"missing key {where}.{name}; {cls.__name__} needs it")
            continue
        kwargs[name] = _convert(f"{where}.{name}", node[name], hints.get(name, Any))
    try:
        return cls(**kwargs)
    except ConfigError:
        raise
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{where}: {err}") from None


def to_plain(cfg: Any) -> Any:
    """A ``DictConfig``/``ListConfig`` as plain, resolved dicts and lists; others unchanged."""
    try:
        from omegaconf import Container, OmegaConf
    except ImportError:  # pragma: no cover - omegaconf is a dependency
        return cfg
    if isinstance(cfg, Container):
        return OmegaConf.to_container(cfg, resolve=True)
    return cfg


_SECTIONS = ("seed", "task", "muzero", "variant", "budget", "divergence", "logger", "runtime")


def build_run_config(
    cfg: Any,
    *,
    task_name: str,
    ablation: str | None = None,
    task_cls: type | None = None,
    muzero_cls: type | None = None,
) -> RunConfig:
    """Converts the composed Hydra config into a validated :class:`RunConfig`.

    Args:
      cfg: the job's config (``DictConfig`` or plain mapping) with the keys ``seed``, ``task``,
        ``muzero``, ``variant``, ``budget``, ``divergence``, ``logger``, ``runtime``.
      task_name: the chosen task (Hydra's ``runtime.choices.task``).
      ablation: the chosen ablation, or ``None``.
      task_cls: the task config class; default ``experiments.tasks.TaskConfig``.
      muzero_cls: the MuZero config class; default ``experiments.muzero.config.MuZeroConfig``.

    Returns:
      The frozen :class:`RunConfig`.

    Raises:
      ConfigError: any unknown key, wrong type or out-of-range value, naming it.
    """
    plain = to_plain(cfg)
    if not isinstance(plain, Mapping):
        raise ConfigError(f"the config is {type(plain).__name__}, expected a mapping")
    unknown = [k for k in plain if k not in _SECTIONS and k != "hydra"]
    if unknown:
        raise ConfigError(
            f"unknown top-level key {unknown[0]!r}; valid keys: {', '.join(_SECTIONS)}"
        )
    if task_cls is None:
        from experiments.tasks import TaskConfig as task_cls
    if muzero_cls is None:
        from experiments.muzero.config import MuZeroConfig as muzero_cls

    variant_node = dict(plain.get("variant") or {})
    if "name" not in variant_node:
        raise ConfigError("missing key variant.name; pick a variant, e.g. variant=none")
    name = _convert("variant.name", variant_node.pop("name"), str)
    placement = _convert("variant.placement", variant_node.pop("placement", "pseudocode"), str)
    seed = plain.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"seed={seed!r} has the wrong type; expected an integer >= 0")
    return RunConfig(
        seed=seed,
        task_name=task_name,
        ablation=ablation,
        task=from_mapping(task_cls, plain.get("task") or {}, where="task"),
        muzero=from_mapping(muzero_cls, plain.get("muzero") or {}, where="muzero"),
        variant=VariantConfig(name=name, placement=placement, params=variant_node),
        budget=from_mapping(BudgetConfig, plain.get("budget") or {}, where="budget"),
        divergence=from_mapping(
            DivergenceConfig, plain.get("divergence") or {}, where="divergence"
        ),
        logger=from_mapping(LoggerConfig, plain.get("logger") or {}, where="logger"),
        runtime=from_mapping(RuntimeConfig, plain.get("runtime") or {}, where="runtime"),
    )
