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
    avoidable = any(not state.apply(b).has_five for b in legal)  # from the rules
    a = HeuristicAgent(seed=5).act(state)
    nxt = state.apply(a)
    if avoidable:
        assert not nxt.has_five
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


@pytest.mark.parametrize(
    "board, action, completes",
    [
        ("XXXX.. " + "." * 30, 8, True),  # X on e1: a1-e1
        ("XXXX.. " + "." * 30, 9, False),  # O on e1
        ("XX.XXX " + "." * 30, 4, True),  # X on c1 makes six in a row: a five stands
        ("O..... O..... O..... O..... ...... ......", 49, True),  # O on a5: column a
        ("O..... O..... O..... O..... ...... ......", 48, False),  # X on a5
        ("...... .X.... ..X... ...X.. ....X. ......", 70, True),  # X on f6: the diagonal b2-f6
        (".....O ....O. ...O.. ..O... ...... ......", 51, True),  # O on b5: the diagonal f1-b5
        (".....O ....O. ...O.. ..O... ...... ......", 61, False),  # O on a6: four O on e2-a6, b5 still empty
    ],
)
def test_completes_a_five_on_hand_built_boards(board: str, action: int, completes: bool) -> None:
    state = parse_board(board)
    assert completes_a_five(state.x, state.o, action) is completes


def test_chaos_on_the_last_cell_writes_the_symbol_that_makes_no_five() -> None:
    # One empty cell, e1: X there ends a1-e1 XXXXX, O there makes no line.
    state = parse_board("XXXX.O OOXOOX XXOXXO OOXOOX XXOXXO OOXOOX")
    assert state.to_play == "chaos" and state.legal_actions() == [8, 9]
    assert HeuristicAgent(seed=0).best_actions(state) == [9]


def test_chaos_with_only_losing_moves_may_play_any() -> None:
    # The last cell, e1: X there ends row 1 as XXXXX, O there ends column e as OOOOO.
    state = parse_board("XXXX.O OOXOOX XXOXOO OOXOOX XXOXOO OOXOXX")
    assert not state.has_five and state.to_play == "chaos"
    assert HeuristicAgent(seed=0).best_actions(state) == [8, 9]


def test_lost_chaos_blocks_one_of_two_fours() -> None:
    # Order completes row 1 with X on e1 and row 3 with O on e3. Chaos can block one: O on
    # e1 (action 9) or X on e3 (action 32); any other move leaves both.
    state = parse_board("XXXX.. ...... OOOO.. ...... ...... .....X")
    assert state.to_play == "chaos"
    assert HeuristicAgent(seed=0).best_actions(state) == [9, 32]


def test_chaos_leaves_order_no_double_threat_when_it_can() -> None:
    # Order has X on f3, f4, f5 (column f: windows f1-f5 and f2-f6) and on e2, d3, c4 (the
    # diagonal from f1 to a6: windows f1-b5 and e2-a6). Killing one family leaves the other
    # a double threat (X on b5 leaves f1 and a6; X on f2 leaves f1 and f6). f1 is the one
    # cell in a window of each family: O there leaves two windows with no common empty cell,
    # so each X next makes one completion cell only. (X on f1 would make a four.)
    state = parse_board("...... ....X. ...X.X ..X..X .....X ..X...")
    assert state.to_play == "chaos" and not state.threats()
    assert HeuristicAgent(seed=0).best_actions(state) == [11]


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
