"""The replay buffer: newest rows kept, consistent augmentation, state round trip."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from orderchaos.bench.train import random_positions
from orderchaos.envs.encoding import action_mask, encode_states
from orderchaos.envs.rules import ACTIONS
from orderchaos.envs.symmetry import NUM_SYMMETRIES, transform_planes
from orderchaos.train.replay_buffer import ReplayBuffer


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
    planes, masks, policies, values = buffer.sample(16, np.random.default_rng(seed))
    empty = 1 - planes[:, 0] - planes[:, 1]  # an augmented image keeps the mask on its empty cells
    assert np.array_equal(masks, np.repeat(empty.reshape(16, -1), 2, axis=1))
    assert np.all(policies[masks == 0] == 0)
    assert np.allclose(policies.sum(1), 1.0, atol=1e-5)
    restored = ReplayBuffer(capacity)
    restored.load_state_dict(buffer.state_dict())
    again = restored.sample(16, np.random.default_rng(seed))
    assert all(np.array_equal(x, y) for x, y in zip(again, (planes, masks, policies, values)))


def test_samples_are_symmetric_images_of_the_stored_rows() -> None:
    buffer = ReplayBuffer(8)
    buffer.add(*_random_rows(8, 0))
    stored = {p.tobytes() for p in buffer.planes}
    images = {transform_planes(p[None], g)[0].tobytes() for p in buffer.planes for g in range(NUM_SYMMETRIES)}
    planes, _, _, _ = buffer.sample(64, np.random.default_rng(1))
    sampled = {p.tobytes() for p in planes}
    assert sampled <= images and sampled - stored  # every row an image, and not all the identity


def test_an_empty_buffer_restores() -> None:
    empty = ReplayBuffer(400)  # a role with no mistakes yet
    empty.load_state_dict(ReplayBuffer(400).state_dict())
    assert len(empty) == 0
