"""The pairing argument with equal pairs and open half pairs: the symmetry map onto the three
representative lines, the restricted and half-pair tables against plain minimax, and every
position the extended rule claims against the exact solver."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from orderchaos.agents import pairing_extended as pe
from orderchaos.agents import strategy
from orderchaos.agents.solver import solve
from orderchaos.agents.strategy import CENTRE_CELLS, CENTRE_LINES, PAIRS
from orderchaos.envs.rules import ORDER, O, X, State, parse_cell
from orderchaos.envs.symmetry import CELL_PERM

LINE_BITS = [sum(1 << i for i in line) for line in CENTRE_LINES]
DIAGONAL = 8  # the pair a1-f6, the representative of the two diagonal pairs (8, 9)


def test_every_pair_and_symbol_maps_onto_its_representative_and_x() -> None:
    assert len(pe.PAIR_IMAGES) == 20
    kinds = {}
    for (pair, symbol), (g, rep) in pe.PAIR_IMAGES.items():
        p, q = PAIRS[pair]
        assert {CELL_PERM[g & 7][p], CELL_PERM[g & 7][q]} == set(PAIRS[rep])
        assert (g >= 8) == (symbol == O)  # the symbol goes to X
        kinds.setdefault(rep, set()).add(pair)
    assert kinds == {0: {0, 3, 4, 7}, 1: {1, 2, 5, 6}, 8: {8, 9}}


def test_positions_outside_the_extended_cases_are_not_claimed_without_tables() -> None:
    # three half pairs with Chaos to move, and two equal pairs: no case applies
    s = State()
    for name, symbol in (("a1", X), ("b1", X), ("c1", O)):
        s = s.apply(2 * parse_cell(name) + symbol)
    assert s.to_play != ORDER and not pe.covers_extended(s)
    t = State()
    for name, symbol in (("a1", X), ("f6", X), ("b1", O), ("b6", O)):
        t = t.apply(2 * parse_cell(name) + symbol)
    assert not pe.covers_extended(t)
    with pytest.raises(ValueError):
        pe.extended_move(t)


# ---------------------------------------------------------------------------------------
# The tables against plain minimax (the diagonal class; building tables takes a while).
# ---------------------------------------------------------------------------------------


def _four(x: int, o: int, restricted: bool) -> bool:
    """A counted four: on the diagonal b2-e5 (centre line 8) only X counts when restricted."""
    return any(x & m == m or (o & m == m and not (restricted and i == DIAGONAL)) for i, m in enumerate(LINE_BITS))


@lru_cache(maxsize=None)
def brute(x: int, o: int, order_to_move: bool, restricted: bool, half_open: bool) -> bool:
    """Does Order win the centre game (16-bit boards) with the diagonal restricted to X, and,
    with ``half_open``, the half pair beside it that either side may fill instead of a
    centre move (Order's fill lifts the restriction, Chaos's keeps it)?"""
    if _four(x, o, restricted):
        return True
    empty = [i for i in range(16) if not (x | o) >> i & 1]
    children = [brute(x | 1 << i, o, not order_to_move, restricted, half_open) for i in empty]
    children += [brute(x, o | 1 << i, not order_to_move, restricted, half_open) for i in empty]
    if half_open:
        children.append(brute(x, o, False, False, False) if order_to_move else brute(x, o, True, True, False))
    if order_to_move:
        return any(children)
    return bool(children) and all(children)


@pytest.fixture(scope="module")
def diagonal_tables() -> dict[str, pe.Tables]:
    return {"restricted": pe.restricted_table(DIAGONAL), "half": pe.half_pair_table(DIAGONAL)}


def _random_centre(rng: np.random.Generator, fewest: int = 9) -> tuple[int, int]:
    stones = int(rng.integers(fewest, 14))
    x = o = 0
    for c in rng.permutation(16)[:stones]:
        if rng.random() < 0.5:
            x |= 1 << int(c)
        else:
            o |= 1 << int(c)
    return x, o


def _index(x: int, o: int) -> int:
    return sum(3**i * (1 if x >> i & 1 else 2 if o >> i & 1 else 0) for i in range(16))


@pytest.mark.parametrize("kind", ["restricted", "half"])
def test_tables_agree_with_minimax_on_a_sample_of_centres(diagonal_tables: dict[str, pe.Tables], kind: str) -> None:
    """The default run's check of the diagonal's two tables (about half a minute to build
    on a busy machine): 100 seeded centres of 10 to 13 stones, where minimax is quick, both
    sides to move, against plain minimax; both outcomes are met."""
    rng = np.random.default_rng(62)
    tables = diagonal_tables[kind]
    outcomes = {True: 0, False: 0}
    for _ in range(100):
        x, o = _random_centre(rng, 10)
        for order_to_move in (True, False):
            expected = brute(x, o, order_to_move, True, kind == "half")
            assert (int(tables[0 if order_to_move else 1][_index(x, o)]) >= 0) == expected, (kind, x, o, order_to_move)
            outcomes[expected] += 1
    assert min(outcomes.values()) >= 30, outcomes


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("kind", ["restricted", "half"])
def test_tables_agree_with_minimax_on_random_centres(diagonal_tables: dict[str, pe.Tables], kind: str) -> None:
    rng = np.random.default_rng(52)
    tables = diagonal_tables[kind]
    outcomes = {True: 0, False: 0}
    for _ in range(250):
        x, o = _random_centre(rng)
        for order_to_move in (True, False):
            expected = brute(x, o, order_to_move, True, kind == "half")
            value = int(tables[0 if order_to_move else 1][_index(x, o)])
            assert (value >= 0) == expected, (kind, x, o, order_to_move)
            outcomes[expected] += 1
    assert min(outcomes.values()) > 50  # both outcomes met often


# ---------------------------------------------------------------------------------------
# Every claim against the exact solver.
# ---------------------------------------------------------------------------------------


SPECIAL_PAIR_KINDS = ("XX", "OO", "X.", ".X", "O.", ".O")
PLAIN_PAIR_KINDS = ("..", "XO", "OX")


@st.composite
def extended_positions(draw: st.DrawFn) -> State:
    """Positions of the extended cases: one or two pairs (any of the 10, so all three kinds of
    line and both symbols) equal or half-filled, the other pairs empty or mixed, a random
    centre; 8-20 empty cells."""
    board = ["."] * 36
    special = draw(st.sets(st.integers(0, 9), min_size=1, max_size=2))
    for i, (p, q) in enumerate(PAIRS):
        board[p], board[q] = draw(st.sampled_from(SPECIAL_PAIR_KINDS if i in special else PLAIN_PAIR_KINDS))
    for cell, ch in zip(CENTRE_CELLS, draw(st.lists(st.sampled_from(".XO"), min_size=16, max_size=16))):
        board[cell] = ch
    s = State(sum(1 << c for c, ch in enumerate(board) if ch == "X"), sum(1 << c for c, ch in enumerate(board) if ch == "O"))
    assume(8 <= s.num_empty <= 20 and not s.is_terminal)
    return s


def test_the_diagonals_extended_claims_on_a_sample_are_order_wins_by_the_exact_solver(
    diagonal_tables: dict[str, pe.Tables]
) -> None:
    """The default run's check against the solver, on the diagonal pairs' tables only:
    seeded boards with one diagonal pair (a1-f6 or f1-a6) equal or half filled, the other
    pairs empty or mixed, a random centre and 8 to 12 empty cells; the first 40 the extended
    rule claims (and the plain strategy does not) are Order wins, both sides to move met."""
    rng = np.random.default_rng(62)
    claims: list[State] = []
    while len(claims) < 40:
        board = ["."] * 36
        special = int(rng.choice([8, 9]))
        for i, (p, q) in enumerate(PAIRS):
            kinds = SPECIAL_PAIR_KINDS if i == special else PLAIN_PAIR_KINDS
            board[p], board[q] = kinds[int(rng.integers(len(kinds)))]
        for cell in CENTRE_CELLS:
            board[cell] = ".XO"[int(rng.integers(3))]
        s = State(sum(1 << c for c, ch in enumerate(board) if ch == "X"),
                  sum(1 << c for c, ch in enumerate(board) if ch == "O"))
        if 8 <= s.num_empty <= 12 and not s.is_terminal and pe.covers_extended(s) and not strategy.covers(s):
            claims.append(s)
    for s in claims:
        assert solve(s).winner == ORDER, s.to_string()
    assert 10 <= sum(s.to_play == ORDER for s in claims) <= 30


@pytest.fixture(scope="module")
def every_table() -> None:
    """Every restricted and half-pair table (the three kinds of line), built once."""
    for rep in pe.REPRESENTATIVE_PAIRS:
        pe.half_pair_table(rep)


@pytest.mark.slow
@pytest.mark.timeout(3600)
@settings(max_examples=500, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture])
@given(extended_positions())
def test_every_extended_claim_is_an_order_win_by_the_exact_solver(every_table: None, s: State) -> None:
    assume(pe.covers_extended(s) and not strategy.covers(s))
    assert solve(s).winner == ORDER, s.to_string()
    if s.to_play == ORDER:  # Order's move keeps every Chaos reply claimed, or wins
        after = s.apply(pe.extended_move(s))
        assert after.winner == ORDER or all(
            after.apply(a).winner == ORDER or pe.covers_extended(after.apply(a)) for a in after.legal_actions()
        ), s.to_string()


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_border_first_moves_are_claimed_and_were_unclaimed(diagonal_tables: dict[str, pe.Tables]) -> None:
    a1 = State().apply(2 * parse_cell("a1"))
    assert not strategy.covers(a1) and pe.covers_extended(a1)
    f6x = a1.apply(2 * parse_cell("f6"))  # Chaos makes the pair equal: the diagonal counts for X only
    assert not strategy.covers(f6x) and pe.covers_extended(f6x)
    assert pe.extended_move(f6x) >> 1 in CENTRE_CELLS


def test_the_extended_player_plays_the_rule_where_only_it_covers_and_the_strategy_elsewhere() -> None:
    from orderchaos.agents.registry import SpecError, check_role, make
    from orderchaos.envs.rules import CHAOS

    agent = make("strategy:extended")
    assert isinstance(agent, pe.ExtendedStrategyAgent)
    check_role("strategy:extended", ORDER)
    with pytest.raises(SpecError, match="order only"):
        check_role("strategy:extended", CHAOS)
    assert agent.act(State()) == strategy.move(State()) and agent.last_reason == "strategy"
    # a1 X, then Chaos makes the diagonal pair equal: outside the plain rule, inside the extended one
    equal = State().apply(2 * parse_cell("a1")).apply(2 * parse_cell("f6"))
    assert agent.act(equal) == pe.extended_move(equal) and agent.last_reason == "extended"
    plain = make("strategy")
    plain.act(equal)
    assert plain.last_reason == "fallback"


@pytest.mark.slow
def test_the_extended_player_wins_after_a_border_first_move_where_the_plain_strategy_loses() -> None:
    from orderchaos.agents.registry import make

    a1 = 2 * parse_cell("a1")
    plain_losses = 0
    for seed in range(6):
        for spec in ("strategy", "strategy:extended"):
            order, chaos, state = make(spec), make("heuristic", seed=seed), State().apply(a1)
            while not state.is_terminal:
                mover = order if state.to_play == ORDER else chaos
                state = state.apply(mover.act(state))
                if mover is order and spec == "strategy:extended":
                    assert order.last_reason in ("strategy", "extended"), (seed, state.to_string())
            if spec == "strategy":
                plain_losses += state.winner != ORDER
            else:
                assert state.winner == ORDER, seed
    assert plain_losses > 0  # the games do leave the plain rule
