"""The published MuZero pseudocode's search, transcribed unchanged, as an oracle for the tests.

Source: Schrittwieser et al. (2020), arXiv:1911.08265, ancillary ``pseudocode.py`` as revised in
2020 (``ucb_score`` with ``child.reward + config.discount * normalize(child.value())``). The 2019
file is kept verbatim, for instance, in pde/safelife ``muzero/pseudocode.py`` (commit a23c990);
``select_child``, ``backpropagate``, ``expand_node``, ``Node``, ``Action`` and ``MinMaxStats`` are
the same in both versions. Every function below keeps the original's statements in order; only
the surroundings are stubs: a one-player ``Player`` (one shared object, so ``node.to_play ==
to_play`` holds as it must for one player; the original's stub builds a new ``Player()`` per call),
a config holding the search settings, and a network calling a NumPy model of the tests'
``(hidden [1, H], action [1], step [1]) -> (next_hidden, reward, value, logits)`` convention.

What gradlab's ``q_form=pseudocode`` must reproduce visit for visit, ties included:
``select_child`` takes ``max`` over ``(score, action, child)`` tuples, so among equal scores the
tuple with the greater ``Action`` (``__gt__`` compares indices) wins: the highest index.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

MAXIMUM_FLOAT_VALUE = float("inf")


class MinMaxStats:
    """A class that holds the min-max values of the tree."""

    def __init__(self, known_bounds=None):
        self.maximum = known_bounds.max if known_bounds else -MAXIMUM_FLOAT_VALUE
        self.minimum = known_bounds.min if known_bounds else MAXIMUM_FLOAT_VALUE

    def update(self, value: float):
        self.maximum = max(self.maximum, value)
        self.minimum = min(self.minimum, value)

    def normalize(self, value: float) -> float:
        if self.maximum > self.minimum:
            # We normalize only when we have set the maximum and minimum values.
            return (value - self.minimum) / (self.maximum - self.minimum)
        return value


class Action:
    def __init__(self, index: int):
        self.index = index

    def __hash__(self):
        return self.index

    def __eq__(self, other):
        return self.index == other.index

    def __gt__(self, other):
        return self.index > other.index


class Player:
    pass


PLAYER = Player()  # one player: the same object everywhere (see the module docstring)


class Node:
    def __init__(self, prior: float):
        self.visit_count = 0
        self.to_play = -1
        self.prior = prior
        self.value_sum = 0
        self.children = {}
        self.hidden_state = None
        self.reward = 0

    def expanded(self) -> bool:
        return len(self.children) > 0

    def value(self) -> float:
        if self.visit_count == 0:
            return 0
        return self.value_sum / self.visit_count


class ActionHistory:
    def __init__(self, history: list[Action], action_space_size: int):
        self.history = list(history)
        self.action_space_size = action_space_size

    def clone(self):
        return ActionHistory(self.history, self.action_space_size)

    def add_action(self, action: Action):
        self.history.append(action)

    def last_action(self) -> Action:
        return self.history[-1]

    def action_space(self) -> list[Action]:
        return [Action(i) for i in range(self.action_space_size)]

    def to_play(self) -> Player:
        return PLAYER


class NetworkOutput(NamedTuple):
    value: float
    reward: float
    policy_logits: dict[Action, float]
    hidden_state: np.ndarray


class Config(NamedTuple):
    num_simulations: int
    discount: float
    pb_c_base: float = 19652.0
    pb_c_init: float = 1.25
    known_bounds: object = None


class Network:
    """``recurrent_inference`` on a tests' NumPy model, one state at a time (step = path depth)."""

    def __init__(self, model: Callable, num_actions: int):
        self.model = model
        self.num_actions = num_actions

    def recurrent_inference(self, hidden_state, action: Action, step: int) -> NetworkOutput:
        hidden, reward, value, logits = self.model(
            np.asarray(hidden_state)[None], np.array([action.index], np.int32), np.array([step])
        )
        policy = {Action(a): float(logits[0, a]) for a in range(self.num_actions)}
        dtype = np.asarray(hidden_state).dtype  # hidden states keep the root's dtype, as ours
        return NetworkOutput(float(value[0]), float(reward[0]), policy, hidden[0].astype(dtype))


# --- The pseudocode (statements unchanged). -------------------------------------------------


