"""Tests of the exact solver, its numba kernel, SolverAgent and ``orderchaos solve``."""

from __future__ import annotations

import json
from functools import lru_cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents import solver_kernel as K
from agents.solver import Solver, SolverAgent, fallback_action, solve
from envs.rules import CELLS, CHAOS, ORDER, State, parse_board, threat_pairs
from envs.symmetry import NUM_SYMMETRIES, transform_bits, transform_state
from train.cli import main


@lru_cache(maxsize=None)
def brute_force(state: State) -> str:
    """Plain minimax on State, with no pruning or rules beyond envs.rules."""
    if state.winner is not None:
        return state.winner
    mover = state.to_play
    results = {brute_force(state.apply(a)) for a in state.legal_actions()}
    return mover if mover in results else (CHAOS if mover == ORDER else ORDER)


def random_position(seed: int, empties: int) -> State:
    """A random board with ``empties`` empty cells and no five on it."""
    rng = np.random.default_rng(seed)
    while True:
        cells = rng.permutation(CELLS)[: CELLS - empties]
        symbols = rng.integers(0, 2, size=len(cells))
        x = sum(1 << int(c) for c, s in zip(cells, symbols) if s == 0)
        o = sum(1 << int(c) for c, s in zip(cells, symbols) if s == 1)
        state = State(x, o)
        if not state.has_five:
            return state


def fresh_solver() -> Solver:
    """A solver with a small table (tests must not share TT state)."""
    return Solver(tt_bits=16)


# -- kernel pieces against the scalar engine -------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(st.integers(0, (1 << CELLS) - 1), st.integers(0, (1 << CELLS) - 1))
def test_kernel_tables_match_rules(xbits: int, obits: int) -> None:
    x, o = xbits & ~obits, obits & ~xbits
    xc = np.zeros(K.NUM_WINDOWS, dtype=np.int64)
    oc = np.zeros(K.NUM_WINDOWS, dtype=np.int64)
    K.window_counts(x, o, xc, oc)
    from envs.rules import WINDOWS

    assert list(xc) == [(x & m).bit_count() for m in WINDOWS]
    assert list(oc) == [(o & m).bit_count() for m in WINDOWS]
    for t in range(8):
        assert K.transform(x, t) == transform_bits(x, t)
    images = [transform_state(State(x, o), g) for g in range(NUM_SYMMETRIES)]
    keys = {K.canonical(s.x, s.o) for s in images}
    assert keys == {min((s.x, s.o) for s in images)}


# -- exactness --------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**9), st.integers(1, 8))
def test_solver_matches_brute_force(seed: int, empties: int) -> None:
    state = random_position(seed, empties)
    result = fresh_solver().solve(state)
    assert result.winner == brute_force(state)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**9), st.integers(1, 7))
def test_best_actions_match_brute_force(seed: int, empties: int) -> None:
    state = random_position(seed, empties)
    result = fresh_solver().solve(state, moves=True)
    mover = state.to_play
    if result.winner == mover:
        expected = [a for a in state.legal_actions() if brute_force(state.apply(a)) == mover]
    else:
        expected = state.legal_actions()
    assert result.best_actions == expected


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10**9), st.integers(1, 7), st.integers(1, 9))
def test_order_wins_within_matches_brute_force(seed: int, empties: int, plies: int) -> None:
    @lru_cache(maxsize=None)
    def within(s: State, d: int) -> bool:
        if s.has_five:
            return True
        if s.is_full or d <= 0:
            return False
        children = [within(s.apply(a), d - 1) for a in s.legal_actions()]
        return any(children) if s.to_play == ORDER else all(children)

    state = random_position(seed, empties)
    assert fresh_solver().order_wins_within(state, plies) == within(state, plies)


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10**9), st.integers(8, 14))
def test_symmetric_images_get_equal_values(seed: int, empties: int) -> None:
    state = random_position(seed, empties)
    values = {fresh_solver().solve(transform_state(state, g)).winner for g in range(NUM_SYMMETRIES)}
    assert len(values) == 1


