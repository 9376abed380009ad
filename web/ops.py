"""What an operator watches: ``/healthz``, ``/metrics`` (Prometheus text format) and a log line
per request with the client's address.

Each app has its own :class:`prometheus_client.CollectorRegistry`, so two apps in one process
(the tests) count apart. The metrics::

    orderchaos_connections               open WebSockets
    orderchaos_games_open                games some tab has open
    orderchaos_moves_total               moves people sent that were committed
    orderchaos_moves_refused_total{kind} moves refused, by error code (not_your_turn, occupied, ...)
    orderchaos_address_refused_total{kind} requests refused by a per-address limit, by error code
    orderchaos_agent_moves_queued        searches (agent moves, hints, analyses) waiting for a slot
    orderchaos_agent_moves_running       searches running
    orderchaos_move_round_trip_seconds   a person's move from its arrival until every tab was told
    orderchaos_agent_queue_wait_seconds  how long each search waited for a worker (with workers)
    orderchaos_workers_ready             workers warm and able to take a search
    orderchaos_store_statement_seconds   seconds spent in the game store's SQLite statements so far
    orderchaos_store_commit_seconds      seconds spent committing its transactions (moves, ends), apart
    orderchaos_gc_pause_seconds{generation}  how long each of Python's garbage collections stopped the
                                         process (while the app runs)
    orderchaos_lobby_refused_total       challenges refused by the lobby's limit of open challenges
                                         per address
    process_resident_memory_bytes, process_cpu_seconds_total, process_open_fds, ...
                                         the process's memory, CPU time and open files
                                         (prometheus_client's ProcessCollector, from /proc)
    orderchaos_ready                     1 while ``/healthz`` says the instance can take games, else 0
    orderchaos_store_write_failures_total  writes to the game store that failed (a full disk, a
                                         read-only file): ``/healthz``'s probe and the games' own

The cyclic garbage collector stops the whole process, the event loop included, and a full
collection walks every object the process holds: in a server with thousands of open games it
was the largest pause a move could meet. :func:`settle_heap` (called once the server is up)
moves what was built at startup out of the collector's reach.
"""

from __future__ import annotations

import errno
import gc
import logging
import sqlite3
import time
from collections.abc import Callable
from typing import Any

from asgi_correlation_id import correlation_id
from prometheus_client import (CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector,
                               generate_latest)
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from orderchaos.web.proxy import request_client
from orderchaos.web.store import GameStore

log = logging.getLogger("orderchaos.web")
ROUND_TRIP_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
QUEUE_WAIT_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
GC_PAUSE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25)


class Metrics:
    """The server's Prometheus metrics in a registry of their own (see the module docstring);
    the gauges that describe state read it when scraped."""

    def __init__(self, games_open: Callable[[], int], searches_queued: Callable[[], int],
                 searches_running: Callable[[], int], store: GameStore | None = None) -> None:
        self.registry = CollectorRegistry()
        self.connections = Gauge("orderchaos_connections", "open WebSockets", registry=self.registry)
        Gauge("orderchaos_games_open", "games some tab has open",
              registry=self.registry).set_function(games_open)
        self.moves = Counter("orderchaos_moves", "moves people sent that were committed", registry=self.registry)
        self.refused = Counter("orderchaos_moves_refused", "moves refused, by error code", ["kind"],
                               registry=self.registry)
        self.address_refused = Counter(
            "orderchaos_address_refused", "requests refused by a per-address limit, by error code", ["kind"],
            registry=self.registry)
        Gauge("orderchaos_agent_moves_queued", "searches (agent moves, hints, analyses) waiting for a slot",
              registry=self.registry).set_function(searches_queued)
        Gauge("orderchaos_agent_moves_running", "searches (agent moves, hints, analyses) running",
              registry=self.registry).set_function(searches_running)
        self.round_trip = Histogram(
            "orderchaos_move_round_trip_seconds", "a person's move from its arrival until every tab was told",
            buckets=ROUND_TRIP_BUCKETS, registry=self.registry)
        self.queue_wait = Histogram(
            "orderchaos_agent_queue_wait_seconds", "how long each search waited for a worker",
            buckets=QUEUE_WAIT_BUCKETS, registry=self.registry)
        if store is not None:
            Gauge("orderchaos_store_statement_seconds", "seconds spent in the game store's SQLite statements",
                  registry=self.registry).set_function(lambda: store.db.statement_seconds)
            Gauge("orderchaos_store_commit_seconds", "seconds spent committing the game store's transactions",
                  registry=self.registry).set_function(lambda: store.db.commit_seconds)
        self.gc_pause = Histogram(
            "orderchaos_gc_pause_seconds", "how long each garbage collection stopped the process",
            ["generation"], buckets=GC_PAUSE_BUCKETS, registry=self.registry)
        self._gc_started: float | None = None
        self.store_write_failures = Counter(
            "orderchaos_store_write_failures", "writes to the game store that failed (a full disk, a read-only file)",
            registry=self.registry)
        self.ready = Gauge("orderchaos_ready", "1 while /healthz says the instance can take games",
                           registry=self.registry)
        self.lobby_refused = Counter(
            "orderchaos_lobby_refused", "challenges refused by the lobby's limit of open challenges per address",
            registry=self.registry)
        ProcessCollector(registry=self.registry)

    def watch_gc(self) -> None:
        """Time every garbage collection from now on into ``orderchaos_gc_pause_seconds``."""
        if self._time_gc not in gc.callbacks:
            gc.callbacks.append(self._time_gc)

    def unwatch_gc(self) -> None:
        """Stop timing garbage collections (the app stops)."""
        if self._time_gc in gc.callbacks:
            gc.callbacks.remove(self._time_gc)

    def _time_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        elif self._gc_started is not None:
            self.gc_pause.labels(generation=str(info["generation"])).observe(time.perf_counter() - self._gc_started)
            self._gc_started = None

    def text(self) -> bytes:
        """The metrics in Prometheus text format."""
        return generate_latest(self.registry)


