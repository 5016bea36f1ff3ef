"""Seeds of one configuration grouped into one launched job (``muzero.seed_axis``).

A sweep on the seed axis launches, for every configuration, its seeds in groups of at most
``size``: each group is one Hydra job, the override list of its first seed with
``runtime.group_seeds=[...]`` added (a bookkeeping key: the job's folder is its first seed's).
The job's task function then runs the group's seeds together, each into its own folder
(:func:`experiments.launch.hydra_app.task_function`). :func:`group_batch` is what gradlab's
sweeper (``hydra/sweeper=planned``, ``hydra.sweeper.seed_group``) does to each batch of jobs;
:func:`member_overrides` gives a member seed's own overrides back.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["GROUP_KEY", "group_batch", "member_overrides"]

GROUP_KEY = "runtime.group_seeds"


def _key(override: str) -> str:
    return override.split("=", 1)[0]


def group_batch(batch: Sequence[Sequence[str]], size: int | None) -> list[list[str]]:
    """``batch``'s jobs with the seeds of each configuration (the same overrides but ``seed``)
    in groups of at most ``size``, in the order the configurations first appear, each group's
    seeds in their order; a job without a ``seed=`` override, or ``size`` below 2, left alone."""
    if size is None or size < 2:
        return [list(job) for job in batch]
    order: list[tuple[str, ...]] = []
    seeds: dict[tuple[str, ...], list[tuple[str, list[str]]]] = {}
    alone: list[list[str]] = []
    for job in batch:
        given = [o for o in job if _key(o) == "seed"]
        if len(given) != 1:
            alone.append(list(job))
            continue
        key = tuple(o for o in job if _key(o) != "seed")
        if key not in seeds:
            order.append(key)
            seeds[key] = []
        seeds[key].append((given[0].split("=", 1)[1], list(job)))
    grouped: list[list[str]] = []
    for key in order:
        members = seeds[key]
        for start in range(0, len(members), size):
            chunk = members[start : start + size]
            first = chunk[0][1]
            if len(chunk) > 1:
                first = [*first, f"{GROUP_KEY}=[{','.join(seed for seed, _ in chunk)}]"]
            grouped.append(first)
    return grouped + alone


def member_overrides(overrides: Sequence[str], seed: int) -> list[str]:
    """A group job's overrides as its member ``seed``'s own: ``seed=`` set to it (in place, or
    added last), the group key dropped."""
    kept = [o for o in overrides if _key(o) != GROUP_KEY]
    if not any(_key(o) == "seed" for o in kept):
        return [*kept, f"seed={seed}"]
    return [f"seed={seed}" if _key(o) == "seed" else o for o in kept]
