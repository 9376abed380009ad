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

The cyclic garbage collector stops the whole process, the event loop included, and a full
collection walks every object the process holds: in a server with thousands of open games it
was the largest pause a move could meet. :func:`settle_heap` (called once the server is up)
moves what was built at startup out of the collector's reach.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
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


def health_route(store: GameStore, bus_ready: Callable[[], bool] = lambda: True) -> Callable[[Request], Any]:
    """``/healthz``: 200 ``ok`` while the game store answers a query and the bus is ready
    (:attr:`.bus.Bus.ready`), 503 otherwise."""
    async def healthz(request: Request) -> Response:
        if not bus_ready():
            return PlainTextResponse("the bus (Redis) does not answer: reconnecting\n", status_code=503,
                                     headers={"Cache-Control": "no-store"})
        if store.answers():
            return PlainTextResponse("ok\n", headers={"Cache-Control": "no-store"})
        return PlainTextResponse("the game store does not answer\n", status_code=503,
                                 headers={"Cache-Control": "no-store"})
    return healthz


def metrics_route(metrics: Metrics) -> Callable[[Request], Any]:
    """``/metrics``: :meth:`Metrics.text`."""
    async def serve_metrics(request: Request) -> Response:
        return Response(metrics.text(), media_type=CONTENT_TYPE_LATEST, headers={"Cache-Control": "no-store"})
    return serve_metrics


class RequestLog:
    """ASGI middleware: one log line (``orderchaos.web``, INFO) per HTTP request, with the
    client's address, method, path, status and milliseconds until the answer started (written
    before the answer leaves); one per WebSocket when it opens."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            log.info("client=%s websocket %s", request_client(scope), scope.get("path", ""))
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        logged = False

        def log_line(status: int) -> None:
            nonlocal logged
            logged = True
            log.info("client=%s %s %s %d %.1f ms", request_client(scope), scope.get("method", ""),
                     scope.get("path", ""), status, 1000 * (time.perf_counter() - started))

        async def logging_first(message: dict) -> None:
            if message["type"] == "http.response.start":  # logged before the client can see it
                log_line(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, logging_first)
        finally:
            if not logged:
                log_line(500)
