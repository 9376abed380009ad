"""The ``orderchaos`` command line: a thin layer over library functions.

Each subcommand lives in ``cli/commands/<name>.py`` and provides
``configure(parser)`` (declare arguments) and ``run(args) -> int`` (call the library
and print). Modules are imported only when their command runs, so ``orderchaos solve``
never imports torch.
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any, TextIO

COMMANDS: dict[str, str] = {
    "train": "train a pair of Order and Chaos policies from a YAML config",
    "eval": "play a match between two agents and report win rates with intervals",
    "tournament": "round robin of agents in both roles, with ratings, tables and plots",
    "positions": "score optimal-move accuracy on a solver-labelled set, or make one",
    "curves": "learning curves of training runs from their TensorBoard events, as a table and a plot",
    "exploit": "every Chaos line against a deterministic Order player: its exact refutations",
    "repair": "fine-tune an Order network until exploit finds no refutation in a class",
    "mistakes": "find the moves that lost an agent's games, with the solver",
    "prove": "prove the empty board (or any board) into a resumable proof book; status, verify",
    "puzzles": "mine solver-proven puzzles from games, check a puzzle set, export the shipped one",
    "solve": "prove the game-theoretic winner of board positions",
    "play": "play against any agent in the terminal",
    "replay": "show saved games move by move",
    "serve": "play, watch and study games in the browser (a local web server)",
    "store": "copy the web server's game store between SQLite and PostgreSQL, count by count",
    "bots": "bot accounts of a site: add (prints the token once), list, revoke",
    "bot": "play on a site as a bot with any agent: accept challenges or challenge another bot",
    "export": "copy a run's latest policy out, e.g. as the shipped pretrained weights",
    "bench": "benchmarks: env throughput, search speed, training throughput",
    "demo": "a short train-then-evaluate demo on the default config",
}


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (imports every command module to declare its arguments)."""
    from orderchaos.cli.options import OneLineParser

    parser = OneLineParser(
        prog="orderchaos", description="Order and Chaos: envs, search, self-play training."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, help_text in COMMANDS.items():
        module = importlib.import_module(f"orderchaos.cli.commands.{name}")
        p = sub.add_parser(name, help=help_text, description=module.__doc__)
        module.configure(p)
        p.set_defaults(_module=module)
    return parser


class _ReaderGoneSafe:
    """A text stream (stdout or stderr) that keeps the command going when its reader has
    gone (``orderchaos tournament ... | head``): the rest of the output is dropped, files
    are still written and the exit status is the command's own."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.reader_gone = False

    def write(self, text: str) -> int:
        """Write ``text``, or drop it once the reader has gone."""
        if not self.reader_gone:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self.drop_the_rest()
        return len(text)

    def flush(self) -> None:
        """Flush, or do nothing once the reader has gone."""
        if not self.reader_gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self.drop_the_rest()

    def drop_the_rest(self) -> None:
        """From now on write nothing: the reader has gone."""
        self.reader_gone = True
        try:  # what is still buffered goes nowhere, so the interpreter's last flush is silent too
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, io.UnsupportedOperation):
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _one_line_warning(message, category, filename, lineno, line=None) -> str:  # noqa: ANN001
    return f"warning: {message}\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``orderchaos``; returns the process exit status."""
    warnings.formatwarning = _one_line_warning
    from orderchaos.cli.options import UsageError

    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        print(exc, file=sys.stderr)
        return 2
    streams = sys.stdout, sys.stderr
    out = _ReaderGoneSafe(sys.stdout)
    sys.stdout, sys.stderr = out, _ReaderGoneSafe(sys.stderr)
    try:
        return int(args._module.run(args) or 0)
    except BrokenPipeError:
        # An output given as a path was a pipe whose reader left (`puzzles export /dev/stdout
        # | head -1`): quiet as when stdout's reader leaves, but the file was cut short: 1.
        out.drop_the_rest()
        return 1
    except KeyboardInterrupt as stopped:  # nothing finished to keep: 130, or 143 for SIGTERM
        print("interrupted", file=sys.stderr)
        return 128 + getattr(stopped, "signum", 2)
    finally:
        sys.stdout.flush()
        sys.stdout, sys.stderr = streams


if __name__ == "__main__":
    sys.exit(main())
