"""Export a run's latest policy, e.g. as the shipped pretrained weights.

Copies ``order.safetensors``, ``chaos.safetensors`` and ``meta.json`` of the run's latest
checkpoint (not the trainer state) into the package's pretrained directory, or ``--dest``,
checking first that they load and verify.
"""

from __future__ import annotations

import argparse
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of ``export``."""
    parser.add_argument("run_dir", help="a training run directory (or a policy directory)")
    parser.add_argument("--dest", help="where to write (default: the shipped pretrained directory)")


def run(args: argparse.Namespace) -> int:
    """Export the policy; 2 with one line on stderr when it cannot be read."""
    from orderchaos.agents.policy_files import export_policy, find_policy_dir
    from orderchaos.files import check_output_dir

    try:
        if args.dest is not None:
            check_output_dir(args.dest, "export destination")
        source = find_policy_dir(args.run_dir)
        target = export_policy(args.run_dir, args.dest)
    except ValueError as exc:
        print(f"orderchaos export: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"orderchaos export: cannot write {args.dest}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(f"exported {source} -> {target}")
    return 0
