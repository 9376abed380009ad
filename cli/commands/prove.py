"""Prove who wins a position from the top of the game tree, and keep the proof in a book.

``orderchaos prove [BOARD]`` (default: the empty board) runs a best-first proof-number search
whose frontier positions are proven by the exact solver under budgets that grow while they
stay open (``orderchaos.proof.prove``). Every proven position goes into the proof book
(``--book``), written atomically every ``--interval`` seconds and on Ctrl-C or SIGTERM, so
runs add up and a killed run loses at most one interval. Frontier positions are solved in
``--workers`` local processes (``--backend local``) or Ray actors (``--backend ray``: a local
Ray instance on 127.0.0.1, or the cluster at ``--ray-address``). ``--status`` tabulates
Order's first moves and the Chaos replies to the one being proven; ``--verify`` re-checks
every entry of the book with fresh solvers in this process (exit status 1 on any failure,
naming the positions).

The empty board is an Order win by the central-pairing strategy
(``orderchaos.agents.strategy``). ``--certificate FILE`` writes that proof as a certificate,
``--check FILE`` verifies one independently of the strategy, the solver and the prover
(``orderchaos.proof.certificate_check``; exit status 1 naming the first failing position, 2
for a file that is not a certificate), and ``--status`` reports the empty board as an Order
win by it, with each of Order's first-move classes.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path
from typing import Any

from orderchaos.cli import options


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of ``prove``."""
    from orderchaos.proof.prove import ProveConfig

    parser.add_argument("board", nargs="?", default="." * 36, help="36-char board string (default: empty board)")
    parser.add_argument("--book", default=None,
                        help="proof book file (created if absent; default: the shipped book for "
                             "--status and --verify, required to prove)")
    parser.add_argument("--minutes", type=options.MINUTES, default=None, help="stop after this long (default: until solved)")
    parser.add_argument("--workers", type=options.WORKERS, default=1,
                        help="solver workers: local processes (--backend local; 1 runs in this process) "
                             "or Ray actors (--backend ray)")
    parser.add_argument("--backend", choices=("local", "ray"), default="local",
                        help="where frontier positions are solved: local worker processes (default) or "
                             "Ray actors (needs pip install 'orderchaos[ray]'; see docs/proof.md)")
    parser.add_argument("--ray-address", default=None, metavar="ADDR",
                        help="with --backend ray: the cluster to join, HOST:PORT of its head node or auto "
                             "(the one running on this machine); default: start a local Ray instance "
                             "bound to 127.0.0.1")
    parser.add_argument("--interval", type=options.SECONDS, default=10.0, help="seconds between book checkpoints")
    parser.add_argument("--progress", type=options.SECONDS, default=5.0, help="seconds between progress lines")
    parser.add_argument("--first", default=None, help="fix Order's first move at the root, e.g. c3X or 28")
    parser.add_argument("--budget", type=options.NODES, default=ProveConfig.first_budget, help="first solver budget per leaf (nodes)")
    parser.add_argument("--growth", type=options.int_in(2, 1024), default=ProveConfig.growth, help="budget factor per retry")
    parser.add_argument("--cap", type=options.NODES, default=ProveConfig.cap, help="expand a leaf once a try this big failed")
    parser.add_argument("--tt-bits", type=options.int_in(4, 30), default=ProveConfig.tt_bits, help="solver table size per worker (log2)")
    parser.add_argument("--leaf-rule", choices=("extended", "strategy"), default=ProveConfig.leaf_rule,
                        help="positions proven without search, in proving and in --verify: 'extended' (default; "
                             "the pairing argument with equal and half-filled border pairs, whose tables take "
                             "about 15 s of CPU time per kind of line to build) or 'strategy' (the central-pairing strategy "
                             "alone); see docs/proof.md")
    parser.add_argument("--json", action="store_true", help="JSON output")
    parser.add_argument("--status", action="store_true", help="report the empty board (an Order win, by the certificate) and Order's first "
                             "moves: proven by the strategy, or what the book proves")
    parser.add_argument("--verify", action="store_true",
                        help="re-check every book entry with fresh solvers, in this process (not on Ray)")
    parser.add_argument("--verify-node-limit", type=options.NODES, default=None, help="node limit per re-proof")
    parser.add_argument("--certificate", metavar="FILE", default=None,
                        help="write the central-pairing proof that Order wins (after c3 X) as a certificate")
    parser.add_argument("--check", metavar="FILE", default=None,
                        help="verify a certificate with the rules engine only: the centre game, the lemma, "
                             "and a replay on the 6x6 board (exit status 1 on a failure)")
    parser.add_argument("--border-moves", type=options.int_in(0, 10), default=0, metavar="K",
                        help="with --check: Chaos border moves allowed in the replay (default 0; the lemma "
                             "covers the rest)")


