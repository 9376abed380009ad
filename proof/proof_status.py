"""What a proof book says about the empty board, and the prover's progress lines.

:func:`status` summarises a book (first moves up to symmetry, and the Chaos replies to the
first move being proven; ``orderchaos prove --status`` prints it with the strategy's results,
see :mod:`orderchaos.proof.solved`); :func:`format_progress` formats one progress line of a run.
"""

from __future__ import annotations

import os
from typing import Any

from orderchaos.agents.proof_book import ProofBook, canonical_form
from orderchaos.proof.proof_meta import BookMeta
from orderchaos.envs.rules import ORDER, State, action_name


def _classes(state: State) -> list[tuple[int, int]]:
    """One (action, canonical key of the child) per symmetry class of the legal moves."""
    out: list[tuple[int, int]] = []
    seen: set[int] = set()
    for a in state.legal_actions():
        child = state.apply_unchecked(a)
        key = canonical_form(child.x, child.o)[0]
        if key not in seen:
            seen.add(key)
            out.append((a, key))
    return out


def _result_word(hit: tuple[str, int | None] | None) -> str:
    return "open" if hit is None else ("proven" if hit[0] == ORDER else "disproven")


def _work(meta: BookMeta, key: int) -> dict[str, Any]:
    """The solver work charged to a top-of-tree position: wall seconds, CPU seconds and
    nodes, each solve's work charged to every such position on its path (a first move's
    figures hold its replies'). CPU seconds and nodes are kept per position only by runs
    since they were added: None (not recorded) for a position with wall seconds from older
    runs alone; 0 for a position no solve was charged to."""
    unrecorded = key in meta.seconds and key not in meta.nodes
    return {"seconds": round(meta.seconds.get(key, 0.0), 1),
            "cpu_seconds": None if unrecorded else round(meta.cpu_seconds.get(key, 0.0), 1),
            "solver_nodes": None if unrecorded else meta.nodes.get(key, 0)}


def _unattributed(meta: BookMeta, firsts: list[dict[str, Any]]) -> dict[str, Any]:
    """The share of the book's totals that no first move's figures hold: the CPU seconds and
    nodes of runs that kept them in total only (before they were kept per position), and
    solves at the empty board itself."""
    return {"seconds": round(meta.solver_seconds - sum(f["seconds"] for f in firsts), 1),
            "cpu_seconds": round(meta.solver_cpu_seconds - sum(f["cpu_seconds"] or 0.0 for f in firsts), 1),
            "solver_nodes": meta.solver_nodes - sum(f["solver_nodes"] or 0 for f in firsts)}


def status(book_path: str | os.PathLike[str]) -> dict[str, Any]:
    """What a book says about the empty board: ``root`` ('order', 'chaos' or None);
    ``first_moves``, one per symmetry class of Order's first move, each with ``move``,
    ``result`` ('proven', 'disproven' or 'open': is it an Order win), ``replies`` (Chaos
    reply classes), ``replies_proven``, ``replies_disproven`` and the solver work below it
    (``seconds``, ``cpu_seconds``, ``solver_nodes``; the last two None where not recorded
    per position, see :func:`_work`); ``focus``, the first move
    being proven (the one fixed by the prover, else the one with most replies proven) with
    every reply class's result and solver work spent below it; the totals over every run
    (``solver_seconds``, ``solver_cpu_seconds``, ``solver_nodes``); and ``unattributed``,
    the totals' share that no first move's figures hold (:func:`_unattributed`).
    Raises ProofBookError for an unusable book or side file."""
    book = ProofBook.load(book_path)
    meta = BookMeta.load(book_path)
    empty = State()
    root_hit = book.lookup(empty)
    firsts: list[dict[str, Any]] = []
    details: dict[int, list[dict[str, Any]]] = {}
    for a, key in _classes(empty):
        after = empty.apply(a)
        rows = []
        for r, rkey in _classes(after):
            hit = book.lookup_key(rkey)
            rows.append({"reply": action_name(r), "result": _result_word(hit), **_work(meta, rkey)})
        details[a] = rows
        firsts.append({
            "move": action_name(a),
            "action": a,
            "result": _result_word(book.lookup_key(key)),
            "replies": len(rows),
            "replies_proven": sum(r["result"] == "proven" for r in rows),
            "replies_disproven": sum(r["result"] == "disproven" for r in rows),
            **_work(meta, key),
        })
    focus_action = None
    if meta.first is not None:
        fk = canonical_form(*empty.apply(meta.first))[0]
        focus_action = next(f["action"] for f in firsts if canonical_form(*empty.apply(f["action"]))[0] == fk)
    elif firsts:
        focus_action = max(firsts, key=lambda f: f["replies_proven"])["action"]
    return {
        "root": None if root_hit is None else root_hit.winner,
        "book_entries": len(book),
        "solver_seconds": round(meta.solver_seconds, 1),
        "solver_cpu_seconds": round(meta.solver_cpu_seconds, 1),
        "solver_nodes": meta.solver_nodes,
        "wall_seconds": round(meta.wall_seconds, 1),
        "runs": meta.runs,
        "open_positions_tried": len(meta.tried),
        "unattributed": _unattributed(meta, firsts),
        "first_moves": firsts,
        "focus": None if focus_action is None else {
            "move": action_name(focus_action),
            "replies": details[focus_action],
        },
    }


def format_progress(d: dict[str, Any]) -> str:
    """One progress line of a run from the prover's log record ``d`` (elapsed time, proven,
    disproven and open nodes, the root's proof and disproof numbers, speed, book size)."""
    rep = d["replies"]
    return (
        f"[{d['elapsed']:>8.1f}s] proven {d['proven']} disproven {d['disproven']} open {d['open']} "
        f"(leaves {d['open_leaves']}) root pn {d['root_pn']:.4g} dn {d['root_dn']:.4g} "
        f"tasks {d['tasks']} {d['nodes_per_s_per_worker']:,} nodes/s/worker book {d['book']}"
        + ("" if rep is None else f" replies {rep[0]}/{rep[1]}")
        + (" (final)" if d["final"] else "")
    )

