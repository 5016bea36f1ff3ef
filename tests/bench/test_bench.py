"""`gradlab bench`: the quick bench through the CLI, the FLOP counter by hand, the baselines'
equivalence with what they are compared to, the interleaved timer on a fake clock, bad options.

No assertion here depends on how fast anything runs.
"""

from __future__ import annotations

import dataclasses
import json
import math

import keras
import numpy as np
import pytest
import tensorflow as tf
from _search_models import randomize
from typer.testing import CliRunner

from cli.bench import markdown
from cli.main import app
from experiments.base.errors import ConfigError
from experiments.bench import BenchSettings
from experiments.bench._timing import Case, interleaved_rates, median
from experiments.bench.flops import (
    conv_flops,
    dense_shapes,
    forward_flops,
    graph_flops,
    graph_matmul_flops,
    train_step_flops,
)
from experiments.bench.measures import BenchReport, Rate
from experiments.bench.minatar import RATES as MINATAR_RATES
from experiments.bench.search import SEARCH_CASES, search_cases
from experiments.bench.suite import COMPILED_SEARCH_TARGET
from experiments.bench.train_step import make_learner, pseudocode_gradients, random_batch
from experiments.gradients import get_placement, make_variant
from experiments.muzero.config import MuZeroConfig, NetworkConfig
from experiments.muzero.learner import Learner
from experiments.muzero.networks import Networks

RATIOS = {
    "compiled_vs_eager": ("train/compiled", "train/eager"),
    "compiled_vs_pseudocode_loop": ("train/compiled", "train/pseudocode_loop"),
    "compiled_vs_batched": ("search/compiled", "search/batched"),
    "batched_vs_one_at_a_time": ("search/batched", "search/one_at_a_time"),
    "train_step_vs_matmul": ("flops/train_step", "flops/matmul"),
}


