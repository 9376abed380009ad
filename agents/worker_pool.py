"""Warm workers for searches that must not run in the caller's process: a game server's agent
moves, hints and analyses.

A *job* is a picklable top-level function called as ``fn(bench, *args)`` in a worker, where
``bench`` is what ``warm(*warm_args)`` built when the worker started (networks loaded, solver
tables allocated, kernels compiled) and keeps from one job to the next. Two kinds of worker:

* ``processes``: spawned worker processes, each with a pipe of its own to this process;
* ``ray``: Ray actors (a local instance on 127.0.0.1, or the cluster at ``ray_address``, by
  :func:`orderchaos.ray_setup.connect_ray`).

Each worker runs one job at a time; jobs wait in one queue and a free, warm worker takes the
oldest. :meth:`WorkerPool.submit` returns a :class:`Request` at once; its ``future`` (a
:class:`concurrent.futures.Future`) holds the result, its ``started`` future the moment a
worker took it. :meth:`WorkerPool.cancel` drops a waiting job, and tells a running one to
stop: its stop flag is set, so the searches' :func:`orderchaos.agents.cancel.check` raises
between steps, and a worker that has not stopped ``grace`` seconds later is killed and
replaced. A worker that dies fails only the job it held, with :class:`WorkerDied`, and a fresh
worker (warming up before it takes a job) takes its place.

The pool's side of each worker is a thread here that hands it jobs and waits for it, so a
caller (an event loop) never blocks: it waits on the futures.
"""

from __future__ import annotations

import concurrent.futures
import logging
import math
import multiprocessing as mp
import os
import pickle
import queue
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import wait as wait_for_any
from typing import Any

from orderchaos.agents import cancel
from orderchaos.agents.solver_pool import exit_with_parent, first_line

KINDS = ("processes", "ray")
"""Where the workers run: local worker processes, or Ray actors."""
RAY_OBJECT_STORE_MB = 128
"""Object store of a local Ray instance started by a pool (jobs and results are small)."""
_POLL_S = 0.05
"""How often a worker's thread here looks whether its job was asked to stop."""
WORKER_NICENESS = 5
"""How much lower a worker process's CPU priority is than the pool's process: on a machine
with few cores, a caller that serves people (the web server) keeps answering while its
workers warm up or search."""
_RESTART_PAUSE_S = 1.0
"""Pause before starting a worker again after one failed to start."""
log = logging.getLogger("orderchaos.workers")

Warm = Callable[..., Any]
"""A top-level function whose result is a worker's bench, built once when the worker starts."""


class WorkerDied(RuntimeError):
    """The worker running a job died (killed, out of memory, a crash) before answering."""


@dataclass(eq=False)
class Request:
    """One job handed to a :class:`WorkerPool`: ``future`` holds its result (or its
    exception), ``started`` is set to the :func:`time.monotonic` moment a worker took it."""

    fn: Callable[..., Any]
    args: tuple
    future: concurrent.futures.Future = field(default_factory=concurrent.futures.Future)
    started: concurrent.futures.Future = field(default_factory=concurrent.futures.Future)
    stop: threading.Event = field(default_factory=threading.Event)
    queued_at: float = field(default_factory=time.monotonic)

    @property
    def waited(self) -> float | None:
        """Seconds the job waited for a worker (None while it still waits)."""
        if not self.started.done() or self.started.cancelled():
            return None
        return self.started.result() - self.queued_at


MAX_CLUSTER_WORKERS = 1024
"""The most Ray actors one pool starts on a cluster given by address."""


def most_workers(kind: str = "processes", ray_address: str | None = None) -> int:
    """The most workers that are worth starting: one per CPU core of this machine for local
    processes, threads or a local Ray instance (a search keeps a core busy, so more only
    queue for the same cores while each holds its own tables), and
    :data:`MAX_CLUSTER_WORKERS` for a Ray cluster given by address, whose cores are elsewhere."""
    if kind == "ray" and ray_address is not None:
        return MAX_CLUSTER_WORKERS
    return max(1, os.cpu_count() or 1)


