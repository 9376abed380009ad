"""Limits per client address (the address after ``--trusted-proxy``, see :mod:`.proxy`): open
WebSockets, games created in any minute, and HTTP requests that set the solver to work (a
puzzle move judged, a lesson turn) in any minute. Past a limit, the page gets a coded error;
:class:`SearchRequests` answers the HTTP routes past theirs with 429 and ``Retry-After``.

The clock is injected (``time.monotonic`` by default), so the tests step it by hand.
:class:`AddressLimits` counts in this process's memory; :class:`SharedAddressLimits` counts
in Redis for every instance of the site (``serve --bus``): the per-minute windows with the
``limits`` library's moving window, the open WebSockets in one hash per instance that goes
with the instance when it stops renewing its ``alive`` key.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.responses import JSONResponse

from orderchaos.web.errors import WebError
from orderchaos.web.proxy import request_client

if TYPE_CHECKING:
    from orderchaos.web.bus import RedisBus

WINDOW = 60.0
"""Seconds over which games created and search requests are counted."""
GAME_CREATING = frozenset({"new_game", "play_friend", "rematch", "challenge", "accept", "play_anyone"})
"""The page's messages that ask for a new game (the lobby's included: each may seat one)."""


@dataclass
class AddressLimits:
    """Counts per client address against ``connections`` open WebSockets,
    ``games_per_minute`` game requests and ``searches_per_minute`` search requests (HTTP) in
    any :data:`WINDOW` seconds. ``refused`` is told the code of each refusal (the metrics)."""

    connections: int = 20
    games_per_minute: int = 20
    searches_per_minute: int = 30
    clock: Callable[[], float] = time.monotonic
    refused: Callable[[str], None] | None = None
    _open: dict[str, int] = field(default_factory=dict)
    _created: dict[str, deque[float]] = field(default_factory=dict)
    _searches: dict[str, deque[float]] = field(default_factory=dict)

    async def check(self, kind: str, address: str) -> None:
        """Count one ``kind`` (connection, game, search) from ``address``: :meth:`connect`,
        :meth:`create_game` or :meth:`start_search`."""
        {"connection": self.connect, "game": self.create_game, "search": self.start_search}[kind](address)

    async def release(self, address: str) -> None:
        """:meth:`disconnect`."""
        self.disconnect(address)

    def connections_refusal(self) -> WebError:
        """The refusal of one WebSocket too many, counted."""
        return self._refusal(WebError(f"too many connections from your address: at most {self.connections}",
                                      "address_connections", limit=self.connections))

    def games_refusal(self, wait: int) -> WebError:
        """The refusal of one game request too many (``wait``: seconds until one fits), counted."""
        return self._refusal(WebError(f"too many new games from your address: at most {self.games_per_minute} "
                                      "a minute", "address_games", limit=self.games_per_minute, seconds=wait))

    def searches_refusal(self, wait: int) -> WebError:
        """The refusal of one search request too many (``wait``: seconds until one fits), counted."""
        return self._refusal(WebError(f"too many puzzle and lesson moves from your address: at most "
                                      f"{self.searches_per_minute} a minute", "address_searches",
                                      limit=self.searches_per_minute, seconds=wait))

    def _refusal(self, error: WebError) -> WebError:
        """``error``, a refusal, counted."""
        if self.refused is not None:
            self.refused(error.code)
        return error

    def connect(self, address: str) -> None:
        """Count one more WebSocket from ``address``; raises WebError past the limit (then
        nothing is counted)."""
        if self._open.get(address, 0) >= self.connections:
            raise self.connections_refusal()
        self._open[address] = self._open.get(address, 0) + 1

    def disconnect(self, address: str) -> None:
        """One WebSocket from ``address`` closed."""
        left = self._open.get(address, 0) - 1
        if left > 0:
            self._open[address] = left
        else:
            self._open.pop(address, None)

    def open_connections(self, address: str) -> int:
        """WebSockets open from ``address``."""
        return self._open.get(address, 0)

    def create_game(self, address: str) -> None:
        """Count a request for a new game from ``address``; raises WebError when it already made
        ``games_per_minute`` in the last :data:`WINDOW` seconds (then nothing is counted)."""
        wait = self._count(self._created, address, self.games_per_minute)
        if wait is not None:
            raise self.games_refusal(wait)

    def start_search(self, address: str) -> None:
        """Count an HTTP request from ``address`` that sets the solver to work; raises WebError
        when it already made ``searches_per_minute`` in the last :data:`WINDOW` seconds (then
        nothing is counted)."""
        wait = self._count(self._searches, address, self.searches_per_minute)
        if wait is not None:
            raise self.searches_refusal(wait)

    def _count(self, requests: dict[str, deque[float]], address: str, limit: int) -> int | None:
        """Count one request from ``address`` in ``requests`` unless it already made ``limit``
        in the last :data:`WINDOW` seconds; then nothing is counted and the answer is the whole
        seconds until one more fits."""
        now = self.clock()
        times = requests.setdefault(address, deque())
        while times and times[0] <= now - WINDOW:
            times.popleft()
        if len(times) >= limit:
            return max(1, math.ceil(times[0] + WINDOW - now))
        times.append(now)
        self._forget_idle(requests, now)
        return None

    def _forget_idle(self, requests: dict[str, deque[float]], now: float) -> None:
        """Drop the addresses whose requests all left the window (bounded memory)."""
        if len(requests) > 4 * max(1, len(self._open)) + 1000:
            for address in [a for a, t in requests.items() if not t or t[-1] <= now - WINDOW]:
                del requests[address]


class SearchRequests:
    """ASGI middleware: each HTTP request to one of ``paths`` counts against
    :meth:`AddressLimits.start_search` for its client address (after
    :class:`~orderchaos.web.proxy.ClientAddress`); past the limit it is answered 429 with
    ``{"error", "code", "args"}`` and ``Retry-After``, and never reaches its route."""

    def __init__(self, app: Any, quotas: AddressLimits, paths: Iterable[str]) -> None:
        self.app = app
        self.quotas = quotas
        self.paths = frozenset(paths)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("path") in self.paths:
            try:
                await self.quotas.check("search", request_client(scope))
            except WebError as exc:
                refusal = JSONResponse({"error": str(exc), "code": exc.code, "args": exc.args_}, status_code=429,
                                       headers={"Retry-After": str(exc.args_["seconds"]), "Cache-Control": "no-store"})
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


_CONNECT = """
local total = 0
for _, instance in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if redis.call('EXISTS', ARGV[4] .. instance) == 0 then
    redis.call('SREM', KEYS[1], instance)
    redis.call('DEL', ARGV[5] .. instance)
  else
    total = total + tonumber(redis.call('HGET', ARGV[5] .. instance, ARGV[2]) or '0')
  end
