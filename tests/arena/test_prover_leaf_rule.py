"""The prover takes a position the central-pairing strategy covers as a proven Order win."""

from __future__ import annotations

from orderchaos.agents.proof_book import ProofBook
from orderchaos.agents.strategy import covers, move
from orderchaos.arena.prove import ProveConfig, Prover
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
    prover = Prover(State(), ProofBook(), config=TINY, first=2 * parse_cell("a1"))
    assert covers(State()) and not prover.root.solved
    prover.run(2.0)  # the strategy settles some Chaos replies to a1 X at once
    replies = [child for child, _, _ in prover.root.children[0][0].children]
    assert any(child.pn == 0 for child in replies)
