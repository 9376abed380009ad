"""Learning curves of training runs, read from their TensorBoard events.

  orderchaos curves RUN [RUN ...] [--tag PATTERN ...] [--label NAME ...] [--out F.png] [--log] [--json]

prints a markdown table (one row per run and evaluation step, one column per tag) and, with
--out, draws one PNG with a panel per tag and a line per run (--log: a symmetric log y axis
on each panel whose values span more than a factor of 100, such as exploit/refutations
falling by orders of magnitude to 0). Tags are names or shell-style
patterns; the default, eval/accuracy_*_chaos, is the Chaos network's optimal-move accuracy
at each stage of the game (logged by every evaluation of a run).
"""

from __future__ import annotations

import argparse
import json
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of ``curves``."""
    from orderchaos.train.curves import CHAOS_ACCURACY_TAGS

    parser.add_argument("runs", nargs="+", metavar="RUN", help="training run directories")
    parser.add_argument("--tag", action="append", metavar="PATTERN",
                        help=f"a scalar tag or shell-style pattern; repeat for several "
                             f"(default {CHAOS_ACCURACY_TAGS})")
    parser.add_argument("--label", action="append", metavar="NAME",
                        help="a name per run, in order (default: the directory names)")
    parser.add_argument("--out", metavar="F.png", help="also draw the curves into this PNG")
    parser.add_argument("--log", action="store_true",
                        help="a symmetric log y axis (linear within 1 of 0) on each panel whose values span more than a factor of 100")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")


def run(args: argparse.Namespace) -> int:
    """Print the curves, then draw them."""
    from orderchaos.files import check_output_file
    from orderchaos.train.curves import (
        CHAOS_ACCURACY_TAGS, check_plot_path, curves_table, plot_curves, select_curves)

    try:
        if args.out is not None:
            check_output_file(args.out, "plot")
            check_plot_path(args.out)
        curves = select_curves(args.runs, args.tag or [CHAOS_ACCURACY_TAGS], args.label)
    except ValueError as exc:  # OutputPathError is one
        print(f"orderchaos curves: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([{"run": c.run, "tag": c.tag, "points": c.points} for c in curves]))
    else:
        print(curves_table(curves), end="")
    if args.out is not None:
        try:
            plot_curves(curves, args.out, log=args.log)
        except OSError as exc:
            print(f"orderchaos curves: cannot write {args.out}: {exc.strerror or exc}", file=sys.stderr)
            return 1
        print(f"wrote {args.out}", file=sys.stderr if args.json else sys.stdout)
    return 0
