"""The return of a uniformly random policy, the floor a learning curve is read against.

    python benchmarks/random_policy.py minatar breakout      # task name, then task.id if any
    python benchmarks/random_policy.py catch
    python benchmarks/random_policy.py cartpole CartPole-v1

Steps 16 environments of the task (the same wrappers training uses, sticky actions included)
with actions drawn uniformly, until --episodes episodes have ended; prints their mean return with
a normal 95% confidence interval. Seeded: the same command prints the same numbers.
"""

from __future__ import annotations

import argparse

import numpy as np

from experiments.tasks import make_env
from experiments.tasks.config import TaskConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", help="catch | cartpole | gym | minatar")
    parser.add_argument("id", nargs="?", default="", help="task.id (gym, minatar)")
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--seed", type=int, default=123)
    args = parser.parse_args()
    env = make_env(TaskConfig(name=args.task, id=args.id), 16, seed=args.seed)
    env.reset()
    rng = np.random.default_rng(args.seed)
    running, ended = np.zeros(env.num_envs), []
    while len(ended) < args.episodes:
        _, rewards, dones = env.step(rng.integers(0, env.num_actions, env.num_envs))
        running += rewards
        for i in np.flatnonzero(dones):
            ended.append(running[i])
            running[i] = 0.0
    returns = np.asarray(ended)
    half = 1.96 * returns.std(ddof=1) / np.sqrt(len(returns))
    print(f"{args.task} {args.id}: random policy, {len(returns)} episodes: mean return "
          f"{returns.mean():.3f} +- {half:.3f} (95% CI)")  # fmt: skip


if __name__ == "__main__":
    main()
