"""PPO: GAE, masked sampling, and resuming a run with its opponent pools."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from orderchaos.train.config import load_config
from orderchaos.train.factory import make_trainer
from orderchaos.train.ppo import gae, sample_rows

from helpers import SMOKE


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


def test_ppo_resume_restores_the_opponent_pool_and_continues_the_same_run(tmp_path) -> None:
    """Two iterations, a resume and two more give the same networks as four in one go: the
    opponent pools (and optimisers and generators) come back from the checkpoint."""
    overrides = ["algorithm=ppo", "eval.enabled=false", "ppo.pool_size=2", "ppo.snapshot_interval=1"]
    straight = make_trainer(load_config(SMOKE, [*overrides, "run.iterations=4"]), tmp_path / "straight")
    straight.fit()
    first = make_trainer(load_config(SMOKE, [*overrides, "run.iterations=2"]), tmp_path / "resumed")
    first.fit()
    pool = {role: [{k: v.clone() for k, v in snap.items()} for snap in snaps] for role, snaps in first.pool.items()}
    assert all(len(snaps) == 2 for snaps in pool.values())
    resumed = make_trainer(load_config(SMOKE, [*overrides, "run.iterations=4"]), tmp_path / "resumed", resume=True)
    try:
        assert resumed.iteration == 2
        for role, snaps in pool.items():
            assert len(resumed.pool[role]) == len(snaps)
            for mine, theirs in zip(resumed.pool[role], snaps):
                assert mine.keys() == theirs.keys()
                assert all(torch.equal(mine[k], theirs[k]) for k in theirs)
        resumed.fit()
    finally:
        resumed.close()
    assert resumed.iteration == 4
    for role in ("order", "chaos"):
        for key, value in straight.nets[role].state_dict().items():
            assert torch.equal(value, resumed.nets[role].state_dict()[key]), (role, key)
        assert len(straight.pool[role]) == len(resumed.pool[role]) == 2, role
        for mine, theirs in zip(straight.pool[role], resumed.pool[role]):
            assert mine.keys() == theirs.keys()
            assert all(torch.equal(mine[k], theirs[k]) for k in mine)
