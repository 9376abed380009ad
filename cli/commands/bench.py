"""Benchmarks that print figures and ratios against peers measured in the same run.

``orderchaos bench env``: steps per second of the single, AEC and vector envs, and of
PettingZoo / OpenSpiel peers when installed. ``orderchaos bench search``: MCTS simulations
per second (against OpenSpiel's C++ MCTSBot when installed) and exact-solver times.
``orderchaos bench train``: network evaluation throughput and self-play games per second.
``orderchaos bench web``: how long a fresh web server keeps ``/healthz`` waiting while it
starts, then the server under 500 WebSocket clients on loopback (moves/s, move round trips,
the store checked afterwards; ``orderchaos.web.load``). ``orderchaos bench store``: one
committed move in the game store's SQLite file and, with --postgres URL, in PostgreSQL, and
the ratio (``orderchaos.web.store_bench``). ``all`` runs every target.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys

from orderchaos.cli import options

TARGETS: dict[str, list[str]] = {
    "env": ["orderchaos.bench.envs:run"],
    "search": ["orderchaos.bench.search:run", "orderchaos.bench.solver:run"],
    "train": ["orderchaos.bench.train:run"],
    "web": ["orderchaos.web.load:run"],
    "store": ["orderchaos.web.store_bench:run"],
}


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of ``bench``."""
    parser.add_argument("target", choices=[*TARGETS, "all"], help="what to measure")
    parser.add_argument(
        "--quick", action="store_true", help="a tiny budget (seconds), for smoke tests"
    )
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    parser.add_argument(
        "--postgres", metavar="URL",
        help="store: also measure the PostgreSQL database postgresql://USER@HOST:PORT/DB (in a schema of "
        "its own, dropped afterwards)",
    )


def run(args: argparse.Namespace) -> int:
    """Run the chosen benchmarks; each prints its own table."""
    from orderchaos.files import OutputPathError, atomic_write_bytes, check_output_file

    if args.json:
        try:
            check_output_file(args.json, "figures file")
        except OutputPathError as exc:
            print(f"orderchaos bench: {exc}", file=sys.stderr)
            return 2
    if args.postgres is not None:
        from orderchaos.web.store import StoreError, parse_store_url

        try:
            if parse_store_url(args.postgres)[0] != "postgresql":
                raise StoreError(f"{args.postgres}: give postgresql://USER@HOST:PORT/DB")
        except StoreError as exc:
            print(f"orderchaos bench: --postgres {exc}", file=sys.stderr)
            return 2
    names = list(TARGETS) if args.target == "all" else [args.target]
    results: dict[str, dict] = {}
    for name in names:
        for target in TARGETS[name]:
            module_name, attr = target.split(":")
            extra = {"postgres": args.postgres} if name == "store" else {}
            results[target] = getattr(importlib.import_module(module_name), attr)(quick=args.quick, **extra)
    if args.json:
        text = json.dumps(results, indent=2, default=str)
        return options.save_finished("bench", args.json, lambda p: atomic_write_bytes(p, text.encode()),
                                     "figures file")[1]
    return 0
