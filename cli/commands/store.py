"""Look after the game store of `orderchaos serve`. `orderchaos store copy --from SRC --to DST`
moves a site between stores of either kind (a SQLite file: PATH or sqlite:///PATH; a
PostgreSQL database: postgresql://USER@HOST:PORT/DB), with its games, moves, clocks, seats,
puzzle ratings and attempts. The source is read as it stood at one moment (a server may go on
writing to it); the copy is written in one transaction, checked count by count before it is
kept, and the counts are printed. A target that already holds games is refused unless
--replace says to delete what it holds.
"""

from __future__ import annotations

import argparse
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of ``store``."""
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    copy = actions.add_parser("copy", help="copy every game, move, clock and puzzle rating into another store",
                              description=__doc__)
    copy.add_argument("--from", dest="source", required=True, metavar="SRC",
                      help="the store to copy (PATH, sqlite:///PATH or postgresql://USER@HOST:PORT/DB)")
    copy.add_argument("--to", dest="target", required=True, metavar="DST",
                      help="the store to copy into, created when new (the same forms)")
    copy.add_argument("--replace", action="store_true",
                      help="delete what the target holds first (default: refuse a target that holds anything)")


def run(args: argparse.Namespace) -> int:
    """Copy the store and print the counts; 2 for bad input, 1 when a database does not answer
    or the copy does not match."""
    from orderchaos.web.store import (
        CopyMismatch, StoreError, StoreUnavailable, copy_site, shown_location,
    )

    try:
        counts = copy_site(args.source, args.target, args.replace)
    except StoreError as exc:  # a malformed location, no source, the same store twice, a full target
        print(f"orderchaos store: {exc}", file=sys.stderr)
        return 2
    except (StoreUnavailable, CopyMismatch) as exc:
        print(f"orderchaos store: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"orderchaos store: cannot write {args.target}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(f"{'table':<16}{'source':>10}{'copy':>10}")
    for table, (source, copied) in counts.items():
        print(f"{table:<16}{source:>10}{copied:>10}")
    print(f"orderchaos store: copied {shown_location(args.source)} into {shown_location(args.target)}; every count matches")
    return 0
