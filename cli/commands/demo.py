"""A short train-then-evaluate demo on the default config.

Trains an Order and a Chaos network with AlphaZero self-play (the default config, with a
short heuristic warm-up) for ``--minutes`` of training time, then plays the trained pair
against ``random`` and ``heuristic`` in both seats and prints a table of results with
Wilson 95% intervals. The run directory it leaves is itself an agent spec.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from orderchaos.cli import options

DEMO_OVERRIDES = (
    "selfplay.games=64",
    "mcts.simulations=32",
    "run.checkpoint_interval=2",
    "eval.interval=0",
    "eval.games=10",
    "eval.positions_limit=100",
    "run.threads=1",
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of ``demo``."""
    parser.add_argument("--minutes", type=options.MINUTES, default=3.0, help="training minutes (default 3)")
    parser.add_argument("--games", type=options.GAMES, default=50, help="evaluation games per row (default 50)")
    parser.add_argument("--seed", type=options.SEED, default=0, help="seed of training and evaluation")
    parser.add_argument(
        "--warmup-games", type=options.int_in(0, 1_000_000), default=600,
        help="heuristic self-games imitated before self-play (default 600; 0: none)",
    )
    parser.add_argument("--run-dir", metavar="DIR", help="where the run is written (default runs/demo-<time>)")


def run(args: argparse.Namespace) -> int:
    """Train on the defaults for a few minutes, then evaluate the pair."""
    import sys

    from orderchaos.arena.matches import play_match
    from orderchaos.train.config import load_config
    from orderchaos.train.factory import make_trainer

    overrides = [
        *DEMO_OVERRIDES,
        f"run.time_limit_minutes={args.minutes}",
        f"seed={args.seed}",
        f"selfplay.warmup_games={args.warmup_games}",
        f"selfplay.warmup_updates={args.warmup_games // 2}",
    ]
    config = load_config(None, overrides)
    run_dir = Path(args.run_dir or f"runs/demo-{time.strftime('%Y%m%d-%H%M%S')}")
    try:
        trainer = make_trainer(config, run_dir)
    except (FileExistsError, ValueError) as exc:
        print(f"orderchaos demo: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        return options.run_dir_failure("demo", run_dir, exc, resumable=False)
    print(f"training for {args.minutes:g} minutes into {run_dir} ...", flush=True)
    try:
        trainer.fit()
    except OSError as exc:
        return options.run_dir_failure("demo", run_dir, exc, resumable=True)
    print(f"trained {trainer.iteration} iterations, {trainer.games_played} self-play games")

    spec = str(run_dir)
    rows = [
        (f"trained Order vs {opp} Chaos", spec, opp) for opp in ("random", "heuristic")
    ] + [(f"{opp} Order vs trained Chaos", opp, spec) for opp in ("random", "heuristic")]
    print(f"\n{'match':<36} {'Order wins':>10} {'Order win rate (95% CI)':>26}")
    for label, order, chaos in rows:
        r = play_match(order, chaos, args.games, seed=args.seed, openings=2)
        ci = f"{r.order_win_rate:.2f} ({r.ci95[0]:.2f}-{r.ci95[1]:.2f})"
        print(f"{label:<36} {r.order_wins:>5}/{r.games:<4} {ci:>26}")
    print(f"\nuse the pair as an agent: orderchaos eval --order {spec} --chaos heuristic")
    return 0
