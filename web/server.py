"""Running the app under uvicorn with a graceful shutdown.

On SIGTERM (what systemd and container runtimes send) the server stops accepting connections,
tells every open tab that it is restarting (the page says so in the reader's language and
reconnects with backoff), closes the WebSockets, stops the games' agents and returns, so the
caller can close the store and exit 0, all well within 10 seconds. A second SIGINT (Ctrl-C)
still stops at once.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import logging
import signal
import socket
from types import FrameType

import uvicorn
from starlette.applications import Starlette

from orderchaos.web.ops import settle_heap

log = logging.getLogger("orderchaos.web")
GRACE_SECONDS = 5
"""Seconds the open connections get to close after the tabs were told."""


class DrainingServer(uvicorn.Server):
    """A uvicorn server whose SIGTERM drains (see the module docstring)."""

    def __init__(self, config: uvicorn.Config, app: Starlette) -> None:
        super().__init__(config)
        self.site = app.state.site
        self.loop: asyncio.AbstractEventLoop | None = None
        self.draining = False

    async def startup(self, sockets: list | None = None) -> None:  # noqa: D102 - uvicorn's hook
        self.loop = asyncio.get_running_loop()
        # only in a real server (a test process would keep its garbage forever), and before it
        # listens: the full collection stops the process for a third of a second on a busy machine
        settle_heap()
        await super().startup(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """SIGTERM: drain (and do not re-raise it after, so the process exits 0); other
        signals as uvicorn handles them."""
        if sig != signal.SIGTERM or self.loop is None:
            super().handle_exit(sig, frame)
            return
        if not self.draining:
            self.draining = True
            self.loop.call_soon_threadsafe(lambda: self.loop.create_task(self.drain()))

    async def drain(self) -> None:
        """Stop accepting, tell the tabs, then let uvicorn close the connections and the app."""
        log.info("SIGTERM: stopping; telling %d open tabs the server is restarting", len(self.site.tabs))
        for server in self.servers:
            server.close()
        try:
            await self.site.tell_restarting()
        finally:
            self.should_exit = True


def serve(app: Starlette, host: str, port: int) -> None:
    """Serve ``app`` on ``host:port`` until SIGTERM or Ctrl-C. uvicorn's own reading of
    forwarded headers is off: :class:`.proxy.ClientAddress` reads them, from trusted proxies
    only."""
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", proxy_headers=False,
                            server_header=False, timeout_graceful_shutdown=GRACE_SECONDS)
    DrainingServer(config, app).run()


def check_listen(host: str, port: int) -> None:
    """Raise ValueError, one line, unless ``host:port`` can be listened on now: ``host`` is
    an address (or a name) of this machine and no other program listens on the port. Bound
    and closed again here, as uvicorn would bind it, so that a server that cannot start says
    so before it announces its address."""
    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if host.replace(".", "").isdigit():  # looks like an IPv4 address but is none: no DNS lookup
            raise ValueError(f"--host {host}: not an IP address (four numbers 0-255, such as 127.0.0.1)") from None
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ValueError(f"--host {host}: not an address of this machine ({exc.strerror})") from None
    for family, kind, proto, _, address in found:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
            try:
                probe.bind(address)
            except OSError as exc:
                raise ValueError(f"cannot listen on {shown}: {exc.strerror}"
                                 + ("; is another server running there? (--port chooses another)"
                                    if exc.errno == errno.EADDRINUSE else "")) from None