def run_mcts(config: Config, root: Node, action_history: ActionHistory, network: Network):
    min_max_stats = MinMaxStats(config.known_bounds)

    for _ in range(config.num_simulations):
        history = action_history.clone()
        node = root
        search_path = [node]

        while node.expanded():
            action, node = select_child(config, node, min_max_stats)
            history.add_action(action)
            search_path.append(node)

        # Inside the search tree we use the dynamics function to obtain the next
        # hidden state given an action and the previous hidden state.
        parent = search_path[-2]
        network_output = network.recurrent_inference(
            parent.hidden_state,
            history.last_action(),
            len(search_path) - 1,  # stub: the step our models take (the parent's depth + 1)
        )
        expand_node(node, history.to_play(), history.action_space(), network_output)

        backpropagate(
            search_path, network_output.value, history.to_play(), config.discount, min_max_stats
        )


# Select the child with the highest UCB score.
def select_child(config: Config, node: Node, min_max_stats: MinMaxStats):
    _, action, child = max(
        (ucb_score(config, node, child, min_max_stats), action, child)
        for action, child in node.children.items()
    )
    return action, child


# The score for a node is based on its value, plus an exploration bonus based on
# the prior.
def ucb_score(config: Config, parent: Node, child: Node, min_max_stats: MinMaxStats) -> float:
    pb_c = (
        math.log((parent.visit_count + config.pb_c_base + 1) / config.pb_c_base) + config.pb_c_init
    )
    pb_c *= math.sqrt(parent.visit_count) / (child.visit_count + 1)

    prior_score = pb_c * child.prior
    if child.visit_count > 0:
        value_score = child.reward + config.discount * min_max_stats.normalize(child.value())
    else:
        value_score = 0
    return prior_score + value_score


# We expand a node using the value, reward and policy prediction obtained from
# the neural network.
def expand_node(node: Node, to_play: Player, actions: list[Action], network_output: NetworkOutput):
    node.to_play = to_play
    node.hidden_state = network_output.hidden_state
    node.reward = network_output.reward
    policy = {a: math.exp(network_output.policy_logits[a]) for a in actions}
    policy_sum = sum(policy.values())
    for action, p in policy.items():
        node.children[action] = Node(p / policy_sum)


# At the end of a simulation, we propagate the evaluation all the way up the
# tree to the root.
def backpropagate(
    search_path: list[Node], value: float, to_play: Player, discount: float, min_max_stats
):
    for node in reversed(search_path):
        node.value_sum += value if node.to_play == to_play else -value
        node.visit_count += 1
        min_max_stats.update(node.value())

        value = node.reward + discount * value


# At the start of each search, we add dirichlet noise to the prior of the root
# to encourage the search to explore new actions.
def add_exploration_noise(node: Node, noise: Sequence[float], frac: float):
    # stub: the noise is the caller's draw (the original draws numpy.random.dirichlet here)
    actions = list(node.children.keys())
    for a, n in zip(actions, noise, strict=True):
        node.children[a].prior = node.children[a].prior * (1 - frac) + n * frac


# --- Driver. ---------------------------------------------------------------------------------


def search(
    hidden: np.ndarray,
    logits: Sequence[float],
    model: Callable,
    *,
    num_simulations: int,
    discount: float,
    noise: Sequence[float] | None = None,
    fraction: float = 0.25,
) -> tuple[np.ndarray, float, np.ndarray]:
    """``play_game``'s root set-up and ``run_mcts`` for one root.

    Returns:
      ``(visit counts [A] of the root's children, root.value(), q [A])`` with ``q = reward +
      discount * child.value()`` (0 where unvisited), as gradlab's ``SearchOutput``.
    """
    num_actions = len(logits)
    config = Config(num_simulations=num_simulations, discount=discount)
    root = Node(0)
    history = ActionHistory([], num_actions)
    policy = {Action(a): float(logit) for a, logit in enumerate(logits)}
    expand_node(root, PLAYER, history.action_space(), NetworkOutput(0.0, 0.0, policy, hidden))
    if noise is not None:
        add_exploration_noise(root, noise, fraction)
    run_mcts(config, root, history, Network(model, num_actions))
    children = [root.children[Action(a)] for a in range(num_actions)]
    visits = np.array([c.visit_count for c in children])
    q = np.array([c.reward + discount * c.value() if c.visit_count else 0.0 for c in children])
    return visits, root.value(), q
