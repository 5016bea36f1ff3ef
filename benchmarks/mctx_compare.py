"""A peer's search, side by side: gradlab's compiled TensorFlow search vs mctx's ``muzero_policy``.

    pip install -e ".[mctx]"                          # jax[cpu] and mctx: an extra, never required
    python benchmarks/mctx_compare.py --rounds 20     # Catch's search: B=128, 8 simulations
    python benchmarks/mctx_compare.py --rounds 20 --batch 64 --simulations 50   # gradlab bench's

One process, both searches timed in alternating rounds (``experiments.bench._timing``: one
warm-up call each for compilation, then gradlab, mctx, mctx, gradlab, ...); prints each side's
simulations/s (median over rounds) and ``gradlab / mctx``, the ratio of the medians.

* gradlab: :meth:`~experiments.muzero.search_tf.CompiledSearch.act`, as ``gradlab bench`` times
  it (``experiments/bench/search.py``): ONE call of one XLA-compiled ``tf.function`` that runs the
  initial inference, all simulations of all B trees and the action choice; its root noise and the
  action's uniforms are drawn on the host with NumPy (a generator seeded alike every call);
* mctx: google-deepmind/mctx ``muzero_policy`` inside ONE ``jax.jit`` call that also runs the
  initial inference, then ``block_until_ready``; its noise is drawn in the graph from a fixed key.

Identical on both sides: the batch B of boards (random Catch boards, 10x5, 3 actions), the number
of simulations per tree (one new node each, no depth limit), the networks (gradlab's
``Networks`` for Catch's preset, conf/muzero/default.yaml: hidden state 32, one hidden Dense
layer of 64 units per trunk, min-max normalised hidden states, categorical value (S=5) and
reward (S=2) heads; every weight drawn at random, because gradlab zero-initialises the heads; the
JAX side computes the same functions from the very same weights, checked at start-up), the
supports decoded to scalars inside the recurrent function on both sides (softmax expectation,
then the closed-form inverse of h), pUCT's constants (c1 = 1.25, c2 = 19652), the discount
(0.997), Dirichlet root noise (alpha 0.25, fraction 0.25, or off on both with
``--dirichlet-fraction 0``), acting temperature 1, float32 networks.

What differs (the algorithms are each library's own):

* the value score: gradlab's ``muzero.q_form`` (Catch's ``normalized``: ``normalize(reward +
  discount * value)`` with min-max statistics over the whole tree) vs mctx's default
  ``qtransform_by_parent_and_siblings`` (min-max over the parent's value and its children's Q);
* the root's visits: mctx's root starts with one visit whose value is the network's estimate (its
  pUCT has sqrt(n + 1), its mean value includes that estimate); gradlab's root starts at 0 visits,
  as the pseudocode's;
* ties: gradlab breaks them by action index (the q form's rule); mctx adds 1e-7 uniform noise;
* precision: gradlab keeps tree statistics in float64, mctx in float32;
* randomness: gradlab draws on the host (NumPy) and feeds tensors in; mctx draws with
  ``jax.random`` inside the graph. Policies therefore differ between the sides: the work doesn't.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
from typing import Any

import numpy as np

from experiments.base import process
from experiments.base.cpu import describe

__all__ = ["Comparison", "Settings", "catch_settings", "compare", "hold_cores", "main"]

DIFFERENCES = (
    "value score: gradlab q_form={q_form} (tree-wide min-max) vs mctx "
    "qtransform_by_parent_and_siblings (per-node min-max)",
    "root visits: mctx's root starts with 1 visit (the network's value); gradlab's with 0 "
    "(the pseudocode's)",
    "ties: gradlab by action index; mctx by 1e-7 uniform noise",
    "tree statistics: gradlab float64, mctx float32",
    "randomness: gradlab host NumPy draws fed in; mctx jax.random in the graph",
)


@dataclasses.dataclass(frozen=True)
class Settings:
    """The work both searches do.

    Attributes:
      batch_size: B, trees searched per call.
      num_simulations: simulations per tree.
      observation_size: O of a Catch board (rows x columns).
      num_actions: A.
      network: gradlab's ``NetworkConfig`` (sizes, normalisation, supports).
      discount: gamma of every transition.
      dirichlet_alpha: root noise concentration.
      dirichlet_fraction: root noise weight (0: no noise on either side).
      pb_c_base: c2 of pUCT.
      pb_c_init: c1 of pUCT.
      q_form: gradlab's value score (mctx's has no such option).
      seed: seeds the weights, the boards and both sides' noise.
    """

    batch_size: int
    num_simulations: int
    observation_size: int
    num_actions: int
    network: Any
    discount: float
    dirichlet_alpha: float
    dirichlet_fraction: float
    pb_c_base: float
    pb_c_init: float
    q_form: str
    seed: int = 0


def catch_settings(
    *,
    batch_size: int | None = None,
    num_simulations: int | None = None,
    dirichlet_fraction: float | None = None,
    seed: int = 0,
) -> Settings:
    """Catch's search settings (``MuZeroConfig()``'s defaults = conf/muzero/default.yaml, which
    ``task=catch`` and ``regime=tuned`` leave as they are); ``None`` keeps the preset's value."""
    from experiments.muzero import MuZeroConfig
    from experiments.tasks import CatchEnv

    config = MuZeroConfig()
    board = CatchEnv(1, seed=0)
    return Settings(
        batch_size=config.num_envs if batch_size is None else batch_size,
        num_simulations=config.num_simulations if num_simulations is None else num_simulations,
        observation_size=board.observation_size,
        num_actions=CatchEnv.num_actions,
        network=config.network,
        discount=config.discount,
        dirichlet_alpha=config.dirichlet_alpha,
        dirichlet_fraction=(
            config.dirichlet_fraction if dirichlet_fraction is None else dirichlet_fraction
        ),
        pb_c_base=config.pb_c_base,
        pb_c_init=config.pb_c_init,
        q_form=config.q_form,
        seed=seed,
    )