@pytest.fixture(scope="module")
def quick() -> dict:
    result = CliRunner().invoke(app, ["bench", "--quick", "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_quick_json_ratios_are_positive_and_match_their_rates(quick):
    assert set(quick["ratios"]) == set(RATIOS)
    for name, (top, bottom) in RATIOS.items():
        ratio = quick["ratios"][name]
        assert (ratio["numerator"], ratio["denominator"]) == (top, bottom)
        assert math.isfinite(ratio["value"]) and ratio["value"] > 0
        expected = quick["rates"][top]["value"] / quick["rates"][bottom]["value"]
        assert ratio["value"] == pytest.approx(expected, rel=1e-12)
        assert ratio["met"] == (ratio["value"] >= ratio["target"])


def test_quick_json_rates_are_medians_of_their_rounds(quick):
    expected = {*(n for pair in RATIOS.values() for n in pair), "run/env_steps", "run/train_steps"}
    expected |= set(MINATAR_RATES)
    assert set(quick["rates"]) == expected
    for rate in quick["rates"].values():
        assert all(math.isfinite(r) and r > 0 for r in rate["runs"])
        assert rate["value"] == pytest.approx(median(rate["runs"]), rel=1e-12)
        # the only absolute target (compiled search >= 100k/s) is set for B=64, 50 simulations
        assert rate["target_min"] is None and rate["met"] is None
    # The train step's GFLOP/s is its samples/s times the analytic FLOPs per sample.
    s = quick["settings"]
    per_sample = quick["train_step_flops"] / s["batch_size"]
    compiled, gflops = quick["rates"]["train/compiled"], quick["rates"]["flops/train_step"]
    assert gflops["runs"] == pytest.approx([r * per_sample / 1e9 for r in compiled["runs"]])


def test_quick_json_flop_count_and_times(quick):
    s = quick["settings"]
    # catch: O = 50, A = 3; H = width = 64; categorical value 11 bins, reward 5 bins
    repr_, dyn, pred = 50 * 64 + 64 * 64, 67 * 64 + 64 * 64 + 64 * 5, 64 * 64 + 64 * 3 + 64 * 11
    K = s["unroll_steps"]
    assert quick["train_step_flops"] == 3 * s["batch_size"] * 2 * (repr_ + K * dyn + (K + 1) * pred)
    assert set(quick["timings"]) == {"run/first_steps", "run/projected", "cli/help", "cli/list"}
    for timing in quick["timings"].values():
        assert math.isfinite(timing["seconds"]) and timing["seconds"] > 0


def _preset_file_sizes() -> dict:
    """The MinAtar sizes read straight from the YAML files (no Hydra): conf/muzero/default.yaml
    with conf/task/minatar.yaml's muzero section over it."""
    from omegaconf import OmegaConf

    from experiments.launch.hydra_app import CONF_DIR

    default = OmegaConf.load(CONF_DIR / "muzero" / "default.yaml")
    del default["defaults"]
    return OmegaConf.to_container(
        OmegaConf.merge(default, OmegaConf.load(CONF_DIR / "task" / "minatar.yaml").muzero)
    )


def test_quick_json_minatar_rows(quick):
    sizes, rates, s = quick["minatar"], quick["rates"], quick["settings"]
    for name in MINATAR_RATES:
        assert all(math.isfinite(r) and r > 0 for r in rates[name]["runs"]), name
        assert len(rates[name]["runs"]) == s["repeats"]
    # The preset's sizes (read from the files here), breakout's board and actions, and the
    # smaller --quick batch.
    preset = _preset_file_sizes()
    net = preset["network"]
    assert sizes == {
        "game": "breakout",
        "observation_shape": [10, 10, 4],
        "num_actions": 3,
        "batch_size": 16,
        "unroll_steps": preset["unroll_steps"],
        "hidden_size": net["hidden_size"],
        "width": net["width"],
        "value_support_size": net["value_support_size"],
        "reward_support_size": net["reward_support_size"],
        "search_batch": preset["num_envs"],
        "num_simulations": preset["num_simulations"],
        "train_step_flops": sizes["train_step_flops"],
    }
    assert s["minatar_batch_size"] == 16
    # Analytic FLOPs by hand: conv 3x3x4 -> 16 on 8x8 positions, flatten 8*8*16 = 1024 -> width
    # -> H; dynamics (H + A) -> width -> {H, reward 2S+1}; prediction H -> width -> {A, 2S+1}.
    B, K, H, W = sizes["batch_size"], sizes["unroll_steps"], sizes["hidden_size"], sizes["width"]
    value, reward = 2 * sizes["value_support_size"] + 1, 2 * sizes["reward_support_size"] + 1
    repr_ = 8 * 8 * 3 * 3 * 4 * 16 + 1024 * W + W * H
    dyn = (H + 3) * W + W * H + W * reward
    pred = H * W + W * 3 + W * value
    assert sizes["train_step_flops"] == 3 * B * 2 * (repr_ + K * dyn + (K + 1) * pred)
    # The derived rows are the train step's rounds in other units.
    train = rates["minatar/train_compiled"]["runs"]
    per_sample = sizes["train_step_flops"] / B
    assert rates["minatar/flops_train_step"]["runs"] == pytest.approx(
        [r * per_sample / 1e9 for r in train]
    )
    assert rates["minatar/train_step_ms"]["runs"] == pytest.approx([1e3 * B / r for r in train])
    assert rates["minatar/search_compiled"]["unit"] == "simulations/s"


def _conv_model() -> keras.Model:
    inputs = keras.Input((10, 10, 4))
    return keras.Model(inputs, keras.layers.Conv2D(16, 3)(inputs))


def test_conv_flop_counter_by_hand_and_by_tensorflow():
    model = _conv_model()
    # 8 x 8 VALID positions, 3 x 3 x 4 weights per filter, 16 filters, multiply + add
    assert conv_flops(model.layers[-1]) == 2 * 8 * 8 * 3 * 3 * 4 * 16 == 73_728
    assert forward_flops(model) == 73_728
    assert graph_flops(model, tf.zeros((7, 10, 10, 4)))["Conv2D"] == 7 * 73_728


def _minatar_learner(batch_size: int) -> Learner:
    config = MuZeroConfig(
        network=NetworkConfig(hidden_size=8, width=16, value_support_size=3, reward_support_size=2),
        batch_size=batch_size,
        unroll_steps=2,
    )
    nets = Networks(
        config.network,
        observation_size=400,
        num_actions=3,
        seed=0,
        observation_shape=(10, 10, 4),
    )
    return Learner(
        nets, config=config, variant=make_variant("none"), placement=get_placement("pseudocode")
    )


def test_conv_representation_flops_agree_with_tensorflow():
    nets = _minatar_learner(4).networks
    dense = 2 * (1024 * 16 + 16 * 8)  # flatten 8*8*16 -> width 16 -> H 8
    assert forward_flops(nets.representation) == 73_728 + dense
    counted = graph_flops(nets.representation, tf.zeros((7, 400)))
    assert (counted["Conv2D"], counted["MatMul"]) == (7 * 73_728, 7 * dense)


def test_conv_train_step_flops_agree_with_the_traced_and_the_compiled_step():
    B, K = 5, 2
    learner = _minatar_learner(B)
    nets = learner.networks
    batch = random_batch(
        np.random.default_rng(0), batch_size=B, unroll_steps=K, observation_size=400, num_actions=3
    )
    tensors = {k: tf.constant(v) for k, v in learner.batch_tensors(batch).items()}
    analytic = train_step_flops(
        nets.representation, nets.dynamics, nets.prediction, batch_size=B, unroll_steps=K
    )
    conv = 73_728
    dense = forward_flops(nets.representation) - conv
    dense += K * forward_flops(nets.dynamics) + (K + 1) * forward_flops(nets.prediction)
    assert analytic == 3 * B * (conv + dense)
    counted = graph_flops(learner.update_eager, tensors)
    # Every Dense layer forward, input gradient and kernel gradient (the first one's input
    # gradient feeds the conv's kernel gradient); the conv forward once.
    assert counted["MatMul"] == 3 * B * dense
    assert counted["Conv2D"] == B * conv
    # TensorFlow counts the conv's kernel gradient over the 10 x 10 input image, not the 8 x 8
    # output positions; its input gradient is in the graph but unused (below).
    assert counted["Conv2DBackpropFilter"] == B * 2 * 10 * 10 * 3 * 3 * 4 * 16
    # XLA's compiled step keeps two convolutions: the forward and the kernel gradient (on CPU;
    # a GPU's HLO has cuDNN custom calls instead).
    if tf.config.list_physical_devices("GPU"):
        return
    hlo = learner._update.experimental_get_compiler_ir(tensors)(stage="optimized_hlo")
    convolutions = [line for line in hlo.splitlines() if " convolution(" in line]
    assert len(convolutions) == 2
    assert sorted(line.split(" = ")[1].split("{")[0] for line in convolutions) == [
        "f32[4,3,3,16]",
        f"f32[{B},8,8,16]",
    ]


def _tiny_networks(depth: int) -> Networks:
    config = NetworkConfig(hidden_size=3, width=4, depth=depth, support="scalar")
    return Networks(config, observation_size=5, num_actions=2, seed=0)


def test_flop_counter_by_hand():
    nets = _tiny_networks(depth=1)
    # representation 5 -> 4 -> 3; dynamics (3 + 2) -> 4 -> {3, reward 1}; prediction 3 -> 4 ->
    # {policy 2, value 1}
    assert dense_shapes(nets.representation) == [(5, 4), (4, 3)]
    assert sorted(dense_shapes(nets.dynamics)) == [(4, 1), (4, 3), (5, 4)]
    assert forward_flops(nets.representation) == 2 * (20 + 12)  # 64
    assert forward_flops(nets.dynamics) == 2 * (20 + 12 + 4)  # 72
    assert forward_flops(nets.prediction) == 2 * (12 + 8 + 4)  # 48
    # B = 2, K = 3: 3 (fwd + bwd) * 2 * (64 + 3 * 72 + 4 * 48) = 6 * 472
    flops = train_step_flops(
        nets.representation, nets.dynamics, nets.prediction, batch_size=2, unroll_steps=3
    )
    assert flops == 2832


def test_flop_counter_linear_networks():
    nets = _tiny_networks(depth=0)
    assert forward_flops(nets.representation) == 2 * 5 * 3
    assert forward_flops(nets.dynamics) == 2 * (5 * 3 + 5 * 1)
    assert forward_flops(nets.prediction) == 2 * (3 * 2 + 3 * 1)


def test_flop_counter_agrees_with_tensorflows_graph_cost_analysis():
    nets = Networks(
        NetworkConfig(hidden_size=3, width=4), observation_size=5, num_actions=2, seed=0
    )
    observations = tf.zeros((7, 5))
    hidden, action = tf.zeros((7, 3)), tf.zeros((7, 2))
    assert graph_matmul_flops(nets.representation, observations) == 7 * 64
    assert graph_matmul_flops(nets.prediction, hidden) == 7 * forward_flops(nets.prediction)
    assert graph_matmul_flops(lambda h, a: nets.dynamics([h, a]), hidden, action) == 7 * (
        forward_flops(nets.dynamics)
    )


def test_train_step_flops_agree_with_the_traced_train_step():
    B, obs, width = 7, 5, 4
    learner = make_learner(
        hidden_size=3,
        width=width,
        batch_size=B,
        unroll_steps=2,
        observation_size=obs,
        num_actions=2,
        seed=0,
    )
    batch = random_batch(
        np.random.default_rng(0), batch_size=B, unroll_steps=2, observation_size=obs, num_actions=2
    )
    tensors = {k: tf.constant(v) for k, v in learner.batch_tensors(batch).items()}
    nets = learner.networks
    analytic = train_step_flops(
        nets.representation, nets.dynamics, nets.prediction, batch_size=B, unroll_steps=2
    )
    # The backward pass computes no gradient for the observations: one [B, O] x [O, width] (O = obs)
    # product fewer than forward + 2 x backward.
    assert graph_matmul_flops(learner.update_eager, tensors) == analytic - 2 * B * obs * width


def test_pseudocode_loop_has_the_learners_loss_and_gradients():
    learner = make_learner(
        hidden_size=4,
        width=8,
        batch_size=3,
        unroll_steps=2,
        observation_size=6,
        num_actions=3,
        seed=1,
    )
    batch = random_batch(
        np.random.default_rng(2), batch_size=3, unroll_steps=2, observation_size=6, num_actions=3
    )
    tensors = {k: tf.constant(v) for k, v in learner.batch_tensors(batch).items()}
    variables = learner.networks.trainable_variables
    with tf.GradientTape() as tape:
        _, outputs = learner.unroll(tensors["observations"], tensors["actions"])
        expected = learner.losses(outputs, tensors)["total"]
    expected_grads = tape.gradient(expected, variables)
    loss, grads = pseudocode_gradients(learner, tensors)
    assert float(loss) == pytest.approx(float(expected), rel=1e-5)
    assert float(loss) > 0
    for got, want in zip(grads, expected_grads, strict=True):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-6)


def test_the_three_searches_compute_the_same_visit_counts():
    nets = _tiny_networks(depth=1)
    randomize(nets, 0)  # non-zero heads: the trees differ
    blocks = search_cases(
        nets, observation_size=5, batch_size=4, num_simulations=6, single_searches=3, seed=0
    )
    assert list(blocks) == list(SEARCH_CASES)
    assert [work for _, work in blocks.values()] == [24, 24, 18]
    visits = blocks["batched"][0]()
    assert visits.shape == (4, 2)
    assert (visits.sum(axis=1) == 6).all()
    np.testing.assert_array_equal(blocks["compiled"][0](), visits)
    np.testing.assert_array_equal(blocks["one_at_a_time"][0](), visits[:3])


def test_rate_target_and_markdown_columns():
    rate = Rate("search/compiled", 2.0e5, "simulations/s", (2.0e5,), "what", target_min=1e5)
    assert rate.met is True
    assert dataclasses.replace(rate, value=5e4).met is False
    assert dataclasses.replace(rate, target_min=None).met is None
    assert COMPILED_SEARCH_TARGET == 1e5
    other = Rate("search/batched", 4e4, "simulations/s", (4e4,), "numpy")
    report = BenchReport(BenchSettings.quick(), {r.name: r for r in (rate, other)}, [], [], "x", 1)
    lines = markdown(report).splitlines()
    assert "| rate | median | unit | target | met | rounds | what |" in lines
    assert "| search/compiled | 2e+05 | simulations/s | >= 1e+05 | yes | 2e+05 | what |" in lines
    assert "| search/batched | 4e+04 | simulations/s | - | - | 4e+04 | numpy |" in lines


class _FakeClock:
    """Advances by the scripted duration of whichever case ran last."""

    def __init__(self) -> None:
        self.now = 0.0
        self.calls: list[str] = []

    def __call__(self) -> float:
        return self.now

    def case(self, name: str, seconds: float) -> Case:
        def run() -> None:
            self.calls.append(name)
            self.now += seconds

        def warm() -> None:
            self.calls.append(f"warm {name}")

        return Case(name, run, work=12.0, warm=warm)


def test_interleaved_rates_alternate_order_and_divide_work_by_time():
    clock = _FakeClock()
    cases = [clock.case("a", 2.0), clock.case("b", 3.0)]
    rates = interleaved_rates(cases, repeats=3, clock=clock)
    assert clock.calls == ["warm a", "warm b", "a", "b", "b", "a", "a", "b"]
    assert rates == {"a": [6.0, 6.0, 6.0], "b": [4.0, 4.0, 4.0]}
    assert median([5.0, 1.0, 3.0]) == 3.0


def test_interleaved_rates_reject_bad_arguments():
    clock = _FakeClock()
    with pytest.raises(ValueError, match="repeats"):
        interleaved_rates([clock.case("a", 1.0)], repeats=0, clock=clock)
    with pytest.raises(ValueError, match="distinct"):
        interleaved_rates([clock.case("a", 1.0), clock.case("a", 1.0)], repeats=1, clock=clock)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "xml"], "unknown format 'xml'; choose one of: json, md, rich"),
        (["--repeats", "0"], "--repeats 0 is invalid"),
    ],
)
def test_bad_options_exit_2_with_one_line(args, message):
    result = CliRunner().invoke(app, ["bench", "--quick", *args])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]
    assert "Traceback" not in result.output


def test_settings_reject_inconsistent_sizes():
    with pytest.raises(ConfigError, match="loop_samples=200 exceeds batch_size=128"):
        BenchSettings(loop_samples=200)
    with pytest.raises(ConfigError, match="single_searches"):
        BenchSettings.quick(single_searches=9)
    with pytest.raises(ConfigError, match="repeats=0"):
        BenchSettings(repeats=0)
    with pytest.raises(ConfigError, match="run_skip"):
        BenchSettings(run_steps=5, run_skip=5)
