"""Play Order and Chaos in the terminal against any agent.

Type moves as a cell and a symbol ('c3 X', 'X c3'); 'undo' takes back your last move and
the reply, 'hint' asks the solver, 'help' lists commands, 'quit' (or end of input) leaves.
"""

from __future__ import annotations

import argparse
import sys

from orderchaos.cli import options


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of ``play``."""
    parser.add_argument(
        "--as", dest="side", choices=["order", "chaos"], default="order",
        help="the side you play (default order, who moves first)",
    )
    parser.add_argument("--vs", default="heuristic", metavar="SPEC", help="the opponent")
    parser.add_argument("--seed", type=options.SEED, default=0, help="the opponent's seed (default 0)")
    parser.add_argument(
        "--hint-time", type=options.SECONDS, default=1.0, metavar="S",
        help="solver time limit for 'hint' in seconds (default 1)",
    )


def run(args: argparse.Namespace) -> int:
    """Build the opponent and play one game on stdin/stdout."""
    from orderchaos.agents.registry import SpecError, check_role, make
    from orderchaos.cli.terminal_game import play_session

    if args.hint_time <= 0:
        print("orderchaos play: --hint-time must be positive seconds", file=sys.stderr)
        return 2
    try:
        check_role(args.vs, "chaos" if args.side == "order" else "order")
        agent = make(args.vs, seed=args.seed)
    except (SpecError, ImportError) as exc:
        print(f"orderchaos play: cannot build the opponent {args.vs!r}: {exc}", file=sys.stderr)
        return 2
    play_session(
        agent, args.side, stdin=sys.stdin, stdout=sys.stdout, agent_label=args.vs,
        hint_time=args.hint_time,
    )
    return 0
