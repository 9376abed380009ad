"""Jobs for the worker pool tests: top-level functions a spawned worker can import (the
tests folder is on the path of pytest and of the processes it spawns)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from orderchaos.agents import cancel


def pid(bench: Any) -> int:
    """The worker's process id."""
    return os.getpid()


def add(bench: Any, a: int, b: int) -> int:
    """``a + b``, and the bench's word for it."""
    return a + b + (bench or 0)


def spin(bench: Any, started: str) -> str:
    """Touch ``started``, then loop until told to stop (checking the stop flag)."""
    Path(started).touch()
    while True:
        cancel.check()
        time.sleep(0.01)


def stubborn(bench: Any, started: str) -> str:
    """Touch ``started``, then loop without ever looking at the stop flag."""
    Path(started).touch()
    while True:
        time.sleep(0.01)


def fail(bench: Any) -> None:
    """Raise a ValueError."""
    raise ValueError("no such thing")


def warm_number(value: int) -> int:
    """A bench that is a number."""
    return value


def until_exists(path: str, look: Any = lambda: None) -> None:
    """Wait in a worker process until the test makes the file ``path`` (its signal to go on),
    calling ``look`` (a stop-flag check) between looks. The worker cannot share an event
    with the test, and the tests' waiting helper brings hypothesis into every worker."""
    while not Path(path).exists():
        look()
        time.sleep(0.01)


def warm_when(released: str) -> None:
    """A bench built only once the file ``released`` exists (a worker warming up for as long
    as a test wants)."""
    until_exists(released)


class StallingAgent:
    """An agent whose move first touches a file named after its process (``started`` plus
    ``-PID``: its search has begun), then waits, looking at the stop flag, until the file
    ``release`` exists; then it plays the first legal move."""

    name = "stalling"

    def __init__(self, started: str, release: str) -> None:
        self.started, self.release = started, release

    def act(self, state: Any) -> int:
        Path(f"{self.started}-{os.getpid()}").touch()
        until_exists(self.release, cancel.check)
        return state.legal_actions()[0]


class StallingBench:
    """A worker's bench whose every agent is a :class:`StallingAgent`."""

    def __init__(self, started: str, release: str) -> None:
        self.started, self.release = started, release

    def agent(self, key: str, spec: str) -> StallingAgent:
        return StallingAgent(self.started, self.release)

    def forget(self, key: str) -> None:
        pass


def warm_stalling(started: str, release: str) -> StallingBench:
    """A worker whose agents stall (:class:`StallingAgent`)."""
    return StallingBench(started, release)
