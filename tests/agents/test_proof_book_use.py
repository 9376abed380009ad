"""The solver agent and ``orderchaos solve`` answer from a proof book without searching."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orderchaos.agents.proof_book import ProofBook, shipped_book
from orderchaos.agents.solver import Solver, SolverAgent
from orderchaos.cli.main import main
from orderchaos.envs.rules import ORDER, State, action_name
from orderchaos.envs.symmetry import transform_action, transform_state

# Four stones: far too early for the solver to prove quickly, so an instant answer must come
# from the book (the border pair a1/f6 holds two O's, so the central-pairing strategy, which
# the solver player asks first, does not cover it). The stored move is arbitrary here; the
# book is trusted as written.
EARLY = State().apply(2 * 14).apply(2 * 0 + 1).apply(2 * 16).apply(2 * 35 + 1)
BOOK_MOVE = 2 * 21


def _book(tmp_path: Path) -> Path:
    book = ProofBook()
    book.add(EARLY, ORDER, BOOK_MOVE)
    path = tmp_path / "book.ocb"
    book.save(path)
    return path


def test_solver_agent_plays_the_book_move_without_search(tmp_path: Path) -> None:
    book = ProofBook.load(_book(tmp_path))
    for g in (0, 3, 5, 9, 14):  # any symmetric image is answered with the matching move
        solver = Solver(tt_bits=10)
        agent = SolverAgent(time=0.05, solver=solver, book=book)
        image = transform_state(EARLY, g)
        assert agent.candidates(image) == [transform_action(BOOK_MOVE, g)]
        assert agent.last_reason == "book" and solver.tt_entries == 0


def test_solve_answers_from_the_book_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _book(tmp_path)
    assert main(["solve", "--book", str(path), "--json", EARLY.to_string()]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["source"] == "book" and record["winner"] == "order"
    assert record["book_move"] == action_name(BOOK_MOVE) and record["nodes"] == 0
    assert main(["solve", "--book", str(path), EARLY.to_string()]) == 0
    assert "from the proof book, winning move" in capsys.readouterr().out


def test_a_damaged_book_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _book(tmp_path)
    path.write_bytes(path.read_bytes()[:-3])
    assert main(["solve", "--book", str(path), EARLY.to_string()]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err


def test_the_shipped_book_holds_proven_replies_to_c3_x() -> None:
    book = shipped_book()
    assert len(book) > 0
    after_c3 = State().apply(2 * 14)
    proven = [a for a in after_c3.legal_actions()
              if (entry := book.lookup(after_c3.apply(a))) is not None and entry.winner == ORDER]
    assert len(proven) >= 20  # every entry is re-checked by `orderchaos prove --verify`
