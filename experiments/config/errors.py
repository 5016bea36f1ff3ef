"""Hydra's and OmegaConf's errors as gradlab's one-line
:class:`~experiments.base.errors.ConfigError`.

One wording for one mistake, wherever it is made (a command-line override, a YAML file of a
``--config-dir`` copy, an ablation preset):

* an unknown group option (``variant=nope``, ``hydra/launcher=nosuch``):
  ``unknown variant 'nope'; choose one of: ...``;
* an unknown key (``muzero.simulations=8``): ``unknown key muzero.simulations; valid keys under
  muzero: ...``;
* a value of the wrong type (``seed=x``): ``seed='x' has the wrong type; expected an integer``;
* a value that cannot be parsed: ``cannot parse override ...``.

Ranges and names are checked by the schema classes themselves (``__post_init__``), which raise
ConfigError directly.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator

from experiments.base.errors import ConfigError, unknown_choice

__all__ = ["RENAMED", "composition_error", "omegaconf_error"]

RENAMED = {
    ("regime", "paper"): (
        "regime 'paper' was renamed 'tuned': it trains with Adam at 1e-2, not the paper's "
        "momentum SGD (that is regime=pseudocode); use regime=tuned"
    ),
}
"""Group options that were renamed: (group, old name) -> the one line that says what to use."""

_EXPECTED = {
    "Integer": "an integer",
    "Float": "a number",
    "Boolean": "true or false",
    "String": "a string",
}


def _chain(err: BaseException) -> Iterator[BaseException]:
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        yield err
        err = err.__cause__ or err.__context__


def _first_line(err: BaseException) -> str:
    return next((line.strip() for line in str(err).splitlines() if line.strip()), repr(err))


def _valid_keys(object_type: object) -> list[str]:
    if isinstance(object_type, type) and dataclasses.is_dataclass(object_type):
        return [f.name for f in dataclasses.fields(object_type)]
    return []


def omegaconf_error(err: BaseException) -> ConfigError:
    """An OmegaConf error (it carries ``full_key``, ``value``, ``object_type``) in one line."""
    from omegaconf.errors import (
        ConfigAttributeError,
        ConfigKeyError,
        MissingMandatoryValue,
        ValidationError,
    )

    key = getattr(err, "full_key", None) or getattr(err, "key", None) or "?"
    text = _first_line(err)
    if isinstance(err, ConfigAttributeError | ConfigKeyError) and "not in" in text:
        parent = key.rpartition(".")[0]
        keys = _valid_keys(getattr(err, "object_type", None))
        where = f"under {parent}" if parent else "at the top level"
        valid = f"; valid keys {where}: {', '.join(keys)}" if keys else ""
        return ConfigError(f"unknown key {key}{valid}")
    if isinstance(err, MissingMandatoryValue):
        return ConfigError(f"missing value for {key}; set it, e.g. {key}=...")
    if isinstance(err, ValidationError):
        value = getattr(err, "value", None)
        match = re.search(r"could not be converted to (\w+)", text)
        if match:
            expected = _EXPECTED.get(match.group(1), match.group(1).lower())
            return ConfigError(f"{key}={value!r} has the wrong type; expected {expected}")
        if "is not a valid bool" in text:
            return ConfigError(f"{key}={value!r} has the wrong type; expected true or false")
        if "is not a ListConfig" in text:
            return ConfigError(f"{key}={value!r} has the wrong type; expected a list")
        if "is not a subclass" in text or "Invalid type assigned" in text:
            return ConfigError(f"{key}={value!r} has the wrong type; expected a mapping")
    return ConfigError(f"bad value for {key}: {text}")


def _quote_hint(err: BaseException) -> str:
    """``; quote ...`` when the override that failed holds a character outside ASCII: Hydra's
    grammar reads an unquoted value as ASCII only, a quoted one as any text."""
    line = str(getattr(err, "override", None) or "")
    if line.isascii() or "=" not in line:
        return ""
    key, _, value = line.partition("=")
    return (
        f"; a value with characters outside ASCII must be quoted for Hydra: "
        f"""'{key}="{value}"'"""
    )


def composition_error(err: BaseException) -> ConfigError:
    """Any error Hydra raised while composing or parsing overrides, in one line."""
    from hydra.errors import MissingConfigException, OverrideParseException
    from omegaconf.errors import OmegaConfBaseException

    for cause in _chain(err):
        if isinstance(cause, ConfigError):
            return cause
        if isinstance(cause, MissingConfigException) and cause.missing_cfg_file:
            group, _, value = cause.missing_cfg_file.rpartition("/")
            if (group, value) in RENAMED:
                return ConfigError(RENAMED[group, value])
            if cause.options is not None and group:
                return unknown_choice(group, value, cause.options)
            return ConfigError(f"config {cause.missing_cfg_file!r} not found")
        if isinstance(cause, OverrideParseException):
            return ConfigError(f"cannot parse override: {_first_line(cause)}{_quote_hint(cause)}")
        if isinstance(cause, OmegaConfBaseException) and getattr(cause, "full_key", None):
            return omegaconf_error(cause)
    return ConfigError(f"bad config: {_first_line(err)}")
