"""The observation encoding and legal-action masks (envs/encoding.py), checked against the
scalar rules on many positions at once."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from orderchaos.envs.encoding import action_masks, encode_states, five_flags
from orderchaos.envs.rules import ACTIONS, CELLS, State, has_five_bits

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
@given(boards=st.lists(st.integers(0, 2**CELLS - 1), min_size=1, max_size=20))
def test_five_flags_agree_with_the_scalar_five_test(boards: list[int]) -> None:
    flags = five_flags(np.array(boards, dtype=np.uint64))
    assert flags.tolist() == [has_five_bits(b) for b in boards]