def run(args: argparse.Namespace) -> int:
    """Prove, report or verify; 0 ok, 1 verification failed or a worker died, 2 bad input
    (including a Ray backend that cannot start)."""
    from orderchaos.agents.proof_book import ProofBook, ProofBookError, shipped_book_path
    from orderchaos.proof.proof_meta import BookMeta, meta_path
    from orderchaos.proof.proof_status import format_progress, status
    from orderchaos.agents.solver_pool import SolverPoolError
    from orderchaos.proof.prove import INF, ProveConfig, Prover, parse_action, verify
    from orderchaos.files import check_output_file
    from orderchaos.envs.rules import BoardStringError, parse_board
    from orderchaos.ray_setup import RayBackendError, check_address

    modes = [f"--{m}" for m in ("status", "verify", "certificate", "check") if getattr(args, m)]
    if args.certificate is not None or args.check is not None:
        return _certificate_mode(args, modes)
    if args.border_moves != 0:
        print("orderchaos prove: --border-moves goes with --check FILE", file=sys.stderr)
        return 2
    problem = None
    if args.ray_address is not None and args.backend != "ray":
        problem = "--ray-address goes with --backend ray"
    elif args.backend == "ray" and (args.status or args.verify):
        problem = f"--backend ray applies to proving; {'--status' if args.status else '--verify'} runs in this process"
    else:
        try:
            check_address(args.ray_address, "--ray-address")
        except RayBackendError as e:
            problem = str(e)
    if problem is None:
        try:
            root = parse_board(args.board)
        except BoardStringError as e:
            problem = str(e)
        else:
            if (args.status or args.verify) and root.num_empty != 36:
                problem = (f"{'--status' if args.status else '--verify'} reports on the whole book from the "
                           f"empty board; a BOARD goes with proving")
    if problem is not None:
        print(f"orderchaos prove: {problem}", file=sys.stderr)
        return 2
    if args.book is None:
        if not (args.status or args.verify):
            print("orderchaos prove: --book PATH is required to prove (the shipped book is read-only)",
                  file=sys.stderr)
            return 2
        args.book = str(shipped_book_path())
    try:
        if args.status:
            from orderchaos.proof.solved import print_solved_status, solved_status

            s = solved_status(status(args.book))
            print(json.dumps(s, indent=1)) if args.json else print_solved_status(s)
            return 0
        if args.verify:
            fails = verify(args.book, node_limit=args.verify_node_limit, leaf_rule=args.leaf_rule)
            if args.json:
                print(json.dumps({"failures": fails}, indent=1))
            else:
                for f in fails:
                    print(f"FAIL {f}")
                print(f"verify: {len(fails)} failure(s)")
            return 1 if fails else 0
        check_output_file(args.book, "proof book")
        check_output_file(meta_path(args.book), "proof book side file")
        first = None if args.first is None else parse_action(args.first)
        config = ProveConfig(first_budget=args.budget, growth=args.growth, cap=args.cap,
                             tt_bits=args.tt_bits, workers=args.workers, interval=args.interval,
                             progress_every=args.progress, backend=args.backend, ray_address=args.ray_address,
                             leaf_rule=args.leaf_rule)
        book = ProofBook.load(args.book) if Path(args.book).exists() else ProofBook()
        meta = BookMeta.load(args.book)

        def log(d: dict[str, Any]) -> None:
            if args.json:
                print(json.dumps({k: ("inf" if v == INF else v) for k, v in d.items()}), flush=True)
            else:
                print(format_progress(d), flush=True)

        prover = Prover(root, book, config=config, book_path=args.book, meta=meta, first=first, log=log)
    except (ProofBookError, BoardStringError, ValueError) as e:
        print(f"orderchaos prove: {e}", file=sys.stderr)
        return 2

    stopped_by: list[int] = []

    def on_signal(signum: int, frame: object) -> None:
        stopped_by.append(signum)
        if prover.stop_requested:  # a second Ctrl-C or SIGTERM: stop at once
            raise KeyboardInterrupt
        prover.stop_requested = True

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        result = prover.run(None if args.minutes is None else args.minutes * 60)
    except RayBackendError as e:  # raised before the run changed anything
        print(f"orderchaos prove: {e}", file=sys.stderr)
        return 2
    except SolverPoolError as e:  # the book was saved on the way out
        print(f"orderchaos prove: {e}; the book keeps what was solved before", file=sys.stderr)
        return 1
    except OSError as e:  # no place could hold the book (a full disk): the solved work is lost
        print(f"orderchaos prove: cannot write the proof book {args.book}: {e.strerror or e}; "
              f"this run's work is not saved", file=sys.stderr)
        return 1
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    summary = {
        "root": result.winner,
        "first_move_refuted": result.refuted,
        "seconds": round(result.seconds, 1),
        "solver_nodes": result.solver_nodes,
        "tasks": result.tasks,
        "book_entries": result.book_entries,
        "interrupted": result.interrupted,
    }
    print(json.dumps(summary) if args.json else
          f"done: root {result.winner or 'open'}{' (first move refuted)' if result.refuted else ''}; "
          f"{result.tasks} tasks, {result.solver_nodes:,} solver nodes in {result.seconds:.1f}s; "
          f"book {result.book_entries} entries{' (interrupted)' if result.interrupted else ''}", flush=True)
    if prover.save_error is not None:  # the warning named where the book went instead
        return 1
    if stopped_by:  # stopped by Ctrl-C or SIGTERM after the book was saved: 130 or 143
        print(f"orderchaos prove: stopped by {signal.Signals(stopped_by[0]).name}; the book is saved",
              file=sys.stderr)
        return 128 + stopped_by[0]
    return 0