FULL_COLLECTION_EVERY = 100
"""Collections of the middle generation between two full ones (Python's default: 10). A full
collection walks every object of every open game and connection; made ten times rarer, it
stops a busy server ten times less often, while the young generations still free most
short-lived cycles at once."""


def settle_heap() -> None:
    """Collect the garbage left by startup, freeze every object the process holds then
    (modules, compiled tables, the app) into the collector's permanent generation, so that
    later full collections walk only what the games create, and make full collections rarer
    (:data:`FULL_COLLECTION_EVERY`)."""
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_EVERY)


def request_id() -> str:
    """The id of the HTTP request or WebSocket being handled (``X-Request-ID``: a proxy's, or
    one made up here by :class:`asgi_correlation_id.CorrelationIdMiddleware`); ``-`` outside
    one (the clock sweep)."""
    return correlation_id.get() or "-"


END_WORDS = {"five": "win", "full_board": "win", "resign": "resign", "time": "time", "aborted": "abort"}
"""How a game ended, by the store's reason, in the log's words."""


def log_game_end(game_id: str, winner: str | None, reason: str) -> None:
    """One log line for a game that ended: how (win, resign, time, abort, with the store's
    reason), the winner, and the request that ended it."""
    log.info("game=%s ended: %s (%s), winner %s request=%s", game_id, END_WORDS.get(reason, reason), reason,
             winner or "none", request_id())


def store_write_failed(exc: BaseException) -> bool:
    """Whether ``exc`` is a write the disk refused: full (SQLite's SQLITE_FULL, ENOSPC,
    EDQUOT) or read-only."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS)
    return isinstance(exc, sqlite3.OperationalError) and ("full" in str(exc) or "readonly" in str(exc))


WRITE_PROBE_EVERY_S = 1.0
"""How often at most ``/healthz`` writes to the store (a proxy may ask many times a second)."""


class Health:
    """What ``/healthz`` answers: ready (200) once the workers, if any, have all warmed up
    (and while at least one of them is warm), the store answers a query and takes a small
    write (:meth:`GameStore.probe_write`, at most every :data:`WRITE_PROBE_EVERY_S`); else
    503 with the reason, so that a proxy sends nobody to an instance that cannot serve them.
    ``workers`` gives (warm, started) counts; None: no workers (searches run in threads).
    ``bus_ready`` says whether the bus between instances answers (:attr:`.bus.Bus.ready`)."""

    def __init__(self, store: GameStore, metrics: Metrics, workers: Callable[[], tuple[int, int]] | None = None,
                 bus_ready: Callable[[], bool] = lambda: True) -> None:
        self.store, self.metrics, self.workers, self.bus_ready = store, metrics, workers, bus_ready
        self.warmed_up = workers is None
        self._probed_at = -WRITE_PROBE_EVERY_S
        self._write_error: str | None = None

    def problem(self) -> str | None:
        """Why the instance cannot take games now, or None when it can."""
        if not self.bus_ready():
            return "the bus (Redis) does not answer: reconnecting"
        if not self.store.answers():
            return "the game store does not answer"
        now = time.monotonic()
        if now - self._probed_at >= WRITE_PROBE_EVERY_S:
            self._probed_at = now
            try:
                self.store.probe_write()
                self._write_error = None
            except Exception as exc:  # noqa: BLE001 - whatever refused the write (SQLite, the disk, PostgreSQL)
                self.metrics.store_write_failures.inc()
                log.error("the game store cannot be written: %s", exc)
                self._write_error = f"the game store cannot be written ({exc})"
        if self._write_error is not None:
            return self._write_error
        if self.workers is not None:
            warm, count = self.workers()
            self.warmed_up = self.warmed_up or warm >= count
            if not self.warmed_up:
                return f"the workers are warming up ({warm} of {count} warm)"
            if warm == 0:
                return "no worker is warm (they are being replaced)"
        return None

    async def route(self, request: Request) -> Response:
        """``/healthz``."""
        problem = self.problem()
        self.metrics.ready.set(problem is None)
        if problem is None:
            return PlainTextResponse("ok\n", headers={"Cache-Control": "no-store"})
        return PlainTextResponse(problem + "\n", status_code=503, headers={"Cache-Control": "no-store"})


def metrics_route(metrics: Metrics) -> Callable[[Request], Any]:
    """``/metrics``: :meth:`Metrics.text`."""
    async def serve_metrics(request: Request) -> Response:
        return Response(metrics.text(), media_type=CONTENT_TYPE_LATEST, headers={"Cache-Control": "no-store"})
    return serve_metrics


class RequestLog:
    """ASGI middleware: one log line (``orderchaos.web``, INFO) per HTTP request, with the
    client's address, method, path, status, milliseconds until the answer started (written
    before the answer leaves) and the request id (:func:`request_id`); one per WebSocket when
    it opens."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            log.info("client=%s websocket %s request=%s", request_client(scope), scope.get("path", ""), request_id())
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        logged = False

        def log_line(status: int) -> None:
            nonlocal logged
            logged = True
            log.info("client=%s %s %s %d %.1f ms request=%s", request_client(scope), scope.get("method", ""),
                     scope.get("path", ""), status, 1000 * (time.perf_counter() - started), request_id())

        async def logging_first(message: dict) -> None:
            if message["type"] == "http.response.start":  # logged before the client can see it
                log_line(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, logging_first)
        finally:
            if not logged:
                log_line(500)
