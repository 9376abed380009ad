"""The observation encoding and legal-action masks (envs/encoding.py), checked against the
scalar rules on many positions at once."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from orderchaos.envs.batch import finished_flags
from orderchaos.envs.encoding import action_masks, encode_states
from orderchaos.envs.rules import ACTIONS, CELLS, FULL, State, has_five_bits

from helpers import positions


@settings(max_examples=60, deadline=None)
@given(states=st.lists(positions(terminal=True), min_size=1, max_size=12))
def test_masks_and_planes_follow_the_scalar_rules(states: list[State]) -> None:
    masks = action_masks(states)
    planes = encode_states(states)
    assert masks.shape == (len(states), ACTIONS) and masks.dtype == np.int8
    for state, mask, plane in zip(states, masks, planes):
        expected = np.zeros(ACTIONS, np.int8)
        if not state.is_terminal:
            expected[state.legal_actions()] = 1
        assert np.array_equal(mask, expected)
        assert plane[2].min() == plane[2].max() == state.to_play_index
        assert plane[0].sum() == state.x.bit_count() and plane[1].sum() == state.o.bit_count()


@settings(max_examples=200, deadline=None)
@given(boards=st.lists(st.tuples(st.integers(0, 2**CELLS - 1), st.integers(0, 2**CELLS - 1)), min_size=1, max_size=20))
def test_the_batch_engine_s_finished_test_agrees_with_the_scalar_rules(boards: list[tuple[int, int]]) -> None:
    """The masks of finished positions are zeroed by the batch engine's test on plain arrays
    (any two bitboards, not only reachable ones: dense boards hold many fives)."""
    x = np.array([a & ~b for a, b in boards], dtype=np.uint64)
    o = np.array([b for _, b in boards], dtype=np.uint64)
    expected = [has_five_bits(int(a)) or has_five_bits(int(b)) or int(a | b) == FULL for a, b in zip(x, o)]
    assert finished_flags(x, o).tolist() == expected
