"""The lobby: open challenges anyone may accept, and "play anyone" pairing by time control.

Both live in memory only: a challenge or a request to be paired belongs to one tab and goes
with it. The games they make are ordinary stored games (:mod:`.games`). Owners are whatever
hashable key the caller uses for a tab; addresses are client addresses (after the trusted
proxies), each holding at most :data:`MAX_OPEN_CHALLENGES` open challenges.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from orderchaos.web.errors import WebError

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


class Lobby:
    """The open challenges and the tabs waiting to be paired."""

    def __init__(self, limit: int = MAX_OPEN_CHALLENGES,
                 new_id: Callable[[], str] = lambda: secrets.token_urlsafe(12)) -> None:
        self.limit, self.new_id = limit, new_id
        self.challenges: dict[str, Challenge] = {}
        self.seekers: dict[Hashable, str] = {}  # in the order they asked

    def open(self, owner: Hashable, address: str, side: str, time_control: str) -> Challenge:
        """A new challenge; WebError ``lobby_limit`` when ``address`` already has the limit."""
        if sum(c.address == address for c in self.challenges.values()) >= self.limit:
            raise WebError(f"at most {self.limit} open challenges per address", "lobby_limit", limit=self.limit)
        challenge = Challenge(self.new_id(), owner, address, side, time_control)
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
        return [{"id": c.id, "side": c.side, "time_control": c.time_control, "mine": c.owner == viewer}
                for c in self.challenges.values()]

    def seek(self, owner: Hashable, time_control: str) -> Hashable | None:
        """``owner`` asks to play anyone at ``time_control``: the first other tab waiting for
        the same control (both leave the queue), or None (``owner`` waits, for this control only)."""
        self.seekers.pop(owner, None)
        for waiting, control in self.seekers.items():
            if control == time_control:
                del self.seekers[waiting]
                return waiting
        self.seekers[owner] = time_control
        return None

    def seeking_for(self, owner: Hashable) -> str | None:
        """The time control ``owner`` waits for, or None."""
        return self.seekers.get(owner)
