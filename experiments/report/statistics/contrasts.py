"""The declared family of contrasts behind a table: each arm against the baseline of its stratum.

A *contrast* compares one group of runs (an arm, e.g. ``variant=scale_gradient``) with the baseline
group equal to it but for the compared key (default ``variant=none``), in one metric. Its *stratum*
is the values of every other key that varies (e.g. ``regime``): arms are only ever compared with
the baseline of their own stratum.

Per contrast (arm minus baseline), :func:`contrast` gives the effect
with its interval and the p-value of the declared test:

============  ===============================================  ==================================
analysis      rate (0/1 per run)                               value (one number per run)
============  ===============================================  ==================================
independent   risk difference, Newcombe hybrid-score CI;       difference of the statistic,
              Fisher's exact p (or Barnard's)                  bootstrap CI; Mann-Whitney U p
paired        mean paired difference, paired bootstrap CI;     statistic of the paired
              exact McNemar p                                  differences, paired bootstrap CI;
                                                               Wilcoxon signed-rank p
============  ===============================================  ==================================

Paired runs are matched by seed (:func:`pair_by_seed`; the same seed gives both arms the same
environment streams and initial weights); a seed present in one arm only is an error.

The family (:func:`adjust`): per metric, the contrasts of one stratum form one family and their
p-values are Holm-adjusted together (m = that stratum's contrasts with a p-value); a
*confirmatory* contrast, declared before the runs, is a family of its own (m = 1). A cell is
significant, and bold, exactly when its adjusted p < alpha.

Which key is compared and which keys form the strata: :func:`resolve_baseline`,
:func:`compared_key` and :func:`varying_keys` (a key the sweep holds constant compares nothing).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from experiments.base.errors import ConfigError, unknown_choice
from experiments.report.statistics.intervals import difference_ci, risk_difference_ci
from experiments.report.statistics.significance import (
    barnard_p,
    fisher_p,
    holm,
    mann_whitney_p,
    mcnemar_p,
    wilcoxon_p,
)

if TYPE_CHECKING:
    from experiments.report.runs.results import Results

__all__ = [
    "ANALYSES",
    "RATE_TESTS",
    "Confirmatory",
    "adjust",
    "check_choice",
    "compared_key",
    "contrast",
    "pair_by_seed",
    "ContrastOptions",
    "resolve_baseline",
    "varying_keys",
]

ANALYSES = ("independent", "paired")
"""``independent``: the arms' runs as two samples; ``paired``: runs matched by seed."""

RATE_TESTS = ("fisher", "barnard")
"""The exact test of two independent rates: Fisher's (conditional) or Barnard's (unconditional)."""

Confirmatory = tuple[Mapping[str, object], str, str]
"""A pre-registered contrast: ``(stratum, arm, metric)``, e.g.
``({"regime": "stress"}, "scale_gradient", "failed")``; ``stratum`` maps group keys to values
(keys every run shares may be named too), ``arm`` is a value of the compared key."""


def check_choice(kind: str, value: str, choices: Sequence[str]) -> str:
    """``value`` if it is one of ``choices``, else the standard one-line error."""
    if value not in choices:
        raise unknown_choice(kind, value, choices)
    return value


def _rate(x: np.ndarray) -> tuple[int, int]:
    """``(k, n)``: runs with the verdict 1, and runs where it is defined."""
    defined = x[np.isfinite(x)]
    return int((defined >= 0.5).sum()), len(defined)


@dataclasses.dataclass(frozen=True)
class ContrastOptions:
    """How a contrast is computed (the table above).

    Attributes:
      analysis: a name in :data:`ANALYSES`.
      rate_test: a name in :data:`RATE_TESTS` (a rate, independent analysis only).
      stat: the statistic of a value (``mean``, ``iqm``, ``median``).
      confidence: the interval's level.
      n_resamples: bootstrap resamples (a value; a rate in the paired analysis).
      seed: seeds the bootstrap.
    """

    analysis: str = "independent"
    rate_test: str = "fisher"
    stat: str = "mean"
    confidence: float = 0.95
    n_resamples: int = 9999
    seed: int = 0


