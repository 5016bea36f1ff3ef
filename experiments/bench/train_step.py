"""The K-step train step three ways: compiled (gradlab), eager TensorFlow, and the paper's loop.

* compiled: ``Learner._update``, the ``tf.function(jit_compile=True)`` gradlab trains with;
* eager: the very same Python function, ``Learner.update_eager``, called without
  ``tf.function``: every op dispatched one by one from Python;
* pseudocode loop: the paper's ``update_weights`` (Schrittwieser et al., 2020, Appendix
  "Pseudocode"), eager, which loops over the samples of the batch: per sample one unroll
  (batch of 1) and its loss, all under one ``GradientTape``, so the gradient is the sum over
  samples; then one optimizer step. The loss is the same as the learner's (``Learner.losses``):
  the batch mean of the per-sample losses plus the L2 term, added once.

All three use the same :class:`~experiments.muzero.learner.Learner` (same networks, variant,
placement and optimizer) on the same batch of targets.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from experiments.gradients import get_placement, make_variant
from experiments.muzero import Batch, Learner, MuZeroConfig, NetworkConfig, Networks

__all__ = [
    "make_learner",
    "pseudocode_gradients",
    "pseudocode_loss",
    "pseudocode_step",
    "random_batch",
]


def make_learner(
    *,
    hidden_size: int,
    width: int,
    batch_size: int,
    unroll_steps: int,
    observation_size: int,
    num_actions: int,
    seed: int,
) -> Learner:
    """A learner with variant ``none`` at placement ``pseudocode`` and MuZero's other defaults."""
    config = MuZeroConfig(
        network=NetworkConfig(hidden_size=hidden_size, width=width),
        batch_size=batch_size,
        unroll_steps=unroll_steps,
    )
    networks = Networks(
        config.network, observation_size=observation_size, num_actions=num_actions, seed=seed
    )
    return Learner(
        networks, config=config, variant=make_variant("none"), placement=get_placement("pseudocode")
    )


def random_batch(
    rng: np.random.Generator,
    *,
    batch_size: int,
    unroll_steps: int,
    observation_size: int,
    num_actions: int,
) -> Batch:
    """Plausible targets: one-hot-ish boards, returns in [-1, 1], Dirichlet policies, some
    positions near the end of their episode (masked policies)."""
    B, K, A = batch_size, unroll_steps, num_actions
    observations = (rng.random((B, observation_size)) < 0.1).astype(np.float32)
    steps_left = rng.integers(1, 2 * K + 1, size=B).astype(np.int32)
    mask = (np.arange(K + 1)[None, :] < steps_left[:, None]).astype(np.float32)
    policy = rng.dirichlet(np.ones(A), size=(B, K + 1)).astype(np.float32) * mask[:, :, None]
    reward = np.zeros((B, K + 1), np.float32)
    reward[:, 1:] = rng.choice([-1.0, 0.0, 1.0], size=(B, K))
    return Batch(
        observations=observations,
        actions=rng.integers(0, A, size=(B, K)).astype(np.int32),
        target_value=rng.uniform(-1.0, 1.0, size=(B, K + 1)).astype(np.float32),
        target_reward=reward,
        target_policy=policy,
        policy_mask=mask,
        steps_left=steps_left,
    )


def pseudocode_loss(learner: Learner, batch: dict[str, tf.Tensor], index: int) -> tf.Tensor:
    """One sample's weighted loss, unrolled alone (batch of 1), without the L2 term.

    ``sum_k w_k [c_v l_v(v_k) + l_r(r_k) (k >= 1) + mask_k l_p(p_k)]`` for sample ``index`` of
    ``batch`` (the arrays of :meth:`Learner.batch_tensors`), as the pseudocode's inner loop.
    """
    nets = learner.networks
    sample = {key: value[index : index + 1] for key, value in batch.items()}
    _, outputs = learner.unroll(sample["observations"], sample["actions"])
    loss = tf.zeros((1,))
    for k, (reward, value, policy) in enumerate(outputs):
        step = learner.config.value_loss_weight * nets.value_support.loss(
            value, sample["value"][:, k]
        )
        step += sample["policy_mask"][:, k] * tf.nn.softmax_cross_entropy_with_logits(
            labels=sample["policy"][:, k], logits=policy
        )
        if reward is not None:
            step += nets.reward_support.loss(reward, sample["reward"][:, k])
        loss += sample["weights"][:, k] * step
    return loss[0]


def pseudocode_gradients(
    learner: Learner, batch: dict[str, tf.Tensor], *, num_samples: int | None = None
) -> tuple[tf.Tensor, list[tf.Tensor]]:
    """The pseudocode's loss over the first ``num_samples`` samples (all by default) and its
    gradients with respect to the learner's variables: a Python loop over samples under one
    ``GradientTape``, ``loss = mean_i loss_i + c/2 sum ||W||^2``."""
    count = int(batch["observations"].shape[0]) if num_samples is None else num_samples
    variables = learner.networks.trainable_variables
    with tf.GradientTape() as tape:
        total = tf.add_n([pseudocode_loss(learner, batch, i) for i in range(count)]) / count
        total += (
            0.5
            * learner.config.weight_decay
            * tf.add_n([tf.reduce_sum(tf.square(v)) for v in variables])
        )
    return total, tape.gradient(total, variables)


def pseudocode_step(
    learner: Learner, batch: dict[str, tf.Tensor], *, num_samples: int | None = None
) -> float:
    """One optimizer step of the pseudocode's loop; returns the loss."""
    total, grads = pseudocode_gradients(learner, batch, num_samples=num_samples)
    learner.apply_gradients(grads)
    return float(total)
