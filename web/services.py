"""What every connection of one web server shares: its limits, the game store, the opponent
levels and spec policy, and :meth:`Services.run`, the one way work leaves the event loop.

With a :class:`~orderchaos.agents.worker_pool.WorkerPool` (what ``orderchaos serve`` sets up:
worker processes, or Ray actors), the searches leave the web process: an agent's move
(:func:`agent_move` of a :class:`WorkerAgent`), a hint (:meth:`Services.hint`) and a study
(:meth:`Services.study`) handed to :meth:`Services.run` are sent to a warm worker as the jobs
of :mod:`orderchaos.arena.agent_work`, the pool's queue standing in for the search slots. A
cancelled or timed-out search is told to stop and its worker killed if it does not; a worker
that dies is replaced and its search asked again of a warm worker (within the search's time),
failing with the code ``worker`` only after :data:`WORKER_ATTEMPTS` tries.

Without a pool (the app alone, as tests make it), and for any other work (reading games
files), :meth:`Services.run` runs it in a worker thread under the server's caps: at most
``max_searches`` at once in all (more wait their turn, and give up with "server is busy"
after ``queue_time``), each stopped when it runs past its time limit, or when the task
awaiting it is cancelled (a tab closed, a newer request replaced it). Stopping is
cooperative (:mod:`orderchaos.agents.cancel`): the searches check between steps, so a
stopped search frees its core within one step. :attr:`Services.running` counts the searches
still running; the tests watch it fall to zero.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from orderchaos.agents import cancel
from orderchaos.agents.base import Agent
from orderchaos.agents.registry import REGISTRY, SpecError, check_role, make, parse_spec, resolve
from orderchaos.agents.worker_pool import WorkerDied, WorkerPool
from orderchaos.arena import agent_work, analysis
from orderchaos.web.errors import Busy, TimedOut, WebError
from orderchaos.web.store import GameStore, StoreReader
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
WORKER_ATTEMPTS = 3
"""Tries of a job whose worker dies during it (killed, out of memory) before the page is told."""


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
    hint_nodes: int | None = None
    """When set, a hint's solver calls stop after this many nodes instead of after
    ``hint_time`` (the same answers on any machine, however busy)."""
    study_nodes: int | None = None
    """When set, a study's solver calls stop after this many nodes instead of after
    ``study_time``."""
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


@dataclass(frozen=True)
class WorkerAgent:
    """An agent that lives in the workers: its spec, the key its worker keeps it under, and
    its name. :func:`agent_move` of it, through :meth:`Services.run`, is its move."""

    spec: str
    key: str
    name: str


@dataclass
class Services:
    """The shared state of one server (see the module docstring)."""

    limits: Limits = field(default_factory=Limits)
    games_dir: Path | None = None
    store: GameStore = field(default_factory=lambda: GameStore(":memory:"))
    public_url: str | None = None
    """The site's public origin (``--public-url``): the base of the links the page shows."""
    workers: WorkerPool | None = None
    """Where the searches run; None: threads of this process."""
    observe_wait: Callable[[float], None] | None = None
    """Told the seconds each search waited for a worker (the server's metrics)."""
    _threads_running: int = 0
    _threads_queued: int = 0
    _slots: asyncio.Semaphore | None = None
    _count_lock: threading.Lock = field(default_factory=threading.Lock)
    _bench: agent_work.Bench = field(default_factory=agent_work.Bench)
    _reader: StoreReader | None = None

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(store, *args)``: a read of the game store off the event loop (see
        :class:`StoreReader`)."""
        if self._reader is None:
            self._reader = StoreReader(self.store)
        return await self._reader.read(fn, *args)

    @property
    def running(self) -> int:
        """Searches running (in threads here and on the workers)."""
        return self._threads_running + (self.workers.running if self.workers is not None else 0)

    @property
    def queued(self) -> int:
        """Searches waiting for a slot or a worker."""
        return self._threads_queued + (self.workers.queued if self.workers is not None else 0)

    # -- the solver and the network of this process (searches without workers) --------------
    def solve(self, state: State, *, time_limit: float | None = None, node_limit: int | None = None,
              moves: bool = False) -> Any:
        """The shared exact solver's ``SolveResult`` (it is not thread-safe: one at a time)."""
        return self._bench.solve(state, time_limit=time_limit, node_limit=node_limit, moves=moves)

    def solver(self) -> contextlib.AbstractContextManager[Any]:
        """The shared exact solver, held for the caller alone while the ``with`` block runs
        (the puzzle room's judging, which asks it more than :meth:`solve` does)."""
        return self._bench.solver()

    def evaluator(self) -> Any:
        """The pretrained network evaluator, or None when it cannot be loaded."""
        return self._bench.evaluator()

    def hint(self, state: State) -> analysis.Hint:
        """:func:`orderchaos.arena.agent_work.hint` on this process's solver and network (in a
        worker thread: the first call loads the network). :meth:`run` sends it to a worker
        when there are workers."""
        return agent_work.hint(self._bench, state, self.limits.hint_time, self.limits.hint_nodes)

    def study(self, actions: list[int]) -> dict[str, Any]:
        """:func:`orderchaos.arena.agent_work.study` of a game on this process's solver and
        network (:meth:`run` sends it to a worker when there are workers)."""
        return agent_work.study(self._bench, actions, self.limits.study_time, self.limits.study_nodes)

    def warm_up(self) -> None:
        """Start the workers, if any, which build their agents in the background; compile (or
        load from the cache) this process's solver kernels before the first hint, and solve the
        strategy's centre game before the first lesson move (both run here)."""
        from orderchaos.agents.strategy import centre_table

        if self.workers is not None:
            self.workers.start()
        self.solve(State(), time_limit=0.05)
        centre_table()

    def close(self) -> None:
        """Stop the workers, if any, and the store's reading threads."""
        if self.workers is not None:
            self.workers.close()
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    # -- work off the event loop -------------------------------------------------------------
    def _worker_job(self, fn: Callable[..., Any], args: tuple) -> tuple[Callable[..., Any], tuple] | None:
        """The worker job standing for ``fn(*args)``, or None when it runs here."""
        if self.workers is None:
            return None
        if fn is agent_move and args and isinstance(args[0], WorkerAgent):
            agent, state = args
            return agent_work.move, (agent.key, agent.spec, state)
        if fn == self.hint:
            return agent_work.hint, (*args, self.limits.hint_time, self.limits.hint_nodes)
        if fn == self.study:
            return agent_work.study, (*args, self.limits.study_time, self.limits.study_nodes)
        return None

    async def run(self, fn: Callable[..., T], *args: Any, timeout: float, what: str) -> T:
        """``fn(*args)`` on a worker or in a worker thread under the caps (see the module
        docstring).

        Raises Busy when no turn came within ``queue_time``, TimedOut past ``timeout``
        (the work is told to stop), WebError for a WebError the work raised, a WebError
        ``worker`` when the worker died, and a WebError without details for any other
        failure (logged here; its text stays on the server). Cancelling the awaiting task
        tells the work to stop.
        """
        job = self._worker_job(fn, args)
        if job is not None:
            value = await self._on_worker(job[0], job[1], timeout=timeout, what=what)
            if fn is agent_move:
                return checked_move(args[1], value)  # type: ignore[return-value]
            return value
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.limits.max_searches)
        slots = self._slots
        self._threads_queued += 1
        try:
            await asyncio.wait_for(slots.acquire(), self.limits.queue_time)
        except asyncio.TimeoutError:
            raise Busy("every search slot is taken") from None
        finally:
            self._threads_queued -= 1
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
                    self._threads_running -= 1
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
                    loop.call_soon_threadsafe(slots.release)
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(deliver, *outcome)

        with self._count_lock:
            self._threads_running += 1
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
        except Exception as exc:
            raise failure(exc, what) from None

    async def _on_worker(self, fn: Callable[..., T], args: tuple, *, timeout: float, what: str) -> T:
        """The job ``fn(bench, *args)`` on a worker (see :meth:`run`). A worker that dies
        during the job is replaced and the job asked again, of a warm worker, up to
        :data:`WORKER_ATTEMPTS` times in all, all within ``timeout`` from the first start;
        only then the WebError ``worker``."""
        assert self.workers is not None
        loop = asyncio.get_running_loop()
        deadline: list[float] = []  # set when the first attempt starts running
        for attempt in range(1, WORKER_ATTEMPTS + 1):
            try:
                return await self._attempt_on_worker(fn, args, timeout=timeout, deadline=deadline, what=what)
            except WorkerDied as exc:
                if attempt == WORKER_ATTEMPTS:
                    log.error("%s failed: %s (%d times)", what, exc, attempt)
                    raise WebError(f"{what} failed: the worker computing it stopped {attempt} times; try again",
                                   "worker", attempts=attempt) from None
                log.warning("%s: %s; asking a fresh worker (attempt %d of %d, %.1f s left)", what, exc,
                            attempt + 1, WORKER_ATTEMPTS, deadline[0] - loop.time())
        raise AssertionError("unreachable")

    async def _attempt_on_worker(self, fn: Callable[..., T], args: tuple, *, timeout: float,
                                 deadline: list[float], what: str) -> T:
        """One try of :meth:`_on_worker`; raises WorkerDied when its worker died."""
        assert self.workers is not None
        loop = asyncio.get_running_loop()
        request = self.workers.submit(fn, *args)
        started, result = asyncio.wrap_future(request.started), asyncio.wrap_future(request.future)
        for future in (started, result):  # read even when nobody awaits it any more (a stopped search)
            future.add_done_callback(lambda done: done.cancelled() or done.exception())
        timed_out = TimedOut(f"{what} did not finish within {timeout:g} s and was stopped", "timeout",
                             seconds=timeout)
        try:
            wait = self.limits.queue_time if not deadline else min(self.limits.queue_time, deadline[0] - loop.time())
            try:
                await asyncio.wait_for(asyncio.shield(started), max(0.0, wait))
            except asyncio.TimeoutError:
                if deadline and loop.time() >= deadline[0]:
                    raise timed_out from None
                raise Busy("every worker is busy") from None
            if self.observe_wait is not None and request.waited is not None:
                self.observe_wait(request.waited)
            if not deadline:
                deadline.append(loop.time() + timeout)
            try:
                return await asyncio.wait_for(asyncio.shield(result), max(0.0, deadline[0] - loop.time()))
            except asyncio.TimeoutError:
                raise timed_out from None
            except WorkerDied:
                raise
            except Exception as exc:
                raise failure(exc, what) from None
        finally:
            if not request.future.done():
                self.workers.cancel(request)

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

    async def build(self, spec: str) -> Agent | WorkerAgent:
        """Build an agent off the event loop: on a worker when there are workers (the
        :class:`WorkerAgent` standing for it), else here."""
        what = "building the opponent"
        if self.workers is None:
            return await self.run(build_agent, spec, timeout=self.limits.build_time, what=what)
        key = secrets.token_hex(8)
        name = await self._on_worker(agent_work.build, (key, spec), timeout=self.limits.build_time, what=what)
        return WorkerAgent(spec, key, name)


