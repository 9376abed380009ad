"""Train an Order network's refutations away: fine-tune it until ``exploit`` finds none.

Walks every Chaos line against the Order network of ``--agent`` (``pretrained``, or a policy
or run folder) with at most ``--border-moves K`` border moves while the centre is open; at
the last position of each refutation that the central-pairing strategy covers the network is
given the move it ranks highest among those that win there (its best strategy-keeping move at
worst) and its own moves below, overridden only where a walk of that subtree still loses, while
positions sampled from its walk keep their move, policy and value. The fine-tuned network is
walked again, round after round, until no refutation is left; then the policy (the Chaos
network unchanged) is written to ``--out``. ``--work-dir DIR`` keeps the walks, targets and
networks, and the same command (``--rounds`` may grow) resumes a stopped repair; a work folder
holding a repair of another question is refused. Prints each round's figures, then writes the
policy and ``--report FILE``. Exit status 0 when repaired or when there was nothing to repair, 1
when refutations are left after ``--rounds`` or the repair failed (one line; the work is kept),
2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys

from orderchaos.cli import options
from orderchaos.cli.commands.exploit import border_moves, check_work_dir


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of ``repair``."""
    parser.add_argument("--agent", required=True, metavar="SPEC",
                        help="the policy to repair: pretrained, or a policy or run folder (its network, greedy)")
    parser.add_argument("--border-moves", type=border_moves, default=1, metavar="K",
                        help="border cells Chaos may play while a central cell is empty: 0..20 or all (default 1)")
    parser.add_argument("--out", required=True, metavar="DIR", help="where the repaired policy goes (a new or empty folder)")
    parser.add_argument("--work-dir", required=True, metavar="DIR",
                        help="keeps the walks, targets and networks; the same command resumes from it")
    parser.add_argument("--start", metavar="BOARD", help="start position, 36 characters of X, O and . (default: empty board)")
    parser.add_argument("--rounds", type=options.int_in(1, 100), default=4, metavar="N",
                        help="fine-tune and walk again at most N times (default 4)")
    parser.add_argument("--anchors", type=options.int_in(1, 50_000_000), default=500_000, metavar="N",
                        help="positions of the original walk whose moves are kept (default 500000)")
    parser.add_argument("--max-steps", type=options.int_in(1, 1_000_000), default=4000, metavar="N",
                        help="fine-tune steps a round at most; a round whose targets are not all played by then fails (default 4000)")
    parser.add_argument("--kept-targets", type=options.int_in(0, 50_000_000), metavar="N",
                        help="only the positions a subtree walk overrode stay targets; of the others whose move the "
                             "original network plays, at most N, sampled, join the anchors (default: every position "
                             "of the subtrees is a target)")
    parser.add_argument("--settle-checks", type=options.int_in(0, 10_000), default=0, metavar="N",
                        help="once every target is played, fine-tune N more checks and keep the network of the "
                             "check with the fewest anchors lost (default 0)")
    parser.add_argument("--held-levels", type=options.int_in(0, 18), default=0, metavar="L",
                        help="the Order positions of the first L levels of the original's walk keep its move as "
                             "targets, so that a near-tie at the top of the tree cannot tip the whole walk (default 0)")
    parser.add_argument("--seed", type=options.SEED, default=0, help="seeds the anchors and the batches (default 0)")
    parser.add_argument("--workers", type=options.int_in(1, 64), default=1, metavar="N",
                        help="processes for the whole-class walks (default 1)")
    parser.add_argument("--search", type=options.int_in(1, 10**6), metavar="N",
                        help="find the class's refutations by beam searches of width N (several widths, restarts "
                             "from the lines found) instead of walking it whole; K=0 is walked exactly each round")
    parser.add_argument("--exact-up-to", type=options.int_in(0, 20), default=0, metavar="J",
                        help="with --search: walk K=0..J exactly each round before searching (default 0)")
    parser.add_argument("--search-lines", type=options.int_in(1, 1_000_000), default=None, metavar="N",
                        help="with --search: refutation lines each beam search keeps at most; more lines can pass more "
                             "repair points (default 64)")
    parser.add_argument("--patience", type=options.int_in(1, 100), default=2, metavar="N",
                        help="with --search: stop after N rounds that find no fewer refutations than the fewest "
                             "before them (default 2)")
    parser.add_argument("--subtree-border-moves", type=options.int_in(0, 20), metavar="J",
                        help="walk the subtree below each repair point with at most J more border moves (default: "
                             "all the class leaves); a smaller J makes a round cheaper and leaves the rest to the "
                             "next round's walks or searches")
    parser.add_argument("--plot", metavar="FILE",
                        help="draw the refutations found per round (.svg or .png), after the report")
    parser.add_argument("--report", metavar="FILE", help="write the report as JSON")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")


