"""The ASGI app of ``orderchaos serve``: the page, its static files, game downloads and one
WebSocket per tab.

Every message is checked by :func:`.protocol.decode` (size, nesting, integer digits, known
type and fields) and by the tab's rate limit before a
:class:`~orderchaos.web.sessions.Connection` sees it; whatever is wrong with one message
is answered with an ``error`` and the connection stays open. A WebSocket opened by a page
from another site (its ``Origin`` is not this server) is refused, so a web page in the same
browser cannot drive the server, and with ``allowed_hosts`` (what ``serve`` sets when it
binds loopback, or names a public URL) a request naming another host is refused, which stops
DNS rebinding. Behind a reverse proxy, ``public`` names the site's public origin and
``trusted_proxies`` the proxies whose forwarded headers give the client's address
(:mod:`.proxy`); :mod:`.quotas` limits each address, :mod:`.ops` serves ``/healthz`` and
``/metrics`` and logs each request. Every HTTP answer carries a Content-Security-Policy
(nothing from other sites, no inline script) and the usual hardening headers.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from asgi_correlation_id import CorrelationIdMiddleware
from prometheus_client import Gauge
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from orderchaos.agents.worker_pool import WorkerPool
from orderchaos.arena.game_files import game_line
from orderchaos.web import learn, puzzles
from orderchaos.web.bot_hub import BotHub, BotLimits
from orderchaos.web.bot_protocol import PATH as BOT_PATH
from orderchaos.web.bus import Bus
from orderchaos.web.errors import Busy, StoreAway, StoreFull, WebError
from orderchaos.web.games import Hub, valid_id
from orderchaos.web.learn import learn_routes
from orderchaos.web.player_page import player_routes
from orderchaos.web.proof_page import proof_page, render_not_found
from orderchaos.web.ops import Health, Metrics, RequestLog, metrics_route, request_id, store_write_failed
from orderchaos.web.protocol import RateLimit, decode
from orderchaos.web.proxy import ClientAddress, IPNetwork, PublicURL, origin_allowed, request_client
from orderchaos.web.puzzles import PuzzleRoom
from orderchaos.web.quotas import GAME_CREATING, AddressLimits, SearchRequests
from orderchaos.web.services import Limits, Services
from orderchaos.web.sessions import Connection
from orderchaos.web.store import GameStore, StoreUnavailable

STATIC_DIR = Path(__file__).parent / "static"
PROOF_DOC = Path(__file__).resolve().parents[1] / "docs" / "proof.md"
"""Where the proof's status page lies in a checkout of the repository."""
BOTS_DOC = PROOF_DOC.with_name("bots.md")
"""How to connect a bot (the ladder page links to it)."""
LANGUAGES = ("en", "sv", "nb", "de")
"""The page's languages; each has ``static/i18n/<code>.json``."""
SECURITY_HEADERS = [
    (b"content-security-policy",
     b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
     b"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"permissions-policy", b"camera=(), microphone=(), geolocation=()"),
]
log = logging.getLogger("orderchaos.web")
SEARCH_PATHS = (puzzles.MOVE_PATH, learn.MOVE_PATH)
"""The HTTP routes each of whose requests sets the solver to work: limited per client address."""
GAME_EVENTS = GAME_CREATING | {"open", "move", "undo", "leave"}
"""Messages after which a game event is logged (with the game and the client's address)."""


@dataclass
class Site:
    """What every connection of one app shares besides :class:`Services`: the game hub, the
    public URL, the metrics, the per-address limits, and the open tabs' ``send``."""

    services: Services
    hub: Hub
    metrics: Metrics
    quotas: AddressLimits | None = None
    """None: no limits per client address."""
    public: PublicURL | None = None
    tabs: set[Callable[[dict[str, Any]], Awaitable[None]]] = field(default_factory=set)

    async def tell_restarting(self, timeout: float = 2.0) -> None:
        """Tell every open tab that the server is restarting (each tab's send waits at most
        ``timeout`` seconds)."""
        notice = WebError("the server is restarting; the page reconnects when it is back", "restarting").payload()

        async def tell(send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
            try:
                await asyncio.wait_for(send(notice), timeout)
            except asyncio.TimeoutError:
                pass

        await asyncio.gather(*(tell(send) for send in list(self.tabs)))


class SecurityHeaders:
    """ASGI middleware adding :data:`SECURITY_HEADERS` to every HTTP response."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": list(message.get("headers", [])) + SECURITY_HEADERS}
            await send(message)

        await self.app(scope, receive, with_headers)


def build_info() -> dict[str, str]:
    """The package version and, in a git checkout, the short commit (else "")."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        ver = version("orderchaos")
    except PackageNotFoundError:
        ver = "unknown"
    commit = ""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).parent, capture_output=True,
            text=True, timeout=5,
        )
        if done.returncode == 0:
            commit = done.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return {"version": ver, "commit": commit}


