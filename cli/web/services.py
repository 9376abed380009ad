"""What every connection of one web server shares: its limits, the game store, the opponent
levels and spec policy, and :meth:`Services.run`, the one way work leaves the event loop.

:meth:`Services.run` runs a search (an agent's move, a hint, a study) in a worker thread
under the server's caps: at most ``max_searches`` at once in all (more wait their turn, and
give up with "server is busy" after ``queue_time``), each stopped when it runs past its time
limit, or when the task awaiting it is cancelled (a tab closed, a newer request replaced it).
Stopping is cooperative (:mod:`orderchaos.agents.cancel`): the searches check between steps,
so a stopped search frees its core within one step. :attr:`Services.running` counts the
worker threads still running; the tests watch it fall to zero.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from orderchaos.agents import cancel
from orderchaos.agents.base import Agent
from orderchaos.agents.registry import REGISTRY, SpecError, check_role, make, parse_spec, resolve
from orderchaos.arena import analysis
from orderchaos.cli.web.errors import Busy, TimedOut, WebError
from orderchaos.cli.web.store import GameStore
from orderchaos.envs.rules import IllegalActionError, State

T = TypeVar("T")
log = logging.getLogger("orderchaos.web")

LEVELS: dict[str, str] = {
    "easy": "heuristic",
    "medium": "pretrained",
    "hard": "pretrained:sims=200",
    "strongest": "pretrained:sims=200,solver=26",
}
"""The opponent levels the page offers, and the agent spec behind each."""
SUGGESTED_SPECS = ["random", "heuristic", "mcts:sims=800", "pretrained", "pretrained:sym=16",
                   "pretrained:sims=200", "pretrained:sims=200,solver=26", "solver"]
MAX_SPEC_CHARS = 200
SOLVER_TIME = 3.0
"""Seconds per move for a solver opponent whose spec gives no ``time=``."""


@dataclass(frozen=True)
class Limits:
    """The server's caps (seconds, bytes, counts)."""

    move_time: float = 30.0
    """Seconds an agent may think about one move before the move ends with an error."""
    build_time: float = 120.0
    """Seconds to build an agent (the first ``pretrained`` imports torch and loads weights)."""
    hint_time: float = 1.0
    """Solver time for a hint."""
    study_time: float = 0.25
    """Solver time for each position of a studied game."""
    max_message_bytes: int = 64 * 1024
    """Largest message other than an upload."""
    max_upload_bytes: int = 2 * 1024 * 1024
    """Largest uploaded games file."""
    max_sims: int = 2000
    """Largest ``sims=`` an agent spec may ask for."""
    max_searches: int = max(1, os.cpu_count() or 1)
    """Searches running at once, all connections together."""
    queue_time: float = 60.0
    """Seconds a search waits for its turn before the server answers "busy"."""
    max_connections: int = 500
    """Open WebSockets; one more is told the server is busy and closed."""
    max_games: int = 1000
    """Games held in memory (those with a tab open on them)."""
    rate: float = 20.0
    """Messages a second a connection may send on average ..."""
    burst: int = 40
    """... and at most in one burst."""
    free_specs: bool = True
    """Whether the page may name any agent spec (else only the levels)."""
    spec_dirs: bool = False
    """Whether a spec may name a directory on the server (a training run)."""


