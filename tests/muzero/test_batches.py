"""Batches: prepared one step ahead on a worker thread, the very batches sampled in order."""

import numpy as np
import pytest

from experiments.muzero.replay import ReplayBuffer
from experiments.muzero.runtime.batches import Batches


def _episode(rng, length, num_actions=3, obs=4):
    policies = rng.random((length, num_actions)).astype(np.float32)
    return (
        rng.random((length, obs)).astype(np.float32),
        rng.integers(0, num_actions, length),
        rng.random(length).astype(np.float32),
        rng.random(length).astype(np.float32),
        policies / policies.sum(axis=1, keepdims=True),
    )


def _sample(replay, rng):
    return replay.sample(16, unroll_steps=3, td_steps=4, discount=0.97, rng=rng)


def _tensors(batch):
    return {"observations": batch.observations, "actions": batch.actions,
            "value": batch.target_value, "policy": batch.target_policy}  # fmt: skip


def _draw(ahead: bool, *, steps: int, interval: int) -> list[dict[str, np.ndarray]]:
    """The batches of ``steps`` training steps with an episode added every ``interval`` steps,
    as the training loop asks for them."""
    episodes = np.random.default_rng(7)
    replay = ReplayBuffer(capacity=50, observation_size=4, num_actions=3)
    replay.add_episode(*_episode(episodes, 9))
    batches = Batches(
        replay, sample=_sample, tensors=_tensors, rng=np.random.default_rng(3), ahead=ahead
    )
    out = []
    for step in range(1, steps + 1):
        if (step - 1) % interval == 0:
            replay.add_episode(*_episode(episodes, int(episodes.integers(2, 12))))
        following = step < steps and step % interval != 0
        out.append({k: v.numpy() for k, v in batches.next(prepare_following=following).items()})
    batches.close()
    return out


@pytest.mark.parametrize("interval", [1, 3])
def test_batches_prepared_ahead_are_the_batches_sampled_in_turn(interval):
    now, ahead = _draw(False, steps=10, interval=interval), _draw(True, steps=10, interval=interval)
    assert len(now) == len(ahead) == 10
    for a, b in zip(now, ahead, strict=True):
        assert a.keys() == b.keys()
        for name in a:
            np.testing.assert_array_equal(a[name], b[name])
    # The replay changed between batches, so they differ (the check above is not vacuous).
    assert not np.array_equal(now[0]["observations"], now[1]["observations"])


def test_a_batch_prepared_ahead_sees_the_replay_as_it_was_when_asked():
    """The following batch is drawn when it is asked for, before the replay changes: an episode
    added afterwards (which the caller must not do) is not in it, so the protocol matters."""
    episodes = np.random.default_rng(0)
    replay = ReplayBuffer(capacity=50, observation_size=4, num_actions=3)
    replay.add_episode(*_episode(episodes, 5))
    batches = Batches(
        replay, sample=_sample, tensors=_tensors, rng=np.random.default_rng(1), ahead=True
    )
    assert batches.ahead
    batches.next(prepare_following=True)
    batches._pending.result()  # noqa: SLF001  (prepared before the replay changes)
    replay.add_episode(*_episode(episodes, 9, obs=4))
    prepared = batches.next(prepare_following=False)["observations"].numpy()
    old = replay._obs[:5]  # noqa: SLF001
    assert all(any(np.array_equal(row, o) for o in old) for row in prepared)
    batches.close()
    batches.close()  # idempotent
    assert not batches.ahead


def test_an_error_while_preparing_reaches_the_caller():
    replay = ReplayBuffer(capacity=10, observation_size=4, num_actions=3)
    replay.add_episode(*_episode(np.random.default_rng(0), 3))
    calls = []

    def failing(batch):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("boom in the worker")
        return _tensors(batch)

    batches = Batches(
        replay, sample=_sample, tensors=failing, rng=np.random.default_rng(0), ahead=True
    )
    batches.next(prepare_following=True)
    with pytest.raises(RuntimeError, match="boom in the worker"):
        batches.next(prepare_following=False)
    batches.close()
