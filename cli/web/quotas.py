"""Limits per client address (the address after ``--trusted-proxy``, see :mod:`.proxy`): open
WebSockets, and games created in any minute. Past either, the page gets a coded error.

The clock is injected (``time.monotonic`` by default), so the tests step it by hand.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from orderchaos.cli.web.errors import WebError

WINDOW = 60.0
"""Seconds over which games created are counted."""
GAME_CREATING = frozenset({"new_game", "play_friend", "rematch", "challenge", "accept", "play_anyone"})
"""The page's messages that ask for a new game (the lobby's included: each may seat one)."""


@dataclass
class AddressLimits:
    """Counts per client address against ``connections`` open WebSockets and
    ``games_per_minute`` game requests in any :data:`WINDOW` seconds."""

    connections: int = 20
    games_per_minute: int = 20
    clock: Callable[[], float] = time.monotonic
    _open: dict[str, int] = field(default_factory=dict)
    _created: dict[str, deque[float]] = field(default_factory=dict)

    def connect(self, address: str) -> None:
        """Count one more WebSocket from ``address``; raises WebError past the limit (then
        nothing is counted)."""
        if self._open.get(address, 0) >= self.connections:
            raise WebError(f"too many connections from your address: at most {self.connections}",
                           "address_connections", limit=self.connections)
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
        now = self.clock()
        times = self._created.setdefault(address, deque())
        while times and times[0] <= now - WINDOW:
            times.popleft()
        if len(times) >= self.games_per_minute:
            wait = max(1, round(times[0] + WINDOW - now))
            raise WebError(f"too many new games from your address: at most {self.games_per_minute} a minute",
                           "address_games", limit=self.games_per_minute, seconds=wait)
        times.append(now)
        self._forget_idle(now)

    def _forget_idle(self, now: float) -> None:
        """Drop the addresses whose requests all left the window (bounded memory)."""
        if len(self._created) > 4 * max(1, len(self._open)) + 1000:
            for address in [a for a, t in self._created.items() if not t or t[-1] <= now - WINDOW]:
                del self._created[address]
