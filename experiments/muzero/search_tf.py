"""The whole MuZero move as one compiled TensorFlow graph: initial inference, search, action.

:func:`experiments.muzero.reference_search.run_search` (NumPy trees, one model call per simulation)
is the reference; this module runs the same algorithm, with the same q forms and tie rules (one
:class:`~experiments.muzero.qtransforms.QForm` read by both),
inside ONE ``tf.function`` call per self-play move (XLA with ``jit_compile=True``): the trees are
tensors ``[B, N]`` (:mod:`~experiments.muzero._tree_tf`), the simulations a ``tf.while_loop``, the
descent and the backup inner ``tf.while_loop`` s, as google-deepmind/mctx does in JAX. Python and
TensorFlow's dispatch are paid once per move instead of once per simulation.

Randomness stays on the host, so runs are reproducible and equal to the NumPy path:
:func:`draw_randomness` draws with the caller's generator exactly what the NumPy path draws
(Dirichlet rows ``rng.dirichlet([alpha] * A, size=B)`` only when the noise fraction is > 0, then
``rng.random(B)`` at T > 0 or ``rng.random((B, A))`` at T = 0), and the graph takes them as
tensors. Temperature and noise fraction are tensors too, so one trace serves every call of a batch
size (:attr:`CompiledSearch.traces` counts them).

Model callbacks, TensorFlow ops traced into the graph:

* ``initial_fn(observations [B, O] float32) -> (hidden [B, H], value [B], policy_logits [B, A])``;
* ``recurrent_fn(hidden [B, H], action [B] int32, step [B] int32) -> (next_hidden [B, H],
  reward [B], value [B], policy_logits [B, A])``, ``step`` the 1-based index of the dynamics call
  along the path (the parent's depth + 1; root children have step 1).

Reward and value are scalars. Tree statistics are float64 (XLA on CPU handles them), hidden
states keep the model's dtype.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import tensorflow as tf

from experiments.base.errors import ConfigError
from experiments.muzero import _tree_tf
from experiments.muzero._checks import (
    check_count,
    check_positive,
    check_temperature,
    check_unit,
)
from experiments.muzero._tree_tf import RecurrentFnTF
from experiments.muzero.qtransforms import QForm, resolve
from experiments.muzero.runtime.compiled_call import FlatCall, StoredCall
from experiments.muzero.runtime.weights import WeightCopy

if TYPE_CHECKING:
    from experiments.muzero.runtime.graph_store import GraphStore

__all__ = [
    "CompiledOutput",
    "CompiledSearch",
    "InitialFnTF",
    "RecurrentFnTF",
    "draw_randomness",
]

InitialFnTF = Callable[[tf.Tensor], tuple[tf.Tensor, tf.Tensor, tf.Tensor]]
"""``observations [B, O] float32 -> (hidden [B, H], value [B], policy_logits [B, A])``."""


@dataclasses.dataclass(frozen=True)
class CompiledOutput:
    """One compiled move of B environments, as NumPy arrays."""

    actions: np.ndarray  # [B] int64, the chosen actions
    root_value: np.ndarray  # [B] float64, the root's mean backed-up value
    visit_counts: np.ndarray  # [B, A] int64, visits of the root's children
    q_values: np.ndarray  # [B, A] float64, reward + discount * child.value(); 0 if unvisited


def draw_randomness(
    rng: np.random.Generator,
    *,
    batch_size: int,
    num_actions: int,
    temperature: float,
    dirichlet_alpha: float,
    dirichlet_fraction: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Draws what one NumPy-path move draws, in the same order, from ``rng``.

    Args:
      rng: the acting generator.
      batch_size: B.
      num_actions: A.
      temperature: >= 0; T = 0 draws ``[B, A]`` uniforms, T > 0 draws ``[B]``.
      dirichlet_alpha: > 0.
      dirichlet_fraction: in [0, 1]; 0 draws no noise.

    Returns:
      ``noise [B, A]`` float64 (zeros without noise) and ``uniforms [B, A]`` float64 (at T > 0
      only column 0 is drawn, the rest 0).
    """
    if dirichlet_fraction > 0.0:
        noise = rng.dirichlet(np.full(num_actions, dirichlet_alpha), size=batch_size)
    else:
        noise = np.zeros((batch_size, num_actions))
    if temperature == 0:
        uniforms = rng.random((batch_size, num_actions))
    else:
        uniforms = np.zeros((batch_size, num_actions))
        uniforms[:, 0] = rng.random(batch_size)
    return noise, uniforms


