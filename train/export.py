"""Export a run's latest policy as the shipped pretrained weights.

``python -m train.export RUN_DIR [--dest DIR]`` copies ``order.safetensors``,
``chaos.safetensors`` and ``meta.json`` of the run's latest checkpoint (not the trainer
state) into ``agents/data/pretrained/`` (or ``DIR``), checking first that they load.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from agents.network import META_FILE, atomic_write_bytes, load_policy_dir
from agents.neural import find_policy_dir, pretrained_dir
from envs.rules import AGENTS

POLICY_FILES = tuple(f"{role}.safetensors" for role in AGENTS) + (META_FILE,)


def export_policy(run_dir: str | Path, dest: str | Path | None = None) -> Path:
    """Copy the policy files of ``run_dir``'s latest checkpoint (or of a policy directory)
    into ``dest`` (default: the package's pretrained directory). Returns ``dest``."""
    source = find_policy_dir(run_dir)
    load_policy_dir(source)  # refuse anything that would not load (e.g. another OBS_VERSION)
    target = Path(dest) if dest is not None else pretrained_dir()
    for name in POLICY_FILES:
        atomic_write_bytes(target / name, (source / name).read_bytes())
    return target


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m train.export", description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", help="a training run directory (or a policy directory)")
    parser.add_argument("--dest", help="where to write (default: agents/data/pretrained)")
    args = parser.parse_args(argv)
    try:
        target = export_policy(args.run_dir, args.dest)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"exported {find_policy_dir(args.run_dir)} -> {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
