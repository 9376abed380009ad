"""Wins by continuous fours (orderchaos.agents.fours) against a plain reference and the
full-width search they are a special case of."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orderchaos.agents.fours import holding_moves, order_wins_by_fours
from orderchaos.bench.solver import sensible_positions
from orderchaos.envs.rules import ACTIONS, State

from helpers import order_wins_within, random_board


def reference_wins_by_fours(state: State, plies: int) -> bool:
    """The definition, on State: a five, a completion cell to fill, or a move making two
    completions, or one whose only block completes a five or leaves such a win again."""
    if state.has_five or state.threats():
        return True
    if plies < 3:
        return False
    for action in state.legal_actions():
        after = state.apply(action)
        made = after.threats()
        if not made:
            continue
        if len(made) >= 2:
            return True
        (cell, symbol), = made
        blocked = after.apply(2 * cell + (1 - symbol))
        if blocked.has_five or reference_wins_by_fours(blocked, plies - 2):
            return True
    return False


def order_to_move(states: list[State]) -> list[State]:
    return [s for s in states if s.to_play == "order" and not s.is_terminal]


@pytest.mark.parametrize("plies", [1, 2, 3, 4, 5, 6, 9])
def test_wins_by_fours_match_the_definition_on_played_positions(plies: int) -> None:
    positions = order_to_move(sensible_positions(40, 18, seed=3) + sensible_positions(40, 26, seed=4))
    assert len(positions) > 20
    answers = [order_wins_by_fours(s, plies) for s in positions]
    assert answers == [reference_wins_by_fours(s, plies) for s in positions]
    if plies >= 3:
        assert any(answers) and not all(answers)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**9), st.sampled_from([4, 6, 8]), st.sampled_from([1, 3, 5]))
def test_a_win_by_fours_is_a_forced_win_within_the_plies(seed: int, empties: int, plies: int) -> None:
    state = random_board(seed, empties)  # an even number of empty cells: Order to move
    if order_wins_by_fours(state, plies):
        assert order_wins_within(state, plies)
    if plies == 1:  # one ply: both say whether a completion cell stands
        assert order_wins_by_fours(state, 1) == order_wins_within(state, 1)


def test_holding_moves_are_the_chaos_moves_without_a_win_by_fours() -> None:
    positions = [s for s in sensible_positions(30, 21, seed=5) if s.to_play == "chaos"]
    narrowed = 0
    for state in positions:
        holding = holding_moves(state, 7)
        for action in state.legal_actions():
            assert (action in holding) == (not reference_wins_by_fours(state.apply(action), 7))
        narrowed += 0 < len(holding) < len(state.legal_actions())
    assert narrowed > 0
    with pytest.raises(ValueError, match="Chaos to move"):
        holding_moves(State(), 3)
    with pytest.raises(ValueError, match="Order to move"):
        order_wins_by_fours(State().apply(0), 3)


def test_training_rows_keep_chaos_targets_on_holding_moves_only() -> None:
    from orderchaos.train.alphazero import TrainingRows

    chaos = next(s for s in sensible_positions(30, 21, seed=5)
                 if s.to_play == "chaos" and 0 < len(holding_moves(s, 7)) < len(s.legal_actions()))
    order = next(s for s in sensible_positions(30, 20, seed=5) if s.to_play == "order")
    uniform = [np.asarray(s.legal_mask(), np.float32) / len(s.legal_actions()) for s in (chaos, order)]
    policies = np.stack(uniform + [np.zeros(ACTIONS, np.float32)])  # the last: a value-only row
    rows = TrainingRows([chaos, order, chaos], np.zeros((3, 3, 6, 6), np.int8), np.ones((3, ACTIONS), np.int8),
                        policies.copy(), np.zeros(3, np.float32))
    assert rows.hold_against_fours(7) == 1
    holding = holding_moves(chaos, 7)
    assert set(np.flatnonzero(rows.policies[0])) == set(holding)
    assert rows.policies[0].sum() == pytest.approx(1.0)
    np.testing.assert_array_equal(rows.policies[1:], policies[1:])  # Order's row, the value-only row
