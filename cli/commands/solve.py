"""Prove the game-theoretic winner of board positions with the exact solver.

Each BOARD is 36 characters of X, O and . (row-major; whitespace and / are ignored); the
side to move follows from the stone count. One line per board is printed -- one JSON
object per line with --json (fields board, to_move, winner, nodes, seconds, and
best_actions with --moves). winner is null when --time-limit was hit. Every board is
processed; malformed ones are reported on stderr and make the exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of ``solve``."""
    parser.add_argument("boards", nargs="+", metavar="BOARD", help="36 cells of X, O and .")
    parser.add_argument("--json", action="store_true", help="print one JSON object per line")
    parser.add_argument(
        "--moves", action="store_true", help="also list every move that keeps the mover's result"
    )
    parser.add_argument(
        "--time-limit", type=float, default=None, metavar="S",
        help="seconds per board (winner is unknown when it runs out); default: no limit",
    )


def run(args: argparse.Namespace) -> int:
    """Solve every board and print one line each; 2 if any board was malformed."""
    from orderchaos.agents.solver import Solver
    from orderchaos.envs.rules import BoardStringError, action_name, parse_board

    if args.time_limit is not None and not args.time_limit > 0:
        print(f"orderchaos solve: --time-limit must be a positive number of seconds, got "
              f"{args.time_limit}", file=sys.stderr)
        return 2
    solver = Solver()
    status = 0
    for text in args.boards:
        try:
            state = parse_board(text)
        except BoardStringError as err:
            print(f"orderchaos solve: bad board {text!r}: {err}", file=sys.stderr)
            status = 2
            continue
        result = solver.solve(state, time_limit=args.time_limit, moves=args.moves)
        record = {
            "board": state.to_string(),
            "to_move": state.to_play,
            "winner": result.winner,
            "nodes": result.nodes,
            "seconds": round(result.seconds, 6),
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
