"""Cooperative cancellation: a search told to stop raises Cancelled at its next step."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from orderchaos.agents import cancel
from orderchaos.agents.mcts import MCTS, uniform_legal_priors
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


class _StopAfter:
    """A network-like evaluator (uniform priors, value 0) that sets ``event`` on its
    ``calls_before_stop``-th call and counts every call."""

    def __init__(self, event: threading.Event, calls_before_stop: int) -> None:
        self.event, self.calls_before_stop, self.calls = event, calls_before_stop, 0

    def evaluate(self, states: list[State]) -> tuple[np.ndarray, np.ndarray]:
        self.calls += 1
        if self.calls == self.calls_before_stop:
            self.event.set()
        return uniform_legal_priors(states), np.zeros(len(states))


@pytest.mark.parametrize("batch", [1, 3])
def test_a_network_evaluator_search_makes_no_evaluation_after_the_stop(batch: int) -> None:
    """The evaluator-driven loop (what ``pretrained:sims=2000`` runs) checks the stop flag
    each wave: the evaluation during which the stop came is the last one."""
    event = threading.Event()
    evaluator = _StopAfter(event, calls_before_stop=5)
    search = MCTS(evaluator, simulations=2000, seed=0)
    with cancel.stop_when(event), pytest.raises(cancel.Cancelled):
        search.search_batch([State()] * batch)
    assert evaluator.calls == 5
