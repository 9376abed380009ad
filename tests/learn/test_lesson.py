"""The lesson's steps, the strategy's verdict on the learner's moves, and its Chaos."""

from __future__ import annotations

from typing import Any

import pytest

from orderchaos.agents import strategy
from orderchaos.agents.solver import Solver
from orderchaos.learn.lesson import (
    GOAL_FIVE,
    GOAL_KEEP,
    GOAL_PAIRS,
    STEPS,
    chaos_reply,
    lesson_outline,
    lesson_turn,
    replay,
    step_by_id,
)
from orderchaos.envs.rules import CHAOS, ORDER, IllegalActionError, State, action_name, parse_action_name, parse_board

from helpers import brute_centre, centre_bits


@pytest.fixture(scope="module")
def solver() -> Solver:
    return Solver(tt_bits=18)


def test_every_step_starts_with_order_to_move_in_a_position_the_strategy_wins() -> None:
    assert [s.id for s in STEPS] == ["six", "open_four", "pairs", "border", "central_four", "centre", "win"]
    for step in STEPS:
        start = step.start()
        assert start.to_play == ORDER and not start.is_terminal and strategy.covers(start), step.id
    names = lambda step: [action_name(a) for a in strategy.keeping_moves(step.start())]  # noqa: E731
    assert names(step_by_id("six")) == ["d3 X"]  # only the six wins at once
    assert names(step_by_id("border")) == ["e6 O"]  # the partner, with the other symbol
    assert names(step_by_id("central_four")) == ["f3 X"]
    assert "b4 X" in names(step_by_id("open_four"))


def test_the_outline_has_the_ten_pairs_and_each_quiz_answer() -> None:
    outline = lesson_outline()
    cells = [c for pair in outline["pairs"] for c in pair["cells"]]
    assert len(outline["pairs"]) == 10 and len(set(cells)) == 20 and len(outline["centre"]) == 16
    assert not set(cells) & set(outline["centre"])
    quiz = next(s for s in outline["steps"] if s["goal"] == GOAL_PAIRS)["quiz"]
    assert quiz == [{"cell": "c1", "partner": "c6"}, {"cell": "a5", "partner": "f5"}, {"cell": "f1", "partner": "a6"}]


@pytest.mark.parametrize("step", [s for s in STEPS if s.goal != GOAL_PAIRS], ids=lambda s: s.id)
def test_the_strategy_completes_every_step_and_each_of_its_moves_keeps_the_win(step, solver) -> None:
    moves: list[int] = []
    for _ in range(20):
        out = lesson_turn(step.id, moves, strategy.move(replay(step, moves)), solver.solve, seed=3)
        assert out["verdict"]["mark"] == "keeps", (step.id, out["played"])
        if out["reply"] is not None:
            assert out["moves"][-1] == out["reply"] and out["winner"] is None  # Chaos never hands Order a five
        moves = out["moves"]
        if out["done"]:
            break
    assert out["done"], step.id
    if step.goal == GOAL_FIVE:
        assert out["winner"] == ORDER and out["reply"] is None
    else:
        assert step.goal == GOAL_KEEP and out["reply"] is None and len(moves) == 1


def test_a_mistake_is_marked_with_the_move_that_would_have_kept_the_win(solver) -> None:
    out = lesson_turn("border", [], parse_action_name("e6 X"), solver.solve)
    assert out["verdict"] == {"mark": "leaves", "strategy_move": "e6 O", "keeping": ["e6 O"]}
    assert not out["done"] and out["reply"] is not None
    # after the mistake the strategy proves nothing more: the next move has no mark
    state = replay(step_by_id("border"), out["moves"])
    follow = lesson_turn("border", out["moves"], state.legal_actions()[0], solver.solve)
    assert follow["verdict"] == {"mark": None, "strategy_move": None, "keeping": []}


