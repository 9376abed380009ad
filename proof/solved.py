"""The game solved: the central-pairing certificate built from the strategy, and what is known
about each of Order's first moves.

:func:`build_certificate` writes down :mod:`orderchaos.agents.strategy` after its first move
as a certificate (:mod:`orderchaos.proof.certificate`), which
:mod:`orderchaos.proof.certificate_check` verifies without the strategy.
:func:`solved_status` adds to the proof book's status (:func:`orderchaos.proof.prove.status`)
that the empty board is an Order win, by the certificate, and which first-move classes the
strategy proves.
"""

from __future__ import annotations

import os
from typing import Any

from orderchaos.agents import strategy
from orderchaos.proof.certificate import Certificate
from orderchaos.proof.prove import parse_action
from orderchaos.envs.rules import ORDER, State, action_name

SOURCE_STRATEGY = "strategy"
SOURCE_BOOK = "book"
VERDICTS = {"proven": "proven", "disproven": "refuted", "open": "open"}
"""The first-move table's words for the book's results (is the move an Order win?)."""


def build_certificate(first_move: int = strategy.FIRST_MOVE) -> Certificate:
    """The strategy after ``first_move`` (a central move), as a certificate."""
    return Certificate(
        first_move=action_name(first_move),
        pairs=tuple((p, q) for p, q in strategy.pair_names()),
        border_answer="other symbol",
        centre_moves=strategy.certificate_moves(first_move),
    )


def solved_status(book_status: dict[str, Any], certificate: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """``book_status`` with the strategy's results: ``root`` is ``"order"`` with
    ``root_source`` (the certificate, how to check it); each entry of ``first_moves`` (the
    first-move table) gets a ``source``: ``"strategy"`` for a central first move the
    strategy proves (``result`` ``"proven"``), else ``"book"`` (the book's result as it
    was); a ``verdict`` (``proven``, ``refuted`` or ``open``); ``check``, the command that
    re-checks a settled verdict (None while open); and ``replies_open``. Each reply of ``focus``
    (the first move the book works on) keeps the book's result as ``book``, gets the
    strategy's as ``strategy``, and ``result`` is proven when either proves it."""
    out = dict(book_status)
    out["root"] = ORDER
    out["root_source"] = {
        "source": "certificate",
        "first_move": action_name(strategy.FIRST_MOVE),
        "file": None if certificate is None else str(certificate),
        "check": "orderchaos prove --certificate FILE; orderchaos prove --check FILE",
    }
    firsts = []
    for f in book_status["first_moves"]:
        f = dict(f)
        if strategy.covers(State().apply(f["action"])):
            f["result"], f["source"] = "proven", SOURCE_STRATEGY
            f["check"] = "orderchaos prove --certificate FILE; orderchaos prove --check FILE"
        else:
            f["source"] = SOURCE_BOOK
            f["check"] = None if f["result"] == "open" else book_check(f["move"])
        f["verdict"] = VERDICTS[f["result"]]
        f["replies_open"] = f["replies"] - f["replies_proven"] - f["replies_disproven"]
        firsts.append(f)
    out["first_moves"] = firsts
    if book_status.get("focus") is not None:
        focus = book_status["focus"]
        after_first = State().apply(next(f["action"] for f in firsts if f["move"] == focus["move"]))
        replies = []
        for r in focus["replies"]:
            covered = strategy.covers(after_first.apply(parse_action(r["reply"])))
            replies.append({**r, "book": r["result"], "strategy": "proven" if covered else "open",
                            "result": "proven" if covered else r["result"]})
        out["focus"] = {**focus, "replies": replies}
    return out


def book_check(move: str) -> str:
    """How to re-check a book's verdict on the first move ``move`` (``"a1 X"``) from scratch:
    prove it into a new book, then verify that book."""
    compact = move.replace(" ", "")
    return f"orderchaos prove --book B.ocb --first {compact}; orderchaos prove --book B.ocb --verify"


def first_move_line(f: dict[str, Any]) -> str:
    """One row of the first-move table: the move, its verdict and by what; a settled book
    verdict with its check, an open one with the replies proven, refuted and left; and for
    a book verdict the solver work spent below the move."""
    head = f"{f['move']}: {f['verdict']:<9} by the {f['source']}"
    if f["source"] == SOURCE_STRATEGY:
        return head
    if f["check"] is not None:
        detail = f"check: {f['check']}"
    else:
        detail = (f"replies proven {f['replies_proven']}/{f['replies']}, refuted {f['replies_disproven']}, "
                  f"open {f['replies_open']}")
    if f["solver_nodes"] is None:
        work = f"solver work {f['seconds']:,.0f} s wall (CPU time and nodes not recorded per position)"
    else:
        work = (f"solver work {f['seconds']:,.0f} s wall, {f['cpu_seconds']:,.0f} s CPU, "
                f"{f['solver_nodes']:,} nodes")
    return f"{head}; {detail}; {work}"


def print_solved_status(s: dict[str, Any]) -> None:
    """Print :func:`solved_status` for a terminal."""
    src = s["root_source"]
    print(f"empty board: {s['root']} wins (by the certificate: central pairing after {src['first_move']}; "
          f"{src['check']})")
    print(f"proof book: {s['book_entries']} entries; solver {s['solver_seconds']:.0f}s wall, "
          f"{s['solver_cpu_seconds']:.0f}s CPU, {s['solver_nodes']:,} nodes over {s['runs']} run(s)")
    rest = s["unattributed"]
    if rest["solver_nodes"] or rest["cpu_seconds"]:
        print(f"  of them not in any first move's figures: {rest['cpu_seconds']:.0f}s CPU and "
              f"{rest['solver_nodes']:,} nodes (runs that kept them in total only) and {rest['seconds']:.0f}s wall")
    print("Order's first moves, up to symmetry (the first-move table: is each an Order win?):")
    for f in s["first_moves"]:
        print("  " + first_move_line(f))
    if s["focus"] is not None:
        print(f"Chaos's replies to {s['focus']['move']}, up to symmetry: strategy, proof book (solver time)")
        for r in s["focus"]["replies"]:
            print(f"  {r['reply']}: {r['strategy']:<7} {r['book']:<9} {r['seconds']:.0f}s")