class WorkerPool:
    """``workers`` warm workers of one ``kind`` (see the module docstring). ``warm`` and
    ``warm_args`` build each worker's bench; ``grace`` is how long a job told to stop may
    take before its worker is killed. For ``ray``: ``ray_address`` (None: a local instance),
    ``ray_setting`` (the option that gave it) and ``num_cpus`` per actor (default one CPU, or
    an equal share when the cluster has fewer CPUs than workers); a Ray that cannot be used
    raises :class:`orderchaos.ray_setup.RayBackendError` here.

    Nothing starts until :meth:`start` (or the first :meth:`submit`); the workers then warm
    up in the background. A pool is a context manager that closes itself.
    """

    def __init__(
        self,
        kind: str = "processes",
        workers: int = 1,
        *,
        warm: Warm | None = None,
        warm_args: Sequence[Any] = (),
        grace: float = 2.0,
        ray_address: str | None = None,
        ray_setting: str = "the Ray address",
        num_cpus: float | None = None,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        if ray_address is not None and kind != "ray":
            raise ValueError("a Ray address goes with the ray kind only")
        self.kind, self.workers, self.grace = kind, workers, grace
        self.warm, self.warm_args = warm, tuple(warm_args)
        self.ray: Any = None
        self._owns_ray = False
        self._num_cpus = num_cpus
        if kind == "ray":  # connect now: a cluster that cannot be used is an error at once
            from orderchaos.ray_setup import connect_ray, import_ray

            purpose = "--agents ray"
            self.ray = import_ray(purpose)
            self._owns_ray = connect_ray(ray_address, object_store_mb=RAY_OBJECT_STORE_MB, setting=ray_setting,
                                         purpose=purpose)
        self._queue: queue.Queue[Request | None] = queue.Queue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._live: dict[int, _ProcessWorker | _RayWorker] = {}
        self._closed = False
        self.queued = 0
        """Jobs waiting for a worker."""
        self.running = 0
        """Jobs a worker is running."""
        self.ready = 0
        """Workers warm and able to take a job."""
        self.replaced = 0
        """Workers that died or were killed, and were started afresh."""

    # -- jobs ---------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the workers (they warm up in the background); nothing when started already."""
        with self._lock:
            if self._threads or self._closed:
                return
            for slot in range(self.workers):
                thread = threading.Thread(target=self._drive, args=(slot,), name=f"orderchaos-worker-{slot}",
                                          daemon=True)
                self._threads.append(thread)
                thread.start()

    def submit(self, fn: Callable[..., Any], *args: Any) -> Request:
        """Queue the job ``fn(bench, *args)`` and return its :class:`Request`."""
        if self._closed:
            raise RuntimeError("the worker pool is closed")
        self.start()
        request = Request(fn, args)
        with self._lock:
            self.queued += 1
        self._queue.put(request)
        return request

    def cancel(self, request: Request) -> None:
        """Drop ``request`` if it still waits; tell its worker to stop it if it runs (see the
        module docstring). Nothing when it finished already."""
        request.stop.set()
        with self._lock:
            if request.future.cancel():
                request.started.cancel()
                self.queued -= 1

    def pids(self) -> list[int]:
        """The process ids of the workers started so far and alive."""
        return [worker.pid for worker in list(self._live.values()) if worker.pid is not None and worker.alive()]

    # -- one worker's thread here -----------------------------------------------------------
    def _drive(self, slot: int) -> None:
        """Keep one worker going: start it (again after it died), then hand it jobs."""
        worker: _ProcessWorker | _RayWorker | None = None
        while not self._closed:
            if worker is None:
                try:
                    worker = self._live[slot] = self._new_worker()  # closed by close() even while warming
                    worker.await_ready()
                except Exception as exc:  # e.g. the bench cannot be built: fail a job, not hang it
                    self._live.pop(slot, None)
                    worker = None
                    if self._closed:  # closed while it warmed up
                        break
                    log.error("worker %d could not start: %s", slot, first_line(exc))
                    self._fail_next(WorkerDied(f"a worker could not start: {first_line(exc)}"))
                    time.sleep(_RESTART_PAUSE_S)
                    continue
                with self._lock:
                    self.ready += 1
            request = self._queue.get()
            if request is None or self._closed:
                break
            with self._lock:
                if not request.future.set_running_or_notify_cancel():
                    continue  # cancelled while it waited (counted then)
                self.queued -= 1
                self.running += 1
            request.started.set_result(time.monotonic())
            try:
                request.future.set_result(worker.run(request, self.grace))
            except BaseException as exc:  # noqa: BLE001 - every failure goes to the caller
                request.future.set_exception(exc)
            finally:
                with self._lock:
                    self.running -= 1
            if not worker.alive():
                with self._lock:
                    self.ready -= 1
                    self.replaced += 1
                log.warning("worker %d (pid %s) is gone; starting a fresh one", slot, worker.pid)
                self._live.pop(slot, None)
                worker.close()
                worker = None
        if worker is not None:
            worker.close()

    def _new_worker(self) -> "_ProcessWorker | _RayWorker":
        if self.kind == "ray":
            return _RayWorker(self.ray, self.warm, self.warm_args, self._actor_cpus())
        return _ProcessWorker(self.warm, self.warm_args)

    def _actor_cpus(self) -> float:
        if self._num_cpus is not None:
            return self._num_cpus
        cpus = float(self.ray.cluster_resources().get("CPU", 1.0))
        return min(1.0, math.floor(1e4 * cpus / self.workers) / 1e4)

    def _fail_next(self, exc: BaseException) -> None:
        """Fail the oldest waiting job with ``exc`` (none waiting: nothing)."""
        try:
            request = self._queue.get_nowait()
        except queue.Empty:
            return
        if request is None:
            self._queue.put(None)
            return
        with self._lock:
            if not request.future.set_running_or_notify_cancel():
                return
            self.queued -= 1
        request.started.cancel()
        request.future.set_exception(exc)

    # -- the end ----------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the workers (jobs in progress are abandoned, waiting ones cancelled); a pool
        that started Ray shuts it down."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        while True:
            try:
                request = self._queue.get_nowait()
            except queue.Empty:
                break
            if request is not None and request.future.cancel():
                request.started.cancel()
        for _ in self._threads:
            self._queue.put(None)
        for worker in list(self._live.values()):
            worker.close()
        for thread in self._threads:
            thread.join(timeout=10)
        self._live.clear()
        if self._owns_ray:
            from orderchaos.ray_setup import shutdown_ray

            shutdown_ray()
            self._owns_ray = False

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -------------------------------------------------------------------------------------------
# Worker processes.
# -------------------------------------------------------------------------------------------


class _SharedFlag:
    """A stop flag in shared memory, set by the pool and read by the worker's searches
    (what :func:`orderchaos.agents.cancel.stop_when` needs: ``is_set``)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def is_set(self) -> bool:
        return bool(self.value.value)


def _portable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling as itself, else a RuntimeError with its first line."""
    try:
        copy = pickle.loads(pickle.dumps(exc))
        if type(copy) is type(exc):
            return exc
    except Exception:  # noqa: BLE001 - any exception that cannot travel is replaced
        pass
    return RuntimeError(f"{type(exc).__name__}: {first_line(exc)}")


def _process_main(conn: Any, flag: Any, parent_pid: int, warm: Warm | None, warm_args: tuple) -> None:
    """A worker process: build the bench, say ready, then run jobs from ``conn`` until it
    closes, each under the shared stop ``flag``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the server; it stops us
    exit_with_parent(parent_pid)
    os.nice(WORKER_NICENESS)
    bench = warm(*warm_args) if warm is not None else None
    stop = _SharedFlag(flag)
    conn.send(("ready", os.getpid()))
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        fn, args = job
        try:
            with cancel.stop_when(stop):  # type: ignore[arg-type] - duck-typed: is_set
                reply: tuple[str, Any] = ("ok", fn(bench, *args))
        except BaseException as exc:  # noqa: BLE001 - every failure goes back
            reply = ("error", _portable(exc))
        try:
            conn.send(reply)
        except Exception as exc:  # noqa: BLE001 - a result that cannot be pickled
            conn.send(("error", RuntimeError(f"the job's result cannot be sent back: {first_line(exc)}")))


class _ProcessWorker:
    """One spawned worker process and its pipe (see the module docstring)."""

    def __init__(self, warm: Warm | None, warm_args: tuple) -> None:
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.flag = ctx.RawValue("b", 0)
        self.proc = ctx.Process(target=_process_main, args=(child, self.flag, os.getpid(), warm, warm_args),
                                name="orderchaos-worker", daemon=True)
        self.proc.start()
        child.close()
        self.pid = self.proc.pid
        # the pool's close and the thread driving this worker may both close it, at once
        self._close_lock = threading.Lock()
        self._closed = False

    def await_ready(self) -> None:
        """Wait until the worker has built its bench; WorkerDied if it exited first."""
        ready = wait_for_any([self.conn, self.proc.sentinel])
        if self.conn not in ready:
            self.close()
            raise WorkerDied(f"the worker process exited while warming up (exit code {self.proc.exitcode})")
        try:
            self.conn.recv()
        except (EOFError, OSError):
            self.close()
            raise WorkerDied("the worker process exited while warming up") from None

    def run(self, request: Request, grace: float) -> Any:
        """Run ``request`` in the process; stop it when asked, kill it past ``grace``."""
        self.flag.value = 0
        self.conn.send((request.fn, request.args))
        stop_at: float | None = None
        while True:
            ready = wait_for_any([self.conn, self.proc.sentinel], timeout=_POLL_S)
            if self.conn in ready:
                try:
                    kind, value = self.conn.recv()
                except (EOFError, OSError):
                    ready = [self.proc.sentinel]
                else:
                    if kind == "ok":
                        return value
                    raise value
            if self.proc.sentinel in ready or not self.proc.is_alive():
                self.proc.join(timeout=1)
                raise WorkerDied(f"the worker process died during the job (exit code {self.proc.exitcode})")
            if request.stop.is_set():
                if stop_at is None:
                    self.flag.value = 1
                    stop_at = time.monotonic()
                elif time.monotonic() - stop_at > grace:
                    self.kill()
                    raise cancel.Cancelled(f"the job did not stop within {grace:g} s; its worker was killed")

    def alive(self) -> bool:
        return self.proc.is_alive()

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(timeout=5)

    def close(self) -> None:
        """End the process at once (it holds nothing worth keeping: a job in progress is
        abandoned). Safe to call again, from any thread."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join(timeout=2)
        if self.proc.is_alive():
            self.kill()
        self.conn.close()


# -------------------------------------------------------------------------------------------
# Ray actors.
# -------------------------------------------------------------------------------------------


class _BenchActor:
    """The body of a Ray worker: the bench, and a stop flag that :meth:`halt` sets while
    :meth:`run` runs (the actor runs two calls at once for that)."""

    def __init__(self, warm: Warm | None, warm_args: tuple) -> None:
        self.bench = warm(*warm_args) if warm is not None else None
        self.stop = threading.Event()

    def pid(self) -> int:
        """The actor's process id (answered once the bench is built)."""
        return os.getpid()

    def run(self, fn: Callable[..., Any], args: tuple) -> Any:
        """One job with this actor's bench, under its stop flag."""
        self.stop.clear()
        try:
            with cancel.stop_when(self.stop):
                return fn(self.bench, *args)
        except BaseException as exc:  # noqa: BLE001 - travel as the job's own exception
            raise _portable(exc) from None

    def halt(self) -> None:
        """Tell the job running to stop."""
        self.stop.set()


class _RayWorker:
    """One Ray actor (:class:`_BenchActor`); Ray does not restart it: the pool starts a fresh one."""

    def __init__(self, ray: Any, warm: Warm | None, warm_args: tuple, num_cpus: float) -> None:
        self.ray = ray
        remote = ray.remote(_BenchActor).options(num_cpus=num_cpus, max_concurrency=2, max_restarts=0,
                                                max_task_retries=0)
        self.actor = remote.remote(warm, warm_args)
        self.dead = False
        self.pid: int | None = None

    def await_ready(self) -> None:
        """Wait until the actor has built its bench; WorkerDied if it could not."""
        from ray.exceptions import RayError

        try:
            self.pid = self.ray.get(self.actor.pid.remote())
        except RayError as exc:
            self.close()
            raise WorkerDied(f"the Ray worker could not start: {first_line(exc)}") from None

    def run(self, request: Request, grace: float) -> Any:
        """Run ``request`` on the actor; stop it when asked, kill it past ``grace``."""
        from ray.exceptions import RayActorError, RayTaskError

        ref = self.actor.run.remote(request.fn, request.args)
        stop_at: float | None = None
        while True:
            ready, _ = self.ray.wait([ref], timeout=_POLL_S)
            if ready:
                try:
                    return self.ray.get(ref)
                except RayActorError as exc:
                    self.dead = True
                    raise WorkerDied(f"the Ray worker died during the job: {first_line(exc)}") from None
                except RayTaskError as exc:
                    cause = getattr(exc, "cause", None)
                    raise (cause if isinstance(cause, BaseException) else RuntimeError(first_line(exc))) from None
            if request.stop.is_set():
                if stop_at is None:
                    self.actor.halt.remote()
                    stop_at = time.monotonic()
                elif time.monotonic() - stop_at > grace:
                    self.close()
                    raise cancel.Cancelled(f"the job did not stop within {grace:g} s; its worker was killed")

    def alive(self) -> bool:
        return not self.dead

    def close(self) -> None:
        from ray.exceptions import RayError

        self.dead = True
        try:
            self.ray.kill(self.actor, no_restart=True)
        except RayError:
            pass
