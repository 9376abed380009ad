"""The rules engine (envs/rules.py): scripted games, a brute-force re-implementation on
random games, and bad input."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orderchaos.envs.rules import (
    CELLS,
    FULL,
    WINDOWS,
    has_five_bits,
    BoardStringError,
    IllegalActionError,
    State,
    action_name,
    cell_name,
    legal_action_list,
    parse_board,
    parse_cell,
    render_ascii,
    threat_pairs,
)

from helpers import (
    FULL_BOARD_NO_FIVE,
    NAIVE_LINES,
    assert_reaches_ends,
    check_examples,
    ends_by_chaos_five,
    naive_facts,
    positions,
)

# ---------------------------------------------------------------------------------------
# The independent checker (helpers.naive_facts) works on a 6x6 grid of characters.
# ---------------------------------------------------------------------------------------


def place(board: str, action: int) -> str:
    """The board string with the stone of ``action`` placed (test-side, independent)."""
    cell = action // 2
    return board[:cell] + "XO"[action % 2] + board[cell + 1 :]


def play_script(moves: list[str], start: str = "." * 36) -> State:
    """Play moves like ``"c3 X"`` and check the board string after every move."""
    state, expected = parse_board(start), start
    for move in moves:
        cell_text, symbol = move.split()
        action = 2 * parse_cell(cell_text) + "XO".index(symbol)
        state = state.apply(action)
        expected = place(expected, action)
        assert state.to_string() == expected, move
    return state


# ---------------------------------------------------------------------------------------
# Scripted games.
# ---------------------------------------------------------------------------------------


def test_row_five_by_order() -> None:
    state = play_script(["a1 X", "a6 O", "b1 X", "f6 O", "c1 X", "c4 O", "d1 X", "d4 X"])
    assert state.winner is None and not state.is_terminal
    assert state.threats() == [(4, 0)]  # e1 completes the X row
    state = play_script(["e1 X"], state.to_string())
    assert state.to_string() == "XXXXX." "......" "......" "..OX.." "......" "O....O"
    assert state.winner == "order" and state.is_terminal and state.has_five
    assert state.winning_line == (0, 1, 2, 3, 4)
    assert state.rewards() == {"order": 1, "chaos": -1}
    assert state.legal_actions() == [] and not any(state.legal_mask())


def test_chaos_completing_a_five_loses() -> None:
    moves = ["b1 O", "a1 X", "b2 O", "a2 X", "b3 O", "a3 X", "b4 O", "f6 X", "e6 X"]
    state = play_script(moves)
    assert state.to_play == "chaos" and state.num_stones == 9
    state = play_script(["b5 O"], state.to_string())  # Chaos places the fifth O
    assert state.winner == "order"
    assert state.winning_line == (1, 7, 13, 19, 25)
    assert state.rewards()["chaos"] == -1


def test_six_in_a_row_counts_and_shows_six_cells() -> None:
    start = "XX.XXX" + "OO.OOX" + "." * 24  # no five yet: the gap at c1
    state = parse_board(start)
    assert state.winner is None and state.to_play == "order"
    state = play_script(["c1 X"], start)
    assert state.winner == "order"
    assert state.winning_line == (0, 1, 2, 3, 4, 5)  # both windows of the six


def test_diagonal_and_anti_diagonal_fives() -> None:
    diagonal = play_script(["a1 O", "f1 X", "b2 O", "f2 X", "c3 O", "f3 X", "d4 O", "a6 X", "e5 O"])
    assert diagonal.winning_line == (0, 7, 14, 21, 28)
    anti = play_script(["f2 X", "a1 O", "e3 X", "b1 O", "d4 X", "c1 O", "c5 X", "a3 O", "b6 X"])
    assert anti.winning_line == (11, 16, 21, 26, 31)
    assert anti.winner == "order"


def test_full_board_is_a_chaos_win_and_decided_comes_first() -> None:
    state, expected = State(), "." * 36
    decided_at = None
    for cell, ch in enumerate(FULL_BOARD_NO_FIVE):
        action = 2 * cell + "XO".index(ch)
        assert not state.is_terminal
        state = state.apply(action)
        expected = place(expected, action)
        assert state.to_string() == expected
        assert state.decided == naive_facts(expected)["decided"]
        if state.decided and decided_at is None:
            decided_at = state.num_stones
        if decided_at is not None:
            assert state.decided  # once decided, always decided
    assert state.winner == "chaos" and state.is_full and state.is_terminal
    assert state.rewards() == {"order": -1, "chaos": 1}
    assert state.to_play == "order"  # 36 stones: Chaos made the last move
    assert decided_at is not None and decided_at < CELLS


# ---------------------------------------------------------------------------------------
# Brute force agreement on random games.
# ---------------------------------------------------------------------------------------


def test_rules_agree_with_brute_force() -> None:
    def check(state: State) -> None:
        facts = naive_facts(state.to_string())
        assert state.winner == facts["winner"]
        assert state.is_terminal == facts["terminal"]
        assert state.winning_line == facts["winning_line"]
        assert state.decided == facts["decided"]
        assert state.threats() == facts["threats"]
        assert threat_pairs(state.x, state.o) == facts["threats"]
        assert state.legal_actions() == facts["legal"]
        assert [a for a, ok in enumerate(state.legal_mask()) if ok] == facts["legal"]
        if not state.is_terminal:
            assert legal_action_list(state.x, state.o) == facts["legal"]
        assert parse_board(state.to_string()) == state
        assert state.to_play == ("order", "chaos")[state.to_string().count(".") % 2 == 1]

    # whole random games: finished games, decided boards and fives made by Chaos included
    assert_reaches_ends(check_examples(positions(), check, max_examples=60))


def test_apply_never_changes_the_original() -> None:
    ends: list[State] = []

    def check(state: State) -> None:
        for action in state.legal_actions():
            before = (state.x, state.o)
            after = state.apply(action)
            assert (state.x, state.o) == before
            assert after == state.apply_unchecked(action)
            assert after.to_string() == place(state.to_string(), action)
        ends.append(max((state.apply(a) for a in state.legal_actions()), key=lambda s: (
            ends_by_chaos_five(s), s.decided, s.is_terminal)))

    check_examples(positions(terminal=False), check, max_examples=40)
    assert_reaches_ends(ends)  # moves that end games, fill boards and make Chaos's fives


def test_window_tables() -> None:
    assert len(WINDOWS) == 32 and len(set(WINDOWS)) == 32
    assert all(m.bit_count() == 5 and m & ~FULL == 0 for m in WINDOWS)
    assert sorted(WINDOWS) == sorted(sum(1 << (r * 6 + c) for r, c in line) for line in NAIVE_LINES)


# ---------------------------------------------------------------------------------------
# Bad input.
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("length", [0, 35, 37])
def test_board_of_wrong_length_names_the_length(length: int) -> None:
    with pytest.raises(BoardStringError) as raised:
        parse_board("." * length)
    assert str(raised.value) == (f"a board string needs 36 cells of 'X', 'O' or '.', found {length} "
                                 "(whitespace and '/' are ignored)")


def test_board_bad_character_names_character_and_position() -> None:
    with pytest.raises(BoardStringError) as raised:
        parse_board("X / .x" + "." * 32)
    assert str(raised.value) == ("bad character 'x' at position 5 of the board string (board cell 2); "
                                 "accepted: 'X', 'O', '.', whitespace and '/'")
    with pytest.raises(BoardStringError) as raised:
        parse_board(None)  # type: ignore[arg-type]
    assert str(raised.value) == "a board string must be a str, got NoneType"


def test_board_ignores_whitespace_and_slashes() -> None:
    text = "XX.... / ...... / ...... / ...... / ...... / .....O"
    assert parse_board(text) == parse_board("XX" + "." * 33 + "O")


@pytest.mark.parametrize(
    "action, message",
    [
        (-1, "action -1 is outside 0..71 (action = 2*cell + symbol, cell 0..35, symbol 0=X 1=O)"),
        (72, "action 72 is outside 0..71 (action = 2*cell + symbol, cell 0..35, symbol 0=X 1=O)"),
        (2.0, "action must be an integer in 0..71 (2*cell + symbol), got float 2.0"),
        ("4", "action must be an integer in 0..71 (2*cell + symbol), got str '4'"),
        (None, "action must be an integer in 0..71 (2*cell + symbol), got NoneType None"),
        (True, "action must be an integer in 0..71 (2*cell + symbol), got bool True"),
        (0, "action 0 places X on a1 (cell 0), which already holds X; choose an empty cell"),
        (1, "action 1 places O on a1 (cell 0), which already holds X; choose an empty cell"),
    ],
)
def test_illegal_actions_raise_clear_errors(action: object, message: str) -> None:
    state = State().apply(0)  # X on a1
    with pytest.raises(IllegalActionError) as raised:
        state.apply(action)  # type: ignore[arg-type]
    assert str(raised.value) == message
    assert issubclass(IllegalActionError, ValueError)


def test_no_action_after_the_end() -> None:
    state = parse_board(FULL_BOARD_NO_FIVE)
    with pytest.raises(IllegalActionError) as raised:
        state.apply(0)
    assert str(raised.value) == "the game is over (chaos won); no action is legal, call reset()"
    five = parse_board("XXXXX." + "." * 30)
    with pytest.raises(IllegalActionError) as raised:
        five.apply(10)
    assert str(raised.value) == "the game is over (order won); no action is legal, call reset()"


def test_occupied_cells_and_the_rewards_of_a_game_not_over() -> None:
    state = State().apply(0).apply(15)  # X on a1, O on b2 (cell 7)
    assert state.occupied == 1 | 1 << 7
    assert state.rewards() == {"order": 0, "chaos": 0}


def test_names_and_rendering() -> None:
    assert cell_name(0) == "a1" and cell_name(35) == "f6" and parse_cell("C3") == 14
    assert action_name(29) == "c3 O"
    with pytest.raises(ValueError) as raised:
        parse_cell("z9")
    assert str(raised.value) == "bad cell 'z9': expected a column a-f and a row 1-6, like 'c3'"
    text = render_ascii(parse_board("XXXXX." + "." * 30), last_action=8).splitlines()
    assert text[1] == " 1 [X][X][X][X][X] ." and text[-1] == "game over: order wins (last move e1 X)"
    assert render_ascii(State().apply(15), last_action=15) == "\n".join([
        "    a  b  c  d  e  f",
        " 1  .  .  .  .  .  .",
        " 2  . (O) .  .  .  .",
        " 3  .  .  .  .  .  .",
        " 4  .  .  .  .  .  .",
        " 5  .  .  .  .  .  .",
        " 6  .  .  .  .  .  .",
        "chaos to move (last move b2 O)",
    ])


@settings(max_examples=600, deadline=None)
@given(cells=st.sets(st.integers(0, CELLS - 1), max_size=CELLS))
def test_has_five_bits_agrees_with_the_naive_lines(cells: set[int]) -> None:
    bits = sum(1 << c for c in cells)
    naive = any(all(r * 6 + c in cells for r, c in line) for line in NAIVE_LINES)
    assert has_five_bits(bits) == naive
    # and with each window mask tested on its own
    assert has_five_bits(bits) == any(bits & m == m for m in WINDOWS)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, (1 << CELLS) - 1), st.integers(0, CELLS - 1), st.integers(0, (1 << CELLS) - 1))
def test_window_helpers_agree_with_the_naive_lines(bits: int, cell: int, other: int) -> None:
    """completes_five and is_dead_window against the (row, col) runs of five."""
    from orderchaos.envs.rules import completes_five, is_dead_window

    bits |= 1 << cell
    through = [line for line in NAIVE_LINES if divmod(cell, 6) in line]
    full = any(all(bits >> (r * 6 + c) & 1 for r, c in line) for line in through)
    assert completes_five(bits, cell) == full
    other &= ~bits
    for line in NAIVE_LINES:
        mask = sum(1 << (r * 6 + c) for r, c in line)
        holds_both = any(bits >> (r * 6 + c) & 1 for r, c in line) and any(other >> (r * 6 + c) & 1 for r, c in line)
        assert is_dead_window(bits, other, mask) == holds_both


@settings(max_examples=40, deadline=None)
@given(positions())
def test_counts_and_parsing_agree(state: State) -> None:
    text = state.to_string()
    stones = sum(ch != "." for ch in text)
    assert state.num_empty == text.count(".") == CELLS - stones
    assert state.to_play_index == stones % 2 and state.to_play == ("order", "chaos")[stones % 2]
    assert State.from_string(text) == parse_board(text) == state
    assert state.is_full == (stones == CELLS)


def test_completes_five_on_every_window_through_a_cell() -> None:
    """Deterministic: each of the 32 windows, filled, completes a five through each of its
    five cells; with one of its other cells taken away it does not."""
    from orderchaos.envs.rules import WINDOW_CELLS, completes_five

    for cells in WINDOW_CELLS:
        bits = sum(1 << c for c in cells)
        for c in cells:
            assert completes_five(bits, c)
            assert not completes_five(bits & ~(1 << cells[0] if c != cells[0] else 1 << cells[1]), c)
