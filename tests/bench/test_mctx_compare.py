"""benchmarks/mctx_compare.py: gradlab's compiled search vs mctx, one tiny round.

Runs only where the ``mctx`` extra is installed (``pip install -e ".[mctx]"``); skipped, without
importing JAX, everywhere else.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import benchmark_script

pytest.importorskip("jax")
pytest.importorskip("mctx")


@pytest.fixture(scope="module")
def mctx_compare():
    with benchmark_script("mctx_compare") as module:
        yield module


@pytest.fixture(scope="module")
def result(mctx_compare):
    settings = mctx_compare.catch_settings(batch_size=2, num_simulations=3)
    return mctx_compare.compare(settings, rounds=1)


def test_settings_are_catchs_preset(mctx_compare):
    settings = mctx_compare.catch_settings()
    assert (settings.batch_size, settings.num_simulations) == (128, 8)
    assert (settings.observation_size, settings.num_actions) == (50, 3)
    assert (settings.network.hidden_size, settings.network.width) == (32, 64)
    assert settings.discount == 0.997
    assert settings.q_form == "normalized"


def test_both_searches_return_a_policy_over_the_actions(result):
    for name in ("gradlab", "mctx"):
        policy = result.policies[name]
        assert policy.shape == (2, 3), name
        assert np.all(policy >= 0), name
        np.testing.assert_allclose(policy.sum(axis=1), 1.0, rtol=1e-6, err_msg=name)


def test_same_networks_on_both_sides(result):
    assert result.network_gap <= 1e-3


def test_rates_are_positive_and_ratio_is_their_quotient(result, mctx_compare):
    assert set(result.rates) == {"gradlab", "mctx"}
    for name, rates in result.rates.items():
        assert len(rates) == 1, name
        assert all(rate > 0 for rate in rates), name
        assert result.median[name] == rates[0]
    assert result.ratio == pytest.approx(result.median["gradlab"] / result.median["mctx"])
    text = mctx_compare.report(result)
    assert "gradlab / mctx" in text and "simulations/s" in text
    # the CPU type beside the ratio, and the range of the rounds' ratios (one round: one value)
    from experiments.base.cpu import describe

    single = result.rates["gradlab"][0] / result.rates["mctx"][0]
    assert f"gradlab / mctx: {result.ratio:.2f} (rounds' ratios {single:.2f}-{single:.2f}; " in text
    assert f"CPU: {describe()}" in text


def test_cores_out_of_range_is_one_line(mctx_compare):
    with pytest.raises(SystemExit, match=r"--cores 0: choose 1 to \d+"):
        mctx_compare.hold_cores(0)


def test_rounds_must_be_positive(mctx_compare):
    settings = mctx_compare.catch_settings(batch_size=2, num_simulations=3)
    with pytest.raises(ValueError, match="rounds must be >= 1"):
        mctx_compare.compare(settings, rounds=0)
