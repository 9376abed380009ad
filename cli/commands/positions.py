"""Optimal-move accuracy on solver-labelled positions, or make such a set.

  orderchaos positions --agent SPEC [--file F.jsonl ...] [--limit N] [--seed S] [--json]
      the share of positions where the agent plays a move that keeps the mover's forced
      win, by side to move, one row per set: by default the four shipped sets, one per
      stage of the game (12-18, 19-22, 23-26 and 27-30 empty cells); --file (repeatable)
      scores only the given files, --limit only the first N positions of each;
  orderchaos positions --make N --empties 12-18 --out F.jsonl [--seed S] [--node-limit N]
                      [--side order|chaos] [--exclude F.jsonl ...]
      label N positions from sensible (epsilon-heuristic) play with the exact solver; the
      same arguments give the same file, and a smaller N a prefix of it. It prints how many
      candidates were dropped and why (unproven: the solver hit the node limit). --side keeps
      only positions with that side to move; --exclude (repeatable) never picks a position of
      the given files, up to symmetry (a training set apart from the evaluation sets).
"""

from __future__ import annotations

import argparse
import json
import sys

from orderchaos.cli import options


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of ``positions``."""
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--agent", metavar="SPEC", help="score this agent")
    mode.add_argument("--make", type=options.int_in(1, 10_000_000), metavar="N", help="make a set of N positions")
    parser.add_argument("--file", metavar="F.jsonl", action="append",
                        help="positions to score; repeat for several files (default: the four "
                             "shipped sets, 12-18 to 27-30 empty cells)")
    parser.add_argument("--limit", type=options.int_in(0, 10_000_000), default=0, metavar="N",
                        help="with --agent: score only the first N positions of each set (default 0: all)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--seed", type=options.SEED, default=0, help="seed (default 0)")
    parser.add_argument("--empties", default="12-18", metavar="LOW-HIGH",
                        help="with --make: empty cells of the positions (default 12-18)")
    parser.add_argument("--out", metavar="F.jsonl", help="with --make: where to write the set")
    parser.add_argument("--node-limit", type=options.NODES, default=1_000_000, metavar="N",
                        help="with --make: solver nodes per position, else skip it (default 1000000)")
    parser.add_argument("--side", choices=("order", "chaos"), default=None,
                        help="with --make: only positions with this side to move (default: both)")
    parser.add_argument("--exclude", metavar="F.jsonl", action="append", default=[],
                        help="with --make: never pick a position of this file, up to symmetry; "
                             "repeat for several files")
    parser.add_argument("--time-limit", type=options.SECONDS, default=None, metavar="S",
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
    from orderchaos.arena.positions import SHIPPED_SETS, pooled_accuracy, set_name, stage_accuracies

    if args.limit < 0:
        raise ValueError(f"--limit must be 0 (all) or a positive number of positions, got {args.limit}")
    files = {set_name(p): str(p) for p in args.file} if args.file else {
        name: str(path) for name, path in SHIPPED_SETS.items()}
    results = stage_accuracies(args.agent, files, seed=args.seed, limit=args.limit)
    pooled = pooled_accuracy(list(results.values()))
    if args.json:
        print(json.dumps({
            "agent": args.agent,
            "seed": args.seed,
            "limit": args.limit,
            **pooled.to_dict(),
            "sets": {name: {"file": files[name], **r.to_dict()} for name, r in results.items()},
        }))
        return 0
    rows = [(_label(name), r) for name, r in results.items()]
    if len(rows) > 1:
        rows.append(("all", pooled))
    width = max(len("set"), *(len(label) for label, _ in rows))
    print(f"{args.agent}: optimal-move accuracy (a move that keeps the forced win), seed {args.seed}"
          + (f", first {args.limit} positions of each set" if args.limit else ""))
    header = f"  {'set':<{width}}  {'positions':>9}  {'Order to move':>20}  {'Chaos to move':>20}  {'overall':>20}"
    print(header)
    for label, r in rows:
        order, chaos = r.by_side["order"], r.by_side["chaos"]
        print(f"  {label:<{width}}  {r.positions:>9d}  {_cell(order):>20}  {_cell(chaos):>20}  "
              f"{_cell(r.to_dict()):>20}")
    if args.file is None:
        print("  (set: the empty cells of its positions)")
    return 0


def _label(name: str) -> str:
    """A shipped set's key as its empties range ('19_22' -> '19-22'), else the path."""
    from orderchaos.arena.positions import SHIPPED_SETS

    return name.replace("_", "-") if name in SHIPPED_SETS else name


def _cell(tally: dict) -> str:
    """'0.950 (190/200)', or '-' where no position had this side to move."""
    if not tally["positions"]:
        return "-"
    return f"{tally['accuracy']:.3f} ({tally['correct']}/{tally['positions']})"


def _make(args: argparse.Namespace) -> int:
    from orderchaos.arena.positions import (
        MakeStats,
        load_positions,
        make_positions,
        parse_empties,
        save_positions,
    )

    from orderchaos.files import check_output_file

    if not args.out:
        raise ValueError("--make needs --out F.jsonl (where to write the positions)")
    check_output_file(args.out, "positions file")
    exclude = [p for path in args.exclude for p in load_positions(path)]
    stats = MakeStats()
    positions = make_positions(
        args.make,
        parse_empties(args.empties),
        args.seed,
        node_limit=args.node_limit,
        time_limit=args.time_limit,
        progress=sys.stderr.isatty(),
        stats=stats,
        side=args.side,
        exclude=exclude,
    )
    saved, status = options.save_finished("positions", args.out, lambda p: save_positions(p, positions),
                                          "positions file")
    if saved is None:
        return status
    args.out = str(saved)
    if args.json:
        print(json.dumps({"positions": len(positions), "out": args.out, "seed": args.seed,
                          "node_limit": args.node_limit, **stats.to_dict()}))
    else:
        print(f"wrote {len(positions)} positions to {args.out} in {stats.seconds:.1f} s "
              f"(solver {stats.solver_seconds:.1f} s, node limit {args.node_limit})")
        print(f"  attempts {stats.attempts}: game ended early {stats.ended_early}, unproven "
              f"{stats.unproven}, mover lost {stats.mover_lost}, every move wins "
              f"{stats.all_moves_win}, duplicates {stats.duplicates}"
              + (f", excluded {stats.excluded}" if args.exclude else ""))
        print(f"  by empties: {dict(sorted(stats.empties.items()))}")
    return status or (0 if len(positions) == args.make else 1)
