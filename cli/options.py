"""Argument types shared by the subcommands (bounded integers and finite numbers) and the
one way finished work is saved and a failure to save it reported.

Each factory returns an argparse ``type=`` callable that refuses a value outside its
bounds in one line naming the accepted range, so that no command starts work with a count
it cannot hold (a match of 10**20 games) or a limit the library refuses later (``inf``).
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Any
from contextlib import contextmanager
from pathlib import Path

from orderchaos.arena.matches import MAX_GAMES, MAX_OPENING_PLIES

MAX_WORKERS = 1024
"""The most worker processes or actors one command starts."""
MAX_MINUTES = 60.0 * 24 * 365
"""A year: the longest time limit accepted in minutes."""
MAX_SECONDS = MAX_MINUTES * 60
MAX_NODES = 10**15
"""The largest solver node budget accepted."""


def int_in(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: an integer from ``low`` to ``high``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"must be an integer from {low:,} to {high:,}, got {text!r}"
            ) from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be an integer from {low:,} to {high:,}, got {text}")
        return value

    return parse


def number_in(low: float, high: float, *, above: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number from ``low`` (or, with ``above``, greater than
    ``low``) to ``high``; ``inf`` and ``nan`` are refused."""
    lower = f"greater than {low:g}" if above else f"from {low:g}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        too_low = value <= low if above else value < low
        if not math.isfinite(value) or too_low or value > high:
            raise argparse.ArgumentTypeError(f"must be a number {lower} to {high:g}, got {text!r}")
        return value

    return parse


class UsageError(Exception):
    """Bad command-line arguments; the message is the one line to print (status 2)."""


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (``PROG: error: MESSAGE (see PROG
    --help)``) raised as :class:`UsageError`, for ``main`` to print and return status 2;
    ``--help`` still shows the usage."""

    def error(self, message: str) -> None:  # type: ignore[override]
        """Raise UsageError with the one line to print."""
        raise UsageError(f"{self.prog}: error: {message} (see {self.prog} --help)")


GAMES = int_in(1, MAX_GAMES)
WORKERS = int_in(1, MAX_WORKERS)
SEED = int_in(0, 2**63 - 1)
OPENINGS = int_in(0, MAX_OPENING_PLIES)
NODES = int_in(1, MAX_NODES)
MINUTES = number_in(0, MAX_MINUTES, above=True)
SECONDS = number_in(0, MAX_SECONDS, above=True)


def save_finished(
    command: str, path: str | os.PathLike[str], write: Callable[[Path], None], what: str,
    last_resort: Callable[[], str] | None = None,
) -> tuple[Path | None, int]:
    """Write finished work with ``write(path)``, after its figures were printed. When that
    fails (a full disk, a path changed under the run) the work goes beside it or into a
    temporary folder (:func:`orderchaos.files.write_with_fallback`) and one line on stderr
    says where. When no place can be written, ``last_resort()`` (if given) puts the work
    where it is not lost, e.g. on stdout, and returns the words that end that line instead
    of "nothing was saved". Returns where it went (None: nowhere) and the exit status: 0
    when it went to ``path``, 1 otherwise."""
    from orderchaos.files import os_error_reason, write_with_fallback

    try:
        saved, error = write_with_fallback(path, write)
    except OSError as exc:
        kept = last_resort() if last_resort is not None else "nothing was saved"
        print(f"orderchaos {command}: cannot write {what} {path}: {os_error_reason(exc)}; {kept}",
              file=sys.stderr)
        return None, 1
    if error is not None:
        print(f"orderchaos {command}: cannot write {what} {path} ({os_error_reason(error)}); "
              f"saved to {saved} instead", file=sys.stderr)
        return saved, 1
    return saved, 0


def run_dir_failure(command: str, run_dir: Path, exc: OSError, *, resumable: bool) -> int:
    """Report in one line that a training run could not write ``run_dir`` (a full disk,
    the folder taken away during the run); returns exit status 1. ``resumable``: the run
    had started, so the line names how to continue from its last checkpoint, or says that
    none was written."""
    from orderchaos.agents.policy_files import latest_checkpoint
    from orderchaos.files import os_error_reason

    after = ""
    if resumable and latest_checkpoint(run_dir) is not None:
        after = f"; its last checkpoint is kept: continue with orderchaos train --resume {run_dir}"
    elif resumable:
        after = "; no checkpoint was written yet, so there is nothing to resume: start the run again"
    print(f"orderchaos {command}: cannot write the run in {run_dir}: {os_error_reason(exc)}{after}",
          file=sys.stderr)
    return 1


class Stopped(KeyboardInterrupt):
    """Ctrl-C (SIGINT) or SIGTERM while a command plays; ``signum`` says which, and the
    command exits with 128 + it (130 or 143) once the finished work is printed and saved."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    def __reduce__(self) -> tuple[type, tuple[int]]:  # copies and pickles rebuild it from the number
        return Stopped, (self.signum,)


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise :class:`Stopped` (a KeyboardInterrupt),
    so that a match or tournament ends as on Ctrl-C and keeps the games it finished."""

    def stop(signum: int, frame: object) -> None:
        raise Stopped(signum)

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def stopped_line(command: str, stopped: KeyboardInterrupt, done: str) -> int:
    """Report in one line that ``command`` was stopped by a signal after ``done``; returns
    the exit status, 128 + the signal (130 for Ctrl-C, 143 for SIGTERM)."""
    signum = getattr(stopped, "signum", signal.SIGINT)
    print(f"orderchaos {command}: stopped by {signal.Signals(signum).name} after {done}", file=sys.stderr)
    return 128 + signum


def open_store(command: str, location: str) -> Any:
    """The web server's game store at ``location`` (what ``--db`` takes), or, after one line
    on stderr saying why, the exit status: 1 when its database does not answer, 2 when it is
    not a store this version reads."""
    from orderchaos.web.store import GameStore, StoreError, StoreUnavailable

    try:
        return GameStore(location)
    except StoreUnavailable as exc:
        print(f"orderchaos {command}: --db {exc}", file=sys.stderr)
        return 1
    except (StoreError, OSError) as exc:
        print(f"orderchaos {command}: --db {location}: {exc}", file=sys.stderr)
        return 2
