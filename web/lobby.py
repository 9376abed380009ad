"""The lobby: open challenges anyone may accept, and "play anyone" pairing by time control,
rated or casual, people of near rating first (:func:`best_match`, the window widening with the
wait: :func:`orderchaos.web.players.pairing_window`).

Both live in memory only: a challenge or a request to be paired belongs to one tab and goes
with it. The games they make are ordinary stored games (:mod:`.games`). Owners are whatever
hashable key the caller uses for a tab; addresses are client addresses (after the trusted
proxies), each holding at most :data:`MAX_OPEN_CHALLENGES` open challenges.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from orderchaos.web.errors import WebError
from orderchaos.web.players import pairing_window

MAX_OPEN_CHALLENGES = 3
"""Open challenges one client address may have at once."""


@dataclass(frozen=True)
class Challenge:
    """One open challenge: who made it (tab and address), the side they take, the clock."""

    id: str
    owner: Hashable
    address: str
    side: str
    time_control: str
    player: str | None = None
    """The creator's player id (never shown to others), None: not identified."""
    rated: bool = True


@dataclass(frozen=True)
class Seek:
    """One tab waiting to be paired: its time control, rated or casual, its player (id, None:
    not identified) and rating in the control's category, and since when it waits."""

    owner: Hashable
    time_control: str
    player: str | None = None
    rating: float = 1500.0
    rated: bool = True
    since: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the Redis lobby's record)."""
        return asdict(self)


def fits(one: Seek, two: Seek, now: float) -> bool:
    """Whether two seekers may be paired at ``now``: the same time control, both rated or both
    casual, two different players, and ratings within the window of the longer wait."""
    if one.owner == two.owner or one.time_control != two.time_control or one.rated != two.rated:
        return False
    if one.player is not None and one.player == two.player:
        return False
    waited = now - min(one.since, two.since)
    return abs(one.rating - two.rating) <= pairing_window(waited)


def best_match(seek: Seek, waiting: Sequence[Seek], now: float) -> Seek | None:
    """The waiting seeker ``seek`` is paired with: of those it :func:`fits`, the nearest in
    rating, the longest waiting among equals; None when none fits."""
    found = [(abs(w.rating - seek.rating), w.since, i) for i, w in enumerate(waiting) if fits(seek, w, now)]
    return waiting[min(found)[2]] if found else None


def pairs_among(waiting: Sequence[Seek], now: float) -> list[tuple[Seek, Seek]]:
    """The pairs the waiting seekers (oldest first) make at ``now``: each, oldest first, with
    its :func:`best_match` among those after it not yet paired."""
    left = list(waiting)
    pairs = []
    while left:
        first = left.pop(0)
        match = best_match(first, left, now)
        if match is not None:
            left.remove(match)
            pairs.append((first, match))
    return pairs


class Lobby:
    """The open challenges and the tabs waiting to be paired."""

    def __init__(self, limit: int = MAX_OPEN_CHALLENGES,
                 new_id: Callable[[], str] = lambda: secrets.token_urlsafe(12),
                 clock: Callable[[], float] = time.time) -> None:
        self.limit, self.new_id, self.clock = limit, new_id, clock
        self.challenges: dict[str, Challenge] = {}
        self.seekers: dict[Hashable, Seek] = {}  # in the order they asked

    def open(self, owner: Hashable, address: str, side: str, time_control: str, player: str | None = None,
             rated: bool = True) -> Challenge:
        """A new challenge; WebError ``lobby_limit`` when ``address`` already has the limit."""
        if sum(c.address == address for c in self.challenges.values()) >= self.limit:
            raise WebError(f"at most {self.limit} open challenges per address", "lobby_limit", limit=self.limit)
        challenge = Challenge(self.new_id(), owner, address, side, time_control, player, rated)
        self.challenges[challenge.id] = challenge
        return challenge

    def take(self, challenge_id: object, taker: Hashable) -> Challenge:
        """Remove and return the challenge ``taker`` accepts (not their own)."""
        challenge = self.challenges.get(challenge_id) if isinstance(challenge_id, str) else None
        if challenge is None:
            raise WebError("that challenge is gone", "no_challenge")
        if challenge.owner == taker:
            raise WebError("you cannot accept your own challenge", "own_challenge")
        return self.challenges.pop(challenge.id)

    def cancel(self, challenge_id: object, owner: Hashable) -> None:
        """Withdraw one of ``owner``'s challenges."""
        challenge = self.challenges.get(challenge_id) if isinstance(challenge_id, str) else None
        if challenge is None or challenge.owner != owner:
            raise WebError("that challenge is gone", "no_challenge")
        del self.challenges[challenge.id]

    def gone(self, owner: Hashable) -> int:
        """Drop everything of a tab that closed or went into a game; how many of its
        challenges went with it."""
        self.seekers.pop(owner, None)
        mine = [i for i, c in self.challenges.items() if c.owner == owner]
        for challenge_id in mine:
            del self.challenges[challenge_id]
        return len(mine)

    def listing(self, viewer: Hashable) -> list[dict[str, Any]]:
        """The open challenges as ``viewer`` sees them, oldest first."""
        return [listed(c, viewer) for c in self.challenges.values()]

    def seek(self, seek: Seek) -> Seek | None:
        """``seek.owner`` asks to play anyone: its :func:`best_match` among the tabs waiting
        (both leave the queue), or None (it waits, for this control only, from now)."""
        self.seekers.pop(seek.owner, None)
        seek = Seek(**{**seek.to_dict(), "since": self.clock()})
        match = best_match(seek, list(self.seekers.values()), self.clock())
        if match is not None:
            del self.seekers[match.owner]
            return match
        self.seekers[seek.owner] = seek
        return None

    def pair_waiting(self) -> list[tuple[Seek, Seek]]:
        """The pairs the waiting tabs make now that they have waited (:func:`pairs_among`);
        they leave the queue."""
        pairs = pairs_among(list(self.seekers.values()), self.clock())
        for one, two in pairs:
            del self.seekers[one.owner], self.seekers[two.owner]
        return pairs

    def seeking_for(self, owner: Hashable) -> str | None:
        """The time control ``owner`` waits for, or None."""
        seek = self.seekers.get(owner)
        return None if seek is None else seek.time_control


def listed(challenge: Challenge, viewer: Hashable) -> dict[str, Any]:
    """How ``viewer`` sees a challenge in the listing; the creator's player id is replaced by
    their name before the listing leaves the server (:func:`.people.lobby_names`)."""
    return {"id": challenge.id, "side": challenge.side, "time_control": challenge.time_control,
            "mine": challenge.owner == viewer, "rated": challenge.rated, "player": challenge.player}