def by_nodes(solver: Solver, nodes: int) -> Any:
    """``solver.solve`` with the lesson's time limit replaced by a node limit: the same
    answers however busy the machine is."""
    def solve(state: State, *, time_limit: float | None = None, **options: Any) -> Any:
        return solver.solve(state, node_limit=nodes, **options)

    return solve


def test_chaos_takes_its_win_once_order_leaves_the_strategy(solver) -> None:
    """Late in a game, off the strategy, with a Chaos win the solver proves: every reply
    keeps it (seeds 0..4). The solver the lesson is given stops by nodes, not by its
    second."""
    state = parse_board("OXXX...O..X...OOX.OXO..X.OX..OX..X.X")  # from a seeded random game; the fallback move loses here
    assert state.to_play == CHAOS and not strategy.covers(state)
    proven = solver.solve(state, moves=True)
    assert proven.winner == CHAOS and len(proven.best_actions) == 2  # 32 of the 34 moves lose
    for seed in range(5):
        reply = chaos_reply(state, by_nodes(solver, 1_000_000), seed)
        assert solver.solve(state.apply(reply)).winner == CHAOS


def test_bad_requests_name_what_is_wrong(solver) -> None:
    with pytest.raises(ValueError, match="no lesson step 'nosuch'; the steps are six, open_four"):
        lesson_turn("nosuch", [], 0, solver.solve)
    with pytest.raises(ValueError, match="quiz on the pairs"):
        lesson_turn("pairs", [], 0, solver.solve)
    with pytest.raises(IllegalActionError, match="move 1 of the list"):
        lesson_turn("six", [parse_action_name("a3 O")], 0, solver.solve)
    with pytest.raises(ValueError, match="Chaos is to move"):
        lesson_turn("win", [28], 0, solver.solve)
    with pytest.raises(IllegalActionError, match="already holds"):
        lesson_turn("six", [], parse_action_name("a3 O"), solver.solve)
    with pytest.raises(ValueError, match="list of at most 36"):
        lesson_turn("win", "28", 0, solver.solve)
    with pytest.raises(ValueError, match="like 'c3 X'"):
        parse_action_name("c3")


def test_in_the_strategy_chaos_plays_a_best_scored_centre_move_or_a_border_move(solver) -> None:
    """Over seeds, positions along the strategy's games: every Chaos reply is quiet (no five
    for Order), and a centre reply leaves Order the fewest moves that keep the strategy's
    win of all quiet centre moves (all quiet moves when Order threatens a five); some
    replies are border moves. Judged without the lesson's own score: among the replies
    tied on that count, Chaos's leaves the longest centre game by plain minimax over the
    4x4 (from seven centre stones on, where it is quick; one such tie has replies of
    different lengths)."""
    border_replies = tie_breaks = 0
    for seed in range(4):
        moves: list[int] = []
        step = step_by_id("win")
        while True:
            state = replay(step, moves).apply(strategy.move(replay(step, moves)))
            if state.is_terminal:
                break
            reply = chaos_reply(state, solver.solve, seed)
            assert not state.apply(reply).has_five
            quiet = [a for a in state.legal_actions() if not state.apply(a).has_five]
            if reply >> 1 in strategy.CENTRE_CELLS or state.threats():
                pool = quiet if state.threats() else [a for a in quiet if a >> 1 in strategy.CENTRE_CELLS]
                kept = {a: len(strategy.keeping_moves(state.apply(a))) for a in pool}
                tied = [a for a in pool if kept[a] == min(kept.values())]
                assert reply in tied
                if sum(bin(bits).count("1") for bits in centre_bits(state)) >= 7:
                    plies = {a: brute_centre(*centre_bits(state.apply(a))) for a in tied}
                    assert plies[reply] == max(plies.values()), (state.to_string(), plies)
                    tie_breaks += len(set(plies.values())) > 1
            else:
                border_replies += 1
            moves = [*moves, strategy.move(replay(step, moves)), reply]
    assert border_replies >= 4 and tie_breaks >= 1
