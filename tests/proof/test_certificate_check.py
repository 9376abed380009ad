"""The certificate checker's parts one at a time, fast: the pairs' geometry, the lemma, the
border answer and Order's move rule on the real pairs, and the centre game and the replay on a
toy game of a few cells (the checker's board with its centre cut down), where every kind of
end and failure is met in a few hundred positions. The checks of the real certificate are in
test_certificate.py."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest

from orderchaos.agents import strategy
from orderchaos.proof import certificate_check as cc
from orderchaos.proof.certificate import Certificate
from orderchaos.envs.rules import State, parse_cell

PAIRS = tuple((p, q) for p, q in strategy.pair_names())
C3_X = 2 * parse_cell("c3")


def certificate(centre_moves: dict[str, str] | None = None, **changes: object) -> Certificate:
    """A certificate with the real pairs and first move, and the given centre moves."""
    fields: dict[str, object] = {"first_move": "c3 X", "pairs": PAIRS, "border_answer": "other symbol",
                                 "centre_moves": centre_moves or {}}
    fields.update(changes)
    return Certificate(**fields)  # type: ignore[arg-type]


def place(*moves: str) -> State:
    """The board holding ``moves`` (``"a2 X"``), placed without the rules' turn checks."""
    s = State()
    for m in moves:
        s = s.apply_unchecked(2 * parse_cell(m[:2]) + "XO".index(m[3]))
    return s


def toy_game(centre: str, lines: list[str], order_cells: str, symbol: str = "X") -> tuple[cc._Board, Certificate]:
    """The checker's board with its centre cut down to ``centre`` (cell names) and its central
    lines to ``lines``, and a certificate whose centre move on every toy board is the first
    empty cell of ``order_cells`` with ``symbol``."""
    cells = centre.split()
    moves = {}
    for key in itertools.product("XO.", repeat=len(cells)):
        held = dict(zip(cells, key))
        empty = [c for c in order_cells.split() if held[c] == "."]
        if empty:
            moves["".join(key)] = f"{empty[0]} {symbol}"
    cert = certificate(moves)
    board = cc._Board(cert)
    board.centre = tuple(parse_cell(c) for c in cells)
    board.line_masks = [sum(1 << parse_cell(c) for c in line.split()) for line in lines]
    return board, cert


def test_the_pairs_give_the_ten_central_lines() -> None:
    board = cc._Board(certificate())
    assert board.centre == tuple(parse_cell(c) for c in "b2 c2 d2 e2 b3 c3 d3 e3 b4 c4 d4 e4 b5 c5 d5 e5".split())
    lines = {(p, q): inner for p, q, inner in board.lines}
    assert len(lines) == 10
    assert lines[parse_cell("a2"), parse_cell("f2")] == tuple(parse_cell(c) for c in ("b2", "c2", "d2", "e2"))
    assert lines[parse_cell("c1"), parse_cell("c6")] == tuple(parse_cell(c) for c in ("c2", "c3", "c4", "c5"))
    assert lines[parse_cell("a1"), parse_cell("f6")] == tuple(parse_cell(c) for c in ("b2", "c3", "d4", "e5"))
    assert lines[parse_cell("f1"), parse_cell("a6")] == tuple(parse_cell(c) for c in ("e2", "d3", "c4", "b5"))
    assert board.partner[parse_cell("a2")] == parse_cell("f2") and board.partner[parse_cell("f2")] == parse_cell("a2")
    assert len(board.partner) == 20
    assert board.has_line_of_four(place("a1 X", "b2 O", "c3 O", "d4 O", "e5 O"))
    assert not board.has_line_of_four(place("b2 O", "c3 O", "d4 X", "e5 O"))
    assert board.centre_key(place("b2 X", "e5 O")) == "X..............O"


def test_pairs_that_do_not_cover_the_border_once_fail() -> None:
    message = "pairs: the 10 pairs must hold each of the 20 border cells exactly once"
    for pairs in (PAIRS[:9], PAIRS[:9] + (PAIRS[0],), PAIRS[:9] + (("a1", "f6"),)):
        assert cc.check(certificate(pairs=pairs)).failure == message


def test_a_pair_whose_line_runs_along_the_border_fails() -> None:
    pairs = (("a1", "a6"), ("f1", "f6"), ("b1", "b6"), ("c1", "c6"), ("d1", "d6"), ("e1", "e6"),
             ("a2", "f2"), ("a3", "f3"), ("a4", "f4"), ("a5", "f5"))
    report = cc.check(certificate(pairs=pairs))
    assert report.failure == "pairs: the line from a1 to a6 is not through the centre"
    assert report.parts == []


