"""The rules exist once per kind of engine: ``State`` for Python code, ``BatchGame`` for array
code, the compiled helpers of ``orderchaos.agents.compiled_rules`` for numba code. These tests play
whole random games and compare the three engines position by position (not copies of one
engine: each side is the engine itself)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orderchaos.agents import compiled_rules
from orderchaos.envs.batch import BatchGame, finished_flags
from orderchaos.envs.rules import ACTIONS, NUM_WINDOWS, WINDOWS, State, legal_action_list, window_set

from helpers import random_game


def _games(seed: int, count: int = 6) -> list[list[State]]:
    return [random_game(seed * 1000 + k, careful_chaos=k % 2 == 1) for k in range(count)]


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**20))
def test_state_and_the_batch_engine_agree_on_every_position(seed: int) -> None:
    states = [s for game in _games(seed) for s in game]
    batch = BatchGame.from_states(states, end_when_decided=False)
    terminated = np.asarray(batch.terminated)
    winners = np.asarray(batch.winner)
    decided = np.asarray(batch.decided)
    live = np.asarray(batch.live_windows)
    masks = np.asarray(batch.action_masks())
    lines = np.asarray(batch.winning_lines())
    x = np.array([s.x for s in states], dtype=np.uint64)
    o = np.array([s.o for s in states], dtype=np.uint64)
    assert finished_flags(x, o).tolist() == [s.is_terminal for s in states]
    for i, s in enumerate(states):
        assert terminated[i] == s.is_terminal
        assert winners[i] == {None: -1, "order": 0, "chaos": 1}[s.winner]
        assert decided[i] == s.decided
        assert live[i] == NUM_WINDOWS - (window_set(s.x) & window_set(s.o)).bit_count()
        expected = np.zeros(ACTIONS, np.int8)
        expected[s.legal_actions()] = 1
        assert np.array_equal(masks[i], expected)
        assert tuple(np.flatnonzero(lines[i])) == s.winning_line


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**20))
def test_state_and_the_compiled_helpers_agree_along_whole_games(seed: int) -> None:
    xc = np.empty(NUM_WINDOWS, np.int64)
    oc = np.empty(NUM_WINDOWS, np.int64)
    out = np.empty(ACTIONS, np.int64)
    for game in _games(seed):
        for before, after in zip(game, game[1:]):
            placed = after.occupied & ~before.occupied
            cell = placed.bit_length() - 1
            mine = after.x if after.x & placed else after.o
            # A five appears only through the stone just placed.
            assert compiled_rules.places_five(mine, cell) == after.has_five
            compiled_rules.window_counts(after.x, after.o, xc, oc)
            assert xc.tolist() == [(after.x & m).bit_count() for m in WINDOWS]
            assert oc.tolist() == [(after.o & m).bit_count() for m in WINDOWS]
            assert bool(((xc == 5) | (oc == 5)).any()) == after.has_five
            assert bool(((xc > 0) & (oc > 0)).all()) == after.decided
            n = compiled_rules.legal_actions(after.occupied, out)
            assert out[:n].tolist() == legal_action_list(after.x, after.o)


@pytest.mark.parametrize("end_when_decided", [False, True])
def test_the_env_core_follows_state_move_by_move(end_when_decided: bool) -> None:
    """The Gymnasium env's incremental core against State: decided, winner, winning line."""
    from orderchaos.envs.order_chaos import GameCore

    for game in _games(7, 10):
        core = GameCore(end_when_decided)
        for before, after in zip(game, game[1:]):
            action = next(a for a in before.legal_actions() if before.apply(a) == after)
            core.play(action)
            assert core.state == after
            assert core.decided == after.decided
            ends = after.is_terminal or (end_when_decided and after.decided)
            assert core.terminated == ends
            if ends:
                assert core.winner == (after.winner or "chaos")
                assert core.winning_line() == (after.winning_line if after.has_five else ())
                break