# -- forcing rules on scripted positions -------------------------------------------------------

# A full board without a five on which every window holds both symbols.
DEAD_PATTERN = ["XXOOXX", "OOXXOO", "XXOOXX", "OOXXOO", "XXOOXX", "OOXXOO"]


def from_pattern(edits: dict[int, str]) -> State:
    """DEAD_PATTERN with some cells replaced (``"."`` to empty a cell)."""
    cells = list("".join(DEAD_PATTERN))
    for c, ch in edits.items():
        cells[c] = ch
    return parse_board("".join(cells))


def test_finished_boards() -> None:
    five = parse_board("XXXXX. OOOOX. ...... ...... ...... ......")
    assert solve(five).winner == ORDER
    assert solve(five).nodes <= 1
    full = from_pattern({})
    assert full.is_full and not full.has_five and full.decided
    result = solve(full, moves=True)
    assert (result.winner, result.best_actions) == (CHAOS, [])


def test_order_with_a_four_wins_at_once() -> None:
    state = parse_board("XXXX.. O.O... ...... ...... ...... ......")
    assert state.to_play == ORDER
    result = fresh_solver().solve(state, node_limit=10)
    assert result.winner == ORDER and result.nodes == 1


def test_chaos_must_block_a_lone_four_with_the_other_symbol() -> None:
    # Row 1 reads XXXX.O: X threatens e1 (cell 4); c3 and f6 are open dead cells.
    state = from_pattern({2: "X", 3: "X", 4: ".", 5: "O", 14: ".", 35: "."})
    assert state.to_play == CHAOS and threat_pairs(state.x, state.o) == [(4, 0)]
    result = fresh_solver().solve(state, moves=True)
    assert result.winner == CHAOS == brute_force(state)
    assert result.best_actions == [2 * 4 + 1]


def test_two_threat_cells_win_for_order() -> None:
    # Rows 1 and 6 both read XXXX.O: threats on e1 and e6.
    state = from_pattern({0: "X", 1: "X", 2: "X", 3: "X", 4: ".", 5: "O",
                          30: "X", 31: "X", 32: "X", 33: "X", 34: ".", 35: "O", 14: "."})
    assert state.to_play == CHAOS and {c for c, _ in threat_pairs(state.x, state.o)} == {4, 34}
    assert fresh_solver().solve(state).winner == ORDER == brute_force(state)


def test_one_cell_threatened_by_both_symbols_wins_for_order() -> None:
    # e1 completes XXXX on row 1 and OOOO down column e.
    state = from_pattern({2: "X", 3: "X", 4: ".", 5: "O", 16: "O", 28: "O", 34: "X"})
    assert set(threat_pairs(state.x, state.o)) == {(4, 0), (4, 1)}
    assert state.to_play == CHAOS and state.num_empty == 1
    assert fresh_solver().solve(state).winner == ORDER == brute_force(state)


def test_double_four_move_is_found() -> None:
    # a1 X makes XXXX. on row 1 (gap e1) and on column a (gap a5).
    state = from_pattern({0: ".", 2: "X", 3: "X", 4: ".", 5: "O", 6: "X", 18: "X", 24: ".", 35: "."})
    assert state.to_play == ORDER and not threat_pairs(state.x, state.o)
    result = fresh_solver().solve(state, moves=True)
    assert result.winner == ORDER == brute_force(state)
    assert 0 in result.best_actions


def test_decided_board_is_a_chaos_win_without_search() -> None:
    state = from_pattern({0: ".", 35: "."})
    assert state.decided and state.to_play == ORDER
    result = fresh_solver().solve(state)
    assert result.winner == CHAOS and result.nodes == 1


def test_dead_cells_and_dominated_symbols_keep_the_value() -> None:
    """Positions rich in dead cells and one-symbol windows, checked against brute force."""
    for seed in range(40):
        rng = np.random.default_rng(seed)
        edits = {int(c): "." for c in rng.choice(CELLS, size=int(rng.integers(3, 9)), replace=False)}
        state = from_pattern(edits)
        assert fresh_solver().solve(state).winner == brute_force(state)
