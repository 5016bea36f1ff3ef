"""A calibration ladder: settings from mild to severe, each rung adding to the ones before.

A ladder is ``conf/ladder/NAME.yaml``::

    rungs:
      - name: long_unroll_no_norm
        overrides: [muzero.unroll_steps=10, muzero.network.normalisation=none]
      - name: lr_x2
        times: {muzero.learning_rate: 2}

Rung ``i`` runs with the overrides of rungs ``1..i`` together, a key given again replacing its
earlier value. ``overrides`` are Hydra overrides as on the command line; ``times`` multiplies the
*base* setting's value (the task's preset under the base regime, not the previous rung's), so
``lr_x3`` after ``lr_x2`` means three times the base learning rate, not six: that is what lets one
ladder apply to every task. A product is rounded to 12 significant digits (0.01 x 3 gives 0.03,
not 0.030000000000000002); an integer setting stays an integer (``muzero.training_steps`` x 4),
refused where the product is not whole; a schedule of ``[step, value]`` pairs
(``muzero.temperature_schedule``) has its steps multiplied and its values kept, so a budget x4
runs the same schedule over four times the steps.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from experiments.base.errors import ConfigError, unknown_choice

if TYPE_CHECKING:
    from experiments.jobs import Job

__all__ = [
    "Ladder",
    "Rung",
    "base_values",
    "ladder_names",
    "load_ladder",
    "rung_settings",
    "times_keys",
]

_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclasses.dataclass(frozen=True)
class Rung:
    """One rung.

    Attributes:
      name: a short name (letters, digits, ``_.-``), unique in its ladder.
      overrides: Hydra ``key=value`` overrides this rung adds.
      times: ``key -> factor``: the base setting's value times ``factor``.
    """

    name: str
    overrides: tuple[str, ...] = ()
    times: tuple[tuple[str, float], ...] = ()


@dataclasses.dataclass(frozen=True)
class Ladder:
    """A named list of rungs, mild to severe."""

    name: str
    description: str
    rungs: tuple[Rung, ...]


def ladder_names(config_dir: str | Path) -> list[str]:
    """The ladders of a config folder (``ladder/*.yaml``)."""
    return sorted(p.stem for p in Path(config_dir, "ladder").glob("*.yaml"))


def _description(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip().startswith("#"):
            return line.strip().lstrip("# ").strip()
    return ""


def _rung(index: int, node: Any, where: str) -> Rung:
    if not isinstance(node, Mapping) or not set(node) <= {"name", "overrides", "times"}:
        raise ConfigError(
            f"{where}: rung {index} must be a mapping of name, overrides and times; got {node!r}"
        )
    name = node.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(f"{where}: rung {index} needs a name of letters, digits, _ . -")
    overrides = node.get("overrides") or []
    if not isinstance(overrides, list) or not all(
        isinstance(o, str) and "=" in o for o in overrides
    ):
        raise ConfigError(f"{where}: rung {name!r} overrides must be a list of key=value")
    times = node.get("times") or {}
    if not isinstance(times, Mapping):
        raise ConfigError(f"{where}: rung {name!r} times must map keys to factors")
    for key, factor in times.items():
        number = isinstance(factor, int | float) and not isinstance(factor, bool)
        if not (number and math.isfinite(factor) and factor > 0):
            raise ConfigError(
                f"{where}: rung {name!r} times {key}={factor!r}; expected a finite number > 0"
            )
    if not overrides and not times:
        raise ConfigError(f"{where}: rung {name!r} changes nothing; give overrides or times")
    return Rung(name, tuple(overrides), tuple((str(k), float(v)) for k, v in times.items()))


def load_ladder(config_dir: str | Path, name: str) -> Ladder:
    """Reads ``<config_dir>/ladder/<name>.yaml``.

    Raises:
      ConfigError: no such ladder (one line with the choices), or a malformed one.
    """
    from omegaconf import OmegaConf

    choices = ladder_names(config_dir)
    if name not in choices:
        raise unknown_choice("ladder", name, choices)
    path = Path(config_dir, "ladder", f"{name}.yaml")
    where = f"ladder {name!r} ({path})"
    try:
        data = OmegaConf.to_container(OmegaConf.load(path))
    except Exception as err:  # noqa: BLE001 - a YAML error, as one line
        raise ConfigError(f"{where} is not valid YAML: {str(err).splitlines()[0]}") from None
    if not isinstance(data, Mapping) or not isinstance(data.get("rungs"), list):
        raise ConfigError(f"{where} needs a list 'rungs'")
    if not data["rungs"]:
        raise ConfigError(f"{where} has no rungs")
    rungs = tuple(_rung(i + 1, node, where) for i, node in enumerate(data["rungs"]))
    names = [r.name for r in rungs]
    if len(set(names)) != len(names):
        raise ConfigError(f"{where}: rung names must differ; got {', '.join(names)}")
    return Ladder(name, _description(path), rungs)


def times_keys(ladder: Ladder) -> list[str]:
    """Every key a rung of ``ladder`` multiplies, in order of first use."""
    return list(dict.fromkeys(key for rung in ladder.rungs for key, _ in rung.times))


def _rounded(value: float) -> float:
    return float(f"{value:.12g}")


def rung_settings(
    ladder: Ladder, index: int, base: Callable[[str], Any] | Mapping[str, Any]
) -> dict[str, str]:
    """The overrides of rung ``index`` (0-based): rungs ``0..index`` together, in order.

    Args:
      ladder: the ladder.
      index: the rung.
      base: the base setting's value of each :func:`times_keys` key (a mapping or a function).

    Returns:
      ``key -> value`` as Hydra override text; a ``times`` value is ``base[key] * factor``
      rounded to 12 significant digits (an integer for an integer setting; for a schedule
      ``[[step, value], ...]``, each step times ``factor``: ``[[0,1.0],[1600,0.5]]``).

    Raises:
      ConfigError: a ``times`` key whose base value is neither a number nor a schedule, or an
        integer setting (or a schedule's step) whose product is not whole.
    """
    lookup = base.__getitem__ if isinstance(base, Mapping) else base
    settings: dict[str, str] = {}
    for rung in ladder.rungs[: index + 1]:
        for item in rung.overrides:
            key, _, value = item.partition("=")
            settings.pop(key, None)  # a key given again moves to its latest place
            settings[key] = value
        for key, factor in rung.times:
            settings.pop(key, None)
            settings[key] = _times(
                f"ladder {ladder.name!r} rung {rung.name!r}", key, lookup(key), factor
            )
    return settings


def _whole(where: str, key: str, value: float) -> int:
    """``value`` as an integer, refused when the product is not a whole number."""
    rounded = _rounded(value)
    if rounded != int(rounded):
        raise ConfigError(
            f"{where} multiplies {key}, an integer setting, to {rounded!r}; expected a factor "
            "giving a whole number"
        )
    return int(rounded)


def _schedule(value: Any) -> list[tuple[int, float]] | None:
    """``[[step, value], ...]`` with integer steps and numeric values as pairs; else None."""
    if not isinstance(value, list | tuple) or not value:
        return None
    pairs = []
    for item in value:
        if not isinstance(item, list | tuple) or len(item) != 2:
            return None
        step, val = item
        if isinstance(step, bool) or not isinstance(step, int):
            return None
        if isinstance(val, bool) or not isinstance(val, int | float):
            return None
        pairs.append((step, float(val)))
    return pairs


def _times(where: str, key: str, value: Any, factor: float) -> str:
    """The override text of ``value * factor``: a float rounded to 12 significant digits; an
    integer setting an integer (refused when not whole); a schedule ``[[step, value], ...]``
    (``muzero.temperature_schedule``) its steps multiplied, its values kept."""
    if isinstance(value, bool):
        pass
    elif isinstance(value, int):
        return str(_whole(where, key, value * factor))
    elif isinstance(value, float):
        return repr(_rounded(value * factor))
    pairs = _schedule(value)
    if pairs is None:
        raise ConfigError(
            f"{where} multiplies {key}, whose base value is {value!r}; expected a number or a "
            "schedule of [step, value] pairs"
        )
    items = ",".join(f"[{_whole(where, key, s * factor)},{v!r}]" for s, v in pairs)
    return f"[{items}]"


def base_values(
    config_dir: Path, overrides: list[str], keys: Sequence[str], job: Job
) -> dict[str, Any]:
    """The value of each key in the config ``overrides`` compose to (Hydra's compose on the
    job's registered schema, as a job's config is built): what ``times`` multiplies.

    Raises:
      ConfigError: the overrides do not compose, or a key is not set.
    """
    from omegaconf import OmegaConf

    from experiments.config import register_schema
    from experiments.launch import compose

    if not keys:
        return {}
    register_schema(job.muzero_schema)
    cfg = compose(config_dir, overrides)
    values = {}
    for key in keys:
        value = OmegaConf.select(cfg, key, default=None)
        if value is None:
            raise ConfigError(f"the ladder multiplies {key}, which the config does not set")
        values[key] = OmegaConf.to_container(value) if OmegaConf.is_config(value) else value
    return values
