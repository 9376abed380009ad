"""Optimal-move accuracy on solver-labelled positions, or make such a set.

  orderchaos positions --agent SPEC [--file F.jsonl] [--seed S] [--json]
      the share of positions where the agent plays a move that keeps the mover's forced
      win, overall and by side to move (default file: the shipped 12-18 empties set);
  orderchaos positions --make N --empties 12-18 --out F.jsonl [--seed S] [--node-limit N]
      label N positions from sensible (epsilon-heuristic) play with the exact solver; the
      same arguments give the same file, and a smaller N a prefix of it.
"""

from __future__ import annotations

import argparse
import json
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of ``positions``."""
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--agent", metavar="SPEC", help="score this agent")
    mode.add_argument("--make", type=int, metavar="N", help="make a set of N positions")
    parser.add_argument("--file", metavar="F.jsonl", help="positions to score (default: shipped set)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    parser.add_argument("--empties", default="12-18", metavar="LOW-HIGH",
                        help="with --make: empty cells of the positions (default 12-18)")
    parser.add_argument("--out", metavar="F.jsonl", help="with --make: where to write the set")
    parser.add_argument("--node-limit", type=int, default=1_000_000, metavar="N",
                        help="with --make: solver nodes per position, else skip it (default 1000000)")
    parser.add_argument("--time-limit", type=float, default=None, metavar="S",
                        help="with --make: also a cap in solver seconds per position (default none; "
                             "a time cap makes the set depend on the machine)")


def run(args: argparse.Namespace) -> int:
    """Score an agent or make a set."""
    from orderchaos.agents.registry import SpecError
    from orderchaos.arena.positions import PositionsFileError

    try:
        return _make(args) if args.make is not None else _score(args)
    except (SpecError, PositionsFileError, ValueError, ImportError) as exc:
        print(f"orderchaos positions: {exc}", file=sys.stderr)
        return 2


def _score(args: argparse.Namespace) -> int:
    from orderchaos.arena.positions import DEFAULT_POSITIONS, load_positions, positions_accuracy

    path = args.file or DEFAULT_POSITIONS
    result = positions_accuracy(args.agent, load_positions(path), seed=args.seed)
    if args.json:
        print(json.dumps({"agent": args.agent, "file": str(path), **result.to_dict()}))
        return 0
    print(f"{args.agent} on {path}:")
    print(f"  all    {result.correct:4d}/{result.positions:<4d} = {result.accuracy:.3f}")
    for side, tally in result.by_side.items():
        print(f"  {side:6s} {tally['correct']:4d}/{tally['positions']:<4d} = {tally['accuracy']:.3f}")
    return 0


def _make(args: argparse.Namespace) -> int:
    from orderchaos.arena.positions import MakeStats, make_positions, parse_empties, save_positions

    if not args.out:
        raise ValueError("--make needs --out F.jsonl (where to write the positions)")
    stats = MakeStats()
    positions = make_positions(
        args.make,
        parse_empties(args.empties),
        args.seed,
        node_limit=args.node_limit,
        time_limit=args.time_limit,
        progress=sys.stderr.isatty(),
        stats=stats,
    )
    save_positions(args.out, positions)
    if args.json:
        print(json.dumps({"positions": len(positions), "out": args.out, **stats.to_dict()}))
    else:
        print(f"wrote {len(positions)} positions to {args.out} in {stats.seconds:.1f} s "
              f"(solver {stats.solver_seconds:.1f} s)")
        print(f"  attempts {stats.attempts}: game ended early {stats.ended_early}, unproven "
              f"{stats.unproven}, mover lost {stats.mover_lost}, every move wins "
              f"{stats.all_moves_win}, duplicates {stats.duplicates}")
        print(f"  by empties: {dict(sorted(stats.empties.items()))}")
    return 0 if len(positions) == args.make else 1
