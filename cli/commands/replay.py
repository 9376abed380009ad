"""Show saved games (from ``orderchaos eval --save-games F.jsonl``) move by move.

Each move prints the board with the last move in parentheses and a winning line in
brackets. Without --game every game in the file is shown; --list only lists them.
"""

from __future__ import annotations

import argparse
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of ``replay``."""
    parser.add_argument("file", help="a JSON-lines file of games")
    parser.add_argument(
        "--game", type=int, metavar="I", help="show only game I (its 'game' number in the file)"
    )
    parser.add_argument("--list", action="store_true", help="list the games, one line each")


def run(args: argparse.Namespace) -> int:
    """Read, check and print the games."""
    from orderchaos.arena.game_files import GameFileError, load_games
    from orderchaos.cli.terminal_game import format_replay

    try:
        games = load_games(args.file)
    except GameFileError as exc:
        print(f"orderchaos replay: {exc}", file=sys.stderr)
        return 2
    if not games:
        print(f"orderchaos replay: {args.file} holds no games (a games file has one JSON line per game, "
              f"as orderchaos eval --save-games writes)", file=sys.stderr)
        return 2
    if args.game is not None:
        chosen = [g for g in games if g.index == args.game]
        if not chosen:
            numbers = ", ".join(str(g.index) for g in games[:20]) or "none"
            print(
                f"orderchaos replay: no game {args.game} in {args.file}; games there: {numbers}"
                + (" ..." if len(games) > 20 else ""),
                file=sys.stderr,
            )
            return 2
        games = chosen
    for game in games:
        r = game.record
        how = {None: "in", "resign": "by resignation after", "time": "on time after"}[r.reason]
        print(
            f"game {game.index}: {game.order or '?'} (order) vs {game.chaos or '?'} (chaos): "
            f"{r.winner} wins {how} {r.length} plies ({r.opening_plies} opening plies)"
        )
        if not args.list:
            print(format_replay(game.record))
            print()
    return 0
