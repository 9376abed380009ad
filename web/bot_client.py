"""The bot client: any :class:`~orderchaos.agents.base.Agent` plays on a site as a bot
(``orderchaos bot``, or :func:`run_bot` from Python).

It connects to ``/api/bot/ws`` (``http://``/``ws://``, or ``https://``/``wss://`` behind a
proxy) with its token in an ``Authorization: Bearer`` header, accepts the challenges its
:class:`BotOptions` allow, or sends its own (``challenge``: K games against one opponent,
sides alternating, Order first), and plays each game with its own agent: a move is computed
off the event loop, and with less than :data:`LOW_CLOCK` seconds left the move without search
(:func:`~orderchaos.agents.fallback.fallback_action`) is played instead, so the clock is kept.
A dropped connection is opened again (its games go on: the site keeps the seats); a bad or
revoked token ends the run (:class:`TokenRefused`). :meth:`BotClient.stop` (SIGINT in the
command) takes no new game, resigns the games in progress and ends the run.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import signal
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from orderchaos.agents.base import Agent
from orderchaos.web.bot_protocol import PATH, PROTOCOL_VERSION
from orderchaos.web.protocol import RateLimit
from orderchaos.envs.rules import AGENTS, State

LOW_CLOCK = 1.0
"""Seconds left under which the bot plays its move without search."""
RECONNECT_SECONDS = (0.2, 0.5, 1.0, 2.0, 5.0)
"""Pauses before each try to connect again after a drop (the last repeats)."""
MAX_DECLINES = 10
"""Declines in a row after which a run of challenges gives up."""
PACE = 0.5
"""The share of the site's message rate (and burst) the client uses, keeping clear of its edge."""
RESYNC_SECONDS = 0.5
"""The pause after a message refused for its rate before the games are asked for again."""


class TokenRefused(Exception):
    """The site refused the token: bad, or revoked."""


class BotRunError(Exception):
    """The run cannot go on (the site unreachable at the start, a protocol it does not speak,
    its challenges declined again and again)."""


@dataclass
class BotOptions:
    """What the bot takes and asks for."""

    accept: frozenset[str] = frozenset({"rated", "casual"})
    """Which challenges to accept: rated, casual, both, or none (an empty set)."""
    time_controls: frozenset[str] | None = None
    """The time controls it accepts (None: any)."""
    max_games: int = 1
    """Games at once."""
    challenge: str | None = None
    """A bot to challenge ``games`` times on ``time_control`` (then the run ends)."""
    games: int = 1
    time_control: str = "1+0"
    rated: bool = True


def socket_url(server: str) -> str:
    """The bot socket's URL for a site's address: ``http(s)://`` becomes ``ws(s)://``, and the
    path is :data:`PATH`. ValueError for anything else, naming what is accepted."""
    parts = urlsplit(server.strip())
    scheme = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}.get(parts.scheme.lower())
    if scheme is None or not parts.hostname:
        raise ValueError(f"{server!r}: give the site's address, such as http://127.0.0.1:8000 or https://example.org")
    if parts.username or parts.password or parts.query:
        raise ValueError(f"{server!r}: no user, password or query in the address (the token goes in --token-file)")
    return urlunsplit((scheme, parts.netloc, parts.path.rstrip("/") + PATH, "", ""))


@dataclass
class GameRecord:
    """What the client knows of one of its games."""

    game: str
    seat: str
    opponent: str
    rated: bool
    answered: int = -1
    """The number of moves in the position it last moved in."""
    winner: str | None = None
    reason: str | None = None
    moves: int = 0
    agent: Agent | None = None
    sent_at: float | None = None


