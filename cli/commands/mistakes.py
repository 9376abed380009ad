"""Find the moves that lost an agent's games: where does a policy go wrong?

  orderchaos mistakes --agent SPEC [--role order|chaos] [--opponent SPEC] [--games N]
                      [--openings K] [--seed S] [--node-limit N] [--show K] [--json]

Plays the agent in one role against the opponent (each game after K seeded random plies),
and walks every lost game back with the exact solver to the last position the agent
provably won: the move it played there lost the game (``orderchaos.arena.mistakes``). Prints the
loss count, how many losing moves were placed, the empty cells at each, and the first K
positions with the move played and the proven winning moves. Beside the solver's verdict,
each Order mistake is marked by the central-pairing strategy: "keeps the strategy's win",
"leaves it" (with the strategy's own move), or no mark where the strategy proved no win
(``orderchaos.arena.analysis.strategy_verdict``). ``--json`` prints one object with every
mistake (board string, played and winning moves by name, ``strategy`` and
``strategy_move``, null for Chaos's moves and where the strategy proved no win).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter

from orderchaos.cli import options


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of ``mistakes``."""
    parser.add_argument("--agent", required=True, metavar="SPEC", help="the agent whose games are searched")
    parser.add_argument("--role", choices=["order", "chaos"], default="order", help="its role (default order)")
    parser.add_argument("--opponent", default="heuristic", metavar="SPEC", help="the other side (default heuristic)")
    parser.add_argument("--games", type=options.GAMES, default=200, metavar="N", help="games to play (default 200)")
    parser.add_argument("--openings", type=options.OPENINGS, default=2, metavar="K",
                        help="random opening plies per game, not searched (default 2)")
    parser.add_argument("--seed", type=options.SEED, default=0, help="seed (default 0)")
    parser.add_argument("--node-limit", type=options.NODES, default=300000, metavar="N",
                        help="solver nodes per position walked (default 300000)")
    parser.add_argument("--show", type=options.int_in(0, options.MAX_GAMES), default=5, metavar="K", help="positions to print (default 5)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    """Play, search the lost games, and report."""
    from orderchaos.agents.registry import SpecError

    try:
        return _run(args)
    except (SpecError, ValueError, ImportError) as exc:
        print(f"orderchaos mistakes: {exc}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    from orderchaos.agents.registry import make
    from orderchaos.envs.rules import ORDER, action_name, render_ascii
    from orderchaos.arena.analysis import StrategyVerdict, strategy_verdict
    from orderchaos.arena.mistakes import collect_mistakes, ranked_moves

    if args.games < 1 or args.node_limit < 1 or args.show < 0:
        raise ValueError("--games and --node-limit must be positive and --show at least 0, got "
                         f"{args.games}, {args.node_limit} and {args.show}")
    learner = make(args.agent, seed=args.seed)
    preferences = None
    if hasattr(learner, "policy"):
        def preferences(state):  # the agent's own ranking of the moves, for unlisted wins
            return ranked_moves(learner.policy(state), 10)
    hunt = collect_mistakes(learner, args.role, [args.opponent], args.games, args.seed,
                            openings=args.openings, node_limit=args.node_limit, preferences=preferences)
    verdicts = [strategy_verdict(m.state, m.played) if m.state.to_play == ORDER else StrategyVerdict(None, None)
                for m in hunt.mistakes]
    if args.json:
        print(json.dumps({
            "agent": args.agent, "role": args.role, "opponent": args.opponent,
            "games": hunt.games, "lost": hunt.lost,
            "mistakes": [
                {"board": m.state.to_string(), "empty": m.state.num_empty,
                 "played": action_name(m.played), "winning": [action_name(a) for a in m.winning],
                 "strategy": v.mark, "strategy_move": v.to_dict()["strategy_move"]}
                for m, v in zip(hunt.mistakes, verdicts)
            ],
        }))
        return 0
    print(f"{args.agent} as {args.role} against {args.opponent}: {hunt.games} games, lost "
          f"{hunt.lost} ({hunt.lost / hunt.games:.1%}); losing move placed in {len(hunt.mistakes)}")
    empties = Counter(m.state.num_empty for m in hunt.mistakes)
    if empties:
        print("empty cells at the losing move: " + ", ".join(f"{e}: {n}" for e, n in sorted(empties.items())))
    for m, v in list(zip(hunt.mistakes, verdicts))[: args.show]:
        print()
        print(render_ascii(m.state))
        print(f"played {action_name(m.played)}; proven winning: {', '.join(action_name(a) for a in m.winning)}")
        if v.mark == "keeps":
            print("strategy: keeps the strategy's win")
        elif v.mark == "leaves":
            print(f"strategy: leaves it (the strategy plays {action_name(v.strategy_move)})")
    return 0