def pick_language(header: str | None) -> str:
    """The first of :data:`LANGUAGES` an ``Accept-Language`` header names (by q order);
    ``no``/``nn`` read as ``nb``; English when none."""
    choices: list[tuple[float, int, str]] = []
    for i, part in enumerate((header or "").split(",")[:20]):
        tag, _, params = part.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                q = 0.0
        primary = tag.strip().lower().split("-")[0]
        primary = "nb" if primary in ("no", "nn") else primary
        if primary in LANGUAGES and q > 0:
            choices.append((-q, i, primary))
    return min(choices)[2] if choices else "en"


def reader_language(request: Request) -> str:
    """The language of the reader's browser among the page's (:func:`pick_language`)."""
    return pick_language(request.headers.get("accept-language"))


async def not_found(request: Request, exc: Exception) -> Response:
    """Any address with nothing at it: a short page in the reader's language."""
    return HTMLResponse(render_not_found(reader_language(request)), status_code=404)


def create_app(
    games_dir: str | Path | None = None,
    limits: Limits | None = None,
    *,
    warm_up: bool = False,
    allowed_hosts: list[str] | None = None,
    db: str | Path | GameStore = ":memory:",
    public: PublicURL | None = None,
    trusted_proxies: Sequence[IPNetwork] = (),
    quotas: AddressLimits | None = None,
    workers: WorkerPool | None = None,
    bus: Bus | None = None,
    house_bots: bool = False,
    bot_limits: BotLimits | None = None,
) -> Starlette:
    """The web app; ``games_dir`` is the only folder whose files can be opened by name and
    ``db`` the game store (a path, ``":memory:"``, a ``sqlite:///`` or ``postgresql://`` URL, or an
    open :class:`GameStore`).

    ``warm_up`` loads the solver's compiled kernels in the background at startup, so the
    first hint does not wait for them. ``allowed_hosts`` (None: any) lists the host names
    that requests may be addressed to. ``public`` is the address people use (the origin
    WebSockets may come from, and the base of the links the page shows); the client's address
    is read from forwarded headers only when the peer is in ``trusted_proxies``; ``quotas``
    limits each client address (None: no such limits), its refusals counted in the app's
    metrics. ``workers`` run the agents' moves, hints and analyses (None: threads of this
    process); the app closes them when it stops, and with ``warm_up`` starts them at once.
    ``bus`` joins this app to the other instances of the site (:mod:`.bus`; None: alone).
    Bots connect at ``/api/bot/ws`` (:mod:`.bot_hub`), each token within ``bot_limits``;
    ``house_bots`` seats the shipped players on the bots' ladder, played by ``workers``.
    """
    store = db if isinstance(db, GameStore) else GameStore(db)
    services = Services(limits or Limits(), Path(games_dir) if games_dir is not None else None, store)
    services.public_url = public.origin if public is not None else None
    services.workers = workers
    hub = Hub(services, bus)
    bot_hub = BotHub(hub, bot_limits, house=house_bots)
    metrics = Metrics(lambda: len(hub.games), lambda: services.queued, lambda: services.running, store)
    services.observe_wait = metrics.queue_wait.observe
    Gauge("orderchaos_workers_ready", "workers warm and able to take a search (0 without workers)",
          registry=metrics.registry).set_function(lambda: workers.ready if workers is not None else 0)
    if quotas is not None:
        quotas.refused = lambda code: metrics.address_refused.labels(kind=code).inc()
    site = Site(services, hub, metrics, quotas, public)
    health = Health(store, metrics, (lambda: (workers.ready, workers.workers)) if workers is not None else None,
                    bus_ready=lambda: hub.bus.ready)
    info = build_info()
    template = (STATIC_DIR / "index.html").read_text()
    counter = {"open": 0}

    async def index(request: Request) -> Response:
        language = pick_language(request.headers.get("accept-language"))
        page = (template.replace("{{lang}}", language).replace("{{version}}", info["version"])
                .replace("{{commit}}", info["commit"] or "-"))
        return HTMLResponse(page, headers={"Cache-Control": "no-store"})

    async def download(request: Request) -> Response:
        game_id = request.path_params["game"]
        stored = store.load(game_id) if valid_id(game_id) else None
        if stored is None or stored.winner is None:
            return PlainTextResponse("no finished game with this id\n", status_code=404)
        game = stored.saved()
        text = game_line(game.record, game.order, game.chaos, 0)
        return Response(text + "\n", media_type="application/x-ndjson", headers={
            "Content-Disposition": f'attachment; filename="orderchaos-{game_id[:8]}.jsonl"',
            "Cache-Control": "no-store"})

    async def live_games(request: Request) -> Response:
        try:
            games = await hub.live.games()
        except WebError as exc:  # the bus is reconnecting
            return JSONResponse(exc.payload(), status_code=503, headers={"Cache-Control": "no-store"})
        return JSONResponse(games, headers={"Cache-Control": "no-store"})

    def doc(path: Path) -> Callable[[Request], Awaitable[Response]]:
        async def text(request: Request) -> Response:
            if not path.is_file():  # an installed package has no docs folder
                return PlainTextResponse(f"docs/{path.name} is in the orderchaos repository\n", status_code=404)
            return PlainTextResponse(path.read_text(), headers={"Cache-Control": "no-store"})

        return text

    async def refuse(websocket: WebSocket, error: WebError) -> None:
        if same_origin(websocket, public):
            await websocket.accept()
            await websocket.send_text(json.dumps(error.payload()))
        await websocket.close(code=1013)

    async def socket(websocket: WebSocket) -> None:
        address = request_client(websocket.scope)
        if counter["open"] >= services.limits.max_connections:
            await refuse(websocket, Busy("too many connections"))
            return
        try:
            if site.quotas is not None:
                await site.quotas.check("connection", address)
        except WebError as exc:
            log.info("client=%s refused: %s", address, exc)
            await refuse(websocket, exc)
            return
        counter["open"] += 1
        metrics.connections.inc()
        try:
            await serve_socket(websocket, site)
        finally:
            counter["open"] -= 1
            metrics.connections.dec()
            if site.quotas is not None:
                await site.quotas.release(address)

    @asynccontextmanager
    async def lifespan(app: Starlette):  # noqa: ANN202 - Starlette's lifespan protocol
        if warm_up:
            threading.Thread(target=services.warm_up, name="orderchaos-web: warm-up", daemon=True).start()
        await hub.bus.start(hub.on_event, hub.bus_lost, hub.bus_back)
        if not await hub.bus.others_alive():
            store.resume_clocks()  # the time the site was down is not charged to anyone
        hub.start_sweeper()  # games run out of time with no tab open too
        bot_hub.start()
        metrics.watch_gc()
        yield
        metrics.unwatch_gc()
        bot_hub.stop()
        if hub.sweeper is not None:
            hub.sweeper.cancel()
        hub.live.close()
        for game in list(hub.games.values()):
            game.stop()
        await hub.bus.close()
        services.close()

    # outermost: every log line of a request or WebSocket carries its id
    middleware = [Middleware(CorrelationIdMiddleware), Middleware(ClientAddress, trusted=trusted_proxies),
                  Middleware(RequestLog), Middleware(SecurityHeaders)]
    if allowed_hosts:
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts))
    if quotas is not None:  # innermost: after the client's address is known and the host accepted
        middleware.append(Middleware(SearchRequests, quotas=quotas, paths=SEARCH_PATHS))
    app = Starlette(
        routes=[
            Route("/", index),
            Route("/healthz", health.route),
            Route("/metrics", metrics_route(metrics)),
            Route("/g/{game}", index),
            Route("/games/{game}.jsonl", download),
            Route("/api/games/live", live_games),
            Route("/docs/proof.md", doc(PROOF_DOC)),
            Route("/docs/bots.md", doc(BOTS_DOC)),
            Route("/api/bots", bot_hub.api_bots),
            Route("/bots", bot_hub.ladder_page(reader_language)),
            WebSocketRoute(BOT_PATH, bot_hub.socket),
            *learn_routes(services),
            *PuzzleRoom(services).routes(),
            Route("/proof/{lang}", proof_page(reader_language)),
            *player_routes(store, reader_language),
            WebSocketRoute("/ws", socket),
            Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
        ],
        lifespan=lifespan,
        middleware=middleware,
        exception_handlers={404: not_found},
    )
    app.state.services = services
    app.state.hub = hub
    app.state.site = site
    app.state.bots = bot_hub
    return app