end
if total >= tonumber(ARGV[3]) then return -1 end
redis.call('SADD', KEYS[1], ARGV[1])
return redis.call('HINCRBY', ARGV[5] .. ARGV[1], ARGV[2], 1)
"""
_DISCONNECT = """
if redis.call('HINCRBY', KEYS[1], ARGV[1], -1) <= 0 then redis.call('HDEL', KEYS[1], ARGV[1]) end
return 0
"""


class SharedAddressLimits(AddressLimits):
    """:class:`AddressLimits` counted in Redis by every instance joined by ``bus`` (see the
    module docstring); while Redis is unreachable, what needs a count is refused with the code
    ``reconnecting``. The window's clock is the wall clock (Redis's ``limits`` storage)."""

    def __init__(self, bus: RedisBus, connections: int = 20, games_per_minute: int = 20,
                 searches_per_minute: int = 30) -> None:
        from limits import RateLimitItemPerMinute
        from limits.aio.storage import RedisStorage
        from limits.aio.strategies import MovingWindowRateLimiter

        super().__init__(connections, games_per_minute, searches_per_minute)
        self.bus = bus
        self.storage = RedisStorage(f"async+{bus.url}", implementation="redispy", wrap_exceptions=True,
                                    key_prefix="orderchaos:limits", socket_timeout=5, socket_connect_timeout=2)
        self.window = MovingWindowRateLimiter(self.storage)
        self.items = {"game": RateLimitItemPerMinute(games_per_minute),
                      "search": RateLimitItemPerMinute(searches_per_minute)}
        self.counts_key = "orderchaos:connections"
        self._connect = bus.redis.register_script(_CONNECT)
        self._disconnect = bus.redis.register_script(_DISCONNECT)

    async def check(self, kind: str, address: str) -> None:  # noqa: D102
        from limits.errors import StorageError

        from orderchaos.web.bus import reconnecting

        if not self.bus.ready:
            raise reconnecting()
        try:
            if kind == "connection":
                if await self._connect(keys=[self.counts_key], args=[
                        self.bus.instance, address, self.connections, "orderchaos:alive:",
                        "orderchaos:connections:"]) < 0:
                    raise self.connections_refusal()
                return
            item = self.items[kind]
            if await self.window.hit(item, kind, address):
                return
            stats = await self.window.get_window_stats(item, kind, address)
        except (StorageError, OSError, ConnectionError) as exc:
            raise reconnecting() from exc
        except Exception as exc:
            import redis

            if isinstance(exc, redis.RedisError):
                raise reconnecting() from exc
            raise
        wait = max(1, math.ceil(stats.reset_time - time.time()))
        raise self.games_refusal(wait) if kind == "game" else self.searches_refusal(wait)

    async def release(self, address: str) -> None:  # noqa: D102
        try:
            await self._disconnect(keys=[f"orderchaos:connections:{self.bus.instance}"], args=[address])
        except Exception:  # noqa: BLE001 - Redis went away: this instance's count goes with it
            pass
