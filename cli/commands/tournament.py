"""Round robin in both roles: every entrant as Order against every entrant as Chaos.

Fits role-aware Bradley-Terry ratings (an Order Elo and a Chaos Elo per entrant, 95%
intervals from the Fisher information), prints a table, and with --out writes
pairings.csv, ratings.csv, tournament.json, tournament.md, heatmap.png and ratings.png.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from orderchaos.cli import options


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of ``tournament``."""
    parser.add_argument("specs", nargs="+", metavar="SPEC", help="the entrants (agent specs)")
    parser.add_argument("--games", type=options.GAMES, default=20, metavar="N",
                        help="games per pairing (default 20)")
    parser.add_argument("--out", metavar="DIR", help="write CSV, JSON, Markdown and PNG files here")
    parser.add_argument("--seed", type=options.SEED, default=0, help="seed (default 0)")
    parser.add_argument("--openings", type=options.OPENINGS, default=0, metavar="K",
                        help="seeded random opening plies per game (default 0)")
    parser.add_argument("--workers", type=options.WORKERS, default=1, metavar="W", help="processes (default 1)")
    parser.add_argument("--anchor", metavar="SPEC",
                        help="set this entrant's mean rating to 0 (default: mean of all is 0)")
    parser.add_argument("--prior-sd", type=options.number_in(0, 1e6, above=True), default=3.0, metavar="LOGITS",
                        help="ridge prior standard deviation of ratings in logits (default 3)")


def run(args: argparse.Namespace) -> int:
    """Play the round robin, print the table, write the files."""
    from orderchaos.agents.registry import SpecError
    from orderchaos.arena.matches import WorkerCrashError
    from orderchaos.arena.tournament import run_tournament, write_outputs
    from orderchaos.files import check_output_dir

    try:
        if args.out:
            check_output_dir(args.out, "tournament output folder")
        with options.stop_on_signals():
            result = run_tournament(
                args.specs,
                args.games,
                args.seed,
                openings=args.openings,
                workers=args.workers,
                progress=sys.stderr.isatty(),
                prior_sd=args.prior_sd,
                anchor=args.anchor,
            )
    except (SpecError, ValueError, WorkerCrashError) as exc:
        print(f"orderchaos tournament: {exc}", file=sys.stderr)
        return 2
    print(result.table())
    total = len(args.specs) ** 2 * args.games
    played = int(result.games_played.sum())
    print(f"\n{played} games in {result.seconds:.1f} s", flush=True)
    if args.out:
        written: list = []

        def write(folder: Path) -> None:
            written[:] = write_outputs(result, folder)

        _, status = options.save_finished("tournament", args.out, write, "the tournament files into")
        for path in written:
            print(f"wrote {path}")
        if status:
            return status
    if result.stopped is not None:  # the table is printed and the files written above
        return options.stopped_line("tournament", result.stopped, f"{played} of {total} games")
    return 0
