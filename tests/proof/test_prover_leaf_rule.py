"""The prover takes a position the pairing argument covers as a proven Order win."""

from __future__ import annotations

import pytest

from orderchaos.agents.proof_book import ProofBook
from orderchaos.agents.strategy import covers, move
from orderchaos.proof.prove import ProveConfig, Prover
from orderchaos.envs.rules import ORDER, State, parse_cell

TINY = ProveConfig(first_budget=200, growth=4, cap=800, tt_bits=12, workers=1, interval=3600.0)


def test_a_covered_position_is_proven_without_a_solver_task() -> None:
    s = State().apply(2 * parse_cell("c3")).apply(2 * parse_cell("f6") + 1)  # a reply the book left open
    assert covers(s)
    book = ProofBook()
    result = Prover(s, book, config=TINY).run()
    assert result.winner == ORDER and result.tasks == 0
    entry = book.lookup(s)
    assert entry is not None and entry.winner == ORDER and entry.move == move(s)


def test_a_fixed_first_move_is_not_settled_by_the_rule_at_the_root() -> None:
    prover = Prover(State(), ProofBook(), config=TINY, first=2 * parse_cell("c3"))
    assert covers(State()) and not prover.root.solved  # the question is whether c3 X wins
    result = prover.run(2.0)  # the rule settles the position after c3 X, one ply down
    assert result.winner == ORDER and result.tasks == 0
    assert prover.root.children is not None and prover.root.children[0][0].pn == 0


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_extended_rule_settles_a_border_first_move_without_a_solver_task() -> None:
    """After a1 X the pair a1-f6 is half filled: outside the strategy, inside the extended
    argument (builds the diagonal's tables, a minute of CPU time)."""
    book = ProofBook()
    result = Prover(State(), book, config=TINY, first=2 * parse_cell("a1")).run()
    assert result.winner == ORDER and result.tasks == 0
    after = State().apply(2 * parse_cell("a1"))
    assert not covers(after) and book.lookup(after).winner == ORDER