def test_partners_that_are_not_the_ends_of_a_line_fail() -> None:
    pairs = (("a2", "f3"), ("a3", "f2")) + PAIRS[2:]
    assert cc.check(certificate(pairs=pairs)).failure == "pairs: a2 and f3 are not the two ends of a 6-cell line"
    pairs = (("a2", "b1"), ("a3", "f3"), ("a4", "f4"), ("a5", "f5"), ("f2", "b6"), ("c1", "c6"),
             ("d1", "d6"), ("e1", "e6"), ("a1", "f6"), ("f1", "a6"))
    assert cc.check(certificate(pairs=pairs)).failure == "pairs: a2 and b1 are not the two ends of a 6-cell line"


def test_a_first_move_off_the_centre_fails_before_any_part_holds() -> None:
    for move in ("a1 X", "f6 O", "b1 X", "f5 X"):
        report = cc.check(certificate(first_move=move))
        assert report.failure == f"first move {move} is not on a central cell" and report.parts == []
    for move in ("e5 O", "b2 X"):
        assert cc.check(certificate(first_move=move)).failure.startswith("no centre move")


def test_a_missing_centre_move_fails_after_the_pairs_hold() -> None:
    report = cc.check(certificate())
    assert not report.ok
    assert report.failure == ("no centre move for centre board X....X.......... (position "
                              f"{place('c3 X', 'b2 X').to_string()})")
    assert [p.name for p in report.parts] == ["pairs"] and report.parts[0].counts == {"pairs": 10}
    lines = cc.describe(report)
    assert lines[0].startswith("  pairs: holds; pairs 10 (") and lines[0].endswith(" s)")
    assert lines[1:] == [f"  FAILED: {report.failure}"]


def test_the_lemma_holds_on_each_central_line_and_needs_the_other_symbol() -> None:
    assert cc.check_lemma(cc._Board(certificate())) == {"lines": 10, "cases": 140}
    with pytest.raises(cc.CheckFailed) as failed:
        cc.check_lemma(cc._Board(certificate(border_answer="same symbol")))
    # Four X on b2..e2: Chaos's O on a2 is answered by O on f2, which makes no five.
    assert str(failed.value) == f"lemma: the border answer to a2 O makes no five at {place('b2 X', 'c2 X', 'd2 X', 'e2 X', 'a2 O').to_string()}"


def test_the_border_answer_is_the_partner_with_the_files_symbol() -> None:
    other, same = cc._Board(certificate()), cc._Board(certificate(border_answer="same symbol"))
    a2, f2 = parse_cell("a2"), parse_cell("f2")
    assert other.border_answer(place("a2 X"), a2) == 2 * f2 + 1
    assert other.border_answer(place("a2 O"), a2) == 2 * f2
    assert same.border_answer(place("a2 X"), a2) == 2 * f2
    assert same.border_answer(place("f2 O"), f2) == 2 * a2 + 1


def test_order_completes_a_five_first_then_answers_a_single_border_stone() -> None:
    board, cert = cc._Board(certificate()), certificate({"X....X.........O": "d4 O"})
    five = place("c3 X", "b3 X", "d3 X", "e3 X", "a2 O")
    assert cc._order_move(board, cert, five) in (2 * parse_cell("a3"), 2 * parse_cell("f3"))
    assert cc._order_move(board, cert, place("c3 X", "a2 O")) == 2 * parse_cell("f2")
    assert cc._order_move(board, cert, place("c3 X", "b2 X", "e5 O")) == 2 * parse_cell("d4") + 1


def test_two_single_stones_on_pairs_fail() -> None:
    board, cert = cc._Board(certificate()), certificate()
    s = place("c3 X", "a2 O", "b1 X")
    with pytest.raises(cc.CheckFailed, match=r"^two pairs hold a single stone at "):
        cc._order_move(board, cert, s)
    assert str(pytest.raises(cc.CheckFailed, cc._order_move, board, cert, s).value) == \
        f"two pairs hold a single stone at {s.to_string()}"


def test_a_centre_move_off_the_centre_or_on_a_stone_fails() -> None:
    board = cc._Board(certificate())
    s = place("c3 X", "b2 X")
    for move in ("a1 X", "c3 O", "b2 X"):
        with pytest.raises(cc.CheckFailed) as failed:
            cc._centre_move(board, certificate({"X....X..........": move}), s)
        assert str(failed.value) == f"centre move {move} for centre board X....X.......... is not on an empty central cell"
    assert cc._centre_move(board, certificate({"X....X..........": "d4 O"}), s) == 2 * parse_cell("d4") + 1


def test_the_centre_game_on_a_toy_board() -> None:
    # Any two of the four cells are a line: each X of Chaos's makes one with c3 X, and each
    # O is answered by an O that makes one.
    cells = "c3 d3 c4 d4"
    board, _ = toy_game(cells, [" ".join(p) for p in itertools.combinations(cells.split(), 2)], "d3 c4 d4")
    cert = certificate({"XO..": "c4 O", "X.O.": "d3 O", "X..O": "d3 O"})
    assert cc.check_centre(board, cert, C3_X) == {
        "order_to_move_centre_boards": 3, "entries_in_file": 3, "chaos_moves_making_a_line": 3}


