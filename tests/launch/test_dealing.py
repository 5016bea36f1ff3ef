"""How many jobs a parallel sweep deals to a worker at a time (experiments/launch/dealing.py).

Expected deal sizes are worked by hand from the module's model: a worker's share is
``ceil(G * L / b / W) * b`` jobs plus ``build_cost`` per configuration it builds (at most one
per deal, at most G), for G configurations of L seeds each on W workers, deals of b jobs.
"""

from __future__ import annotations

import pytest

from experiments.launch.dealing import BUILD_COST, deal_size, run_lengths


def _keys(configs: int, seeds: int) -> list[str]:
    """Launch order of a sweep of ``configs`` x ``seeds``: seeds varying fastest."""
    return [f"config{c}" for c in range(configs) for _ in range(seeds)]


def test_run_lengths():
    assert run_lengths([]) == []
    assert run_lengths(["a", "a", "b", "a"]) == [2, 1, 1]
    assert run_lengths(_keys(3, 4)) == [4, 4, 4]


@pytest.mark.parametrize(
    ("configs", "seeds", "workers", "expected"),
    [
        # the main job, 2 regimes x 5 variants x 5 seeds on 2 cores:
        # b=1: ceil(50/2)=25 jobs + 0.5 * min(10, 25) = 30; b=5: 5 deals * 5 + 0.5 * 5 = 27.5
        (10, 5, 2, 5),
        # one regime only: b=1: 13 + 0.5 * 5 = 15.5; b=5: 3 deals * 5 + 0.5 * 3 = 16.5
        (5, 5, 2, 1),
        # one configuration: b=1: 3 + 0.5 = 3.5; b=5: 5 + 0.5 = 5.5
        (1, 5, 2, 1),
        # 2 x 2 (tests/launch/test_sweep.py): b=1: 2 + 0.5 * 2 = 3; b=2: 2 + 0.5 = 2.5
        (2, 2, 2, 2),
        # 10 seeds: b=1, 2, 5: 50 + 0.5 * 10 = 55; b=10: 50 + 0.5 * 5 = 52.5
        (10, 10, 2, 10),
        # 4 workers, 4 x 4: b=1: 4 + 2 = 6; b=2: 4 + 1 = 5; b=4: 4 + 0.5 = 4.5
        (4, 4, 4, 4),
        # 3 configs x 6 seeds on 2 workers: b=1: 9 + 1.5 = 10.5; b=2: 5 deals * 2 + 1.5 = 11.5;
        # b=3: 3 deals * 3 + 1.5 = 10.5; b=6: 2 deals * 6 + 1 = 13 -> tie of 1 and 3: the smaller
        (3, 6, 2, 1),
        # one worker: nothing to share
        (10, 5, 1, 1),
    ],
)
def test_deal_size_by_hand(configs, seeds, workers, expected):
    assert BUILD_COST == 0.5
    assert deal_size(_keys(configs, seeds), workers) == expected


def test_free_builds_mean_one_job_at_a_time():
    assert deal_size(_keys(10, 5), 2, build_cost=0.0) == 1
    # costly builds: 10 x 5 on 2 workers, b=5: 25 + 2 * 5 = 35 against b=1: 25 + 2 * 10 = 45
    assert deal_size(_keys(10, 5), 2, build_cost=2.0) == 5


def test_seeds_not_varying_fastest_are_dealt_one_at_a_time():
    keys = [f"config{c}" for _ in range(5) for c in range(10)]  # seed outer, config inner
    assert deal_size(keys, 2) == 1
    assert deal_size(["a", "a", "b", "b", "a", "a"], 2) == 1  # a configuration split in two runs
    assert deal_size(["a", "a", "b", "b", "b"], 2) == 1  # runs of unequal length
    assert deal_size([], 2) == 1


def test_negative_build_cost_is_refused():
    with pytest.raises(ValueError, match="build_cost=-1"):
        deal_size(_keys(2, 2), 2, build_cost=-1)
