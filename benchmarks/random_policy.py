"""The return of a uniformly random policy, the floor a learning curve is read against.

    python benchmarks/random_policy.py breakout --episodes 2000   # a registered task's name
    python benchmarks/random_policy.py catch --episodes 20000
    python benchmarks/random_policy.py gym Acrobot-v1            # any gymnasium id

Steps 16 environments of the task (the wrappers training uses, MinAtar's sticky actions and time
limit included) with actions drawn uniformly, until --episodes episodes have ended (the first
--episodes to end, in order); prints their mean return, its standard error (sample standard
deviation / sqrt(n)) and, where the task's return range is known, the error as a fraction of it.
Seeded: the same command prints the same numbers. The registry's ``random_return`` figures
(experiments/tasks/registry.py, docs/tasks.md) come from this script.
"""

from __future__ import annotations

import argparse

import numpy as np

from experiments.tasks import TaskConfig, make_env, task_facts, task_names


def random_returns(task: TaskConfig, episodes: int, *, seed: int, num_envs: int = 16) -> np.ndarray:
    """The returns ``[episodes]`` of the first ``episodes`` episodes to end under random play."""
    env = make_env(task, num_envs, seed=seed)
    env.reset()
    rng = np.random.default_rng(seed)
    running, ended = np.zeros(env.num_envs), []
    while len(ended) < episodes:
        _, rewards, dones = env.step(rng.integers(0, env.num_actions, env.num_envs))
        running += rewards
        for i in np.flatnonzero(dones):
            ended.append(running[i])
            running[i] = 0.0
    return np.asarray(ended[:episodes])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", help=f"{' | '.join(task_names())} | gym")
    parser.add_argument("id", nargs="?", default="", help="task.id (gym only)")
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--seed", type=int, default=123)
    args = parser.parse_args()
    if args.task == "gym":
        task, span = TaskConfig(name="gym", id=args.id), None
    else:
        facts = task_facts(args.task)
        task = TaskConfig(name=facts.kind, id=facts.task_id)
        span = None if facts.return_range is None else facts.return_range[1] - facts.return_range[0]
    returns = random_returns(task, args.episodes, seed=args.seed)
    se = returns.std(ddof=1) / np.sqrt(len(returns))
    of_range = f" ({se / span:.4f} of the return range {span:g})" if span else ""
    print(f"{args.task} {args.id}: random policy, {len(returns)} episodes: mean return "
          f"{returns.mean():.4f}, SE {se:.4f}{of_range}")  # fmt: skip


if __name__ == "__main__":
    main()