@dataclass
class Services:
    """The shared state of one server (see the module docstring)."""

    limits: Limits = field(default_factory=Limits)
    games_dir: Path | None = None
    store: GameStore = field(default_factory=lambda: GameStore(":memory:"))
    public_url: str | None = None
    """The site's public origin (``--public-url``): the base of the links the page shows."""
    running: int = 0
    queued: int = 0
    """Searches waiting for a slot."""
    _slots: asyncio.Semaphore | None = None
    _count_lock: threading.Lock = field(default_factory=threading.Lock)
    _solver: Any = None
    _solver_lock: threading.Lock = field(default_factory=threading.Lock)
    _evaluator: Any = None
    _evaluator_failed: bool = False
    _evaluator_lock: threading.Lock = field(default_factory=threading.Lock)

    # -- the solver and the network, shared -------------------------------------------------
    def solve(self, state: State, *, time_limit: float | None = None, node_limit: int | None = None,
              moves: bool = False) -> Any:
        """The shared exact solver's ``SolveResult`` (it is not thread-safe: one at a time)."""
        from orderchaos.agents.solver import Solver

        with self._solver_lock:
            if self._solver is None:
                self._solver = Solver()
            return self._solver.solve(state, time_limit=time_limit, node_limit=node_limit, moves=moves)

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

    def hint(self, state: State) -> analysis.Hint:
        """:func:`orderchaos.arena.analysis.hint` with the shared solver and network (in a
        worker thread: the first call loads the network)."""
        return analysis.hint(state, self.solve, self.limits.hint_time, self.evaluator())

    def study(self, actions: list[int]) -> dict[str, Any]:
        """:func:`orderchaos.arena.analysis.study` of a game with the shared solver and network."""
        return analysis.study(actions, self.solve, self.limits.study_time, self.evaluator())

    def warm_up(self) -> None:
        """Compile (or load from the cache) the solver's kernels before the first hint, and
        solve the strategy's centre game before the first lesson move."""
        from orderchaos.agents.strategy import centre_table

        self.solve(State(), time_limit=0.05)
        centre_table()

    # -- work off the event loop -------------------------------------------------------------
    async def run(self, fn: Callable[..., T], *args: Any, timeout: float, what: str) -> T:
        """``fn(*args)`` in a worker thread under the caps (see the module docstring).

        Raises Busy when no turn came within ``queue_time``, TimedOut past ``timeout``
        (the work is told to stop), WebError for a WebError the work raised, and a WebError
        without details for any other failure (logged here; its text stays on the server).
        Cancelling the awaiting task tells the work to stop.
        """
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.limits.max_searches)
        slots = self._slots
        self.queued += 1
        try:
            await asyncio.wait_for(slots.acquire(), self.limits.queue_time)
        except asyncio.TimeoutError:
            raise Busy("every search slot is taken") from None
        finally:
            self.queued -= 1
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        # read its exception even when nobody awaits it any more (a stopped search)
        future.add_done_callback(lambda done: done.cancelled() or done.exception())
        stop = threading.Event()

        def deliver(setter: Callable[[Any], None], value: Any) -> None:
            if not future.done():
                setter(value)

        def work() -> None:
            try:
                with cancel.stop_when(stop):
                    outcome = (future.set_result, fn(*args))
            except BaseException as exc:  # noqa: BLE001 - every failure goes back to the caller
                outcome = (future.set_exception, exc)
            finally:
                with self._count_lock:
                    self.running -= 1
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
                    loop.call_soon_threadsafe(slots.release)
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(deliver, *outcome)

        with self._count_lock:
            self.running += 1
        threading.Thread(target=work, name=f"orderchaos-web: {what}", daemon=True).start()
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except asyncio.TimeoutError:
            stop.set()
            raise TimedOut(f"{what} did not finish within {timeout:g} s and was stopped", "timeout",
                           seconds=timeout) from None
        except asyncio.CancelledError:
            stop.set()
            raise
        except WebError:
            raise
        except cancel.Cancelled:
            raise WebError(f"{what} was stopped", "stopped") from None
        except Exception:
            log.exception("%s failed", what)
            raise WebError(f"{what} failed (an error inside the server; its log has the details)",
                           "internal") from None

    # -- opponents -------------------------------------------------------------------------
    def opponent(self, value: object, role: str) -> tuple[str, str]:
        """The spec to build for an opponent named by the page to play ``role``, and its
        label: a level (easy, medium, hard, strongest), or, where the server allows free
        specs, an agent spec (a directory only with ``spec_dirs``). Raises WebError saying
        what is accepted, also for an agent that does not play ``role`` (``strategy``
        plays Order only)."""
        levels = ", ".join(LEVELS)
        if isinstance(value, str) and value.strip().lower() in LEVELS:
            label = value.strip().lower()
            return self.checked_spec(LEVELS[label]), label
        if not self.limits.free_specs:
            raise WebError(f"choose an opponent level: {levels}", "level")
        if not isinstance(value, str) or not value.strip():
            raise WebError(f"give an opponent level ({levels}) or an agent spec such as heuristic", "spec")
        spec = self.checked_spec(value)
        try:
            check_role(spec, role)
        except SpecError as exc:
            raise WebError(f"bad agent spec: {exc}", "spec") from None
        return spec, spec

    def checked_spec(self, spec: str) -> str:
        """Check an agent spec against the server's caps and give the one to build: a
        solver whose only budget is time gets ``time=`` (SOLVER_TIME, or less to fit the
        move time) unless given."""
        limits = self.limits
        if len(spec) > MAX_SPEC_CHARS:
            raise WebError(f"an agent spec has at most {MAX_SPEC_CHARS} characters", "spec")
        spec = spec.strip()
        accepted = ", ".join(REGISTRY)
        try:
            name, _ = parse_spec(spec)
            if name not in REGISTRY and not limits.spec_dirs:
                raise SpecError(f"unknown agent {name[:40]!r}; accepted: {accepted} (with parameters, e.g. mcts:sims=400)")
            info, _, params = resolve(spec)
        except SpecError as exc:
            raise WebError(f"bad agent spec: {exc}", "spec") from None
        if params.get("sims", 0) > limits.max_sims:
            raise WebError(f"sims is at most {limits.max_sims} on this server", "sims", limit=limits.max_sims)
        if params.get("time", 0) > limits.move_time:
            raise WebError(f"time is at most the move time, {limits.move_time:g} s, on this server", "spec")
        if "time" in info.params and "sims" not in info.params and "time" not in params:
            budget = round(min(SOLVER_TIME, 0.8 * limits.move_time), 3)
            spec = f"{spec},time={budget:g}" if ":" in spec else f"{spec}:time={budget:g}"
        return spec

    async def build(self, spec: str) -> Agent:
        """Build an agent off the event loop."""
        return await self.run(build_agent, spec, timeout=self.limits.build_time, what="building the opponent")


def build_agent(spec: str) -> Agent:
    """``make(spec, seed=0)``, a SpecError as a WebError."""
    try:
        return make(spec, seed=0)
    except SpecError as exc:
        raise WebError(f"bad agent spec: {exc}", "spec") from None


def agent_move(agent: Agent, state: State) -> int:
    """The agent's move in ``state``, checked."""
    action = agent.act(state)
    try:
        return state.check_action(action)
    except IllegalActionError:
        raise WebError("the opponent chose an illegal move", "internal") from None