class CompiledSearch:
    """Initial inference, ``num_simulations`` simulations and the action choice in one graph.

    One concrete function is traced (and compiled) per observation shape ``[B, O]`` and reused;
    every later call of that shape is one call of it on tensors of fixed dtype and shape.
    """

    def __init__(
        self,
        initial_fn: InitialFnTF,
        recurrent_fn: RecurrentFnTF,
        *,
        num_actions: int,
        num_simulations: int,
        discount: float,
        pb_c_base: float = 19652.0,
        pb_c_init: float = 1.25,
        q_form: str | QForm = "pseudocode",
        jit_compile: bool = True,
        graphs: GraphStore | None = None,
        identity: str | None = None,
        variables: Sequence[Any] = (),
    ) -> None:
        """Builds (but does not trace) the search.

        Args:
          initial_fn: the representation and prediction networks, see the module docstring.
          recurrent_fn: the dynamics and prediction networks, see the module docstring.
          num_actions: A, the width of the policy logits.
          num_simulations: simulations per move, >= 1.
          discount: in [0, 1].
          pb_c_base: c2 of pUCT, > 0.
          pb_c_init: c1 of pUCT, >= 0.
          q_form: a :class:`~experiments.muzero.qtransforms.QForm` or its name (``"pseudocode"``,
            ``"normalized"``), see :mod:`experiments.muzero.qtransforms`.
          jit_compile: compile the graph with XLA.
          graphs: where the traced graph of each observation shape is kept for later processes
            (:mod:`experiments.muzero.runtime.graph_store`), under ``identity`` (which must name
            everything ``initial_fn`` and ``recurrent_fn`` compute with but the values of
            ``variables``, the variables they read); None: traced in every process.

        Raises:
          ConfigError: a bad hyper-parameter.
        """
        self.num_actions = check_count("num_actions", num_actions)
        self.num_simulations = check_count("num_simulations", num_simulations)
        self.discount = check_unit("discount", discount)
        self.q_form = resolve(q_form)
        self._initial_fn = initial_fn
        self._recurrent_fn = recurrent_fn
        self._constants = _tree_tf.Constants.make(
            self.num_simulations,
            discount=self.discount,
            pb_c_base=check_positive("pb_c_base", pb_c_base),
            pb_c_init=check_positive("pb_c_init", pb_c_init, allow_zero=True),
            q_form=self.q_form,
        )
        self._function = tf.function(self._move, jit_compile=jit_compile, autograph=False)
        self._concrete: dict[tuple[int, int], FlatCall | StoredCall] = {}
        self._graphs = graphs if identity is not None else None
        self._identity = identity
        self._variables = list(variables)
        self.traces = 0

    def _move(
        self,
        observations: tf.Tensor,
        noise: tf.Tensor,
        noise_fraction: tf.Tensor,
        temperature: tf.Tensor,
        uniforms: tf.Tensor,
    ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
        self.traces += 1  # Python side effect: runs once per trace, never per call
        c = self._constants
        hidden, _, logits = self._initial_fn(observations)
        prior = _tree_tf.softmax64(logits)
        prior = prior * (1.0 - noise_fraction) + noise * noise_fraction  # add_exploration_noise
        tree = _tree_tf.init_tree(hidden, prior, self.num_simulations + 1)

        def body(sim, *flat):
            tree = _tree_tf.Tree(*flat)
            parent, action, depth = _tree_tf.select(tree, c)
            parent_hidden = tf.gather(tree.hidden, parent, batch_dims=1)
            outputs = self._recurrent_fn(parent_hidden, action, depth + 1)
            leaf = sim + 1
            tree = _tree_tf.expand(tree, leaf, parent, action, outputs)
            tree = _tree_tf.backup(tree, leaf, outputs[2], c)
            return (sim + 1, *tree.flat())

        flat = tf.while_loop(
            lambda sim, *_: sim < self.num_simulations,
            body,
            (tf.constant(0), *tree.flat()),
        )[1:]
        tree = _tree_tf.Tree(*flat)
        visits, root_value, q_values = _tree_tf.root_statistics(tree, c.discount)
        actions = _tree_tf.select_action(visits, temperature, uniforms)
        return actions, root_value, visits, q_values

    def concrete_function(self, batch_size: int, observation_size: int) -> FlatCall | StoredCall:
        """The traced function for observations ``[batch_size, observation_size]`` (cached), called
        through :class:`~experiments.muzero.runtime.compiled_call.FlatCall`, or its stored graph
        (:class:`~experiments.muzero.runtime.compiled_call.StoredCall`, loaded or traced and
        stored) where the search has a graph store.

        It takes ``(observations [B, O] float32, noise [B, A] float64, noise_fraction float64,
        temperature float64, uniforms [B, A] float64)`` tensors and returns ``(actions [B] int64,
        root_value [B] float64, visit_counts [B, A] int32, q_values [B, A] float64)`` tensors.
        """
        key = (int(batch_size), int(observation_size))
        if key not in self._concrete:
            width = self.num_actions
            signature = (
                tf.TensorSpec([key[0], key[1]], tf.float32),
                tf.TensorSpec([key[0], width], tf.float64),
                tf.TensorSpec([], tf.float64),
                tf.TensorSpec([], tf.float64),
                tf.TensorSpec([key[0], width], tf.float64),
            )

            def trace() -> Any:
                return self._function.get_concrete_function(*signature)

            def traced() -> FlatCall:
                return FlatCall(trace())

            found = None
            if self._graphs is not None:
                found = self._graphs.program(
                    f"search of [{key[0]}, {key[1]}]\n{self._identity}",
                    trace,
                    self._variables,
                    dict,
                    constants=(self._constants.explore, self._constants.inverse),
                )
            if found is None:
                self._concrete[key] = traced()
            else:
                self._concrete[key] = StoredCall(found[0], signature, fallback=traced)
        return self._concrete[key]

    def __call__(
        self,
        observations: np.ndarray,
        *,
        noise: np.ndarray,
        noise_fraction: float,
        temperature: float,
        uniforms: np.ndarray,
        weights: WeightCopy | None = None,
    ) -> CompiledOutput:
        """One move of B environments on the caller's random draws.

        Args:
          observations: [B, O].
          noise: [B, A] Dirichlet rows (any values when ``noise_fraction`` is 0).
          noise_fraction: weight of the noise in the root priors, in [0, 1].
          temperature: visit-count temperature, >= 0.
          uniforms: [B, A] from :func:`draw_randomness`.
          weights: plan with this copy of the weights instead of the networks' variables (the
            same compiled program; :class:`~experiments.muzero.runtime.weights.WeightCopy`).

        Returns:
          The actions and the search statistics.
        """
        observations = np.asarray(observations, np.float32)
        if observations.ndim != 2 or observations.shape[0] < 1:
            raise ConfigError(f"observations have shape {observations.shape}; expected [B, O]")
        expected = (observations.shape[0], self.num_actions)
        noise = np.asarray(noise, np.float64)
        uniforms = np.asarray(uniforms, np.float64)
        for name, array in (("noise", noise), ("uniforms", uniforms)):
            if array.shape != expected:
                raise ConfigError(f"{name} has shape {array.shape}; expected [B, A] = {expected}")
        function = self.concrete_function(*observations.shape)
        fraction = check_unit("dirichlet_fraction", noise_fraction)
        temperature = check_temperature(temperature)
        captured = None if weights is None else weights.captured(function.captured_inputs)
        outputs = function(
            observations,
            noise,
            tf.constant(fraction, tf.float64),
            tf.constant(temperature, tf.float64),
            uniforms,
            captured=captured,
        )
        actions, root_value, visits, q_values = (t.numpy() for t in outputs)
        return CompiledOutput(actions, root_value, visits.astype(np.int64), q_values)

    def act(
        self,
        observations: np.ndarray,
        *,
        rng: np.random.Generator,
        temperature: float,
        dirichlet_alpha: float = 0.25,
        dirichlet_fraction: float = 0.25,
        weights: WeightCopy | None = None,
    ) -> CompiledOutput:
        """Draws from ``rng`` what the NumPy path draws (:func:`draw_randomness`), then moves."""
        if not isinstance(rng, np.random.Generator):
            raise ConfigError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        temperature = check_temperature(temperature)
        fraction = check_unit("dirichlet_fraction", dirichlet_fraction)
        alpha = check_positive("dirichlet_alpha", dirichlet_alpha)
        observations = np.asarray(observations, np.float32)
        noise, uniforms = draw_randomness(
            rng,
            batch_size=len(observations),
            num_actions=self.num_actions,
            temperature=temperature,
            dirichlet_alpha=alpha,
            dirichlet_fraction=fraction,
        )
        return self(
            observations,
            noise=noise,
            noise_fraction=fraction,
            temperature=temperature,
            uniforms=uniforms,
            weights=weights,
        )