@dataclasses.dataclass(frozen=True)
class Comparison:
    """What :func:`compare` measured.

    Attributes:
      settings: the work.
      rates: ``{"gradlab": [...], "mctx": [...]}`` simulations/s per round.
      median: each side's median rate.
      ratio: ``median["gradlab"] / median["mctx"]``.
      policies: each side's root policy of its last call, ``[B, A]`` (visit fractions).
      network_gap: largest absolute difference between the two sides' root value and policy
        logits on the boards (the same networks, up to float rounding).
    """

    settings: Settings
    rates: dict[str, list[float]]
    median: dict[str, float]
    ratio: float
    policies: dict[str, np.ndarray]
    network_gap: float


def _random_weights(networks: Any, seed: int) -> list[np.ndarray]:
    """Draws every weight at random (kernels ``N(0, 1/fan_in)``, biases ``N(0, 0.1^2)``), sets
    them on ``networks`` and returns them in order."""
    rng = np.random.default_rng(seed)
    values = []
    for variable in networks.variables:
        shape = tuple(variable.shape)
        scale = 1.0 / math.sqrt(shape[0]) if len(shape) == 2 else 0.1
        value = rng.normal(0.0, scale, shape).astype(np.float32)
        variable.assign(value)
        values.append(value)
    return values


