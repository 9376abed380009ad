"""Cooperative cancellation of a search running in a worker thread.

A thread that may be asked to stop runs its work inside :func:`stop_when` with an event;
the searches call :func:`check` between their steps (an MCTS wave or chunk of simulations,
a solver kernel call) and raise :class:`Cancelled` once the event is set. A thread not
running under :func:`stop_when` never stops: :func:`check` then costs one attribute lookup.

The web server uses it so that closing a tab, or asking for a newer move or hint, stops the
work it started instead of leaving a core busy.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_local = threading.local()


class Cancelled(Exception):
    """The work was asked to stop (its :func:`stop_when` event was set)."""


@contextmanager
def stop_when(event: threading.Event) -> Iterator[None]:
    """Within this block, :func:`check` in this thread raises once ``event`` is set."""
    previous = getattr(_local, "event", None)
    _local.event = event
    try:
        yield
    finally:
        _local.event = previous


def check() -> None:
    """Raise :class:`Cancelled` when this thread's work was asked to stop."""
    event = getattr(_local, "event", None)
    if event is not None and event.is_set():
        raise Cancelled("the work was cancelled")
