"""Seed lists as users write them, and the rule that calibration seeds are never a study's.

A seed list is ``A-B`` (both ends included), ``A,B,C``, ``range(A,B)`` (Python's: ``B``
excluded) or a YAML list of integers. A study's seeds are those given on the command line
(``--study-seeds``) and those its presets declare: every study's ``seeds``
(``conf/study/*.yaml``, read by :func:`experiments.protocols.study.design.load_study`) and every
ablation preset's ``hydra.sweeper.params.seed`` (an ablation is a study's sweep).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from experiments.base.errors import ConfigError

__all__ = ["check_disjoint", "parse_seeds", "preset_seeds"]

_SPAN = re.compile(r"^\s*(\d+)\s*-\s*(\d+)\s*$")
_FORMS = "A-B, A,B,C or range(A,B) with integers >= 0"


def parse_seeds(spec: Any, *, what: str = "seeds") -> tuple[int, ...]:
    """The seeds of ``spec`` (see the module docstring), in order, without repeats.

    Raises:
      ConfigError: not one of the forms, an empty list, or a span that runs backwards.
    """
    if isinstance(spec, int) and not isinstance(spec, bool) and spec >= 0:
        return (spec,)
    if isinstance(spec, Sequence) and not isinstance(spec, str):
        if spec and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in spec):
            return tuple(dict.fromkeys(spec))
        raise ConfigError(f"{what} {list(spec)!r} is not a list of integers >= 0")
    text = str(spec).strip()
    match = _SPAN.match(text)
    if match:
        first, last = int(match.group(1)), int(match.group(2))
        if last < first:
            raise ConfigError(f"{what} {text!r} is empty; expected {_FORMS}")
        return tuple(range(first, last + 1))
    seeds = _hydra_values(text)
    if seeds is None or not all(s.isdigit() for s in seeds):
        raise ConfigError(f"{what} {text!r} is not valid; expected {_FORMS}")
    if not seeds:
        raise ConfigError(f"{what} {text!r} is empty; expected {_FORMS}")
    return tuple(dict.fromkeys(int(s) for s in seeds))


def _hydra_values(text: str) -> list[str] | None:
    """The values of ``seed=<text>`` as Hydra's sweeper reads them (``range(5)``, ``1,2``, ``3``),
    or None where Hydra cannot parse it."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        (override,) = OverridesParser.create().parse_overrides([f"seed={text}"])
        if override.is_sweep_override():
            return list(override.sweep_string_iterator())
        return [override.get_value_element_as_str()]
    except Exception:  # noqa: BLE001 - not a value Hydra reads: the caller's one-line error
        return None


def _sweep_seed(data: Mapping) -> Any:
    hydra = data.get("hydra")
    sweeper = hydra.get("sweeper") if isinstance(hydra, Mapping) else None
    params = sweeper.get("params") if isinstance(sweeper, Mapping) else None
    return params.get("seed") if isinstance(params, Mapping) else None


def preset_seeds(config_dir: str | Path, *, skip: Iterable[str] = ()) -> dict[str, tuple[int, ...]]:
    """The seeds each study and ablation preset of ``config_dir`` declares.

    Args:
      config_dir: the config folder.
      skip: ablation presets to leave out (a calibration's own preset).

    Returns:
      ``"study/NAME"`` or ``"ablation/NAME"`` -> its seeds, for every preset that names some.
    """
    from omegaconf import OmegaConf

    from experiments.protocols.study.design import load_study, study_names

    out = {f"study/{n}": tuple(load_study(n, config_dir).seeds) for n in study_names(config_dir)}
    skipped = set(skip)
    for path in sorted(Path(config_dir, "ablation").glob("*.yaml")):
        if path.stem in skipped:
            continue
        data = OmegaConf.to_container(OmegaConf.load(path))
        spec = _sweep_seed(data) if isinstance(data, Mapping) else None
        if spec is not None:
            out[f"ablation/{path.stem}"] = parse_seeds(spec, what=f"ablation/{path.stem} seeds")
    return out


def check_disjoint(seeds: Sequence[int], studies: Mapping[str, Sequence[int]]) -> None:
    """Refuses calibration ``seeds`` that share a seed with any study's.

    Raises:
      ConfigError: one line naming the shared seeds, the study and the seeds that are free.
    """
    for name, theirs in studies.items():
        shared = sorted(set(seeds) & set(theirs))
        if shared:
            raise ConfigError(
                f"calibration seeds {_span(seeds)} overlap the seeds of {name} "
                f"({_span(theirs)}) at {', '.join(map(str, shared))}; choose seeds outside "
                "every study's, e.g. --seeds 100-109"
            )


def _span(seeds: Sequence[int]) -> str:
    ordered = sorted(seeds)
    if ordered == list(range(ordered[0], ordered[-1] + 1)) and len(ordered) > 2:
        return f"{ordered[0]}-{ordered[-1]}"
    return ",".join(map(str, ordered))
