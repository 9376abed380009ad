"""The central-pairing strategy: the centre game's table, covers() and move(), the player."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from orderchaos.agents import make, strategy
from orderchaos.agents.registry import SpecError, check_role
from orderchaos.agents.solver import SolverAgent, solve
from orderchaos.agents.strategy import CENTRE_CELLS, CENTRE_LINES, PAIRS, StrategyAgent, covers, move
from orderchaos.arena.matches import play_game
from orderchaos.envs.rules import CHAOS, ORDER, IllegalActionError, State, parse_board, parse_cell

from helpers import brute_centre, endgames, naive_facts, winning_moves


def centre_state(x: int, o: int) -> State:
    """A 6x6 state holding the 16-bit centre boards ``x`` and ``o`` (border empty)."""
    bx = sum(1 << c for i, c in enumerate(CENTRE_CELLS) if x >> i & 1)
    bo = sum(1 << c for i, c in enumerate(CENTRE_CELLS) if o >> i & 1)
    return State(bx, bo)


def test_pairs_are_the_border_and_each_extends_its_central_line() -> None:
    border = sorted(c for c in range(36) if c // 6 in (0, 5) or c % 6 in (0, 5))
    assert sorted(c for p in PAIRS for c in p) == border
    for (p, q), line in zip(PAIRS, CENTRE_LINES):
        cells = [p, *(CENTRE_CELLS[i] for i in line), q]
        steps = {b - a for a, b in zip(cells, cells[1:])}
        assert len(steps) == 1 and steps.pop() in (1, 6, 7, 5), (p, q, line)
    assert strategy.pair_names()[0] == ["a2", "f2"] and strategy.pair_names()[-1] == ["f1", "a6"]


def test_centre_table_agrees_with_brute_force_on_random_sub_positions() -> None:
    rng = np.random.default_rng(32)
    table = strategy.centre_table()
    checked = {True: 0, False: 0}
    for _ in range(300):
        stones = int(rng.integers(9, 14))
        cells = rng.permutation(16)[:stones]
        x = o = 0
        for c in cells:
            if rng.random() < 0.5:
                x |= 1 << int(c)
            else:
                o |= 1 << int(c)
        expected = brute_centre(x, o)
        assert table[strategy.centre_index(centre_state(x, o))] == expected, (x, o)
        checked[expected >= 0] += 1
    assert min(checked.values()) > 30  # both outcomes were met often


def test_order_wins_the_centre_game_from_the_empty_4x4_and_after_every_first_move() -> None:
    table = strategy.centre_table()
    assert table[0] >= 0
    empty = State()
    for c in CENTRE_CELLS:
        for s in (0, 1):
            assert covers(empty.apply(2 * c + s))
    assert move(empty) == 2 * parse_cell("c3")


def covered_positions(draw: st.DrawFn) -> State:
    """A position built from the strategy's pieces: each pair empty, mixed or (seldom) with
    equal symbols (X X or O O), at most one pair with a single stone, a random centre; 8-20 empty cells."""
    x = o = 0
    half = draw(st.sampled_from([None, *range(10)]))
    for i, (p, q) in enumerate(PAIRS):
        kind = draw(st.sampled_from(["empty", "xo", "ox", "mixed", "xx", "oo"] if i != half else ["x", "o"]))
        if kind == "mixed":
            kind = draw(st.sampled_from(["xo", "ox"]))
        for cell, ch in zip((p, q), kind if kind != "empty" else ""):
            if ch == "x":
                x |= 1 << cell
            else:
                o |= 1 << cell
    for c in CENTRE_CELLS:
        ch = draw(st.sampled_from(".XO"))
        if ch == "X":
            x |= 1 << c
        elif ch == "O":
            o |= 1 << c
    s = State(x, o)
    assume(8 <= s.num_empty <= 20 and not s.is_terminal)
    return s


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.composite(covered_positions)())
def test_covers_never_claims_a_position_the_solver_says_chaos_wins(s: State) -> None:
    assume(covers(s))
    assert solve(s).winner == ORDER, s.to_string()


def test_move_keeps_every_chaos_reply_covered() -> None:
    """From positions of the strategy's own games: Order's move, then every Chaos reply
    is covered again or ends the game with a five."""
    rng = np.random.default_rng(5)
    checked = 0
    for _ in range(12):
        s = State()
        while not s.is_terminal:
            if s.to_play == ORDER:
                assert covers(s), s.to_string()
                after = s.apply(move(s))
                if not after.is_terminal:
                    for a in after.legal_actions():
                        reply = after.apply(a)
                        assert reply.winner == ORDER or covers(reply), reply.to_string()
                        checked += 1
                s = after
            else:
                s = s.apply(int(rng.choice(s.legal_actions())))
        assert s.winner == ORDER
    assert checked > 1000


def test_move_answers_a_border_stone_on_its_partner_with_the_other_symbol() -> None:
    s = State().apply(2 * parse_cell("c3")).apply(2 * parse_cell("a2") + 1)  # c3 X, a2 O
    assert move(s) == 2 * parse_cell("f2")  # f2 X
    s = State().apply(2 * parse_cell("c3")).apply(2 * parse_cell("a6"))  # c3 X, a6 X
    assert move(s) == 2 * parse_cell("f1") + 1  # f1 O


def test_a_pair_with_equal_symbols_or_two_half_pairs_is_not_covered() -> None:
    c3, a2, f2, b1 = (parse_cell(n) for n in ("c3", "a2", "f2", "b1"))
    equal = State().apply(2 * c3).apply(2 * a2).apply(2 * f2).apply(2 * parse_cell("d4") + 1)
    assert not covers(equal)
    equal_o = State().apply(2 * c3).apply(2 * a2 + 1).apply(2 * f2 + 1).apply(2 * parse_cell("d4") + 1)
    assert not covers(equal_o)  # O O is as much outside the strategy as X X
    with pytest.raises(ValueError, match="does not cover"):
        move(equal_o)
    two_half = State().apply(2 * c3).apply(2 * a2).apply(2 * b1 + 1).apply(2 * parse_cell("d4") + 1)
    assert not covers(two_half)
    with pytest.raises(ValueError, match="does not cover"):
        move(equal)


def test_a_move_that_completes_a_five_keeps_the_win() -> None:
    """Row 3 reads XXX.XX: X on d3 makes a six (a win), O there does not."""
    state = parse_board("......" "......" "XXX.XX" "O....." "......" "......")
    assert state.to_play == ORDER
    assert strategy.keeps_win(state, 2 * parse_cell("d3"))
    assert not strategy.keeps_win(state, 2 * parse_cell("d3") + 1)
    assert 2 * parse_cell("d3") in strategy.keeping_moves(state)


def test_keeping_moves_hold_every_five_and_only_moves_that_win() -> None:
    """On seeded endgames (Order to move, six empty cells): every move that completes a
    five (by the brute-force board reading) keeps the win, and every keeping move wins by
    plain minimax; with Chaos to move there are none."""
    fives = 0
    for state in endgames(40, 6, seed=7):
        keeping = strategy.keeping_moves(state)
        board = state.to_string()
        completing = [a for a in state.legal_actions()
                      if naive_facts(board[:a >> 1] + "XO"[a & 1] + board[(a >> 1) + 1:])["winner"] == ORDER]
        assert set(completing) <= set(keeping) <= set(winning_moves(state)), board
        assert keeping == sorted(keeping)
        fives += len(completing)
        some_reply = state.apply(state.legal_actions()[0])
        assert some_reply.is_terminal or strategy.keeping_moves(some_reply) == []
    assert fives >= 10


def test_the_strategy_player_plays_order_only() -> None:
    agent = make("strategy")
    assert isinstance(agent, StrategyAgent)
    with pytest.raises(IllegalActionError, match="Order only"):
        agent.act(State().apply(28))
    check_role("strategy", ORDER)
    with pytest.raises(SpecError, match="order only"):
        check_role("strategy", CHAOS)
    with pytest.raises(SpecError, match="unknown parameter"):
        make("strategy:seed=3")


def test_the_solver_player_answers_covered_order_positions_from_the_strategy() -> None:
    agent = SolverAgent(seed=0)
    s = State().apply(28).apply(2 * parse_cell("f6") + 1)  # c3 X, f6 O: a reply the book leaves open
    assert agent.act(s) == move(s) and agent.last_reason == "strategy"


@pytest.mark.parametrize("order_spec", ["strategy", "solver"])
@pytest.mark.parametrize("chaos_spec,games", [("random", 60), ("heuristic", 30), ("pretrained", 4),
                                              ("solver:time=0.05", 3)])
def test_strategy_and_solver_as_order_never_lose(order_spec: str, chaos_spec: str, games: int) -> None:
    for seed in range(games):
        record = play_game(make(order_spec, seed=seed), make(chaos_spec, seed=seed))
        assert record.winner == ORDER, (order_spec, chaos_spec, seed, record.actions)


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("order_spec", ["strategy", "solver", "pretrained:solver=26"])
@pytest.mark.parametrize("chaos_spec,games", [("pretrained", 20), ("solver:time=0.2", 10), ("random", 100)])
def test_strategy_players_as_order_never_lose_against_strong_chaos(order_spec: str, chaos_spec: str,
                                                                   games: int) -> None:
    for seed in range(games):
        record = play_game(make(order_spec, seed=seed), make(chaos_spec, seed=seed))
        assert record.winner == ORDER, (order_spec, chaos_spec, seed, record.actions)


def test_the_long_compiled_loops_release_the_gil() -> None:
    """The centre game's solve (seconds) and the solver's search run in a web server's threads:
    holding the GIL they froze its event loop (GET /healthz waited 22 s at startup)."""
    from orderchaos.agents import solver_kernel

    assert strategy._solve_centre.targetoptions.get("nogil") is True
    assert solver_kernel.search.targetoptions.get("nogil") is True