def _dense_layers(model: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(kernel, bias)`` of a Keras model's Dense layers, in the model's (topological) order."""
    return [
        (np.asarray(layer.kernel), np.asarray(layer.bias))
        for layer in model.layers
        if type(layer).__name__ == "Dense"
    ]


def jax_params(networks: Any) -> dict[str, list[tuple[np.ndarray, np.ndarray]]]:
    """The networks' weights for the JAX side: ``{name: [(kernel, bias), ...]}``, per model the
    trunk's layers, then (representation) the hidden layer, (dynamics) the hidden and the reward
    layer, (prediction) the policy and the value layer."""
    config = networks.config
    if config.normalisation != "minmax" or config.support != "categorical":
        raise ValueError("the JAX networks implement minmax normalisation, categorical supports")
    return {
        "representation": _dense_layers(networks.representation),
        "dynamics": _dense_layers(networks.dynamics),
        "prediction": _dense_layers(networks.prediction),
    }


def _jax_model(depth: int, value_size: int, reward_size: int, num_actions: int):
    """The JAX twins of gradlab's ``initial_inference`` and ``recurrent_inference``."""
    import jax
    import jax.numpy as jnp

    def dense(layer, x):
        return x @ layer[0] + layer[1]

    def trunk(layers, x):
        for layer in layers[:depth]:
            x = jax.nn.relu(dense(layer, x))
        return x

    def minmax(h):  # experiments.muzero.normalisation.MinMaxNormalisation
        low = h.min(axis=-1, keepdims=True)
        scale = h.max(axis=-1, keepdims=True) - low
        scale = jnp.where(scale < 1e-5, scale + 1e-5, scale)
        return (h - low) / scale

    def to_scalar(logits, size):  # experiments.muzero.support.Support.to_scalar
        bins = jnp.arange(-size, size + 1, dtype=jnp.float32)
        y = jnp.sum(jax.nn.softmax(logits, axis=-1) * bins, axis=-1)
        inner = jnp.abs(y) + 1.0 + 0.001
        root = 2.0 * inner / (1.0 + jnp.sqrt(1.0 + 4.0 * 0.001 * inner))
        return jnp.sign(y) * (jnp.square(root) - 1.0)

    def predict(params, h):
        layers = params["prediction"]
        x = trunk(layers, h)
        return dense(layers[depth], x), to_scalar(dense(layers[depth + 1], x), value_size)

    def initial(params, observations):
        layers = params["representation"]
        hidden = minmax(dense(layers[depth], trunk(layers, observations)))
        logits, value = predict(params, hidden)
        return hidden, value, logits

    def recurrent(params, hidden, action):
        layers = params["dynamics"]
        x = jnp.concatenate([hidden, jax.nn.one_hot(action, num_actions, dtype=hidden.dtype)], -1)
        x = trunk(layers, x)
        next_hidden = minmax(dense(layers[depth], x))
        reward = to_scalar(dense(layers[depth + 1], x), reward_size)
        logits, value = predict(params, next_hidden)
        return next_hidden, reward, value, logits

    return initial, recurrent


def _mctx_search(settings: Settings, networks: Any):
    """``(jitted policy(params, key, observations) -> (action [B], weights [B, A]), params,
    initial)``: mctx's muzero_policy on the JAX twins of ``networks``."""
    import jax
    import jax.numpy as jnp
    import mctx

    s, config = settings, settings.network
    initial, recurrent = _jax_model(
        config.depth, config.value_support_size, config.reward_support_size, s.num_actions
    )
    params = jax.tree.map(jnp.asarray, jax_params(networks))

    def recurrent_fn(params, rng_key, action, embedding):
        del rng_key
        next_hidden, reward, value, logits = recurrent(params, embedding, action)
        discount = jnp.full_like(reward, s.discount)
        out = mctx.RecurrentFnOutput(
            reward=reward, discount=discount, prior_logits=logits, value=value
        )
        return out, next_hidden

    def policy(params, rng_key, observations):
        hidden, value, logits = initial(params, observations)
        root = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=hidden)
        out = mctx.muzero_policy(
            params,
            rng_key,
            root,
            recurrent_fn,
            s.num_simulations,
            dirichlet_fraction=s.dirichlet_fraction,
            dirichlet_alpha=s.dirichlet_alpha,
            pb_c_init=s.pb_c_init,
            pb_c_base=s.pb_c_base,
            temperature=1.0,
        )
        return out.action, out.action_weights

    return jax.jit(policy), params, jax.jit(initial)


def compare(settings: Settings, *, rounds: int) -> Comparison:
    """Times both searches on ``settings``' work in ``rounds`` alternating rounds.

    Raises:
      ValueError: ``rounds`` < 1, or the two sides' networks disagree (more than 1e-3 on the
        root value or policy logits).
    """
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    import jax

    from experiments.bench import Case, interleaved_rates, median
    from experiments.muzero import CompiledSearch, Inference, Networks

    s = settings
    rng = np.random.default_rng(s.seed)
    networks = Networks(
        s.network, observation_size=s.observation_size, num_actions=s.num_actions, seed=s.seed
    )
    _random_weights(networks, s.seed)
    boards = (rng.random((s.batch_size, s.observation_size)) < 0.1).astype(np.float32)
    noise_seed = int(rng.integers(2**31 - 1))

    inference = Inference(networks, jit_compile=True)
    gradlab_search = CompiledSearch(
        inference.initial_fn,
        inference.recurrent_fn,
        num_actions=s.num_actions,
        num_simulations=s.num_simulations,
        discount=s.discount,
        pb_c_base=s.pb_c_base,
        pb_c_init=s.pb_c_init,
        q_form=s.q_form,
        jit_compile=True,
    )
    mctx_policy, params, mctx_initial = _mctx_search(s, networks)
    key = jax.random.PRNGKey(noise_seed)
    jax_boards = jax.device_put(boards)

    _, tf_value, tf_logits = inference.initial(boards)
    _, jax_value, jax_logits = mctx_initial(params, jax_boards)
    gap = max(
        float(np.max(np.abs(tf_value - np.asarray(jax_value)))),
        float(np.max(np.abs(tf_logits - np.asarray(jax_logits)))),
    )
    if not gap <= 1e-3:
        raise ValueError(f"the JAX networks differ from gradlab's by {gap:.3g}; not the same work")

    last: dict[str, np.ndarray] = {}

    def gradlab() -> None:
        out = gradlab_search.act(
            boards,
            rng=np.random.default_rng(noise_seed),
            temperature=1.0,
            dirichlet_alpha=s.dirichlet_alpha,
            dirichlet_fraction=s.dirichlet_fraction,
        )
        last["gradlab"] = out.visit_counts

    def mctx() -> None:
        _, weights = mctx_policy(params, key, jax_boards)
        last["mctx"] = weights.block_until_ready()

    work = s.batch_size * s.num_simulations
    rates = interleaved_rates(
        [Case("gradlab", gradlab, work), Case("mctx", mctx, work)], repeats=rounds
    )
    medians = {name: median(values) for name, values in rates.items()}
    counts = last["gradlab"].astype(np.float64)
    policies = {
        "gradlab": counts / counts.sum(axis=1, keepdims=True),
        "mctx": np.asarray(last["mctx"], np.float64),
    }
    return Comparison(
        settings=s,
        rates=rates,
        median=medians,
        ratio=medians["gradlab"] / medians["mctx"],
        policies=policies,
        network_gap=gap,
    )


