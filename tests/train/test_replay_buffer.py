"""The replay buffer: newest rows kept, consistent augmentation, state round trip, and the
weighted draw of Chaos's early positions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from orderchaos.bench.train import random_positions
from orderchaos.envs.encoding import action_mask, encode_states
from orderchaos.envs.rules import ACTIONS
from orderchaos.train.config import load_config
from orderchaos.train.factory import make_trainer
from orderchaos.train.replay_buffer import ReplayBuffer

from helpers import SMOKE


def _random_rows(n: int, seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    states = random_positions(n, seed)
    masks = np.stack([action_mask(s) for s in states])
    policies = rng.random((n, ACTIONS)).astype(np.float32) * masks
    policies /= policies.sum(1, keepdims=True)
    return encode_states(states), masks, policies, rng.choice([-1.0, 1.0], n).astype(np.float32)


@settings(max_examples=15, deadline=None)
@given(capacity=st.integers(1, 40), batches=st.lists(st.integers(1, 25), min_size=1, max_size=4), seed=st.integers(0, 99))
def test_replay_keeps_the_newest_rows_and_augments_consistently(capacity: int, batches: list[int], seed: int) -> None:
    buffer = ReplayBuffer(capacity)
    added = []
    for i, n in enumerate(batches):
        rows = _random_rows(n, seed + i)
        buffer.add(*rows)
        added.extend(zip(*rows))
    assert len(buffer) == min(capacity, len(added))
    newest = {a[0].tobytes() for a in added[-len(buffer):]}
    assert {p.tobytes() for p in buffer.planes[: len(buffer)]} == newest
    planes, masks, policies, values = buffer.sample(16, np.random.default_rng(seed), augment=True)
    empty = 1 - planes[:, 0] - planes[:, 1]  # an augmented image keeps the mask on its empty cells
    assert np.array_equal(masks, np.repeat(empty.reshape(16, -1), 2, axis=1))
    assert np.all(policies[masks == 0] == 0)
    assert np.allclose(policies.sum(1), 1.0, atol=1e-5)
    restored = ReplayBuffer(capacity)
    restored.load_state_dict(buffer.state_dict())
    again = restored.sample(16, np.random.default_rng(seed), augment=True)
    assert all(np.array_equal(x, y) for x, y in zip(again, (planes, masks, policies, values)))


def test_early_rows_are_drawn_by_their_weight_and_the_default_draw_is_unchanged() -> None:
    buffer = ReplayBuffer(400)
    buffer.add(*_random_rows(400, 3))
    empties = 36 - buffer.planes[:400, :2].reshape(400, -1).sum(1)
    early = empties >= 27
    assert 0 < early.sum() < 400
    # Values tag each row with its index, so that the draw shows which rows it took.
    tagged = ReplayBuffer(400)
    tagged.add(buffer.planes[:400], buffer.masks[:400], buffer.policies[:400], np.arange(400, dtype=np.float32))
    for weight in (3.0, 0.2):
        *_, rows = tagged.sample(20000, np.random.default_rng(1), False, 27, weight)
        share = early[rows.astype(int)].mean()
        expected = weight * early.sum() / (weight * early.sum() + (~early).sum())
        assert abs(share - expected) < 0.015, (weight, share, expected)
    # A buffer restored from its state draws the same weighted batch.
    restored = ReplayBuffer(400)
    restored.load_state_dict(tagged.state_dict())
    *_, again = restored.sample(2000, np.random.default_rng(4), False, 27, 3.0)
    assert np.array_equal(again, tagged.sample(2000, np.random.default_rng(4), False, 27, 3.0)[3])
    empty = ReplayBuffer(400)  # an empty buffer (a role with no mistakes yet) restores too
    empty.load_state_dict(ReplayBuffer(400).state_dict())
    assert len(empty) == 0
    # Off (no threshold, or weight 1) the draw is the plain uniform one, row for row.
    plain = buffer.sample(64, np.random.default_rng(5), True)
    for args in ((0, 3.0), (27, 1.0)):
        again = buffer.sample(64, np.random.default_rng(5), True, *args)
        assert all(np.array_equal(x, y) for x, y in zip(plain, again))


def test_only_chaos_batches_weigh_early_positions(tmp_path: Path) -> None:
    config = load_config(SMOKE, ["eval.enabled=false", "replay.chaos_early_empties=27", "replay.chaos_early_weight=4"])
    trainer = make_trainer(config, tmp_path / "run")
    drawn: dict[str, list[tuple]] = {}
    try:
        for role, buffer in trainer.replay.items():
            buffer.add(*_random_rows(config.replay.min_positions, 7))
            sample = buffer.sample
            buffer.sample = lambda n, *a, _role=role, _sample=sample: (drawn.setdefault(_role, []).append(a[2:]), _sample(n, *a))[1]
            trainer.train_role(role, 2)
    finally:
        trainer.close()
    assert drawn == {"order": [(), ()], "chaos": [(27, 4.0), (27, 4.0)]}
