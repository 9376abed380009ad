"""Only boards some game reaches are accepted: parse_board, the solver and the envs refuse a
board with fives that no single last move made, in one line saying why."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import games

from orderchaos.agents.solver import Solver
from orderchaos.cli.main import main
from orderchaos.envs.rules import (
    CELLS,
    FULL,
    BoardStringError,
    State,
    check_reachable,
    has_five_bits,
    parse_board,
    unreachable_reason,
)


def reachable_by_removal(x: int, o: int) -> bool:
    """The oracle, by its definition and not by window arithmetic: a board without a five
    is reached in any order; a board with one is reached when taking back one stone leaves
    a board without a five (that stone was the last move)."""
    def five(xx: int, oo: int) -> bool:
        return has_five_bits(xx) or has_five_bits(oo)

    if not five(x, o):
        return True
    return any(
        not five(x & ~(1 << c), o & ~(1 << c)) for c in range(CELLS) if (x | o) >> c & 1
    )


@settings(max_examples=200, deadline=None)
@given(games())
def test_every_board_of_a_random_game_is_accepted(states: list[State]) -> None:
    for state in states:
        assert unreachable_reason(state.x, state.o) is None
        assert parse_board(state.to_string()) == state


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(0.55, 1.0))
def test_random_dense_boards_agree_with_taking_back_one_stone(seed: int, density: float) -> None:
    """Dense random fillings (not games) have fives everywhere: the check agrees with the
    take-back oracle on each, and parse_board accepts exactly the reachable ones."""
    rng = np.random.default_rng(seed)
    cells = rng.random(CELLS) < density
    symbols = rng.random(CELLS) < rng.random()
    x = sum(1 << c for c in range(CELLS) if cells[c] and symbols[c])
    o = sum(1 << c for c in range(CELLS) if cells[c] and not symbols[c])
    board = State(x, o).to_string()
    if reachable_by_removal(x, o):
        assert unreachable_reason(x, o) is None
        assert parse_board(board) == State(x, o)
    else:
        reason = unreachable_reason(x, o) or ""
        found = re.fullmatch(r"its (\d+) fives share no cell, so no single last move made them; "
                             r"a game ends at its first five", reason)
        assert found and int(found.group(1)) >= 2, reason  # one five always has a last move
        with pytest.raises(BoardStringError, match="no game reaches the board"):
            parse_board(board)


TWO_FIVES_APART = "XXXXX. ...... ...... ...... ...... OOOOO."
X_FIVE_AND_O_FIVE_CROSSING = "XXXXX. O..... O..... O..... O..... O....."  # no shared cell
FULL_OF_X = "X" * 36
FIVES_SHARING_A1 = "XXXXX. X..... X..... X..... X..... ......"  # the last move was a1
SIX_AND_CROSSING_FIVE = "XXXXXX X..... X..... X..... X..... ......"  # b1-f1 stood before a1


@pytest.mark.parametrize(
    "board, fives",
    [(TWO_FIVES_APART, 2), (X_FIVE_AND_O_FIVE_CROSSING, 2), (FULL_OF_X, 32), (SIX_AND_CROSSING_FIVE, 3)],
)
def test_planted_unreachable_boards_are_refused_in_one_line(board: str, fives: int, capsys) -> None:
    with pytest.raises(BoardStringError) as err:
        parse_board(board)
    compact = board.replace(" ", "")
    assert str(err.value) == (f"no game reaches the board {compact!r}: its {fives} fives share no cell, "
                              "so no single last move made them; a game ends at its first five")
    with pytest.raises(BoardStringError):
        Solver(tt_bits=12).solve(State(*_bits(compact)))
    assert main(["solve", board]) == 2
    out = capsys.readouterr()
    assert out.out == "" and len(out.err.splitlines()) == 1 and "share no cell" in out.err


def test_boards_a_game_ends_on_are_accepted() -> None:
    assert parse_board(FIVES_SHARING_A1).has_five
    assert parse_board("XXXXXX" + "." * 30).has_five  # a six: its last move was b1..e1
    full_no_five = "XXOOXX OOXXOO XXOOXX OOXXOO XXOOXX OOXXOO"
    assert parse_board(full_no_five).winner == "chaos"  # a full board without a five is fine
    assert check_reachable(State()) == State()


def test_broken_bitboards_are_refused() -> None:
    assert unreachable_reason(1, 1) == "a cell holds both X and O"
    assert unreachable_reason(1 << 36, 0) == "a stone lies outside the 36 cells"
    assert unreachable_reason(FULL, 0) == (  # every one of the 32 windows is a five of X
        "its 32 fives share no cell, so no single last move made them; a game ends at its first five")


def _bits(board: str) -> tuple[int, int]:
    x = sum(1 << c for c, ch in enumerate(board) if ch == "X")
    o = sum(1 << c for c, ch in enumerate(board) if ch == "O")
    return x, o
