"""Play on a site as a bot: `orderchaos bot --agent SPEC --server URL --token-file F`.

The bot connects (http:// or https:// behind a proxy), waits for challenges and accepts those
that --accept and --time-controls allow, at most --max-games at once; or, with --challenge NAME
--games K --time-control TC, it challenges the bot NAME K times (sides alternating, Order
first) and exits 0 once its K games are over. Every game is played with a fresh agent of
--agent (any spec: heuristic, pretrained:sims=200, a run directory); with under a second on
its clock it plays the move without search. A dropped connection is opened again and its
games go on. Ctrl-C (SIGINT) resigns the games in progress and exits 0. A bad or revoked
token: one line, exit 2. The token is read from a file, never from the command line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of ``bot``."""
    parser.add_argument("--agent", required=True, metavar="SPEC", help="the agent that plays (any agent spec)")
    parser.add_argument("--server", required=True, metavar="URL", help="the site, e.g. http://127.0.0.1:8000")
    parser.add_argument("--token-file", required=True, metavar="F",
                        help="a file holding the bot's token (from orderchaos bots add)")
    parser.add_argument("--accept", default="rated,casual", metavar="KINDS",
                        help="challenges to accept: rated, casual, both (default), or none")
    parser.add_argument("--time-controls", metavar="TCS", help="time controls to accept, e.g. 1+0,3+2 (default any)")
    parser.add_argument("--max-games", type=int, default=1, metavar="N", help="games at once (default 1)")
    parser.add_argument("--challenge", metavar="NAME", help="challenge this bot instead of waiting")
    parser.add_argument("--games", type=int, default=1, metavar="K", help="games to play with --challenge (default 1)")
    parser.add_argument("--time-control", default="1+0", metavar="TC", help="time control with --challenge (default 1+0)")
    parser.add_argument("--casual", action="store_true", help="with --challenge: casual games (default rated)")


def run(args: argparse.Namespace) -> int:
    """Check the arguments, then play; 2 for bad input or a refused token, 1 when the site
    cannot be reached."""
    from orderchaos.agents.registry import SpecError
    from orderchaos.web.bot_client import BotOptions, BotRunError, TokenRefused, agent_factory, run_bot, socket_url
    from orderchaos.web.clocks import NO_CLOCK, PRESETS

    def bad(text: str) -> int:
        print(f"orderchaos bot: {text}", file=sys.stderr)
        return 2

    known = [NO_CLOCK, *PRESETS]
    kinds = {k.strip() for k in args.accept.split(",") if k.strip()}
    if kinds == {"none"}:
        kinds = set()
    if not kinds <= {"rated", "casual"}:
        return bad(f"--accept {args.accept}: give rated, casual, rated,casual or none")
    controls = None
    if args.time_controls is not None:
        controls = {c.strip() for c in args.time_controls.split(",") if c.strip()}
        if not controls or not controls <= set(known):
            return bad(f"--time-controls {args.time_controls}: give some of {', '.join(known)}, comma-separated")
    if args.time_control not in known:
        return bad(f"--time-control {args.time_control}: give one of {', '.join(known)}")
    if args.max_games < 1:
        return bad(f"--max-games must be at least 1, got {args.max_games}")
    if args.games < 1:
        return bad(f"--games must be at least 1, got {args.games}")
    try:
        socket_url(args.server)
    except ValueError as exc:
        return bad(f"--server {exc}")
    path = Path(args.token_file)
    try:
        token = path.read_text().strip()
    except OSError as exc:
        return bad(f"--token-file {args.token_file}: {exc.strerror or exc}")
    if not token or any(c.isspace() for c in token):
        return bad(f"--token-file {args.token_file}: the file must hold the token alone (from orderchaos bots add)")
    try:
        agent = agent_factory(args.agent)
    except (SpecError, ValueError) as exc:
        return bad(f"--agent {exc}")
    options = BotOptions(frozenset(kinds), frozenset(controls) if controls is not None else None, args.max_games,
                         args.challenge, args.games, args.time_control, not args.casual)
    try:
        figures = run_bot(args.server, token, agent, options, say=lambda line: print(line, flush=True))
    except TokenRefused as exc:
        return bad(str(exc))
    except BotRunError as exc:
        print(f"orderchaos bot: {exc}", file=sys.stderr)
        return 1
    print(f"orderchaos bot: {figures.summary()}", flush=True)
    return 0
