"""The work a game server hands to its workers (:mod:`orderchaos.agents.worker_pool`), and
what each worker keeps warm for it.

:func:`warm_bench` builds a worker's :class:`Bench` when the worker starts: the exact
solver with its kernels compiled, the pretrained network loaded, and one agent of each
given spec built and played once, so that no move of a game waits for a build. The jobs
(:func:`build`, :func:`move`, :func:`hint`, :func:`study`) are top-level functions called as
``job(bench, ...)`` in a worker, or with a bench of the caller's own: the web server without
workers runs them on its own bench, from several threads.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any

from orderchaos.agents import cancel
from orderchaos.agents.base import Agent
from orderchaos.arena import analysis
from orderchaos.envs.rules import State

log = logging.getLogger("orderchaos.workers")
MAX_AGENTS = 64
"""Agents of games a bench keeps (the least recently used beyond that are dropped; a later
move of that game builds its agent afresh, which is cheap once the bench is warm)."""
WARM_POSITIONS = ((), (43,), (43, 56))
"""Positions (action sequences) each agent plays once while its worker warms up: the empty
board and the first replies, so the networks, the book and the searches have all run once."""


class Bench:
    """What one worker keeps from job to job: the solver, the network evaluator (or None
    when no policy can be loaded) and the agents of recent games by key. The solver and the
    evaluator may be used from several threads (one solve at a time); the agents from one."""

    def __init__(self, max_agents: int = MAX_AGENTS) -> None:
        self.max_agents = max_agents
        self.agents: OrderedDict[str, Agent] = OrderedDict()
        self._solver: Any = None
        self._evaluator: Any = None
        self._evaluator_failed = False
        self._solver_lock = threading.Lock()
        self._evaluator_lock = threading.Lock()
        self.warm_seconds: float | None = None
        """How long :func:`warm_bench` took, once it has."""

    @contextlib.contextmanager
    def solver(self) -> Iterator[Any]:
        """The bench's exact solver (built on first use), held for the caller alone: the
        solver is not thread-safe."""
        from orderchaos.agents.solver import Solver

        with self._solver_lock:
            if self._solver is None:
                self._solver = Solver()
            yield self._solver

    def solve(self, state: State, *, time_limit: float | None = None, node_limit: int | None = None,
              moves: bool = False) -> Any:
        """The bench's exact solver's ``SolveResult`` for ``state``."""
        with self.solver() as solver:
            return solver.solve(state, time_limit=time_limit, node_limit=node_limit, moves=moves)

    def evaluator(self) -> Any:
        """The pretrained network evaluator, or None when it cannot be loaded."""
        with self._evaluator_lock:
            if self._evaluator is None and not self._evaluator_failed:
                try:
                    from orderchaos.agents.network_agent import shared_evaluator
                    from orderchaos.agents.policy_files import pretrained_dir

                    self._evaluator = shared_evaluator(pretrained_dir())
                except Exception:  # a missing or broken policy disables values only
                    log.exception("the pretrained network could not be loaded")
                    self._evaluator_failed = True
            return self._evaluator

    def agent(self, key: str, spec: str) -> Agent:
        """The agent of ``key`` (built from ``spec`` with seed 0 when the bench has none)."""
        from orderchaos.agents.registry import make

        agent = self.agents.get(key)
        if agent is None:
            agent = make(spec, seed=0)
            self.agents[key] = agent
            while len(self.agents) > self.max_agents:
                self.agents.popitem(last=False)
        self.agents.move_to_end(key)
        return agent

    def forget(self, key: str) -> None:
        """Drop the agent of ``key`` (one stopped mid-search)."""
        self.agents.pop(key, None)


def warm_bench(specs: Sequence[str] = (), threads: int | None = 1) -> Bench:
    """A warm :class:`Bench` (see the module docstring): the solver's kernels compiled, the
    network loaded, and an agent of each of ``specs`` built and played once from each of
    :data:`WARM_POSITIONS`. ``threads`` caps torch's threads (one per worker: more only
    contend); None leaves them. A spec that cannot be built is logged and skipped."""
    started = time.perf_counter()
    bench = Bench()
    bench.solve(State(), time_limit=0.05)
    if bench.evaluator() is not None and threads is not None:
        import torch

        torch.set_num_threads(threads)
    for spec in specs:
        try:
            from orderchaos.agents.registry import make

            agent = make(spec, seed=0)
            for actions in WARM_POSITIONS:
                state = State()
                for action in actions:
                    state = state.apply(action)
                agent.act(state)
        except Exception:  # an agent that cannot warm up is built when a game asks for it
            log.exception("agent %s could not be warmed up", spec)
    bench.warm_seconds = time.perf_counter() - started
    return bench


def build(bench: Bench, key: str, spec: str) -> str:
    """Build (or find) the agent of ``key`` and return its name."""
    return bench.agent(key, spec).name


def move(bench: Bench, key: str, spec: str, state: State) -> int:
    """The move of the agent of ``key`` in ``state`` (unchecked: the caller checks it). An
    agent stopped mid-search is dropped, as its search state is half updated."""
    agent = bench.agent(key, spec)
    try:
        return int(agent.act(state))
    except cancel.Cancelled:
        bench.forget(key)
        raise


def hint(bench: Bench, state: State, time_limit: float, node_limit: int | None = None) -> analysis.Hint:
    """:func:`orderchaos.arena.analysis.hint` with the bench's solver and network."""
    return analysis.hint(state, bench.solve, time_limit, bench.evaluator(), node_limit=node_limit)


def study(bench: Bench, actions: list[int], time_limit: float, node_limit: int | None = None) -> dict[str, Any]:
    """:func:`orderchaos.arena.analysis.study` with the bench's solver and network."""
    return analysis.study(actions, bench.solve, time_limit, bench.evaluator(), node_limit=node_limit)
