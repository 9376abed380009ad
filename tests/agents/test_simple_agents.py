"""Random and heuristic players: legality, tactics, seeded reproducibility."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from orderchaos.agents.simple import (
    HeuristicAgent,
    RandomAgent,
    completes_a_five,
    danger_deltas,
    double_threat_moves,
    single_threat_followups,
)
from orderchaos.envs.rules import State, parse_board

from helpers import LONE_FOUR, WIN_IN_ONE, positions


def play(order: object, chaos: object, state: State = State()) -> list[int]:
    """Play a game to the end and return its actions."""
    actions = []
    while not state.is_terminal:
        a = (order if state.to_play_index == 0 else chaos).act(state)  # type: ignore[attr-defined]
        actions.append(a)
        state = state.apply(a)
    return actions


@settings(max_examples=40, deadline=None)
@given(positions(terminal=False))
def test_random_agent_plays_legal_moves_and_uniform_policy(state: State) -> None:
    agent = RandomAgent(seed=1)
    assert agent.act(state) in state.legal_actions()
    probs = agent.policy(state)
    legal = state.legal_actions()
    assert probs.shape == (72,) and probs.sum() == pytest.approx(1.0)
    assert np.allclose(probs[legal], 1 / len(legal))
    assert set(np.flatnonzero(probs)) == set(legal)


@settings(max_examples=40, deadline=None)
@given(positions(terminal=False))
def test_heuristic_policy_is_uniform_over_legal_best_actions(state: State) -> None:
    agent = HeuristicAgent(seed=0)
    best = agent.best_actions(state)
    assert best and set(best) <= set(state.legal_actions())
    probs = agent.policy(state)
    assert probs.sum() == pytest.approx(1.0) and set(np.flatnonzero(probs)) == set(best)
    assert agent.act(state) in best


def test_heuristic_takes_a_five_and_blocks_a_lone_four() -> None:
    assert HeuristicAgent(seed=3).best_actions(WIN_IN_ONE) == [8]
    assert HeuristicAgent(seed=3).best_actions(LONE_FOUR) == [9]


def test_heuristic_order_makes_an_open_four() -> None:
    # Row 3 holds .XXX.. : only X on e3 (cell 16) leaves two completion cells (a3 and f3).
    state = parse_board("...... ...... .XXX.. ...... ...... .....O")
    assert HeuristicAgent(seed=0).best_actions(state) == [32]


@settings(max_examples=60, deadline=None)
@given(positions(terminal=False))
def test_heuristic_chaos_never_completes_an_avoidable_five(state: State) -> None:
    if state.to_play_index == 0:
        state = state.apply(HeuristicAgent(seed=0).act(state))
        if state.is_terminal:
            return
    legal = state.legal_actions()
    avoidable = any(not completes_a_five(state.x, state.o, a) for a in legal)
    a = HeuristicAgent(seed=5).act(state)
    if avoidable:
        assert not completes_a_five(state.x, state.o, a)
    nxt = state.apply(a)
    can_leave_no_threat = any(
        not state.apply(b).is_terminal and not state.apply(b).threats() for b in legal
    )
    if can_leave_no_threat:
        assert not nxt.is_terminal and not nxt.threats()


@settings(max_examples=60, deadline=None)
@given(positions(terminal=False))
def test_double_threat_moves_are_exactly_the_moves_leaving_two_completion_cells(state: State) -> None:
    """Expected answers from the rules (State.apply and State.threats), not from the
    helpers under test: with no threat on the board, every threat after a move is new."""
    if state.threats():
        return

    def completion_cells(after: State) -> set[int]:
        return {c for c, _ in after.threats()}

    def leaves_double_threat(after: State) -> bool:
        return any(len(completion_cells(after.apply(b))) >= 2 for b in after.legal_actions())

    legal = state.legal_actions()
    assert double_threat_moves(state.x, state.o) == [a for a in legal if len(completion_cells(state.apply(a))) >= 2]
    expected_followups = []
    for a in legal:
        after = state.apply(a)
        if len(after.threats()) != 1:
            continue
        ((cell, symbol),) = after.threats()
        blocked = after.apply(2 * cell + 1 - symbol)  # the only block: the other symbol there
        if blocked.has_five or blocked.threats() or leaves_double_threat(blocked):
            expected_followups.append(a)
    assert single_threat_followups(state.x, state.o) == expected_followups


def test_single_threat_followup_is_found() -> None:
    # X on b2 (action 14) fills b2-b5 below an empty b1: one completion cell. Chaos must put
    # O on b1; row 2 then reads .XXX.. and X on e2 leaves a2 and f2 both open.
    state = parse_board("...... ..XX.. .X.... .X.... .X.... OO...O")
    assert state.to_play == "order"
    assert single_threat_followups(state.x, state.o) == [14]
    assert HeuristicAgent(seed=0).best_actions(state) == [14]


def test_a_followup_whose_forced_block_hands_order_a_five_is_found() -> None:
    # X on d1 (action 6) makes a1-d1 XXXX with one completion cell, e1. Chaos's only block is
    # O on e1, which gives column e four O (e1-e4) with e5 empty: Order completes it.
    state = parse_board("XXX... ....O. ....O. ....O. ...... ......")
    assert state.to_play == "order" and not state.threats()
    blocked = state.apply(6).apply(9)
    assert blocked.threats() == [(28, 1)]
    assert 6 in single_threat_followups(state.x, state.o)


def test_danger_deltas_cover_exactly_the_legal_actions() -> None:
    state = parse_board("X..... .O.... " + "." * 24)
    deltas = danger_deltas(state.x, state.o)
    assert sorted(deltas) == state.legal_actions()
    # Cell c1's windows: an X-only row, an empty row and an empty column. X grows the
    # X-only window (+12) where O kills it (-4); the empty windows gain +3 either way.
    assert deltas[4] == 12 + 3 + 3 and deltas[5] == -4 + 3 + 3


@pytest.mark.parametrize("cls", [RandomAgent, HeuristicAgent])
def test_same_seed_same_game_and_different_seeds_differ(cls: type) -> None:
    def game(seed: int) -> list[int]:
        return play(cls(seed=seed), cls(seed=seed + 100))

    assert game(7) == game(7)
    assert any(game(7) != game(s) for s in range(8, 12))


@pytest.mark.parametrize("cls", [RandomAgent, HeuristicAgent])
def test_agents_refuse_finished_games(cls: type) -> None:
    done = parse_board("XXXXX. " + "." * 30)
    with pytest.raises(ValueError, match="game is over"):
        cls(seed=0).act(done)
    with pytest.raises(TypeError, match="State"):
        cls(seed=0).act("XXXX")  # type: ignore[arg-type]


def test_heuristic_beats_random_in_both_roles() -> None:
    order_wins_as_order = sum(_winner(HeuristicAgent(i), RandomAgent(50 + i)) == "order" for i in range(10))
    chaos_wins_as_chaos = sum(_winner(RandomAgent(i), HeuristicAgent(50 + i)) == "chaos" for i in range(10))
    assert order_wins_as_order >= 9 and chaos_wins_as_chaos >= 9


def _winner(order: object, chaos: object) -> str | None:
    state = State()
    for a in play(order, chaos):
        state = state.apply(a)
    return state.winner