def failure(exc: Exception, what: str) -> WebError:
    """The WebError a search's failure ``exc`` reaches the page as: a WebError as it is, a
    bad spec with its text, a stopped search as ``stopped``, anything else ``internal``
    without details (logged here; its text stays on the server)."""
    if isinstance(exc, WebError):
        return exc
    if isinstance(exc, SpecError):
        return WebError(f"bad agent spec: {exc}", "spec")
    if isinstance(exc, cancel.Cancelled):
        return WebError(f"{what} was stopped", "stopped")
    log.error("%s failed", what, exc_info=exc)
    return WebError(f"{what} failed (an error inside the server; its log has the details)", "internal")


def build_agent(spec: str) -> Agent:
    """``make(spec, seed=0)``, a SpecError as a WebError."""
    try:
        return make(spec, seed=0)
    except SpecError as exc:
        raise WebError(f"bad agent spec: {exc}", "spec") from None


def agent_move(agent: Agent | WorkerAgent, state: State) -> int:
    """The agent's move in ``state``, checked (a :class:`WorkerAgent`'s only through
    :meth:`Services.run`, which asks its worker)."""
    if isinstance(agent, WorkerAgent):
        raise TypeError("a worker's agent moves through Services.run")
    return checked_move(state, agent.act(state))


def checked_move(state: State, action: int) -> int:
    """``action`` if it is legal in ``state``; else a WebError."""
    try:
        return state.check_action(action)
    except IllegalActionError:
        raise WebError("the opponent chose an illegal move", "internal") from None
