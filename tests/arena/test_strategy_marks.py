"""Does an Order move keep the win the central-pairing strategy proves? strategy_verdict and
strategy_marks, checked by hand on the border rule and against the exact solver on seeded
positions from games where Order mostly follows the strategy."""

from __future__ import annotations

import numpy as np
import pytest

from orderchaos.agents import strategy
from orderchaos.agents.solver import Solver
from orderchaos.arena.analysis import STRATEGY_KEEPS, STRATEGY_LEAVES, strategy_marks, strategy_verdict, study
from orderchaos.envs.rules import CHAOS, ORDER, State, action_name, parse_cell


def act(name: str) -> int:
    """``"c3 X"`` as an action."""
    cell, symbol = name.split()
    return 2 * parse_cell(cell) + (0 if symbol == "X" else 1)


def play(*names: str) -> State:
    state = State()
    for name in names:
        state = state.apply(act(name))
    return state


def test_the_border_answer_keeps_the_win_and_everything_else_leaves_it() -> None:
    after_border = play("c3 X", "a2 X")  # Chaos played a2: its partner is f2
    verdict = strategy_verdict(after_border, act("f2 O"))
    assert verdict.mark == STRATEGY_KEEPS and action_name(verdict.strategy_move) == "f2 O"
    assert [action_name(a) for a in verdict.keeping] == ["f2 O"]
    for wrong in ("f2 X", "d4 X", "a3 O"):
        other = strategy_verdict(after_border, act(wrong))
        assert other.mark == STRATEGY_LEAVES and action_name(other.strategy_move) == "f2 O", wrong


def test_a_move_in_a_position_the_strategy_does_not_cover_has_no_mark() -> None:
    border_first = State()
    assert strategy_verdict(border_first, act("c3 X")).mark == STRATEGY_KEEPS
    assert strategy_verdict(border_first, act("a1 X")).mark == STRATEGY_LEAVES
    off = play("a1 X", "f6 X")  # a pair with two equal symbols: outside the strategy for good
    verdict = strategy_verdict(off, act("c3 X"))
    assert verdict.mark is None and verdict.strategy_move is None and verdict.keeping == ()
    with pytest.raises(ValueError, match="Order's moves only"):
        strategy_verdict(play("c3 X"), act("d4 O"))


def test_strategy_marks_of_a_game_mark_order_moves_only() -> None:
    names = ["c3 X", "a2 X", "f2 X", "b2 O", "d4 X"]
    marks = strategy_marks([act(n) for n in names])
    assert marks == [STRATEGY_KEEPS, None, STRATEGY_LEAVES, None, None]


def test_study_reports_the_strategy_marks_beside_the_solver() -> None:
    solver = Solver(tt_bits=16)
    actions = [act(n) for n in ("c3 X", "a2 X", "f2 O", "b2 O")]
    report = study(actions, solver.solve, 0.5)
    assert report["strategy"] == [STRATEGY_KEEPS, None, STRATEGY_KEEPS, None]
    assert len(report["marks"]) == len(report["strategy"]) == len(actions)


def sampled_positions(seed: int, games: int, min_stones: int) -> list[State]:
    """Order-to-move positions the strategy covers, from games where Order plays the
    strategy's move 85% of the time and otherwise any covered-keeping or random move, and
    Chaos plays at random; only positions with at least ``min_stones`` stones."""
    rng = np.random.default_rng(seed)
    found: list[State] = []
    for _ in range(games):
        state = State()
        while not state.is_terminal:
            if state.to_play == ORDER and strategy.covers(state):
                if state.num_stones >= min_stones:
                    found.append(state)
                action = strategy.move(state) if rng.random() < 0.85 else int(rng.choice(state.legal_actions()))
            else:
                action = int(rng.choice(state.legal_actions()))
            state = state.apply(action)
    return found


def test_every_move_that_keeps_the_strategys_win_is_a_win_for_the_solver() -> None:
    """On seeded covered positions: the strategy's own move keeps its win, every move marked
    "keeps" is a proven Order win, a move marked "leaves" leaves an uncovered position, and
    among the leaving moves the solver finds real losses (so the marks do tell moves apart)."""
    solver = Solver(tt_bits=18)
    rng = np.random.default_rng(7)
    proven_keeps = proven_lost_leaves = 0
    for state in sampled_positions(seed=11, games=12, min_stones=12):
        legal = state.legal_actions()
        sample = sorted({int(a) for a in rng.choice(legal, size=min(6, len(legal)), replace=False)})
        verdict = strategy_verdict(state, sample[0])
        assert verdict.strategy_move in verdict.keeping
        for action in sorted(set(sample) | set(verdict.keeping)):
            mark = strategy_verdict(state, action).mark
            child = state.apply(action)
            winner = solver.solve(child, node_limit=300_000).winner
            if mark == STRATEGY_KEEPS:
                assert winner in (ORDER, None), f"{state.to_string()} {action_name(action)} keeps, but the solver says {winner}"
                proven_keeps += winner == ORDER
            else:
                assert mark == STRATEGY_LEAVES and not strategy.covers(child)
                proven_lost_leaves += winner == CHAOS
    assert proven_keeps >= 100 and proven_lost_leaves >= 5, (proven_keeps, proven_lost_leaves)
