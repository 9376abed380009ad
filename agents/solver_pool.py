"""A pool of exact-solver workers, each holding one long-lived :class:`~orderchaos.agents.solver.Solver`.

A *job* is a picklable top-level function called as ``fn(solver, *args)`` in a worker, where
``solver`` is that worker's own Solver: its transposition table stays warm from one job to the
next (a job that must not depend on what ran before clears it first). Three kinds of worker:

* ``inline``: this process, one Solver; a job runs when a result is asked for, oldest first, so
  one inline worker and one worker process see the same jobs in the same order.
* ``processes``: ``workers`` spawned processes sharing one job queue (a free worker takes the
  next job). They ignore Ctrl-C (the caller decides what an interrupt means), end on their
  own when this process is gone (even after a SIGKILL; a worker busy with a job ends after
  it, as the compiled solver holds the interpreter), and are stopped by :meth:`SolverPool.close`.
* ``ray``: ``workers`` Ray actors, one job per actor at a time (the rest wait here). Ray is
  started or joined by :func:`orderchaos.ray_setup.connect_ray` (a local instance on
  127.0.0.1 unless an address is given) and shut down on close when the pool started it.
  An actor whose process dies is restarted by Ray and its job is resubmitted once, with a
  warning; a second death of the same job fails it.

A job that raises, or whose worker died, fails with :class:`SolverPoolError`, whose one-line
message names the job and carries the first line of the worker's error. A worker process that
dies fails every job still out (the others are stopped with it) and the next :meth:`SolverPool.submit`
starts fresh workers.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import os
import pickle
import queue
import signal
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from orderchaos.agents.solver import DEFAULT_TT_BITS, Solver

KINDS = ("inline", "processes", "ray")
"""Where the workers run: this process, local worker processes, or Ray actors."""
RAY_OBJECT_STORE_MB = 128
"""Object store of a local Ray instance started by a pool (jobs and results are small)."""
_POLL_S = 0.5
"""How often a wait on worker processes looks whether one of them died."""

Job = Callable[..., Any]
"""A top-level function called as ``fn(solver, *args)`` in a worker."""
Outcome = tuple[int, bool, Any]
"""(ticket, whether the job succeeded, its result or the failure's one-line message)."""


class SolverPoolError(RuntimeError):
    """A solver job failed: it raised in its worker, or its worker died. The message is one
    line, with the first line of the worker's error."""


def first_line(exc: BaseException, limit: int = 160) -> str:
    """The first line of an exception's message, cut to ``limit`` characters (its type's
    name when the message is empty)."""
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _job_failure(fn: Job, exc: BaseException) -> str:
    """The one-line message of a job that raised ``exc``."""
    return f"solver job {getattr(fn, '__qualname__', fn)!s} failed: {type(exc).__name__}: {first_line(exc)}"


class SolverPool:
    """``workers`` solver workers of one ``kind`` (see the module docstring), each with a
    Solver of ``2**tt_bits`` table entries. ``num_cpus`` is what each Ray actor asks for
    (default: one CPU, or an equal share when the cluster has fewer CPUs than workers);
    ``ray_address`` (None: a local instance), ``ray_setting`` (the option that gave the
    address) and ``ray_purpose`` (what needs ray) are passed to
    :func:`orderchaos.ray_setup.connect_ray`, which raises
    :class:`orderchaos.ray_setup.RayBackendError` here when Ray cannot be used.

    Jobs are handed out by ticket: :meth:`submit` returns one, :meth:`result` waits for that
    job, :meth:`wait` returns the next job to finish; :meth:`map` and :meth:`map_async` run a
    batch and give its results in order. A pool is a context manager that closes itself.
    """

    def __init__(
        self,
        kind: str = "inline",
        workers: int = 1,
        *,
        tt_bits: int = DEFAULT_TT_BITS,
        num_cpus: float | None = None,
        ray_address: str | None = None,
        ray_setting: str = "the Ray address",
        ray_purpose: str = "a solver pool on Ray",
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        if kind == "inline" and workers != 1:
            raise ValueError(f"an inline pool has one worker, got {workers}")
        if ray_address is not None and kind != "ray":
            raise ValueError("a Ray address goes with the ray kind only")
        self.kind, self.workers, self.tt_bits = kind, workers, tt_bits
        self._backend: _Inline | _Processes | _Ray | None = None
        if kind == "ray":  # connect now: a cluster that cannot be used is an error at once
            self._backend = _Ray(workers, tt_bits, num_cpus, ray_address, ray_setting, ray_purpose)
        self._tickets = 0
        self._out: set[int] = set()  # submitted, not finished
        self._done: dict[int, tuple[bool, Any]] = {}  # finished, not handed out (in finishing order)
        self._batched: set[int] = set()  # tickets of map_async batches: not handed out by wait()

    # -- submitting and collecting ------------------------------------------------------------
    def _ensure_backend(self) -> "_Inline | _Processes | _Ray":
        if self._backend is not None and self._backend.broken:
            self._backend.close()
            self._backend = None
        if self._backend is None:
            if self.kind == "ray":
                raise SolverPoolError("the solver pool is closed")
            self._backend = _Inline(self.tt_bits) if self.kind == "inline" else _Processes(self.workers, self.tt_bits)
        return self._backend

    def submit(self, fn: Job, *args: Any) -> int:
        """Queue the job ``fn(solver, *args)`` and return its ticket (workers are started
        on first use, and started afresh after a worker process died)."""
        backend = self._ensure_backend()
        ticket = self._tickets
        self._tickets += 1
        backend.submit(ticket, fn, args)
        self._out.add(ticket)
        return ticket

    def _collect(self, timeout: float | None) -> None:
        """Move what finishes within ``timeout`` seconds (None: at least one job) to the
        finished jobs."""
        assert self._backend is not None
        for ticket, ok, value in self._backend.collect(timeout):
            self._out.discard(ticket)
            self._done[ticket] = (ok, value)

    @staticmethod
    def _hand_out(outcome: tuple[bool, Any]) -> Any:
        ok, value = outcome
        if not ok:
            raise SolverPoolError(value)
        return value

    def result(self, ticket: int) -> Any:
        """The result of job ``ticket``, waiting for it; :class:`SolverPoolError` if it
        failed. Each result is handed out once."""
        while ticket not in self._done:
            if ticket not in self._out:
                raise KeyError(f"no solver job {ticket} is waiting to be collected")
            self._collect(None)
        self._batched.discard(ticket)
        return self._hand_out(self._done.pop(ticket))

    def wait(self, timeout: float | None = None) -> tuple[int, Any] | None:
        """The next job to finish, as ``(ticket, result)``: one finished already, else one
        finishing within ``timeout`` seconds (None: however long it takes); None when none
        does or no job is out. Jobs of :meth:`map_async` batches are left to their batch.
        :class:`SolverPoolError` if that job failed."""
        while True:
            ticket = next((t for t in self._done if t not in self._batched), None)
            if ticket is not None:
                return ticket, self._hand_out(self._done.pop(ticket))
            if not self._out - self._batched:
                return None
            before = len(self._done)
            self._collect(timeout)
            if timeout is not None and len(self._done) == before:
                return None

    def map(self, fn: Job, arguments: Iterable[Sequence[Any]]) -> list[Any]:
        """``fn(solver, *args)`` for each ``args`` of ``arguments``, spread over the
        workers; the results in the order of ``arguments``."""
        return self.map_async(fn, arguments).wait()

    def map_async(self, fn: Job, arguments: Iterable[Sequence[Any]]) -> "PoolBatch":
        """Like :meth:`map`, returning at once; :meth:`PoolBatch.wait` gives the results."""
        tickets = [self.submit(fn, *args) for args in arguments]
        self._batched.update(tickets)
        return PoolBatch(self, tickets)

    @property
    def resubmitted(self) -> int:
        """Jobs resubmitted because their Ray actor died (0 for local workers)."""
        return self._backend.resubmitted if isinstance(self._backend, _Ray) else 0

    @property
    def pending(self) -> int:
        """Jobs submitted and not yet finished."""
        return len(self._out)

    def worker_pids(self) -> list[int]:
        """The process ids of the workers (this process's for an inline pool), starting
        them if need be."""
        return self._ensure_backend().pids()

    # -- the end ----------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the workers (a job in progress is abandoned) and forget every job still
        out; a pool that started Ray shuts it down. A pool of local workers can be used
        again (new workers start); a Ray pool cannot."""
        backend, self._backend = self._backend, None
        self._out.clear()
        self._done.clear()
        self._batched.clear()
        if backend is not None:
            backend.close()

    def __enter__(self) -> "SolverPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PoolBatch:
    """Jobs submitted together by :meth:`SolverPool.map_async`."""

    def __init__(self, pool: SolverPool, tickets: list[int]) -> None:
        self.pool, self.tickets = pool, tickets

    def wait(self) -> list[Any]:
        """The batch's results in submission order, waiting for them;
        :class:`SolverPoolError` on the first job (in that order) that failed, after
        collecting the others."""
        outcomes: list[tuple[bool, Any]] = []
        for ticket in self.tickets:
            try:
                outcomes.append((True, self.pool.result(ticket)))
            except SolverPoolError as exc:
                outcomes.append((False, exc))
        for ok, value in outcomes:
            if not ok:
                raise value
        return [value for _, value in outcomes]


# -------------------------------------------------------------------------------------------
# The kinds of worker.
# -------------------------------------------------------------------------------------------


class _Inline:
    """One Solver in this process; jobs run oldest first when a result is collected."""

    broken = False

    def __init__(self, tt_bits: int) -> None:
        self.solver = Solver(tt_bits=tt_bits)
        self.queued: deque[tuple[int, Job, tuple]] = deque()

    def submit(self, ticket: int, fn: Job, args: tuple) -> None:
        self.queued.append((ticket, fn, args))

    def collect(self, timeout: float | None) -> list[Outcome]:
        if not self.queued:
            return []
        ticket, fn, args = self.queued.popleft()
        try:
            return [(ticket, True, fn(self.solver, *args))]
        except Exception as exc:
            return [(ticket, False, _job_failure(fn, exc))]

    def pids(self) -> list[int]:
        return [os.getpid()]

    def close(self) -> None:
        self.queued.clear()


def exit_with_parent(parent_pid: int) -> None:
    """End this worker process once its parent is gone (e.g. killed with SIGKILL), instead
    of waiting forever on the job queue."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


def _worker_main(tt_bits: int, parent_pid: int, jobs: Any, results: Any) -> None:
    """A worker process: one Solver, jobs from ``jobs`` until a None, outcomes (results
    pickled here, so that one that cannot be pickled is a failure, not a lost job) to
    ``results``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    exit_with_parent(parent_pid)
    solver = Solver(tt_bits=tt_bits)
    while True:
        item = jobs.get()
        if item is None:
            return
        ticket, fn, args = pickle.loads(item)
        try:
            outcome = (ticket, True, pickle.dumps(fn(solver, *args)))
        except Exception as exc:
            outcome = (ticket, False, _job_failure(fn, exc))
        results.put(outcome)


class _Processes:
    """Spawned worker processes sharing one job queue, each with its own Solver."""

    def __init__(self, workers: int, tt_bits: int) -> None:
        ctx = mp.get_context("spawn")
        self.jobs, self.results = ctx.Queue(), ctx.Queue()
        self.procs = [
            ctx.Process(target=_worker_main, args=(tt_bits, os.getpid(), self.jobs, self.results), daemon=True)
            for _ in range(workers)
        ]
        for proc in self.procs:
            proc.start()
        self.running: set[int] = set()
        self.broken = False

    def submit(self, ticket: int, fn: Job, args: tuple) -> None:
        self.jobs.put(pickle.dumps((ticket, fn, args)))  # here, so that a bad job fails here
        self.running.add(ticket)

    def collect(self, timeout: float | None) -> list[Outcome]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.running:
            left = _POLL_S if deadline is None else min(_POLL_S, deadline - time.monotonic())
            try:
                ticket, ok, value = self.results.get(timeout=max(left, 0.0))
            except queue.Empty:
                dead = [p.exitcode for p in self.procs if not p.is_alive()]
                if dead:
                    return self._fail_all(f"a solver worker process died (exit code {dead[0]})")
                if deadline is not None and time.monotonic() >= deadline:
                    return []
                continue
            self.running.discard(ticket)
            return [(ticket, ok, pickle.loads(value) if ok else value)]
        return []

    def _fail_all(self, message: str) -> list[Outcome]:
        """Stop every worker and fail the jobs still out (one died: which of them it held,
        and whether the queue survived it, cannot be known)."""
        lost, self.running = sorted(self.running), set()
        self.close()
        self.broken = True
        return [(ticket, False, message) for ticket in lost]

    def pids(self) -> list[int]:
        return [p.pid for p in self.procs if p.pid is not None]

    def close(self) -> None:
        for proc in self.procs:
            if proc.is_alive():
                proc.terminate()
        for proc in self.procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
                proc.join()
        for q in (self.jobs, self.results):
            q.cancel_join_thread()  # what the stopped workers left unread is dropped
            q.close()
        self.procs = []


class _PoolActor:
    """The body of a Ray solver actor: one Solver kept across jobs."""

    def __init__(self, tt_bits: int) -> None:
        self.solver = Solver(tt_bits=tt_bits)

    def pid(self) -> int:
        """The actor's process id."""
        return os.getpid()

    def run(self, fn: Job, args: tuple) -> Any:
        """Run one job with this actor's Solver."""
        return fn(self.solver, *args)


class _Ray:
    """Ray actors (:class:`_PoolActor`), one job each at a time; see the module docstring."""

    broken = False

    def __init__(
        self, workers: int, tt_bits: int, num_cpus: float | None, address: str | None, setting: str, purpose: str
    ) -> None:
        from orderchaos.ray_setup import connect_ray, import_ray

        self.ray = import_ray(purpose)
        self.owns = connect_ray(address, object_store_mb=RAY_OBJECT_STORE_MB, setting=setting, purpose=purpose)
        self.workers, self.tt_bits, self.num_cpus = workers, tt_bits, num_cpus
        self.actors: list[Any] = []  # started on first use: until then they hold no CPU
        self.idle: deque[int] = deque(range(workers))
        self.waiting: deque[tuple[int, Job, tuple, int]] = deque()  # (ticket, fn, args, tries so far)
        self.running: dict[Any, tuple[int, int, Job, tuple, int]] = {}  # ObjectRef -> (actor, ticket, fn, args, tries)
        self.resubmitted = 0

    def _start(self) -> None:
        if self.actors:
            return
        num_cpus = self.num_cpus
        if num_cpus is None:
            cpus = float(self.ray.cluster_resources().get("CPU", 1.0))
            num_cpus = min(1.0, math.floor(1e4 * cpus / self.workers) / 1e4)
        actor = self.ray.remote(_PoolActor).options(num_cpus=num_cpus, max_restarts=-1, max_task_retries=0)
        self.actors = [actor.remote(self.tt_bits) for _ in range(self.workers)]

    def submit(self, ticket: int, fn: Job, args: tuple) -> None:
        self._start()
        self.waiting.append((ticket, fn, args, 0))
        self._dispatch()

    def _dispatch(self) -> None:
        while self.waiting and self.idle:
            ticket, fn, args, tries = self.waiting.popleft()
            k = self.idle.popleft()
            self.running[self.actors[k].run.remote(fn, args)] = (k, ticket, fn, args, tries)

    def collect(self, timeout: float | None) -> list[Outcome]:
        from ray.exceptions import RayActorError, RayError

        if not self.running:
            return []
        ready, _ = self.ray.wait(list(self.running), num_returns=1, timeout=timeout)
        if not ready:
            return []
        k, ticket, fn, args, tries = self.running.pop(ready[0])
        try:
            result = self.ray.get(ready[0])
        except RayActorError as exc:  # its process died or became unreachable
            what = f"solver actor {k} died ({type(exc).__name__}: {first_line(exc)})"
            self.idle.append(k)  # restarting: last in line, so another idle actor takes a job
            if tries:
                self._dispatch()
                return [(ticket, False, f"{what} on the second try of a job")]
            self.resubmitted += 1
            warnings.warn(f"{what}; Ray restarts it and its job is resubmitted", stacklevel=4)
            self.waiting.appendleft((ticket, fn, args, tries + 1))
            self._dispatch()
            return []
        except RayError as exc:  # the job raised
            self.idle.appendleft(k)
            self._dispatch()
            return [(ticket, False, _job_failure(fn, getattr(exc, "cause", None) or exc))]
        self.idle.appendleft(k)
        self._dispatch()
        return [(ticket, True, result)]

    def pids(self) -> list[int]:
        self._start()
        return [self.ray.get(actor.pid.remote()) for actor in self.actors]

    def close(self) -> None:
        from ray.exceptions import RayError

        for actor in self.actors:
            try:
                self.ray.kill(actor, no_restart=True)
            except RayError:
                pass
        self.actors, self.running = [], {}
        self.waiting.clear()
        self._disconnect()

    def _disconnect(self) -> None:
        from orderchaos.ray_setup import shutdown_ray

        if self.owns and self.ray.is_initialized():
            shutdown_ray()
        self.owns = False
