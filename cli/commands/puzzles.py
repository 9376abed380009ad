"""Puzzles proven by the exact solver: mine them from games, check a set, export the shipped one.

  orderchaos puzzles generate --games FILE... --out puzzles.jsonl [--limit N] [--per-game N]
                              [--empties LOW-HIGH] [--node-limit N]
      every position of the games (with LOW-HIGH empty cells, default 10-24) whose mover wins
      with exactly one move: "Order to play and win" or "Chaos to play and survive", each
      position once up to symmetry; positions the solver cannot settle within the node limit
      per solver call are skipped;
  orderchaos puzzles check FILE [--sample N] [--seed S] [--node-limit N]
      re-proves every puzzle (or a seeded sample) from its board: exit status 1 naming the
      first bad one;
  orderchaos puzzles select FILE... --count N --out F.jsonl [--seed S] [--rerate]
      chooses N puzzles spread over difficulty (each easy kind held to a share: Chaos's only
      block, Order's five in one move);
  orderchaos puzzles export FILE
      writes the shipped set as JSON lines with the keys id, board, kind, solution, plies,
      themes, rating.
"""

from __future__ import annotations

import argparse
import json
import sys

from orderchaos.cli import options


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of ``puzzles``."""
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    gen = sub.add_parser("generate", help="mine puzzles from game files with the solver")
    gen.add_argument("--games", nargs="+", required=True, metavar="FILE",
                     help="game files (JSON lines, as eval --save-games writes)")
    gen.add_argument("--out", required=True, metavar="F.jsonl", help="where to write the puzzles")
    gen.add_argument("--limit", type=options.int_in(0, 10_000_000), default=0, metavar="N",
                     help="stop after N puzzles (default 0: no limit)")
    gen.add_argument("--per-game", type=options.int_in(0, 36), default=0, metavar="N",
                     help="at most N puzzles from one game (default 0: no cap)")
    gen.add_argument("--empties", default="10-24", metavar="LOW-HIGH",
                     help="empty cells of the positions tried (default 10-24)")
    gen.add_argument("--node-limit", type=options.NODES, default=None, metavar="N",
                     help="solver nodes per solver call, else the position is skipped (default 2000000)")
    gen.add_argument("--json", action="store_true", help="print one JSON object")
    check = sub.add_parser("check", help="re-prove every puzzle of a file")
    check.add_argument("file", metavar="FILE", help="a puzzle file (JSON lines)")
    check.add_argument("--sample", type=options.int_in(0, 10_000_000), default=0, metavar="N",
                       help="check N puzzles drawn with --seed (default 0: all)")
    check.add_argument("--seed", type=options.SEED, default=0, help="seed of the sample (default 0)")
    check.add_argument("--node-limit", type=options.NODES, default=None, metavar="N",
                       help="solver nodes per solver call (default 50000000)")
    select = sub.add_parser("select", help="choose a set spread over difficulty from puzzle files")
    select.add_argument("files", nargs="+", metavar="FILE", help="puzzle files (as generate writes them)")
    select.add_argument("--count", type=options.int_in(1, 10_000_000), required=True, metavar="N",
                        help="puzzles to choose")
    select.add_argument("--seed", type=options.SEED, default=0, help="seed of the order within a band (default 0)")
    select.add_argument("--out", required=True, metavar="F.jsonl", help="where to write the set")
    select.add_argument("--rerate", action="store_true",
                        help="give every candidate its start rating again (puzzles mined by an older version)")
    export = sub.add_parser("export", help="write the shipped puzzle set as JSON lines")
    export.add_argument("file", metavar="FILE", help="where to write it")


def run(args: argparse.Namespace) -> int:
    """Run the chosen action."""
    from orderchaos.arena.game_files import GameFileError
    from orderchaos.learn.puzzles import PuzzleFileError
    from orderchaos.files import OutputPathError

    from orderchaos.files import os_error_reason

    try:
        return {"generate": _generate, "check": _check, "select": _select, "export": _export}[args.action](args)
    except (GameFileError, PuzzleFileError, OutputPathError, ValueError) as exc:
        print(f"orderchaos puzzles {args.action}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader of an output left: main's quiet exit
        raise
    except OSError as exc:  # a full disk, a folder taken away: at run time, after the checks
        where = f" {exc.filename}" if exc.filename else ""
        print(f"orderchaos puzzles {args.action}: cannot write{where}: {os_error_reason(exc)}", file=sys.stderr)
        return 1


def _parse_empties(text: str) -> tuple[int, int]:
    parts = text.split("-")
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        low, high = int(parts[0]), int(parts[1])
        if 1 <= low <= high <= 35:
            return low, high
    raise ValueError(f"--empties must be LOW-HIGH with 1 <= LOW <= HIGH <= 35, got {text!r}")


def _generate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from orderchaos.learn.puzzles import (
        DEFAULT_NODE_LIMIT, MineStats, Puzzle, load_puzzles, mine_puzzles, save_puzzles)
    from orderchaos.files import atomic_write_bytes, check_output_file

    empties = _parse_empties(args.empties)
    check_output_file(args.out, "puzzle file")
    node_limit = args.node_limit or DEFAULT_NODE_LIMIT
    stats = MineStats()
    # Each game's puzzles are appended to OUT.partial and the count of games done is kept in
    # OUT.progress, so that the same command after an interruption goes on where it stopped.
    partial, progress_file = Path(f"{args.out}.partial"), Path(f"{args.out}.progress")
    settings = {"games": [str(Path(g).resolve()) for g in args.games], "limit": args.limit,
                "per_game": args.per_game, "empties": list(empties), "node_limit": node_limit}
    resume: tuple[int, list[Puzzle]] = (0, [])
    kept_lines: list[str] = []
    saved: dict = {}
    if partial.exists() and progress_file.exists():
        try:
            saved = json.loads(progress_file.read_text())
        except ValueError:
            saved = {}
        if saved.get("settings") == settings:
            kept_lines = partial.read_text().splitlines()[: saved["lines"]]
    partial.write_text("".join(line + "\n" for line in kept_lines))
    if saved.get("settings") == settings:  # games done count even when they gave no puzzle
        resume = (saved["games"], load_puzzles(partial))
        print(f"resuming after {resume[0]} games ({len(resume[1])} puzzles) from {partial}", file=sys.stderr)
    lines = [len(kept_lines)]
    checkpoint_error: list[OSError] = []

    def save_game(games: int, found: list[Puzzle]) -> None:
        if checkpoint_error:  # the disk refused a checkpoint: mine on, the puzzles are kept in memory
            return
        try:
            with open(partial, "a") as fh:
                fh.writelines(json.dumps(p.to_dict()) + "\n" for p in found)
            lines[0] += len(found)
            atomic_write_bytes(progress_file, json.dumps(
                {"settings": settings, "games": games, "lines": lines[0]}).encode())
        except OSError as exc:  # only an interruption would cost something: the games since
            checkpoint_error.append(exc)

    def progress(s: MineStats) -> None:
        print(f"\r{s.games} games, {s.positions} positions, {s.puzzles} puzzles, {s.seconds:.0f} s",
              end="", file=sys.stderr, flush=True)

    puzzles = mine_puzzles(args.games, limit=args.limit, node_limit=node_limit, empties=empties,
                           per_game=args.per_game, stats=stats, resume=resume, on_game=save_game,
                           progress=progress if sys.stderr.isatty() else None)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    kinds = {k: sum(p.kind == k for p in puzzles) for k in ("order_wins", "chaos_survives")}
    summary = (f"{len(puzzles)} puzzles in {stats.seconds:.1f} s "
               f"(order_wins {kinds['order_wins']}, chaos_survives {kinds['chaos_survives']})")
    if not args.json:
        print(summary)

    def print_them() -> str:  # no place could be written: the puzzles go to stdout, not lost
        for p in puzzles:
            print(json.dumps(p.to_dict()))
        sys.stdout.flush()
        kept = "" if checkpoint_error else f", and the same command finishes from {partial}"
        return f"the {len(puzzles)} puzzles are printed on stdout as JSON lines{kept}"

    saved_to, status = options.save_finished("puzzles generate", args.out, lambda p: save_puzzles(p, puzzles),
                                             "puzzle file", last_resort=print_them)
    if saved_to is None:
        return status
    partial.unlink(missing_ok=True)
    progress_file.unlink(missing_ok=True)
    if args.json:
        print(json.dumps({"puzzles": len(puzzles), "out": str(saved_to), "node_limit": node_limit,
                          "resumed_games": resume[0], **stats.to_dict()}))
        return status
    print(f"  written to {saved_to}")
    print(f"  {stats.games} games, {stats.positions} positions tried: mover lost {stats.mover_lost}, "
          f"several moves win {stats.several_moves_win}, unproven {stats.unproven} "
          f"(node limit {node_limit}), repeats up to symmetry {stats.duplicates}")
    print(f"  by plies: {dict(sorted(stats.by_plies.items()))}")
    return status


def _check(args: argparse.Namespace) -> int:
    from orderchaos.learn.puzzles import CHECK_NODE_LIMIT, PuzzleCheckError, check_puzzles

    try:
        count = check_puzzles(args.file, sample=args.sample, seed=args.seed,
                              node_limit=args.node_limit or CHECK_NODE_LIMIT)
    except PuzzleCheckError as exc:
        print(f"bad puzzle: {exc}")
        return 1
    print(f"{count} puzzles of {args.file} proven: each mover wins with exactly its one move")
    return 0


def _select(args: argparse.Namespace) -> int:
    from collections import Counter

    from pathlib import Path

    from orderchaos.learn.puzzles import easy_kind, load_puzzles, save_puzzles, select_puzzles
    from orderchaos.files import check_output_file

    out = check_output_file(args.out, "puzzle file")
    for path in args.files:
        if out.exists() and Path(path).exists() and out.samefile(path):
            raise ValueError(f"--out {args.out} is also an input file; write the set to a new file")
    candidates = [p for path in args.files for p in load_puzzles(path)]
    solver = None
    if args.rerate:
        from orderchaos.agents.solver import Solver

        solver = Solver()
    chosen = select_puzzles(candidates, args.count, args.seed, rerate=solver)
    kinds = Counter(p.kind for p in chosen)
    easy = Counter(easy_kind(p) or "other" for p in chosen)
    bands = Counter(int(p.rating // 200) * 200 for p in chosen)
    print(f"chose {len(chosen)} of {len(candidates)} puzzles: "
          f"{', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))}")
    print(f"  {', '.join(f'{k} {v}' for k, v in sorted(easy.items()))}")
    print(f"  by start rating: {', '.join(f'{b}-{b + 199}: {n}' for b, n in sorted(bands.items()))}", flush=True)
    saved, status = options.save_finished("puzzles select", args.out, lambda p: save_puzzles(p, chosen),
                                          "puzzle file")
    if saved is not None and status == 0:
        print(f"  written to {saved}")
    return status


def _export(args: argparse.Namespace) -> int:
    from orderchaos.learn.puzzles import SHIPPED_PUZZLES, load_puzzles, save_puzzles
    from orderchaos.files import check_output_file

    from orderchaos.files import os_error_reason

    check_output_file(args.file, "puzzle file")
    puzzles = load_puzzles(SHIPPED_PUZZLES)
    try:
        save_puzzles(args.file, puzzles, export=True)
    except BrokenPipeError:  # the reader of an output left: main's quiet exit
        raise
    except OSError as exc:  # the shipped set is where it was: only this copy failed
        print(f"orderchaos puzzles export: cannot write {args.file}: {os_error_reason(exc)}; nothing was written",
              file=sys.stderr)
        return 1
    print(f"wrote {len(puzzles)} puzzles to {args.file}")
    return 0
