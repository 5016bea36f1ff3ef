"""``update_weights``: MuZero's K-step unrolled train step, one compiled ``tf.function``.

Per sampled position (Schrittwieser et al., 2020, pseudocode ``update_weights``)::

    h_0 = representation(o_t);  p_0, v_0 = prediction(h_0)
    for k = 1..K:                      # networks.recurrent_step, as the search's model step
        h_in = placement.dynamics_input(h_{k-1}, variant.hidden, k)
        h_k, r_k = dynamics(h_in, a_{t+k-1})
        h_k = placement.dynamics_output(h_k, variant.hidden, k)   # what step k's heads see
        p_k, v_k = prediction(h_k)

    loss = mean over the batch of sum_k w_k [l_v(v_k) + l_r(r_k) (k >= 1) + l_p(p_k)]
           + c/2 sum ||W||^2

with ``w_0 = 1`` and ``w_k`` (k >= 1) by ``loss_scale``: 1/K (``pseudocode``), 1 (``none``), or
1/min(K, steps left in the episode) (``remaining``, as muzero-general); the depth-matched
control (``variant=depth_loss_scale``) multiplies ``w_k`` by ``s**k``. Where this differs from
the published pseudocode (both its arXiv versions, ``update_weights`` and ``make_target``):

* **No reward term at k = 0.** The pseudocode's target list starts with the reward received
  just before the sampled observation (``u_{t-1}``; 0 at an episode's start) and scores the
  initial inference's reward against it, by design ("for simplicity the network always predicts
  the most recently received reward, even for the initial representation network where we already
  know this reward"). Its own ``initial_inference`` returns a constant reward of 0, so that term
  adds a constant and no gradient; gradlab's representation has no reward head (as in
  muzero-general and EfficientZero), so the term is left out: the gradients are the same.
* **The L2 term is B times stronger.** The pseudocode *sums* the per-sample losses over the batch
  and adds ``weight_decay * l2_loss(W)`` (= c/2 ||W||^2) once; gradlab averages them over the
  batch, so relative to the data term its L2 term weighs B (``batch_size``) times more: gradlab's
  ``weight_decay = c`` is the pseudocode's ``c * B`` (with the learning rate divided by B).
  The mean is the paper's own form (its equation 1 writes the loss of one position plus
  ``c ||W||^2``); ``regime=pseudocode`` keeps it (docs/optimizers.md).

The optimizer and its decaying learning rate: :mod:`experiments.muzero.optimizers`.

Diagnostics of each step are computed in the same graph: the global gradient norm before any
clipping, the gradient norm per network, the norm of dLoss/dh_k at every depth (the gradient of
the loss with respect to the very tensors the heads see), the mean per-sample hidden-state norm
per depth, and a flag for non-finite losses or gradients.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

import numpy as np
import tensorflow as tf

from experiments.base.errors import ConfigError
from experiments.base.private_api import BROKEN, warn_fallback
from experiments.gradients import Placement, Variant
from experiments.muzero.config import MuZeroConfig
from experiments.muzero.networks import Networks, recurrent_step
from experiments.muzero.optimizers import make_optimizer
from experiments.muzero.options import step_weights
from experiments.muzero.replay import Batch
from experiments.muzero.runtime.compiled_call import REFUSED, FlatCall
from experiments.muzero.runtime.graph_store import GraphStore

__all__ = ["Learner", "StepInputs", "make_optimizer", "step_weights"]


class StepInputs(TypedDict):
    """The compiled train step's input, one array or tensor per key (``B`` the batch, ``K`` the
    unroll, ``A`` the actions, ``O`` the observation size); :meth:`Learner.batch_spec` gives the
    same keys' fixed signature.

    A ``TypedDict``, a plain ``dict`` at run time: the key names are checked by the type checker
    while the traced step, its flattened signature (keys in sorted order) and so every metric
    stay exactly what they were with the string-keyed dict (a NamedTuple or dataclass would
    flatten in another order, and benchmarks iterate the dict's items).
    """

    observations: Any  # [B, O] float32
    actions: Any  # [B, K] int32
    value: Any  # [B, K+1] float32, value targets
    reward: Any  # [B, K+1] float32, reward targets (step 0 unused)
    policy: Any  # [B, K+1, A] float32, policy targets
    policy_mask: Any  # [B, K+1] float32, 1 where the policy target exists
    weights: Any  # [B, K+1] float32, each step's loss weight


class Learner:
    """Owns the optimizers (one per learning-rate factor of the variant: one but for the
    learning-rate controls) and the compiled train step of one agent."""

    def __init__(
        self,
        networks: Networks,
        *,
        config: MuZeroConfig,
        variant: Variant,
        placement: Placement,
        graphs: GraphStore | None = None,
        identity: str | None = None,
    ) -> None:
        self.networks = networks
        # where the traced step is kept for later processes, and what it depends on but the code
        # (graph_store; both or neither): None traces it in every process
        self._graphs = graphs if identity is not None else None
        self._identity = identity
        self.config = config
        self.variant = variant
        self.placement = placement
        self._groups = {
            "representation": networks.representation.trainable_variables,
            "dynamics": networks.dynamics.trainable_variables,
            "prediction": networks.prediction.trainable_variables,
        }
        self._variables = networks.trainable_variables
        network_of = {id(v): name for name, group in self._groups.items() for v in group}
        # muzero.freeze: these networks' gradients are computed (and logged) but not applied, as
        # an optimizer's var_list leaves variables out.
        self._applied = [
            i for i, v in enumerate(self._variables) if network_of[id(v)] not in config.freeze
        ]
        # One optimizer per distinct learning-rate factor of the variant (x1 for every variant
        # but the learning-rate controls): ``self._by_optimizer[j]`` are the applied variables'
        # indices that optimizer j updates. Adam's and momentum's state is per variable, so this
        # is one optimizer with per-variable learning rates.
        factor_of = {
            i: variant.learning_rates(network_of[id(self._variables[i])]) for i in self._applied
        }
        factors = sorted(set(factor_of.values()), reverse=True)
        factors = factors or [1.0]
        if len(factors) > 1 and variant.optimizer.global_norm:
            # each optimizer would clip over its own variables only: no longer a global norm
            raise ConfigError(
                f"variant {variant.name!r} sets global_clipnorm and several learning-rate "
                "factors; a global norm over several optimizers is not supported"
            )
        self.optimizers = [make_optimizer(config, variant, f) for f in factors]
        self.optimizer = self.optimizers[0]
        self._by_optimizer = [[i for i in self._applied if factor_of[i] == f] for f in factors]
        for optimizer, indices in zip(self.optimizers, self._by_optimizer, strict=True):
            optimizer.build([self._variables[i] for i in indices])
        self._optimizer_start = [v.numpy() for o in self.optimizers for v in o.variables]
        self._metric_names: list[str] = []
        # autograph=False: the step has no tensor-dependent Python control flow (its loops run
        # over Python ints), so AutoGraph's source transformation would only cost tracing time
        # (about half of the trace; docs/performance.md), for the very same graph.
        self._update = tf.function(
            self._update_packed,
            jit_compile=config.jit_compile,
            input_signature=[self.batch_spec()],
            autograph=False,
        )
        self._step: Any = None  # the traced step, called directly (see update_tensors)
        # step k's loss x s**k for the depth-matched control (variant=depth_loss_scale); all 1
        # otherwise, and x1.0 leaves float32 weights bit-identical
        factors = variant.loss_weights(config.unroll_steps)
        self._depth_factors = np.asarray(factors, np.float32)[None, :]  # [1, K+1]

    def restart(self, initial: Networks) -> None:
        """Back to step 0: ``initial``'s weights (networks built like these, from another seed)
        and the optimizer's state as it was built (step counter and moments at zero).

        The compiled step keeps its variables, so it is not traced nor compiled again: a run
        after ``restart`` computes exactly what a new learner on ``initial`` would.
        """
        for target, source in zip(self.networks.variables, initial.variables, strict=True):
            target.assign(source)
        variables = [v for o in self.optimizers for v in o.variables]
        for variable, value in zip(variables, self._optimizer_start, strict=True):
            variable.assign(value)

    def unroll(
        self, observations: tf.Tensor, actions: tf.Tensor
    ) -> tuple[list[tf.Tensor], list[tuple[tf.Tensor | None, tf.Tensor, tf.Tensor]]]:
        """The K-step unroll with the variant in place.

        Args:
          observations: ``[B, O]``.
          actions: ``[B, K]`` int.

        Returns:
          ``hiddens``: K+1 tensors ``[B, H]``, h_k as the heads see it; ``outputs``: per step
          ``(reward_logits or None at k=0, value_logits, policy_logits)``.
        """
        nets = self.networks
        h = nets.representation(observations)
        hiddens = [h]
        policy, value = nets.prediction(h)
        outputs = [(None, value, policy)]
        for k in range(1, self.config.unroll_steps + 1):
            h, reward, value, policy = recurrent_step(
                nets,
                h,
                actions[:, k - 1],
                transform=self.variant.hidden,
                placement=self.placement,
                step=k,
            )
            hiddens.append(h)
            outputs.append((reward, value, policy))
        return hiddens, outputs

    def losses(
        self,
        outputs: list[tuple[tf.Tensor | None, tf.Tensor, tf.Tensor]],
        batch: StepInputs,
    ) -> dict[str, tf.Tensor]:
        """Weighted batch-mean losses of an unroll (``value``, ``reward``, ``policy``, ``l2``,
        ``total``), all scalars."""
        nets = self.networks
        weights = batch["weights"]
        value_loss = reward_loss = policy_loss = 0.0
        for k, (reward, value, policy) in enumerate(outputs):
            w = weights[:, k]
            value_loss += tf.reduce_mean(w * nets.value_support.loss(value, batch["value"][:, k]))
            cross_entropy = tf.nn.softmax_cross_entropy_with_logits(
                labels=batch["policy"][:, k], logits=policy
            )
            policy_loss += tf.reduce_mean(w * batch["policy_mask"][:, k] * cross_entropy)
            if reward is not None:  # no reward loss at k = 0 (see the module docstring)
                reward_loss += tf.reduce_mean(
                    w * nets.reward_support.loss(reward, batch["reward"][:, k])
                )
        value_loss *= self.config.value_loss_weight
        l2 = (
            0.5
            * self.config.weight_decay
            * tf.add_n([tf.reduce_sum(tf.square(v)) for v in self._variables])
        )
        total = value_loss + reward_loss + policy_loss + l2
        return {
            "total": total,
            "value": value_loss,
            "reward": reward_loss,
            "policy": policy_loss,
            "l2": l2,
        }

    def _update_weights(self, batch: StepInputs) -> dict[str, tf.Tensor]:
        with tf.GradientTape() as tape:
            hiddens, outputs = self.unroll(batch["observations"], batch["actions"])
            for h in hiddens:
                tape.watch(h)
            losses = self.losses(outputs, batch)
        grads, hidden_grads = tape.gradient(losses["total"], (self._variables, hiddens))
        metrics = {f"loss/{name}": value for name, value in losses.items()}
        metrics["grad/global_norm"] = tf.linalg.global_norm(grads)
        position = 0
        for name, group in self._groups.items():
            metrics[f"grad/{name}"] = tf.linalg.global_norm(grads[position : position + len(group)])
            position += len(group)
        for k, (h, g) in enumerate(zip(hiddens, hidden_grads, strict=True)):
            g = tf.zeros_like(h) if g is None else g
            metrics[f"grad/hidden_depth_{k}"] = tf.norm(g)
            metrics[f"hidden/norm_depth_{k}"] = tf.reduce_mean(tf.norm(h, axis=-1))
        finite = tf.math.is_finite(metrics["grad/global_norm"]) & tf.math.is_finite(losses["total"])
        metrics["nonfinite"] = 1.0 - tf.cast(finite, tf.float32)
        self.apply_gradients(grads)
        return metrics

    def update_eager(self, tensors: StepInputs) -> dict[str, tf.Tensor]:
        """One optimizer step run eagerly, op by op: the very Python step that
        :meth:`update_tensors` compiles, for timing the compiled step against it and for
        counting its operations (a ``tf.function`` may trace it); same shapes as
        :meth:`batch_spec`.

        Returns:
          The metrics of :meth:`update`, as scalar tensors.
        """
        return self._update_weights(tensors)

    def apply_gradients(self, grads: list[tf.Tensor]) -> None:
        """One update from ``grads`` (one per trainable variable, in ``networks``' order): each
        optimizer on its variables (a frozen network's are left out)."""
        for optimizer, indices in zip(self.optimizers, self._by_optimizer, strict=True):
            optimizer.apply_gradients([(grads[i], self._variables[i]) for i in indices])

    def _update_packed(self, batch: StepInputs) -> tf.Tensor:
        """:meth:`_update_weights` with its metrics stacked into one ``[M]`` float32 tensor (one
        copy to the host per step); their names are kept when the function is traced."""
        metrics = self._update_weights(batch)
        self._metric_names = list(metrics)
        return tf.stack([tf.cast(value, tf.float32) for value in metrics.values()])

    def _compiled_step(self) -> Any:
        """The traced step as a call on a :class:`StepInputs`: its stored graph where a
        :class:`~experiments.muzero.runtime.graph_store.GraphStore` has (or can keep) it, else
        the concrete function (:class:`FlatCall`). Either runs the same program."""
        if self._graphs is not None and self._identity is not None:
            variables = [
                *self.networks.variables,
                *(v for o in self.optimizers for v in o.variables),
            ]
            found = self._graphs.program(
                f"train step\n{self._identity}",
                self._update.get_concrete_function,
                variables,
                lambda: {"metric_names": self._metric_names},
            )
            names = None if found is None else found[1].get("metric_names")
            if isinstance(names, list) and all(isinstance(n, str) for n in names):
                self._metric_names = names
                return StoredStep(found[0], self.batch_spec(), fallback=self._traced_step)
        return self._traced_step()

    def _traced_step(self) -> FlatCall:
        """The traced step's concrete function, called flat (traced now if it was not)."""
        return FlatCall(self._update.get_concrete_function())

    def batch_spec(self) -> dict[str, tf.TensorSpec]:
        """The fixed signature of the compiled step's input: shapes from the config, so the step
        is traced once and called without any per-call signature matching."""
        B, K = self.config.batch_size, self.config.unroll_steps
        A, obs = self.networks.num_actions, self.networks.observation_size
        return {
            "observations": tf.TensorSpec([B, obs], tf.float32),
            "actions": tf.TensorSpec([B, K], tf.int32),
            "value": tf.TensorSpec([B, K + 1], tf.float32),
            "reward": tf.TensorSpec([B, K + 1], tf.float32),
            "policy": tf.TensorSpec([B, K + 1, A], tf.float32),
            "policy_mask": tf.TensorSpec([B, K + 1], tf.float32),
            "weights": tf.TensorSpec([B, K + 1], tf.float32),
        }

    def batch_tensors(self, batch: Batch) -> StepInputs:
        """The arrays the compiled step takes, loss weights included."""
        return {
            "observations": batch.observations,
            "actions": batch.actions,
            "value": batch.target_value,
            "reward": batch.target_reward,
            "policy": batch.target_policy,
            "policy_mask": batch.policy_mask,
            "weights": step_weights(
                batch.steps_left,
                unroll_steps=self.config.unroll_steps,
                loss_scale=self.config.loss_scale,
            )
            * self._depth_factors,
        }

    def update(self, batch: Batch) -> dict[str, float]:
        """One optimizer step on ``batch``; returns the ``loss/*``, ``grad/*``, ``hidden/*`` and
        ``nonfinite`` metrics as Python floats."""
        return self.update_tensors(self.batch_tensors(batch))

    def update_tensors(self, tensors: StepInputs) -> dict[str, float]:
        """:meth:`update` on the arrays of :meth:`batch_tensors` (shapes of :meth:`batch_spec`)."""
        if self._step is None:
            self._step = self._compiled_step()
        # The concrete function, not the tf.function: NumPy arrays through the tf.function's
        # signature matching cost about a whole step per call (docs/performance.md); called with
        # its flat tensors (FlatCall): TensorFlow's per-call binding left out.
        values = self._step(tensors)
        return dict(zip(self._metric_names, values.numpy().tolist(), strict=True))


class StoredStep:
    """A stored train step called on a :class:`StepInputs` as :class:`FlatCall` calls the traced
    one: each input checked against ``spec`` (dtype and shape), NumPy arrays converted, the
    inputs in the signature's flat order (sorted keys); returns the ``[M]`` metrics tensor.

    If the stored call fails as a changed private API fails (TensorFlow's ``call_function``
    taking other arguments: an :data:`~experiments.base.private_api.BROKEN` error, raised before
    anything runs), or its first call as a refused definition fails
    (:data:`~experiments.muzero.runtime.compiled_call.REFUSED`), it warns once and calls
    ``fallback()`` (the traced step) from then on.
    """

    def __init__(
        self, call: Any, spec: dict[str, tf.TensorSpec], *, fallback: Callable[[], Any]
    ) -> None:
        self._call = call
        self._fallback = fallback
        self._traced: Any = None
        self._ran = False
        self._spec = [(key, spec[key]) for key in sorted(spec)]

    def __call__(self, tensors: StepInputs) -> tf.Tensor:
        if self._traced is not None:
            return self._traced(tensors)
        if sorted(tensors) != [key for key, _ in self._spec]:
            raise ConfigError(
                f"the step's inputs are {sorted(tensors)}; expected {[k for k, _ in self._spec]}"
            )
        flat = []
        for key, spec in self._spec:
            value = tensors[key]  # type: ignore[literal-required]
            tensor = value if isinstance(value, tf.Tensor) else tf.constant(value)
            if tensor.dtype != spec.dtype or tuple(tensor.shape) != tuple(spec.shape):
                raise ConfigError(
                    f"input {key!r} is {tensor.dtype.name} {list(tensor.shape)}; "
                    f"expected {spec.dtype.name} {spec.shape.as_list()}"
                )
            flat.append(tensor)
        try:
            outputs = self._call(flat)
            self._ran = True
        except (*BROKEN, *REFUSED) as err:
            if isinstance(err, REFUSED) and self._ran:
                raise
            warn_fallback(
                "TensorFlow's context.call_function (a stored train step)",
                "the traced step",
                "tracing it in every process",
                err,
            )
            self._traced = self._fallback()
            return self._traced(tensors)
        return outputs[0]
