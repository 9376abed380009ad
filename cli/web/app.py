"""The ASGI app of ``orderchaos serve``: the page, its static files and one WebSocket per tab.

Every message is size-checked and decoded here, then handed to a
:class:`~orderchaos.cli.web.sessions.Connection`; whatever goes wrong with one message is
answered with an ``error`` message and the connection stays open. A WebSocket opened by a
page from another site (its ``Origin`` is not this server) is refused, so a web page in the
same browser cannot drive the local server, and with ``allowed_hosts`` (what ``serve`` sets
when it binds loopback) a request naming another host is refused, which stops DNS rebinding.
"""

from __future__ import annotations

import asyncio
import json
import threading
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from orderchaos.cli.web.sessions import Connection, Limits, Services, WebError

STATIC_DIR = Path(__file__).parent / "static"
UPLOAD_OVERHEAD_BYTES = 64 * 1024
"""Room for the JSON around an upload and the escaping of its text."""


def create_app(
    games_dir: str | Path | None = None,
    limits: Limits | None = None,
    *,
    warm_up: bool = False,
    allowed_hosts: list[str] | None = None,
) -> Starlette:
    """The web app; ``games_dir`` is the only folder whose files can be opened by name.

    ``warm_up`` loads the solver's compiled kernels in the background at startup, so the
    first hint does not wait for them. ``allowed_hosts`` (None: any) lists the host names
    that requests may be addressed to.
    """
    services = Services(limits or Limits(), Path(games_dir) if games_dir is not None else None)

    async def index(request: Request) -> Response:
        return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-store"})

    async def socket(websocket: WebSocket) -> None:
        await serve_socket(websocket, services)

    @asynccontextmanager
    async def lifespan(app: Starlette):  # noqa: ANN202 - Starlette's lifespan protocol
        if warm_up:
            threading.Thread(target=services.warm_up, name="orderchaos-web: warm-up", daemon=True).start()
        yield

    app = Starlette(
        routes=[
            Route("/", index),
            WebSocketRoute("/ws", socket),
            Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
        ],
        lifespan=lifespan,
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts)] if allowed_hosts else None,
    )
    app.state.services = services
    return app


def same_origin(websocket: WebSocket) -> bool:
    """True when the socket has no ``Origin`` (not a browser page) or one naming this host."""
    origin = websocket.headers.get("origin")
    if origin is None:
        return True
    return urlsplit(origin).netloc.lower() == websocket.headers.get("host", "").lower()


async def serve_socket(websocket: WebSocket, services: Services) -> None:
    """Run one tab's connection until it closes."""
    if not same_origin(websocket):
        await websocket.close(code=1008, reason="cross-site WebSocket refused")
        return
    await websocket.accept()
    lock = asyncio.Lock()

    async def send(message: dict[str, Any]) -> None:
        if websocket.application_state != WebSocketState.CONNECTED:
            return
        async with lock:
            try:
                await websocket.send_text(json.dumps(message))
            except (WebSocketDisconnect, RuntimeError):
                pass  # the tab went away while a reply was on its way

    connection = Connection(services, send)
    await connection.hello()
    try:
        while True:
            received = await websocket.receive()
            if received["type"] == "websocket.disconnect":
                break
            try:
                await connection.handle(decode(received, services.limits))
            except WebError as exc:
                await send({"type": "error", "message": str(exc)})
    except WebSocketDisconnect:
        pass
    finally:
        connection.close()


def decode(received: dict[str, Any], limits: Limits) -> object:
    """The JSON value of one WebSocket message; raises WebError for a binary, oversized or
    malformed one (an upload may be larger than other messages)."""
    text = received.get("text")
    if text is None:
        raise WebError("binary messages are not accepted: send JSON text")
    size = len(text.encode())
    if size > 2 * limits.max_upload_bytes + UPLOAD_OVERHEAD_BYTES:
        raise WebError(f"message too large ({size} bytes); uploads are limited to {limits.max_upload_bytes} bytes")
    try:
        msg = json.loads(text)
    except json.JSONDecodeError as exc:
        raise WebError(f"malformed message: not JSON ({exc.msg} at column {exc.colno})") from None
    if size > limits.max_message_bytes and not (isinstance(msg, dict) and msg.get("type") == "upload"):
        raise WebError(f"message too large ({size} bytes); the limit is {limits.max_message_bytes} bytes")
    return msg
