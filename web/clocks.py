"""Chess-style clocks for games on the page: minutes per side plus a Fischer increment.

Plain arithmetic on times passed in (no reading of the wall clock here), so that the
server, the store and the tests share one definition: the side to move is charged from
``turn_started`` on; a committed move stops its clock, adds the increment and starts the
other side's clock.
"""

from __future__ import annotations

from dataclasses import dataclass

from orderchaos.envs.rules import AGENTS


@dataclass(frozen=True)
class TimeControl:
    """Seconds per side at the start and seconds added after each own move."""

    base: float
    increment: float

    @property
    def name(self) -> str:
        """How people write it: minutes + increment seconds, e.g. ``"3+2"``."""
        minutes = self.base / 60
        shown = f"{minutes:g}" if minutes >= 1 else f"{self.base:g}s"
        return f"{shown}+{self.increment:g}"


PRESETS: dict[str, TimeControl] = {
    "1+0": TimeControl(60.0, 0.0),
    "3+2": TimeControl(180.0, 2.0),
    "5+3": TimeControl(300.0, 3.0),
    "10+5": TimeControl(600.0, 5.0),
}
"""The time controls the page offers; ``None`` (no key) is a game without a clock."""
NO_CLOCK = "none"
"""The protocol's name for a game without a clock."""


def parse_time_control(name: str, extra: dict[str, TimeControl] | None = None) -> TimeControl | None:
    """The time control named ``name`` (a key of :data:`PRESETS` or ``extra``), None for
    :data:`NO_CLOCK`; raises ValueError naming the accepted names otherwise."""
    known = {**PRESETS, **(extra or {})}
    if name == NO_CLOCK:
        return None
    if name not in known:
        raise ValueError(f"unknown time control {name!r}; known: {', '.join([NO_CLOCK, *known])}")
    return known[name]


@dataclass
class GameClock:
    """Both sides' remaining seconds as of ``turn_started`` (None: no clock is running)."""

    control: TimeControl
    remaining: dict[str, float]
    turn_started: float | None = None

    @classmethod
    def fresh(cls, control: TimeControl) -> GameClock:
        """Full time on both sides, not running yet (it starts with the first move)."""
        return cls(control, {role: control.base for role in AGENTS})

    def left(self, role: str, to_move: str, now: float) -> float:
        """Seconds ``role`` has at ``now`` (never below zero) when ``to_move`` is on move."""
        left = self.remaining[role]
        if role == to_move and self.turn_started is not None:
            left -= now - self.turn_started
        return max(0.0, left)

    def after_move(self, mover: str, now: float) -> None:
        """Charge ``mover`` up to ``now``, add the increment, start the other side's clock.

        The first move of a game is not charged: Order's clock starts with the game's
        first move being committed, as the other side's does after every move."""
        if self.turn_started is not None:
            self.remaining[mover] = self.left(mover, mover, now) + self.control.increment
        self.turn_started = now

    def flag_at(self, to_move: str) -> float | None:
        """When ``to_move`` runs out if no move comes (None: the clock is not running)."""
        if self.turn_started is None:
            return None
        return self.turn_started + self.remaining[to_move]

    def flagged(self, to_move: str, now: float) -> bool:
        """Whether the side on move has run out of time at ``now``."""
        flag = self.flag_at(to_move)
        return flag is not None and now >= flag

    def take_back(self, to_move: str, rewarded: list[str], now: float, *, started: bool) -> None:
        """An undo at ``now``: time spent stays spent (``to_move`` is charged up to ``now``),
        the increment each taken-back move earned goes with it (``rewarded``: their movers,
        one entry per move), and the clock of the side now to move runs from ``now``, unless
        the undo went back to before the first move (``started`` False), where no clock runs
        yet."""
        self.stop(to_move, now)
        for mover in rewarded:
            self.remaining[mover] = max(0.0, self.remaining[mover] - self.control.increment)
        self.turn_started = now if started else None

    def stop(self, to_move: str, now: float) -> None:
        """Charge the side on move up to ``now`` and stop the clock (the game ended, or the
        server pauses: time while it is down is not charged)."""
        if self.turn_started is not None:
            self.remaining[to_move] = self.left(to_move, to_move, now)
        self.turn_started = None