def test_the_centre_game_goes_on_after_a_move_that_makes_no_line() -> None:
    # Lines: c3 with each other cell, and d3 c4 d4. Chaos's X makes one with c3 X; Order
    # answers an O with an O that makes none, after which each Chaos move makes one.
    board, _ = toy_game("c3 d3 c4 d4", ["c3 d3", "c3 c4", "c3 d4", "d3 c4 d4"], "d3")
    cert = certificate({"XO..": "c4 O", "X.O.": "d3 O", "X..O": "d3 O"})
    assert cc.check_centre(board, cert, C3_X) == {
        "order_to_move_centre_boards": 3, "entries_in_file": 3, "chaos_moves_making_a_line": 9}


def test_the_centre_filling_without_a_line_fails() -> None:
    board, cert = toy_game("c3 d3 c4", [], "d3 c4")
    with pytest.raises(cc.CheckFailed) as failed:
        cc.check_centre(board, cert, C3_X)
    # Chaos's first move, d3 X, is answered by c4 X: the toy centre is full, with no line.
    assert str(failed.value) == f"the centre fills without a line of four at {place('c3 X', 'd3 X', 'c4 X').to_string()}"


def test_the_replay_on_a_toy_board_counts_each_kind_of_end(monkeypatch: pytest.MonkeyPatch) -> None:
    # Row 3 and c4: Order completes fives, Chaos completes fives that Order's X made
    # possible, and lines of play end with only border cells (off the toy centre) left.
    board, cert = toy_game("a3 b3 c3 d3 e3 f3 c4", [], "b3 d3 e3 c4")
    seen: list[int] = []
    cc.check_replay(board, cert, C3_X, 0, seen.append)
    assert seen == []  # fewer positions than PROGRESS_EVERY
    monkeypatch.setattr(cc, "PROGRESS_EVERY", 50)
    assert cc.check_replay(board, cert, C3_X, 0, seen.append) == {
        "order_to_move_positions": 138, "order_completes_a_five": 17, "chaos_completed_a_five": 6,
        "left_to_the_lemma": 54, "border_moves_allowed": 0}
    assert seen == [50, 100]
    assert cc.check_replay(board, cert, C3_X, 0)["order_to_move_positions"] == 138


def test_the_replay_allows_chaos_moves_off_the_centre_up_to_the_allowance() -> None:
    # Chaos's border moves are answered on their partners and leave the toy centre as it
    # was; the first move off both that the search takes, e5 O, is answered on the toy,
    # which then fills with Order to move and no centre move left.
    board, cert = toy_game("a3 b3 c3 d3 e3 f3 c4", [], "b3 d3 e3 c4")
    with pytest.raises(cc.CheckFailed) as failed:
        cc.check_replay(board, cert, C3_X, 1)
    s = place("c3 X", "e5 O", "b3 X", "c4 O", "d3 X", "e3 O")
    assert str(failed.value) == f"no centre move for centre board .XXXO.O (position {s.to_string()})"


def test_check_runs_the_parts_in_order_and_reports_replay_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple] = []

    def replay(board: cc._Board, cert: Certificate, first: int, border_moves: int, progress: object) -> dict[str, int]:
        calls.append((first, border_moves, progress is None))
        if progress is not None:
            progress(1_234_567)
        return {"order_to_move_positions": 2_000_000}

    ticks = itertools.count()
    monkeypatch.setattr(cc, "time", SimpleNamespace(perf_counter=lambda: 100 + 0.5 * next(ticks)))
    monkeypatch.setattr(cc, "check_centre", lambda board, cert, first: {"boards": first})
    monkeypatch.setattr(cc, "check_replay", replay)
    messages: list[str] = []
    report = cc.check(certificate(), border_moves=3, progress=messages.append)
    assert report.ok and report.failure is None
    assert [(p.name, p.counts, p.seconds) for p in report.parts] == [
        ("pairs", {"pairs": 10}, 0.5), ("centre game", {"boards": C3_X}, 0.5),
        ("lemma", {"lines": 10, "cases": 140}, 0.5), ("replay", {"order_to_move_positions": 2_000_000}, 0.5)]
    assert calls == [(C3_X, 3, False)] and messages == ["replay: 1,234,567 positions"]
    assert cc.describe(report) == [
        "  pairs: holds; pairs 10 (0.5 s)",
        f"  (a) centre game: holds; boards {C3_X} (0.5 s)",
        "  (b) lemma: holds; lines 10, cases 140 (0.5 s)",
        "  (c) replay: holds; order to move positions 2,000,000 (0.5 s)",
    ]
    assert cc.check(certificate()).ok and calls[-1] == (C3_X, 0, True)


def test_parts_and_reports_start_empty() -> None:
    part = cc.Part("lemma")
    assert part.counts == {} and part.seconds == 0.0 and part.counts is not cc.Part("lemma").counts
    assert cc.CheckReport([]).ok and not cc.CheckReport([], "x").ok
    assert cc.describe(cc.CheckReport([part])) == ["  (b) lemma: holds;  (0.0 s)"]