def contrast(
    kind: str, x: np.ndarray, y: np.ndarray, options: ContrastOptions = ContrastOptions()
) -> tuple[float, float, float, float]:
    """Arm minus baseline in one metric: the difference, its interval and the p-value of the
    declared test (the table above).

    Args:
      kind: ``rate`` (0/1 verdicts per run: the difference of the rates) or ``value`` (one number
        per run: the difference of the statistic).
      x: ``[N_x]`` the arm's per-run figures (NaN: undefined or no value, left out).
      y: ``[N_y]`` the baseline's; paired: ``[N_x]``, the runs of the same seeds in x's order.
      options: the analysis, test, statistic, level and bootstrap.

    Returns:
      ``(difference, low, high, p)``.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    return _rate_contrast(x, y, options) if kind == "rate" else _value_contrast(x, y, options)


def _rate_contrast(x: np.ndarray, y: np.ndarray, options: ContrastOptions) -> tuple:
    if options.analysis == "paired":
        if not (np.isfinite(x) & np.isfinite(y)).any():
            return float("nan"), float("nan"), float("nan"), float("nan")
        x = np.where(np.isfinite(x), x >= 0.5, np.nan)
        y = np.where(np.isfinite(y), y >= 0.5, np.nan)
        boot = {"n_resamples": options.n_resamples, "seed": options.seed}
        delta, low, high = difference_ci(x, y, paired=True, confidence=options.confidence, **boot)
        return delta, low, high, mcnemar_p(x, y)
    (k1, n1), (k2, n2) = _rate(x), _rate(y)
    delta, low, high = risk_difference_ci(k1, n1, k2, n2, confidence=options.confidence)
    test = fisher_p if options.rate_test == "fisher" else barnard_p
    return delta, low, high, test(k1, n1, k2, n2)


def _value_contrast(x: np.ndarray, y: np.ndarray, options: ContrastOptions) -> tuple:
    paired = options.analysis == "paired"
    delta, low, high = difference_ci(
        x, y, stat=options.stat, paired=paired, confidence=options.confidence,
        n_resamples=options.n_resamples, seed=options.seed,
    )  # fmt: skip
    p = wilcoxon_p(x, y) if paired else mann_whitney_p(x, y)
    return delta, low, high, p


def pair_by_seed(
    arm: pd.DataFrame, base: pd.DataFrame, *, where: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The runs of two arms matched by seed, in seed order.

    Args:
      arm: the compared arm's runs (a ``seed`` column).
      base: the baseline's runs.
      where: names the contrast in the error, e.g. ``"regime=stress: scale_gradient vs none"``.

    Raises:
      ConfigError: a seed of one arm has no run in the other, or an arm repeats a seed.
    """
    for frame in (arm, base):
        seeds = frame["seed"]
        if seeds.isna().any() or seeds.duplicated().any():
            raise ConfigError(
                f"paired analysis needs one run per seed and arm; {where} has runs without a "
                f"seed or with a repeated seed: {', '.join(map(str, seeds.tolist()))}"
            )
    only_arm = sorted(set(arm["seed"]) - set(base["seed"]))
    only_base = sorted(set(base["seed"]) - set(arm["seed"]))
    if only_arm or only_base:
        missing = []
        if only_arm:
            missing.append(f"seeds {', '.join(map(str, only_arm))} only in the arm")
        if only_base:
            missing.append(f"seeds {', '.join(map(str, only_base))} only in the baseline")
        raise ConfigError(
            f"paired analysis: unmatched seeds in {where}: {'; '.join(missing)}; "
            "use --analysis independent, or run the missing seeds"
        )
    return arm.sort_values("seed"), base.sort_values("seed")


def adjust(pvalues: Sequence[float], families: Sequence[Hashable]) -> tuple[np.ndarray, np.ndarray]:
    """Holm-adjusted p-values within each family.

    Args:
      pvalues: ``[M]`` raw p-values (NaN: no test, not counted).
      families: ``[M]`` a family label per p-value.

    Returns:
      ``(adjusted [M], m [M])``: the adjusted p-values and the size of each one's family (its
      p-values that are not NaN).
    """
    p = np.asarray(pvalues, dtype=float)
    labels = list(families)
    adjusted, sizes = np.full(p.shape, np.nan), np.zeros(p.shape, dtype=int)
    for family in dict.fromkeys(labels):
        members = np.array([i for i, label in enumerate(labels) if label == family], dtype=int)
        adjusted[members] = holm(p[members])
        sizes[members] = int(np.isfinite(p[members]).sum())
    return adjusted, sizes


def resolve_baseline(
    results: Results, baseline: str | None, keys: Sequence[str]
) -> tuple[str, str] | None:
    """``(key, value)`` the baseline groups share; None if no baseline is asked or found. A bare
    ``VALUE`` is one of ``variant``'s, or of the only key that varies (``keys``: the group keys
    that vary, :func:`varying_keys`); ``KEY=VALUE`` any group key's. An arm with its
    parameters (``clipnorm (clipnorm=113)``) is a bare value: its ``=`` is inside parentheses."""
    runs = results.runs
    if baseline is None:
        if "variant" in keys and (runs["variant"] == "none").any():
            return "variant", "none"
        return None
    if "=" in baseline and "(" not in baseline.split("=", 1)[0]:
        key, value = (s.strip() for s in baseline.split("=", 1))
        if key not in results.group_keys:
            raise unknown_choice("baseline key", key, results.group_keys)
    elif "variant" in keys or len(keys) == 1:
        key, value = ("variant" if "variant" in keys else keys[0]), baseline
    else:
        raise ConfigError(
            f"baseline {baseline!r} is ambiguous: the groups vary {', '.join(keys) or 'nothing'}; "
            "pass --baseline KEY=VALUE"
        )
    values = sorted(results.runs[key].unique())
    if value not in values:
        raise unknown_choice(f"baseline {key}", value, values)
    return key, value


def compared_key(keys: Sequence[str], base: tuple[str, str] | None) -> str | None:
    """The key whose values are compared within a stratum: the baseline's, else ``variant``, else
    the only key; None: the whole table is one stratum.

    ``keys`` are the keys that *vary* across the runs: a key a sweep holds constant (e.g.
    ``variant=scale_gradient`` in ``ablation=scale_placement``) compares nothing, and making it
    the compared key would put every row in a stratum of its own (see :func:`varying_keys`)."""
    if base is not None:
        return base[0]
    if "variant" in keys:
        return "variant"
    return keys[0] if len(keys) == 1 else None


def varying_keys(runs: pd.DataFrame, keys: Sequence[str]) -> list[str]:
    """The group keys with more than one value among ``runs``."""
    return [k for k in keys if runs[k].nunique(dropna=False) > 1]