def run(args: argparse.Namespace) -> int:
    """Check the inputs, repair, print the figures, then write the policy and the report."""
    from pathlib import Path

    from orderchaos.agents.policy_files import CheckpointError, load_policy_dir
    from orderchaos.proof.exploit import WorkDirError
    from orderchaos.envs.rules import BoardStringError, State, check_reachable, parse_board
    from orderchaos.files import OutputPathError, check_output_dir, check_output_file, os_error_reason
    from orderchaos.train.repair import SEARCH_LINES, RepairSettings, check_new_folder, policy_spec_dir, publish, repair, write_report

    try:
        start = check_reachable(parse_board(args.start)) if args.start is not None else State()
        if start.is_terminal:
            raise ValueError(f"--start {args.start}: the game is already over there")
        load_policy_dir(policy_spec_dir(args.agent))
        out, work = Path(args.out).resolve(), Path(args.work_dir).resolve()
        if out == work or work in out.parents or out in work.parents:
            raise ValueError(f"--out {args.out} and --work-dir {args.work_dir} overlap; give two separate folders")
        try:
            check_new_folder(out)
        except ValueError:
            raise ValueError(f"--out {args.out}: not a new or empty folder; give one for the repaired policy") from None
        check_output_dir(out, "repaired policy")
        if args.report:
            check_output_file(args.report, "report")
        if args.search is None and (args.exact_up_to or args.patience != 2 or args.search_lines is not None):
            raise ValueError("--exact-up-to, --patience and --search-lines go with --search")
        if args.search is not None and args.border_moves == 0:
            raise ValueError("--search is for a class too large to walk; K=0 is walked exactly (drop --search)")
        if args.plot:
            check_output_file(args.plot, "plot")
            if Path(args.plot).suffix.lower() not in (".svg", ".png"):
                raise ValueError(f"--plot {args.plot}: give a .svg or .png file")
        check_work_dir(args.work_dir)
    except (BoardStringError, CheckpointError, OutputPathError, ValueError) as exc:
        print(f"orderchaos repair: {exc}", file=sys.stderr)
        return 2
    settings = RepairSettings(anchors=args.anchors, seed=args.seed, rounds=args.rounds, max_steps=args.max_steps,
                              kept_targets=args.kept_targets, settle_checks=args.settle_checks,
                              held_levels=args.held_levels)
    log = (lambda line: None) if args.json else (lambda line: print(line, flush=True))
    with options.stop_on_signals():
        try:
            report = repair(args.agent, None, args.work_dir, args.border_moves, settings, args.workers, start, log,
                            search=args.search, exact_up_to=args.exact_up_to, patience=args.patience,
                            subtree_border_moves=args.subtree_border_moves,
                            search_lines=args.search_lines or SEARCH_LINES)
        except WorkDirError as exc:
            print(f"orderchaos repair: {exc}", file=sys.stderr)
            return 2
        except (RuntimeError, ValueError, CheckpointError) as exc:
            # a fine-tune that did not converge, no position to repair, a damaged round network
            print(f"orderchaos repair: {exc}; the work so far is kept in {args.work_dir}", file=sys.stderr)
            return 1
        except OSError as exc:
            print(f"orderchaos repair: cannot write in {args.work_dir}: {os_error_reason(exc)}; "
                  f"the same command resumes from the work folder", file=sys.stderr)
            return 1
        except KeyboardInterrupt as stopped:
            return options.stopped_line("repair", stopped, f"the last finished step; the same command resumes from {args.work_dir}")
    rounds = len(report.rounds)
    if args.json:
        print(json.dumps(report.as_json()), flush=True)
    elif report.repaired and args.search is not None:
        print(f"after {rounds} round{'s' * (rounds != 1)} the exact walks and the searches find no refutation "
              f"(the searches prove nothing); writing the policy to {out}")
    elif report.repaired:
        print(f"repaired in {rounds} round{'s' * (rounds != 1)}: no refutation left; writing the policy to {out}")
    elif report.stopped:
        print(f"stopped after {rounds} rounds: {report.stopped}")
    elif not report.original_refutations:
        print("the original network has no refutation in this class: nothing to repair")
    else:
        print(f"refutations left after {rounds} round{'s' * (rounds != 1)}: {report.rounds[-1].refutations:,}; "
              f"the same command with more --rounds goes on")
    status = 0
    if report.repaired:
        try:
            publish(Path(report.policy), out)
        except OSError as exc:
            print(f"orderchaos repair: cannot write the repaired policy to {out} ({os_error_reason(exc)}); "
                  f"it is in {report.policy}", file=sys.stderr)
            status = 1
    if args.report:
        _, saved = options.save_finished("repair", args.report, lambda p: write_report(report, p), "report")
        status = status or saved
    if args.plot:
        from orderchaos.train.repair import plot_rounds

        _, saved = options.save_finished("repair", args.plot, lambda p: plot_rounds(report, p), "plot")
        status = status or saved
    if status:
        return status
    return 0 if report.repaired or not report.original_refutations else 1
