"""Prove the game-theoretic winner of board positions with the exact solver.

Each BOARD is 36 characters of X, O and . (row-major; whitespace and / are ignored); the
side to move follows from the stone count. One line per board is printed -- one JSON
object per line with --json (fields board, to_move, winner, nodes, seconds, source --
"strategy", "book" or "solver" -- strategy_move or book_move for those answers, and
best_actions with --moves). A board that the central-pairing strategy covers
(``orderchaos.agents.strategy``), or that the proof book holds, is answered at once, and the
line says so (without --moves, which asks the solver for every winning move). winner is null
when --time-limit was hit. Every board is processed; malformed ones are reported on stderr and make the exit status 2.

On a terminal a progress line (nodes, elapsed seconds) is kept up to date on stderr while a
board is being solved; Ctrl-C stops at once, prints the board's line with the winner
unknown (with --json: a JSON line with ``"winner": null, "interrupted": true``), and exits
with status 130.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable

FIRST_CHUNK_NODES = 200_000
MAX_CHUNK_NODES = 3_200_000

from orderchaos.cli import options


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of ``solve``."""
    parser.add_argument("boards", nargs="+", metavar="BOARD", help="36 cells of X, O and .")
    parser.add_argument("--json", action="store_true", help="print one JSON object per line")
    parser.add_argument(
        "--moves", action="store_true", help="also list every move that keeps the mover's result"
    )
    parser.add_argument(
        "--time-limit", type=options.SECONDS, default=None, metavar="S",
        help="seconds per board (winner is unknown when it runs out); default: no limit",
    )
    parser.add_argument(
        "--book", metavar="PATH", default=None,
        help="answer from this proof book where it holds the board (default: the shipped book)",
    )
    parser.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=None,
        help="show a progress line on stderr (default: when stderr is a terminal)",
    )


def solve_in_chunks(solver, state, time_limit: float | None, moves: bool,
                    report: Callable[[int, float], None]):  # noqa: ANN001, ANN201
    """Solve ``state`` in node-limited chunks (doubling up to ``MAX_CHUNK_NODES``) so that a
    progress line can be shown and Ctrl-C is felt within seconds. Proven subtrees stay in
    the solver's table between chunks, so the chunks add up to one search. Returns the
    final ``SolveResult`` with the nodes and seconds of all chunks."""
    from orderchaos.agents.solver import SolveResult

    start = time.perf_counter()
    nodes, chunk = 0, FIRST_CHUNK_NODES
    while True:
        left = None if time_limit is None else time_limit - (time.perf_counter() - start)
        if left is not None and left <= 0:
            return SolveResult(None, nodes, time.perf_counter() - start)
        result = solver.solve(state, node_limit=chunk, time_limit=left, moves=moves)
        nodes += result.nodes
        report(nodes, time.perf_counter() - start)
        if result.winner is not None:
            return SolveResult(result.winner, nodes, time.perf_counter() - start, result.best_actions)
        chunk = min(2 * chunk, MAX_CHUNK_NODES)


def known_answer(book, state):  # noqa: ANN001, ANN201
    """``(source, winner, move)`` when the central-pairing strategy covers ``state`` (source
    ``"strategy"``, move: Order's move, None when Chaos is to move) or the proof ``book``
    holds it (``"book"``, the book's move); None otherwise."""
    from orderchaos.agents import strategy
    from orderchaos.envs.rules import ORDER

    if strategy.covers(state):
        return "strategy", ORDER, strategy.move(state) if state.to_play == ORDER else None
    entry = book.lookup(state)
    return None if entry is None else ("book", entry.winner, entry.move)


def run(args: argparse.Namespace) -> int:
    """Solve every board and print one line each; 2 if any board was malformed."""
    from orderchaos.agents.proof_book import ProofBook, ProofBookError, shipped_book
    from orderchaos.agents.solver import Solver
    from orderchaos.envs.rules import BoardStringError, action_name, parse_board

    try:
        book = ProofBook.load(args.book) if args.book else shipped_book()
    except ProofBookError as exc:
        print(f"orderchaos solve: {exc}", file=sys.stderr)
        return 2

    if args.time_limit is not None and not args.time_limit > 0:
        print(f"orderchaos solve: --time-limit must be a positive number of seconds, got "
              f"{args.time_limit}", file=sys.stderr)
        return 2
    solver = Solver()
    status = 0
    show_progress = sys.stderr.isatty() if args.progress is None else args.progress

    def report(nodes: int, seconds: float) -> None:
        if show_progress:
            print(f"\r  solving: {nodes:,} nodes, {seconds:.1f} s", end="", file=sys.stderr, flush=True)

    for text in args.boards:
        try:
            state = parse_board(text)
        except BoardStringError as err:
            print(f"orderchaos solve: bad board {text!r}: {err}", file=sys.stderr)
            status = 2
            continue
        known = None if args.moves else known_answer(book, state)
        if known is not None:
            source, winner, move = known
            name = None if move is None else action_name(move)
            record = {"board": state.to_string(), "to_move": state.to_play, "winner": winner,
                      "nodes": 0, "seconds": 0.0, "source": source, f"{source}_move": name}
            if args.json:
                print(json.dumps(record), flush=True)
            else:
                where = "the strategy" if source == "strategy" else "the proof book"
                print(f"{record['board']}  {state.to_play} to move  winner: {winner}  "
                      f"(from {where}{'' if name is None else f', winning move {name}'})", flush=True)
            continue
        try:
            result = solve_in_chunks(solver, state, args.time_limit, args.moves, report)
        except KeyboardInterrupt:
            if show_progress:
                print(file=sys.stderr)
            if args.json:  # the output stays JSON lines
                print(json.dumps({"board": state.to_string(), "to_move": state.to_play, "winner": None,
                                  "source": "solver", "interrupted": True}), flush=True)
            else:
                print(f"{state.to_string()}  {state.to_play} to move  winner: unknown (interrupted)",
                      flush=True)
            return 130
        if show_progress:
            print("\r" + " " * 60 + "\r", end="", file=sys.stderr, flush=True)
        record = {
            "board": state.to_string(),
            "to_move": state.to_play,
            "winner": result.winner,
            "nodes": result.nodes,
            "seconds": round(result.seconds, 6),
            "source": "solver",
        }
        if args.moves:
            record["best_actions"] = result.best_actions
        if args.json:
            print(json.dumps(record), flush=True)
            continue
        winner = result.winner or "unknown (time limit)"
        line = (f"{record['board']}  {state.to_play} to move  winner: {winner}  "
                f"nodes: {result.nodes}  {result.seconds:.3f}s")
        if args.moves:
            if result.best_actions is None:
                line += "  best: unknown"
            else:
                line += "  best: " + (", ".join(action_name(a) for a in result.best_actions) or "-")
        print(line, flush=True)
    return status
