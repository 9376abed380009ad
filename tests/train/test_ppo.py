"""PPO helpers: GAE and masked sampling."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from orderchaos.train.ppo import gae, sample_rows


def test_gae_with_terminal_reward_only() -> None:
    values = np.array([0.5, -0.2, 0.1], np.float32)
    rewards = np.array([0.0, 0.0, 1.0], np.float32)
    adv = gae(rewards, values, gamma=1.0, lam=1.0)
    assert np.allclose(adv + values, 1.0)  # lambda=1, gamma=1: returns are the final reward
    adv0 = gae(rewards, values, gamma=1.0, lam=0.0)
    assert np.allclose(adv0, [values[1] - values[0], values[2] - values[1], 1.0 - values[2]])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=2, max_size=10), st.integers(0, 1000))
def test_sample_rows_never_picks_zero_probability(weights: list[float], seed: int) -> None:
    probs = np.array([weights, weights[::-1]], dtype=np.float64)
    probs[:, 0] = 0.0
    probs[:, -1] += 1e-3
    picks = sample_rows(np.repeat(probs, 50, axis=0), np.random.default_rng(seed))
    rows = np.repeat(probs, 50, axis=0)
    assert np.all(rows[np.arange(len(picks)), picks] > 0)
