"""Cooperative cancellation: a search told to stop raises Cancelled at its next step."""

from __future__ import annotations

import threading

import pytest

from orderchaos.agents import cancel
from orderchaos.agents.registry import make
from orderchaos.agents.solver import Solver
from orderchaos.envs.rules import State


def test_check_is_silent_outside_stop_when_and_until_the_event_is_set() -> None:
    cancel.check()
    event = threading.Event()
    with cancel.stop_when(event):
        cancel.check()
        event.set()
        with pytest.raises(cancel.Cancelled):
            cancel.check()
    cancel.check()  # the block is over: this thread runs on


@pytest.mark.parametrize("spec", ["mcts:time=60", "mcts:sims=1000000"])
def test_a_long_mcts_search_stops_when_told(spec: str) -> None:
    agent = make(spec, seed=0)
    make("mcts:sims=10", seed=0).act(State())  # compile the kernels first
    event, started, outcome = threading.Event(), threading.Event(), []

    def search() -> None:
        with cancel.stop_when(event):
            started.set()
            try:
                agent.act(State())
            except cancel.Cancelled:
                outcome.append("cancelled")

    worker = threading.Thread(target=search, daemon=True)
    worker.start()
    assert started.wait(10)
    event.set()
    worker.join(10)  # the search alone would run for a minute
    assert not worker.is_alive() and outcome == ["cancelled"]


def test_the_solver_stops_before_its_next_kernel_call() -> None:
    event = threading.Event()
    event.set()
    with cancel.stop_when(event), pytest.raises(cancel.Cancelled):
        Solver().solve(State(), time_limit=60)