def _certificate_mode(args: argparse.Namespace, modes: list[str]) -> int:
    """``--certificate FILE`` (write) or ``--check FILE [--border-moves K]`` (verify)."""
    from orderchaos.proof import certificate

    if len(modes) > 1:
        print(f"orderchaos prove: {' and '.join(modes)} go separately; give one of them", file=sys.stderr)
        return 2
    if args.border_moves < 0:
        print(f"orderchaos prove: --border-moves must be 0 or more, got {args.border_moves}", file=sys.stderr)
        return 2
    if args.certificate is not None:
        from orderchaos.proof.solved import build_certificate

        try:
            cert = build_certificate()
            certificate.write(cert, args.certificate)
        except OSError as e:
            print(f"orderchaos prove: cannot write {args.certificate}: {e.strerror or e}", file=sys.stderr)
            return 2
        print(f"wrote {args.certificate}: first move {cert.first_move}, {len(cert.pairs)} pairs, "
              f"{len(cert.centre_moves):,} centre moves; check it with orderchaos prove --check "
              f"{args.certificate}")
        return 0
    import time

    from orderchaos.proof.certificate_check import check, describe

    try:
        cert = certificate.read(args.check)
    except certificate.CertificateError as e:
        print(f"orderchaos prove: {e}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    report = check(cert, args.border_moves)
    seconds = time.perf_counter() - start
    if args.json:
        print(json.dumps({"file": args.check, "ok": report.ok, "failure": report.failure,
                          "seconds": round(seconds, 1),
                          "parts": [{"name": p.name, "counts": p.counts, "seconds": round(p.seconds, 2)}
                                    for p in report.parts]}, indent=1))
    else:
        print(f"certificate {args.check}: first move {cert.first_move}, {len(cert.centre_moves):,} centre moves")
        print("\n".join(describe(report)))
        verdict = (f"holds: Order wins from the empty board, first move {cert.first_move}" if report.ok
                   else "does not hold")
        print(f"certificate {verdict} ({seconds:.1f} s)")
    return 0 if report.ok else 1
