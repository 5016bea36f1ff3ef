"""A group of seeds trained together (experiments.muzero.seed_axis.train): each seed's rows are
the rows it gives alone, bit for bit (the time apart), on Catch, CartPole and MinAtar Breakout;
a dropped seed stops; the group's rows are those of the seeds' own runs up to float32 rounding in
what the networks compute (the same environments, draws and schedule)."""

from __future__ import annotations

import pytest

from experiments.gradients import get_placement, make_variant
from experiments.muzero.agents import AgentCache
from experiments.muzero.config import MuZeroConfig, NetworkConfig
from experiments.muzero.seed_axis.train import GroupTraining
from experiments.muzero.train import train
from experiments.tasks import TaskConfig

SMALL = MuZeroConfig(
    network=NetworkConfig(
        hidden_size=8, width=16, value_support_size=None, reward_support_size=None
    ),
    training_steps=12,
    num_envs=4,
    selfplay_interval=2,
    num_simulations=3,
    unroll_steps=3,
    batch_size=8,
    warmup_steps=3,
    eval_every=5,
    eval_episodes=3,
    learning_rate=0.02,
)
TASKS = {
    "catch": TaskConfig(),
    "cartpole": TaskConfig(name="cartpole"),
    "breakout": TaskConfig(name="minatar", id="breakout"),
}


def _group(seeds, task="catch", variant="scale_gradient", config=SMALL, cache=None):
    training = GroupTraining(
        config, TASKS[task], make_variant(variant), get_placement("pseudocode"),
        seeds=seeds, cache=cache,
    )  # fmt: skip
    per_seed: dict[int, list[dict]] = {s: [] for s in seeds}
    for rows in training:
        for seed, row in zip(seeds, rows, strict=True):
            per_seed[seed].append({k: v for k, v in row.items() if k != "time/elapsed_s"})
    return per_seed


@pytest.mark.parametrize("task", sorted(TASKS))
def test_a_seed_trains_the_same_alone_and_in_a_group(task):
    alone = _group([11], task)[11]
    together = _group([5, 11, 8], task)
    assert together[11] == alone
    assert len(alone) == SMALL.training_steps
    assert [k for k in alone[-1] if k.startswith("eval")] == ["eval/return"]
    assert together[5] != together[11]  # the other seeds ran their own runs


def test_a_kept_agent_restarts_for_the_next_group_with_the_same_rows():
    cache = AgentCache()
    first = _group([3, 4], cache=cache)
    again = _group([4, 3], cache=cache)
    assert cache.hits == 1 and cache.misses == 1
    assert again == first


def test_a_group_matches_each_seeds_own_run_up_to_rounding():
    together = _group([2, 9], variant="none")
    for seed in (2, 9):
        own = [
            {k: v for k, v in row.items() if k != "time/elapsed_s"}
            for row in train(SMALL, TASKS["catch"], make_variant("none"),
                             get_placement("pseudocode"), seed=seed, overlap=False)
        ]  # fmt: skip
        assert len(own) == len(together[seed])
        for mine, theirs in zip(together[seed], own, strict=True):
            assert mine.keys() == theirs.keys()
            assert mine["env/steps"] == theirs["env/steps"]
            for key in mine:
                assert mine[key] == pytest.approx(theirs[key], rel=1e-3, abs=1e-5), key


def test_a_dropped_seed_stops_and_the_others_go_on():
    alone = _group([7])[7]
    training = GroupTraining(
        SMALL, TASKS["catch"], make_variant("scale_gradient"), get_placement("pseudocode"),
        seeds=[1, 7],
    )  # fmt: skip
    kept = []
    for step, rows in enumerate(training, start=1):
        if step == 3:
            training.drop(0)
        if step > 3:
            assert rows[0] is None
        kept.append({k: v for k, v in rows[1].items() if k != "time/elapsed_s"})
    assert kept == alone