@dataclass
class Figures:
    """What a run did: games by result and seat, and each move's round trip (sent to seen)."""

    results: list[tuple[str, str, str | None, str | None]] = field(default_factory=list)
    """(game, seat, winner, reason) per finished game."""
    round_trips: list[float] = field(default_factory=list)
    agent_failures: int = 0
    """Moves the agent failed to make (an exception), played without search instead."""

    def summary(self) -> str:
        """One line: games, wins by seat, the median and 95th percentile round trip."""
        won = {role: sum(1 for _, seat, w, _ in self.results if seat == role and w == role) for role in AGENTS}
        played = {role: sum(1 for _, seat, _, _ in self.results if seat == role) for role in AGENTS}
        text = (f"{len(self.results)} games: as Order won {won['order']} of {played['order']}, "
                f"as Chaos won {won['chaos']} of {played['chaos']}")
        if self.agent_failures:
            text += f"; the agent failed {self.agent_failures} times"
        if len(self.round_trips) >= 2:
            ms = sorted(t * 1000 for t in self.round_trips)
            text += (f"; move round trip median {statistics.median(ms):.1f} ms, "
                     f"95th percentile {ms[int(0.95 * (len(ms) - 1))]:.1f} ms over {len(ms)} moves")
        return text


class BotClient:
    """One bot's run on a site (see the module docstring). ``agent`` builds a fresh agent for
    a game; ``say`` prints one line."""

    def __init__(self, server: str, token: str, agent: Callable[[], Agent], options: BotOptions,
                 say: Callable[[str], None] = print) -> None:
        self.url = socket_url(server)
        self.token, self.make_agent, self.options, self.say = token, agent, options, say
        self.games: dict[str, GameRecord] = {}
        self.figures = Figures()
        self.finished: set[str] = set()
        self.challenges_sent = 0
        self.declines = 0
        self.stopping = asyncio.Event()
        self.done = asyncio.Event()
        self.ws: Any = None
        self.name = ""
        self.tasks: set[asyncio.Task] = set()
        self.rate: RateLimit | None = None
        """The site's message rate, once its hello has said it."""
        self.pacing = asyncio.Lock()
        self.resyncing = False

    def stop(self) -> None:
        """Take no new game, resign those in progress, end the run."""
        self.stopping.set()

    # -- the connection -----------------------------------------------------------------------
    async def run(self) -> None:
        """Play until the challenges asked for are over or :meth:`stop`; raises TokenRefused,
        BotRunError."""
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed, InvalidStatus

        tries = 0
        connected_once = False
        while not self.done.is_set():
            try:
                async with connect(self.url, additional_headers={"Authorization": f"Bearer {self.token}"},
                                   max_size=2**20, open_timeout=30, ping_interval=20) as ws:
                    self.ws, tries, connected_once = ws, 0, True
                    await self._session(ws)
            except InvalidStatus as exc:
                if exc.response.status_code in (401, 403):
                    raise TokenRefused("the site refused the token (a bad or revoked token)") from None
                if not connected_once:
                    raise BotRunError(f"{self.url}: the site answered HTTP {exc.response.status_code}") from None
            except ConnectionClosed as exc:
                if exc.rcvd is not None and exc.rcvd.code == 4403:
                    raise TokenRefused("the site revoked this bot's token") from None
            except (OSError, asyncio.TimeoutError) as exc:
                if not connected_once:
                    raise BotRunError(f"{self.url}: cannot reach the site ({exc})") from None
            finally:
                self.ws = None
            if self.done.is_set() or self.stopping.is_set():
                return
            pause = RECONNECT_SECONDS[min(tries, len(RECONNECT_SECONDS) - 1)]
            tries += 1
            self.say(f"orderchaos bot: the connection dropped; connecting again in {pause:g} s")
            try:
                await asyncio.wait_for(self.stopping.wait(), pause)
                return
            except asyncio.TimeoutError:
                pass

    async def _session(self, ws: Any) -> None:
        stopper = asyncio.create_task(self._stop_when_asked())
        try:
            async for text in ws:
                await self._receive(json.loads(text))
                if self.done.is_set():
                    await ws.close()
                    return
        finally:
            stopper.cancel()

    async def _stop_when_asked(self) -> None:
        await self.stopping.wait()
        for record in list(self.games.values()):
            await self._send({"type": "resign", "game": record.game})
        if not self.games:
            self.done.set()
            if self.ws is not None:
                await self.ws.close()

    async def _send(self, message: dict[str, Any], record: GameRecord | None = None) -> None:
        """Send one message, within the site's rate (:data:`PACE` of it): past it a move would be
        refused. A move's ``record`` notes when it left (after any wait for the rate), so its
        round trip is the site's and the network's time alone."""
        if self.ws is None:
            return
        async with self.pacing:
            while self.rate is not None and not self.rate.allow():
                await asyncio.sleep(1 / self.rate.rate)
            if record is not None:
                record.sent_at = time.perf_counter()
            try:
                await self.ws.send(json.dumps(message))
            except Exception:  # the connection dropped: the run connects again and goes on
                pass

    # -- messages -----------------------------------------------------------------------------
    async def _receive(self, msg: dict[str, Any]) -> None:
        kind = msg.get("type")
        if kind == "hello":
            if msg.get("protocol") != PROTOCOL_VERSION:
                raise BotRunError(f"the site speaks bot protocol {msg.get('protocol')}, this client "
                                  f"{PROTOCOL_VERSION}; update orderchaos")
            self.name = msg["bot"]
            limits = msg["limits"]
            self.rate = RateLimit(limits.get("rate", 20.0) * PACE, max(1, int(limits.get("burst", 1) * PACE)))
            for record in self.games.values():  # a move sent as the connection dropped is made again
                record.answered = -1
            self.say(f"orderchaos bot: connected to {self.url} as bot:{self.name} (rating {msg['rating']:.0f}); "
                     + (f"challenging bot:{self.options.challenge}" if self.options.challenge
                        else "waiting for challenges"))
            await self._challenge_more()
        elif kind == "challenge":
            await self._answer(msg)
        elif kind == "game_start":
            if msg["game"] not in self.games and msg["game"] not in self.finished:
                self.games[msg["game"]] = GameRecord(msg["game"], msg["seat"], msg["opponent"]["name"] or "person",
                                                     msg["rated"])
        elif kind == "game_state":
            await self._position(msg)
        elif kind == "declined":
            self.declines += 1
            self.challenges_sent -= 1
            self.say(f"orderchaos bot: challenge declined: {msg['reason']}")
            if self.declines >= MAX_DECLINES:
                raise BotRunError(f"{self.declines} challenges in a row were declined")
            await asyncio.sleep(min(2.0, 0.2 * self.declines))
            await self._challenge_more()
        elif kind == "error":
            self.say(f"orderchaos bot: the site says: {msg.get('message')} ({msg.get('code')})")
            if msg.get("code") == "rate" and not self.resyncing:  # a refused message may have been a move
                self.resyncing = True
                self._later(self._resync())
            if msg.get("code") in ("bot_offline", "bot_busy", "bot_challenges", "bot_games"):
                self.challenges_sent -= 1  # the challenge was refused: it is sent again
                self.declines += 1
                if self.declines >= MAX_DECLINES:
                    raise BotRunError(f"{self.declines} challenges in a row were refused")
                await asyncio.sleep(min(2.0, 0.2 * self.declines))
                await self._challenge_more()

    async def _resync(self) -> None:
        """After a pause that lets the site's rate limit fill again, ask for the games and move in
        those where it is this bot's turn (a move the site refused is made again)."""
        await asyncio.sleep(RESYNC_SECONDS)
        for record in self.games.values():
            record.answered = -1
        self.resyncing = False
        await self._send({"type": "games"})

    def _later(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _answer(self, msg: dict[str, Any]) -> None:
        options = self.options
        kind = "rated" if msg["rated"] else "casual"
        reason = None
        if self.stopping.is_set() or options.challenge is not None:
            reason = "not taking challenges now"
        elif kind not in options.accept:
            reason = f"this bot takes no {kind} games"
        elif options.time_controls is not None and msg["time_control"] not in options.time_controls:
            reason = f"this bot plays {', '.join(sorted(options.time_controls))}"
        elif len(self.games) >= options.max_games:
            reason = "this bot is playing as many games as it plays at once"
        if reason is None:
            await self._send({"type": "accept", "challenge": msg["id"]})
        else:
            await self._send({"type": "decline", "challenge": msg["id"], "reason": reason})

    async def _challenge_more(self) -> None:
        options = self.options
        if options.challenge is None or self.stopping.is_set():
            return
        while (self.challenges_sent < options.games
               and self.challenges_sent - len(self.finished) < options.max_games):
            side = AGENTS[self.challenges_sent % 2]
            self.challenges_sent += 1
            await self._send({"type": "challenge", "opponent": options.challenge, "time_control": options.time_control,
                              "rated": options.rated, "side": side})

    async def _position(self, msg: dict[str, Any]) -> None:
        record = self.games.get(msg["game"])
        if record is None:
            return
        actions = msg["actions"]
        if record.sent_at is not None and len(actions) > record.answered:
            self.figures.round_trips.append(time.perf_counter() - record.sent_at)
            record.sent_at = None
        if msg["over"]:
            self._finish(record, msg)
            return
        if self.stopping.is_set():  # a game that started as the run was stopping
            await self._send({"type": "resign", "game": record.game})
            return
        if msg["to_play"] != record.seat or len(actions) <= record.answered:
            return
        record.answered = len(actions)
        state = State()
        for action in actions:
            state = state.apply(action)
        clock = msg["clock"]
        left = clock[record.seat] if clock is not None else None
        self._later(self._move(record, state, left))

    async def _move(self, record: GameRecord, state: State, left: float | None) -> None:
        from orderchaos.agents.fallback import fallback_action

        try:
            if record.agent is None:
                record.agent = await asyncio.to_thread(self.make_agent)
            if left is not None and left < LOW_CLOCK:
                action = await asyncio.to_thread(fallback_action, state)
            else:
                action = await asyncio.to_thread(record.agent.act, state)
        except Exception as exc:  # the agent's own bug: said, and the game goes on without it
            self.figures.agent_failures += 1
            self.say(f"orderchaos bot: the agent failed in game {record.game} ({type(exc).__name__}: {exc}); "
                     "playing the move without search")
            action = await asyncio.to_thread(fallback_action, state)
        if record.game in self.games and not self.stopping.is_set():
            await self._send({"type": "move", "game": record.game, "action": int(action)}, record)

    def _finish(self, record: GameRecord, msg: dict[str, Any]) -> None:
        del self.games[record.game]
        self.finished.add(record.game)
        winner, reason = msg["winner"], msg["reason"]
        outcome = "aborted" if winner is None else ("won" if winner == record.seat else "lost")
        self.figures.results.append((record.game, record.seat, winner, reason))
        self.say(f"orderchaos bot: game {record.game} against {record.opponent} as {record.seat}: "
                 f"{outcome} ({reason}, {len(msg['actions'])} moves)")
        self.declines = 0
        if self.options.challenge is not None and len(self.finished) >= self.options.games:
            self.done.set()
        elif self.stopping.is_set() and not self.games:
            self.done.set()
        else:
            self._later(self._challenge_more())


def agent_factory(agent: str | Callable[[], Agent]) -> Callable[[], Agent]:
    """A builder of a fresh agent for each game: from a spec (checked now, SpecError when bad),
    the games' agents seeded 0, 1, 2, ... in the order the games start (as ``eval`` gives each
    game its own seed), or the callable as given."""
    if not isinstance(agent, str):
        return agent
    from orderchaos.agents.registry import make, resolve

    resolve(agent)
    seeds = itertools.count()
    return lambda: make(agent, seed=next(seeds))


def run_bot(server: str, token: str, agent: str | Callable[[], Agent], options: BotOptions | None = None,
            say: Callable[[str], None] = print) -> Figures:
    """Play on ``server`` as the bot whose token this is, with ``agent`` (a spec, or a callable
    that returns an Agent), until its challenges are played or SIGINT/SIGTERM; returns what
    it did. Raises TokenRefused, BotRunError, ValueError (a bad address or spec)."""
    client = BotClient(server, token, agent_factory(agent), options or BotOptions(), say)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(signum, client.stop)
            except (RuntimeError, ValueError):  # not the main thread: stop() is the caller's
                pass
        await client.run()

    asyncio.run(main())
    return client.figures
