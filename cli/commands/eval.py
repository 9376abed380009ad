"""Play a match: one agent as Order against another as Chaos, N seeded games.

Prints Order and Chaos wins, the Order win rate with a Wilson 95% interval, the mean game
length and games per second. The same arguments always give the same games, whatever
--workers is. Agent specs: random, heuristic, mcts:sims=200, solver:time=1, pretrained,
or a training run directory.
"""

from __future__ import annotations

import argparse
import json
import sys

from orderchaos.cli import options


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of ``eval``."""
    parser.add_argument("--order", required=True, metavar="SPEC", help="the Order player")
    parser.add_argument("--chaos", required=True, metavar="SPEC", help="the Chaos player")
    parser.add_argument("--games", type=options.GAMES, default=100, metavar="N", help="games (default 100)")
    parser.add_argument("--seed", type=options.SEED, default=0, help="match seed (default 0)")
    parser.add_argument(
        "--openings",
        type=options.OPENINGS,
        default=0,
        metavar="K",
        help="start each game from a seeded random opening of K plies (default 0)",
    )
    parser.add_argument("--workers", type=options.WORKERS, default=1, metavar="W", help="processes (default 1)")
    parser.add_argument(
        "--save-games", metavar="FILE", help="write every game as a JSON line (for replay)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    """Play the match and print the figures; the games file is checked before play, and
    written after the figures are printed (elsewhere, named, if it fails then)."""
    from orderchaos.agents.registry import SpecError
    from orderchaos.arena.game_files import save_games
    from orderchaos.arena.matches import WorkerCrashError, play_match
    from orderchaos.files import check_output_file

    try:
        if args.save_games:
            check_output_file(args.save_games, "saved games")
        with options.stop_on_signals():
            result = play_match(
                args.order,
                args.chaos,
                args.games,
                args.seed,
                openings=args.openings,
                workers=args.workers,
                progress=not args.json and sys.stderr.isatty(),
                keep_games=bool(args.save_games),
            )
    except (SpecError, ValueError, WorkerCrashError) as exc:
        print(f"orderchaos eval: {exc}", file=sys.stderr)
        return 2
    if args.json:
        out = result.to_dict()
        del out["records"]
        print(json.dumps(out), flush=True)
    else:
        print(result.summary(), flush=True)
    if args.save_games:
        saved, status = options.save_finished(
            "eval", args.save_games, lambda p: save_games(p, result.records, result.order, result.chaos),
            "saved games")
        if status:
            return status
        if not args.json:
            print(f"games saved to {saved}")
    if result.stopped is not None:  # the finished games are printed and saved above
        return options.stopped_line("eval", result.stopped, f"{result.games} of {args.games} games")
    return 0
