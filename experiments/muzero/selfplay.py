"""Acting: batched search over vectorised environments, self-play into replay, evaluation.

Every move of all ``B`` environments is, by default, ONE call of a compiled graph that runs the
initial inference, the whole search and the action choice
(:class:`~experiments.muzero.search_tf.CompiledSearch`): what every run does. ``search="numpy"``
runs the readable reference search instead, to check the compiled one against it
(:func:`~experiments.muzero.reference_search.run_search`: one batched ``initial`` call, then one
compiled ``recurrent`` call per simulation for all ``B`` trees); no run or preset takes it. Both
draw the same numbers from the acting generator and give the same moves
(``tests/muzero/test_selfplay.py``).

Planning sees the model that was trained: a variant that changes forward values (``maxnorm``) is
applied inside the search's recurrent inference exactly where the learner's unroll applies it,
``h_in = placement.dynamics_input(h, variant.hidden, step)``, ``h_next, r = dynamics(h_in, a)``,
``h_next = placement.dynamics_output(h_next, variant.hidden, step)``, heads on ``h_next``, with
``step`` the 1-based index of the dynamics call along the search path: the same
:func:`~experiments.muzero.networks.recurrent_step` as the learner's unroll. Gradient-only variants
(``scale_gradient``, ``stop_gradient``) are the identity forward: they plan with the bare model
(left out, not applied: ``x * 0.3 + x * 0.7`` is not always ``x`` in float32).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import tensorflow as tf

from experiments.base.errors import ConfigError, unknown_choice
from experiments.gradients import Placement, Variant, get_placement
from experiments.muzero._acting import select_action, visit_softmax_temperature
from experiments.muzero.config import MuZeroConfig
from experiments.muzero.episodes import RunningEpisodes
from experiments.muzero.networks import Networks, recurrent_step
from experiments.muzero.reference_search import run_search
from experiments.muzero.replay import ReplayBuffer
from experiments.muzero.runtime.weights import WeightCopy
from experiments.muzero.search_tf import CompiledSearch
from experiments.tasks import VectorEnv

if TYPE_CHECKING:
    from experiments.muzero.runtime.graph_store import GraphStore

__all__ = ["SEARCHES", "Inference", "SelfPlay", "act", "evaluate"]

SEARCHES = ("compiled", "numpy")
"""How :func:`act` searches: one compiled graph per move (runs), or the NumPy reference search
(checks of the compiled one only)."""


class Inference:
    """The networks' inference as the search sees it, the variant's forward transform in place.

    ``initial_fn`` / ``recurrent_fn`` are TensorFlow functions (traced into the compiled search);
    ``initial`` / ``recurrent`` are the same, compiled on their own, NumPy in and out (the NumPy
    search's model).
    """

    def __init__(
        self,
        networks: Networks,
        *,
        variant: Variant | None = None,
        placement: Placement | None = None,
        jit_compile: bool = True,
        graphs: GraphStore | None = None,
        identity: str | None = None,
    ) -> None:
        """Wraps ``networks``.

        Args:
          networks: the agent's networks.
          variant: the run's variant; only a forward-changing one (``hidden.forward``)
            changes what the search computes. ``None``: the bare model.
          placement: where the variant goes (default ``pseudocode``).
          jit_compile: compile with XLA.
          graphs: where the compiled searches keep their traced graphs for later processes
            (:mod:`experiments.muzero.runtime.graph_store`), under ``identity`` (everything the
            networks, the variant and the placement compute with but the weights' values: the
            agent key's repr); None: traced in every process.
        """
        self.networks = networks
        self.num_actions = networks.num_actions
        forward = variant is not None and variant.hidden.forward
        self._transform = variant.hidden if forward else None
        self._placement = placement if placement is not None else get_placement("pseudocode")
        self._jit_compile = jit_compile
        self._graphs = graphs
        self._identity = identity
        self._initial = tf.function(self.initial_fn, jit_compile=jit_compile, autograph=False)
        self._recurrent = tf.function(self.recurrent_fn, jit_compile=jit_compile, autograph=False)
        self._searches: dict[tuple, CompiledSearch] = {}
        self._copy: WeightCopy | None = None

    def weight_copy(self) -> WeightCopy:
        """This model's copy of the networks' weights (made at the first call, then the same
        one; ``refresh()`` updates it), which the compiled search can plan with instead of the
        networks' variables (``act(weights=)``)."""
        if self._copy is None:
            self._copy = WeightCopy(self.networks.variables)
        return self._copy

    def initial_fn(self, observations: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """``[B, O]`` -> hidden ``[B, H]``, scalar value ``[B]``, policy logits ``[B, A]``."""
        return self.networks.initial_inference(observations)

    def recurrent_fn(
        self, hidden: tf.Tensor, action: tf.Tensor, step: tf.Tensor
    ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
        """``[B, H]``, ``[B]`` int, ``[B]`` int step -> next hidden, reward, value, logits
        (:func:`~experiments.muzero.networks.recurrent_step`, then the scalar reward and value)."""
        nets = self.networks
        next_hidden, reward, value, policy = recurrent_step(
            nets, hidden, action, transform=self._transform, placement=self._placement, step=step
        )
        return (
            next_hidden,
            nets.reward_support.to_scalar(reward),
            nets.value_support.to_scalar(value),
            policy,
        )

    def initial(self, observations: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`initial_fn` on NumPy arrays."""
        return tuple(t.numpy() for t in self._initial(np.asarray(observations, np.float32)))

    def recurrent(
        self, hidden: np.ndarray, action: np.ndarray, step: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`recurrent_fn` on NumPy arrays: the NumPy search's ``recurrent_fn``."""
        outputs = self._recurrent(
            np.asarray(hidden, np.float32), np.asarray(action, np.int32), np.asarray(step, np.int32)
        )
        return tuple(t.numpy() for t in outputs)

    def compiled_search(self, config: MuZeroConfig) -> CompiledSearch:
        """The compiled move for ``config``'s search settings (built once, then reused)."""
        key = (
            config.num_simulations,
            config.discount,
            config.pb_c_base,
            config.pb_c_init,
            config.q_form,
        )
        if key not in self._searches:
            self._searches[key] = CompiledSearch(
                self.initial_fn,
                self.recurrent_fn,
                num_actions=self.num_actions,
                num_simulations=config.num_simulations,
                discount=config.discount,
                pb_c_base=config.pb_c_base,
                pb_c_init=config.pb_c_init,
                q_form=config.q_form,
                jit_compile=self._jit_compile,
                graphs=self._graphs,
                identity=None if self._identity is None else f"{key}\n{self._identity}",
                variables=self.networks.variables,
            )
        return self._searches[key]


def act(
    inference: Inference,
    observations: np.ndarray,
    *,
    config: MuZeroConfig,
    temperature: float,
    noise: bool,
    rng: np.random.Generator,
    search: str = "compiled",
    weights: WeightCopy | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Searches from ``observations [B, O]`` and picks actions.

    Args:
      inference: the model.
      observations: [B, O].
      config: the search settings (simulations, discount, pUCT constants, noise, q form).
      temperature: visit-count temperature, >= 0 (0: the most visited action).
      noise: mix Dirichlet noise into the root priors (self-play) or not (evaluation).
      rng: the acting generator; both searches draw the same numbers from it.
      search: one of :data:`SEARCHES`.
      weights: the compiled search plans with this copy of the weights
        (:meth:`Inference.weight_copy`); ``None``: with the networks' variables. The NumPy search
        always reads the networks' variables.

    Returns:
      ``(actions [B], root_values [B], policies [B, A])``, policies the normalised visit counts.

    Raises:
      ConfigError: an unknown ``search``, or a bad setting.
    """
    fraction = config.dirichlet_fraction if noise else 0.0
    if search == "compiled":
        out = inference.compiled_search(config).act(
            observations,
            rng=rng,
            temperature=temperature,
            dirichlet_alpha=config.dirichlet_alpha,
            dirichlet_fraction=fraction,
            weights=weights,
        )
        actions, visit_counts, root_value = out.actions, out.visit_counts, out.root_value
    elif search == "numpy":
        hidden, value, logits = inference.initial(observations)
        result = run_search(
            hidden,
            value,
            logits,
            inference.recurrent,
            num_simulations=config.num_simulations,
            discount=config.discount,
            rng=rng,
            dirichlet_alpha=config.dirichlet_alpha,
            dirichlet_fraction=fraction,
            pb_c_base=config.pb_c_base,
            pb_c_init=config.pb_c_init,
            q_form=config.q_form,
        )
        actions = select_action(result.visit_counts, temperature=temperature, rng=rng)
        visit_counts, root_value = result.visit_counts, result.root_value
    else:
        raise unknown_choice("search", search, SEARCHES)
    counts = visit_counts.astype(np.float32)
    policies = counts / counts.sum(axis=1, keepdims=True)
    return actions, root_value.astype(np.float32), policies


class SelfPlay:
    """Plays all environments of ``env`` with search and stores each finished episode in replay.

    ``search`` is one of :data:`SEARCHES`; each step is one :func:`act` of all environments.
    """

    def __init__(
        self,
        env: VectorEnv,
        inference: Inference,
        replay: ReplayBuffer,
        *,
        config: MuZeroConfig,
        rng: np.random.Generator,
        search: str = "compiled",
    ) -> None:
        if search not in SEARCHES:
            raise unknown_choice("search", search, SEARCHES)
        self.env = env
        self.inference = inference
        self.replay = replay
        self.config = config
        self.rng = rng
        self.search = search
        self.env_steps = 0
        self._observations = env.reset()
        self._episodes = RunningEpisodes(env.num_envs)

    def step(self, training_step: int) -> list[float]:
        """One move in every environment; returns the returns of the episodes that ended."""
        temperature = visit_softmax_temperature(
            training_step, schedule=self.config.temperature_schedule
        )
        actions, values, policies = act(
            self.inference,
            self._observations,
            config=self.config,
            temperature=temperature,
            noise=True,
            rng=self.rng,
            search=self.search,
        )
        next_observations, rewards, dones = self.env.step(actions)
        self.env_steps += self.env.num_envs
        ended = self._episodes.record(self._observations, actions, rewards, values, policies, dones)
        self.replay.add_episodes(  # nothing to write when no episode ended
            ended.lengths,
            ended.observations,
            ended.actions,
            ended.rewards,
            ended.values,
            ended.policies,
        )
        self._observations = next_observations
        return ended.returns


def evaluate(
    inference: Inference,
    env: VectorEnv,
    *,
    config: MuZeroConfig,
    rng: np.random.Generator,
    search: str = "compiled",
    weights: WeightCopy | None = None,
) -> float:
    """Mean return of one episode per environment of ``env``, greedy search without noise.

    ``weights``: the compiled search plans every move with this copy of the weights
    (:meth:`Inference.weight_copy`, refreshed when the evaluation was asked for), so the
    evaluation may run on another thread while training changes the networks; ``None``: with the
    networks' variables. The NumPy search reads the networks' variables.
    """
    if weights is not None and search != "compiled":
        raise ConfigError("only the compiled search plans with a copy of the weights")
    observations = env.reset()
    totals = np.zeros(env.num_envs)
    running = np.ones(env.num_envs, bool)
    while running.any():
        actions, _, _ = act(
            inference,
            observations,
            config=config,
            temperature=0.0,
            noise=False,
            rng=rng,
            search=search,
            weights=weights,
        )
        observations, rewards, dones = env.step(actions)
        totals += np.where(running, rewards, 0.0)
        running &= ~dones
    return float(totals.mean())
