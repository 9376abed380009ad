"""The games being played now, for the start page and ``GET /api/games/live``.

A game is *in progress* while it is not over, both its seats are taken (a person or the
computer in each) and a tab of one of its players is open. Each instance knows which of
the games open in its tabs are in progress; :class:`LiveBoard` keeps that list, hands it to
the bus (:meth:`.bus.Bus.put_live`: in memory alone, in Redis with ``--bus``) and reads the
whole site's list back, each game once. The tabs that asked (a ``live`` message) are sent
the list, how many people wait to be paired and how many are playing whenever a game
starts, moves or ends, or someone starts or stops waiting, here or on another instance
(the bus event ``live``). Pushes are gathered: one per :data:`PUSH_SECONDS` at most.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from orderchaos.envs.rules import AGENTS
from orderchaos.web.errors import WebError

if TYPE_CHECKING:
    from orderchaos.web.games import Hub, LiveGame

log = logging.getLogger("orderchaos.web")
Send = Callable[[dict[str, Any]], Awaitable[None]]
PUSH_SECONDS = 0.25
"""Changes within this long of one another reach the tabs in one push."""
MAX_PUSHED = 20
"""Games a push to a tab names at most (the best first); the API lists them all."""


def seat_players(game: "LiveGame") -> dict[str, Any]:
    """Who sits in each seat of ``game``: ``order_name``/``chaos_name`` (the computer's level
    or spec, a person's display name, None while a person has none), ``order_rating``/
    ``chaos_rating`` (a person's rating in the game's category, None for the computer) and
    whether each seat is the computer (``order_agent``/``chaos_agent``)."""
    people = game.people.get("people") or {}
    players: dict[str, Any] = {}
    for role in AGENTS:
        agent = game.specs.get(role) is not None
        person = None if agent else people.get(role)
        players[f"{role}_name"] = game.labels.get(role) if agent else person and person["name"]
        players[f"{role}_rating"] = person and person["rating"]
        players[f"{role}_agent"] = agent
    return players


def live_item(game: "LiveGame") -> dict[str, Any] | None:
    """``game`` as an item of the live list, or None when it is not in progress here (over,
    a seat still free, or no player's tab open on this instance)."""
    if game.over or game.free_seat() is not None or not any(c.seat is not None for c in game.clients):
        return None
    return {
        "id": game.id,
        **seat_players(game),
        "time_control": game.clock.control.name if game.clock is not None else "none",
        "moves": len(game.actions),
        "to_play": game.state.to_play,
    }


def rank(item: dict[str, Any]) -> tuple[float, int]:
    """How an item ranks in the list: by the higher of its two ratings, then by its moves."""
    ratings = [r for r in (item.get("order_rating"), item.get("chaos_rating")) if r is not None]
    return (max(ratings) if ratings else float("-inf"), item["moves"])


def merged(lists: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The instances' lists as one, each game once (its item with the most moves: the
    freshest), best first (:func:`rank`; the highest-rated game in progress leads)."""
    games: dict[str, dict[str, Any]] = {}
    for items in lists:
        for item in items:
            known = games.get(item["id"])
            if known is None or item["moves"] > known["moves"]:
                games[item["id"]] = item
    return sorted(games.values(), key=lambda item: (rank(item), item["id"]), reverse=True)


def people_playing(items: list[dict[str, Any]]) -> int:
    """How many people sit in the games of ``items`` (a seat the computer plays is no one)."""
    return sum(not item[f"{role}_agent"] for item in items for role in AGENTS)


class LiveBoard:
    """One instance's part of the live list (see the module docstring)."""

    def __init__(self, hub: "Hub") -> None:
        self.hub = hub
        self.mine: dict[str, dict[str, Any]] = {}
        """This instance's games in progress, by id."""
        self.viewers: dict[str, Send] = {}
        """The tabs that follow the list, by tab id."""
        self._dirty = False
        self._publish = False
        self._pending = False
        self._flush: asyncio.Task | None = None

    def changed(self, game: "LiveGame | None" = None) -> None:
        """Something the list shows may have changed (``game``'s moves or seats, or who waits
        to be paired): the bus learns this instance's list and every follower is told, soon."""
        if game is not None:
            item = live_item(game)
            if item == self.mine.get(game.id):
                return  # a view sent again, a watcher came: nothing the list shows
            if item is None:
                del self.mine[game.id]
            else:
                self.mine[game.id] = item
            self._dirty = True
        self._schedule(publish=True)

    def bus_back(self) -> None:
        """The bus is back (Redis may have lost what it held): this instance's list is said again."""
        self._dirty = True
        self._schedule(publish=True)

    def elsewhere(self) -> None:
        """Another instance's list changed (its bus event ``live``): tell the followers here."""
        self._schedule(publish=False)

    def _schedule(self, publish: bool) -> None:
        self._publish = self._publish or publish
        self._pending = True
        if self._flush is not None and not self._flush.done():
            return  # the running push goes round once more
        try:
            self._flush = asyncio.get_running_loop().create_task(self._push_soon())
        except RuntimeError:  # no event loop: nobody follows
            self._flush = None

    async def _push_soon(self) -> None:
        while self._pending:
            await asyncio.sleep(PUSH_SECONDS)
            self._pending = False
            publish, self._publish = self._publish, False
            try:
                if self._dirty:
                    self._dirty = False
                    await self.hub.bus.put_live(list(self.mine.values()))
                if publish:
                    await self.hub.bus.publish({"kind": "live"})
                if self.viewers:
                    news = await self.news()
                    for send in list(self.viewers.values()):
                        await send(news)
            except WebError:  # the bus is reconnecting: its return pushes everything again
                self._dirty = True
            except Exception:  # noqa: BLE001 - a failed push must not stop the next one
                log.exception("error while pushing the live games")

    def close(self) -> None:
        """Stop pushing (the instance stops)."""
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None

    async def games(self) -> list[dict[str, Any]]:
        """Every game in progress on the site, best first."""
        return merged(await self.hub.bus.live_lists())

    async def news(self) -> dict[str, Any]:
        """The ``live`` message: the best games in progress, how many there are, how many
        people wait to be paired and how many play."""
        games = await self.games()
        return {"type": "live", "games": games[:MAX_PUSHED], "count": len(games),
                "seeking": await self.hub.bus.seeking_count(), "playing": people_playing(games)}

    async def follow(self, tab: str, send: Send) -> None:
        """The tab ``tab`` follows the list from now on; it is sent the list at once."""
        self.viewers[tab] = send
        await send(await self.news())

    def unfollow(self, tab: str) -> None:
        """The tab closed."""
        self.viewers.pop(tab, None)