def report(result: Comparison) -> str:
    """The comparison as printed: settings, what differs, per-round rates, medians, ratio."""
    import jax
    import mctx
    import tensorflow as tf

    s, net = result.settings, result.settings.network
    rounds = len(result.rates["gradlab"])
    lines = [
        f"gradlab compiled search (TensorFlow {tf.__version__}) vs mctx {mctx.__version__} "
        f"muzero_policy (JAX {jax.__version__}), {process.cores()} cores",
        f"CPU: {describe()}",
        "same on both sides:",
        f"  B={s.batch_size} trees x {s.num_simulations} simulations, {s.num_actions} actions, "
        f"random Catch boards of {s.observation_size}",
        f"  networks: hidden {net.hidden_size}, width {net.width} x depth {net.depth}, "
        f"{net.normalisation} hidden states, value/reward supports S={net.value_support_size}/"
        f"{net.reward_support_size} decoded to scalars in the recurrent fn; the same random "
        f"weights (outputs within {result.network_gap:.1e})",
        f"  discount {s.discount}, pb_c_init {s.pb_c_init}, pb_c_base {s.pb_c_base:g}, "
        f"Dirichlet alpha {s.dirichlet_alpha} fraction {s.dirichlet_fraction}, temperature 1",
        "  one compiled call per search: initial inference, simulations, action",
        "differs:",
        *(f"  {d.format(q_form=s.q_form)}" for d in DIFFERENCES),
        f"rounds: {rounds} (alternating; one warm-up call each, compilation excluded)",
    ]
    pairs = [g / m for g, m in zip(result.rates["gradlab"], result.rates["mctx"], strict=True)]
    low, high = min(pairs), max(pairs)
    for name in ("gradlab", "mctx"):
        per_round = ", ".join(f"{rate:,.0f}" for rate in result.rates[name])
        lines.append(f"{name:>8}: {result.median[name]:>12,.0f} simulations/s  [{per_round}]")
    lines.append(
        f"gradlab / mctx: {result.ratio:.2f} (rounds' ratios {low:.2f}-{high:.2f}; "
        f"{describe()}, {process.cores()} core{'' if process.cores() == 1 else 's'})"
    )
    return "\n".join(lines)


def hold_cores(count: int) -> None:
    """Pins this process (both searches) to its first ``count`` cores and gives TensorFlow as
    many threads; call it before either library starts.

    Raises:
      SystemExit: ``count`` outside 1 .. this process's cores (one line, exit 2).
    """
    allowed = sorted(os.sched_getaffinity(0))
    if not 1 <= count <= len(allowed):
        raise SystemExit(f"error: --cores {count}: choose 1 to {len(allowed)}")
    os.sched_setaffinity(0, allowed[:count])
    process.limit_threads(count)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="timed rounds (medians reported)")
    parser.add_argument("--batch", type=int, default=None, help="B (default: Catch's 128)")
    parser.add_argument("--simulations", type=int, default=None, help="default: Catch's 8")
    parser.add_argument(
        "--dirichlet-fraction", type=float, default=None, help="0: no root noise on either side"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--cores",
        type=int,
        default=None,
        help="run on this many cores (this process's first ones), TensorFlow with as many threads:"
        " 1 is how each job of a 2-job sweep runs; default: all cores, TensorFlow's default",
    )
    args = parser.parse_args(argv)
    if args.cores is not None:
        hold_cores(args.cores)
    process.quiet_tensorflow()
    settings = catch_settings(
        batch_size=args.batch,
        num_simulations=args.simulations,
        dirichlet_fraction=args.dirichlet_fraction,
        seed=args.seed,
    )
    print(report(compare(settings, rounds=args.rounds)))


if __name__ == "__main__":
    main()
