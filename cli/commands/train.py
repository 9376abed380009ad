"""Train a pair of Order and Chaos policies (AlphaZero self-play or PPO) from a YAML config.

Examples::

    orderchaos train configs/smoke.yaml
    orderchaos train configs/alphazero.yaml optim.lr=1e-3 --selfplay.games 64 --run-dir runs/az
    orderchaos train --resume runs/az                 # continue a run (its own config.yaml)
    orderchaos train --resume runs/az run.iterations=200
    orderchaos train --help-config                    # every config key with help

A run directory holds config.yaml, TensorBoard events and checkpoints/ (latest + trainer
state); it can be used directly as an agent spec, e.g. ``orderchaos eval --order runs/az``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from orderchaos.cli import options


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of ``train``."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("config", nargs="?", help="YAML config file (not needed with --resume)")
    parser.add_argument(
        "overrides",
        nargs=argparse.REMAINDER,
        help="config overrides: key=value or --key value with dotted keys (optim.lr=1e-3)",
    )
    parser.add_argument("--resume", metavar="RUN_DIR", help="continue this run from its latest checkpoint")
    parser.add_argument("--run-dir", metavar="DIR", help="where the run is written (default runs/<config>-<time>)")
    parser.add_argument("--help-config", action="store_true", help="list every config key and exit")


def _split_known(args: argparse.Namespace) -> list[str]:
    """argparse REMAINDER swallows our own flags once overrides start; pull them back out."""
    rest: list[str] = []
    items = list(args.overrides or [])
    i = 0
    while i < len(items):
        item = items[i]
        if item in ("--resume", "--run-dir") and i + 1 < len(items):
            setattr(args, item[2:].replace("-", "_"), items[i + 1])
            i += 2
            continue
        if item.startswith(("--resume=", "--run-dir=")):
            key, value = item[2:].split("=", 1)
            setattr(args, key.replace("-", "_"), value)
        elif item == "--help-config":
            args.help_config = True
        else:
            rest.append(item)
        i += 1
    # a config path given after --resume lands in `config`; an override there is an override
    if args.config and "=" in args.config and not Path(args.config).exists():
        rest.insert(0, args.config)
        args.config = None
    return rest


def run(args: argparse.Namespace) -> int:
    """Build the config, create or resume the run, train, and print where it went."""
    from orderchaos.train.config import ConfigError, config_from_dict, help_text, load_config, merge, parse_overrides, read_yaml

    overrides = _split_known(args)
    if args.help_config:
        print(help_text())
        return 0
    try:
        if args.resume:
            if args.run_dir and Path(args.run_dir) != Path(args.resume):
                print("error: --run-dir cannot be combined with --resume (the run continues "
                      "in its own directory)", file=sys.stderr)
                return 2
            run_dir = Path(args.resume)
            saved = run_dir / "config.yaml"
            if not saved.is_file():
                print(f"error: {run_dir} is not a run directory (no config.yaml)", file=sys.stderr)
                return 2
            base = read_yaml(args.config) if args.config else read_yaml(saved)
            config = config_from_dict(merge(base, parse_overrides(overrides)))
        else:
            if not args.config:
                print("error: give a CONFIG.yaml (or --resume RUN_DIR); see --help-config", file=sys.stderr)
                return 2
            config = load_config(args.config, overrides)
            run_dir = Path(args.run_dir or f"runs/{Path(args.config).stem}-{time.strftime('%Y%m%d-%H%M%S')}")
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return 2

    from orderchaos.train.factory import make_trainer

    try:
        trainer = make_trainer(config, run_dir, resume=bool(args.resume))
    except (FileExistsError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        return options.run_dir_failure("train", run_dir, exc, resumable=False)
    try:
        last_eval = trainer.fit()
    except OSError as exc:
        return options.run_dir_failure("train", run_dir, exc, resumable=True)
    print(f"run directory: {run_dir}")
    print(f"iterations: {trainer.iteration}  games: {trainer.games_played}  minutes: {trainer.elapsed / 60:.1f}")
    for key, value in last_eval.items():
        print(f"  {key}: {value:.3f}")
    return 0