def same_origin(websocket: WebSocket, public: PublicURL | None = None) -> bool:
    """Whether the socket's page may talk to this server (:func:`.proxy.origin_allowed`)."""
    return origin_allowed(websocket.headers.get("origin"), websocket.headers.get("host", ""), public)


async def serve_socket(websocket: WebSocket, site: Site) -> None:
    """Run one tab's connection until it closes."""
    services, hub, metrics = site.services, site.hub, site.metrics
    address = request_client(websocket.scope)
    if not same_origin(websocket, site.public):
        await websocket.close(code=1008, reason="cross-site WebSocket refused")
        return
    await websocket.accept()
    lock = asyncio.Lock()
    limits = services.limits
    rate = RateLimit(limits.rate, limits.burst)

    async def send(message: dict[str, Any]) -> None:
        if websocket.application_state != WebSocketState.CONNECTED:
            return
        async with lock:
            try:
                await websocket.send_text(json.dumps(message))
            except (WebSocketDisconnect, RuntimeError, OSError):
                pass  # the tab went away while a reply was on its way

    connection = Connection(services, hub, send, address)
    site.tabs.add(send)
    await connection.hello()
    try:
        while True:
            received = await websocket.receive()
            if received["type"] == "websocket.disconnect":
                break
            kind = None
            try:
                if not rate.allow():
                    raise WebError(f"too many messages: at most {limits.rate:g} a second", "rate",
                                   rate=limits.rate)
                msg = decode(received.get("text"), limits.max_message_bytes, limits.max_upload_bytes)
                kind = msg["type"]
                if kind in GAME_CREATING and site.quotas is not None:
                    await site.quotas.check("game", address)
                started = time.perf_counter()
                await connection.handle(msg)
                if kind == "move":
                    metrics.moves.inc()
                    metrics.round_trip.observe(time.perf_counter() - started)
                if kind in GAME_EVENTS:
                    game = connection.play.game
                    log.info("client=%s game=%s %s request=%s", address, game.id if game is not None else "-", kind,
                             request_id())
            except WebError as exc:
                if kind == "move":
                    metrics.refused.labels(kind=exc.code).inc()
                if exc.code == "lobby_limit":
                    metrics.lobby_refused.inc()
                if kind in GAME_CREATING:
                    log.info("client=%s %s refused: %s", address, kind, exc.code)
                await send(exc.payload())
            except Exception as exc:  # a bug must not end the tab's connection or show its text
                if isinstance(exc, StoreUnavailable):
                    log.warning("the game store does not answer: %s", exc)
                    await send(StoreAway().payload())
                elif isinstance(exc, sqlite3.OperationalError) and "is locked" in str(exc):
                    log.warning("the game store is locked by another program: %s", exc)
                    await send(WebError("the game store is in use by another program; try again in a "
                                        "moment", "store_busy").payload())
                else:
                    if store_write_failed(exc):
                        metrics.store_write_failures.inc()
                        log.error("the game store refused a write: %s", exc)
                        await send(StoreFull().payload())
                    else:
                        log.exception("error while handling a message")
                        await send(WebError("the server could not handle that message", "internal").payload())
    except WebSocketDisconnect:
        pass
    finally:
        site.tabs.discard(send)
        connection.close()
