"""Bots on the site: their WebSocket (``/api/bot/ws``, protocol :mod:`.bot_protocol`), their
challenges and games, ``GET /api/bots`` and the ladder page ``/bots``.

A bot connects with ``Authorization: Bearer TOKEN`` on the handshake (a bad or revoked token
is refused before the socket opens: HTTP 403); it is then *online* and listed in the lobby.
Challenges go bot to bot (rated or casual) and person to bot (casual); the challenged bot
answers ``accept`` or ``decline``, and a house bot (``serve --house-bots``) accepts at once.

In a game a bot holds its seat through a :class:`BotSeat`, a :class:`~.games.Client` that
stays attached to the :class:`~.games.LiveGame` until the game ends, whether the bot is
connected or not: its clock runs while it is away, and when it connects again it is told its
games and goes on. A bot's move is carried out exactly as a person's: read by
:func:`.sessions.read_move` and played by :meth:`LiveGame.move` (its seat, its turn, the clock).
A revoked token's connections are closed within :attr:`BotLimits.revoke_check` seconds; its
games stay as they are and are lost on time. Each token has its limits (:class:`BotLimits`):
connections, open challenges, unfinished games, messages a second.

Several instances of one site (``serve --bus``) are one site for bots too: each instance
says in Redis which bots are connected to it (:meth:`.bus.Bus.put_bots`) and tells the others
on the bus, so every instance lists every bot online; a challenge stays with the instance of
its challenger and is offered to the challenged bot through the bus (``bot_challenge``), its
answer comes back the same way (``bot_answer``) and the challenger's instance creates the game
once, seating the bots connected elsewhere through the bus (``bot_seat``); the moves then go
as in any game played across instances (the store is the truth, every change published). A
token's connections are counted in Redis over the running instances; a revoked token is seen
by each instance in the shared store.
"""

from __future__ import annotations

import asyncio
import html
import json
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from orderchaos.web import bots
from orderchaos.web.bot_protocol import MAX_MESSAGE_BYTES, PROTOCOL_VERSION, decode
from orderchaos.web.clocks import NO_CLOCK, parse_time_control
from orderchaos.web.errors import WebError
from orderchaos.web.games import Client, Hub, LiveGame, TOKEN_BYTES, other
from orderchaos.web.proof_page import html_page, phrases
from orderchaos.web.protocol import RateLimit
from orderchaos.web.sessions import read_move
from orderchaos.web.store import token_hash as seat_hash
from orderchaos.envs.rules import AGENTS, SYMBOLS

log = logging.getLogger("orderchaos.web.bots")
REFUSED_CLOSE = 4403
"""The close code of a connection whose token was revoked."""


@dataclass
class BotLimits:
    """What one bot token may do at once."""

    connections: int = 2
    """Open sockets with the same token."""
    challenges: int = 4
    """Challenges it has sent that are not answered yet."""
    games: int = 8
    """Unfinished games it is seated in."""
    rate: float = 20.0
    """Messages a second on average ..."""
    burst: int = 100
    """... and at most in one burst: a bot's moves in a fast game come in bursts, and a site that
    stalls a moment reads what was sent meanwhile at once."""
    challenge_seconds: float = 30.0
    """How long a challenge waits for its answer before it expires."""
    revoke_check: float = 0.5
    """How often the server looks for revoked tokens among its connections."""


class BotConnection:
    """One open socket of a bot."""

    def __init__(self, name: str, digest: str, websocket: WebSocket) -> None:
        self.name, self.digest, self.websocket = name, digest, websocket
        self.lock = asyncio.Lock()
        self.closed = False
        self.counted = ""
        """Its id among the token's connections on all instances (:meth:`.bus.Bus.open_bot_connection`)."""

    async def send(self, message: dict[str, Any]) -> None:
        """Send one message; nothing when the socket has gone."""
        if self.closed or self.websocket.application_state != WebSocketState.CONNECTED:
            return
        async with self.lock:
            try:
                await self.websocket.send_text(json.dumps(message))
            except (WebSocketDisconnect, RuntimeError, OSError):
                pass

    async def close(self, code: int, message: dict[str, Any]) -> None:
        """Tell the bot why, then close the socket."""
        await self.send(message)
        self.closed = True
        try:
            await self.websocket.close(code=code)
        except (RuntimeError, OSError):
            pass


class BotSeat(Client):
    """A bot's seat in one game: told every change of the game while the bot is connected,
    held while it is not; gone when the game ends."""

    def __init__(self, bot_hub: "BotHub", name: str, game: LiveGame, role: str, rated: bool,
                 opponent: dict[str, Any]) -> None:
        super().__init__(self.changed)
        self.bot_hub, self.name, self.game, self.rated, self.opponent = bot_hub, name, game, rated, opponent
        self.seat = role
        self.told: tuple[int, str | None] | None = None
        """The moves and the ending the bot was last told of (a "thinking" view changes neither)."""

    def start_message(self) -> dict[str, Any]:
        """The ``game_start`` message."""
        clock = self.game.clock
        return {"type": "game_start", "game": self.game.id, "seat": self.seat, "opponent": self.opponent,
                "rated": self.rated, "time_control": clock.control.name if clock is not None else NO_CLOCK}

    def state_message(self) -> dict[str, Any]:
        """The ``game_state`` message: the position, both clocks, how it ended."""
        game = self.game
        clock = game.clock_view()
        shown = None if clock is None else {
            "control": clock["control"], "order": round(clock["left"]["order"], 3),
            "chaos": round(clock["left"]["chaos"], 3), "increment": game.clock.control.increment,
            "running": clock["running"]}
        return {"type": "game_state", "game": game.id, "seat": self.seat, "actions": list(game.actions),
                "board": game.state.to_string(), "to_play": None if game.over else game.state.to_play,
                "clock": shown, "over": game.over, "winner": game.winner, "reason": game.reason}

    async def changed(self, view: dict[str, Any]) -> None:
        """The game changed (a move, its end): the bot is told; an ended game is rated and let go."""
        told = (len(self.game.actions), self.game.reason)
        if told == self.told:
            return
        self.told = told
        await self.bot_hub.tell(self.name, self.state_message())
        if self.game.over:
            self.bot_hub.finished(self)


@dataclass
class Challenge:
    """A challenge waiting for the challenged bot's answer."""

    id: str
    opponent: str
    time_control: str
    rated: bool
    side: str
    """The challenger's side, or random."""
    bot: str | None = None
    """The challenging bot, or None for a person ..."""
    person: Any = None
    """... whose :class:`~.sessions.Play` this is."""
    expiry: asyncio.TimerHandle | None = field(default=None, repr=False)

    def message(self) -> dict[str, Any]:
        """The ``challenge`` message for the challenged bot."""
        return {"type": "challenge", "id": self.id, "from": bots.bot_label(self.bot) if self.bot else "person",
                "rated": self.rated, "time_control": self.time_control}


def bearer(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer TOKEN`` header, or None."""
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


class BotHub:
    """The bots connected to this server, their challenges and seats (see the module docstring)."""

    def __init__(self, hub: Hub, limits: BotLimits | None = None, house: bool = False) -> None:
        self.hub, self.store = hub, hub.services.store
        self.limits = limits or BotLimits()
        self.house = house
        self.connections: dict[str, list[BotConnection]] = {}
        self.seats: dict[tuple[str, str], BotSeat] = {}
        self.challenges: dict[str, Challenge] = {}
        self.watcher: asyncio.Task | None = None
        self.bus = hub.bus
        self.elsewhere: dict[str, set[str]] = {}
        """The bots connected to other instances of the site: name -> those instances."""
        self.offered: dict[str, tuple[str, str]] = {}
        """Challenges made on other instances to bots connected here: id -> (instance, bot)."""
        hub.bots = self

    # -- presence ---------------------------------------------------------------------------
    def online(self) -> set[str]:
        """The names of the bots with a socket open here or on another instance, and the
        house bots when seated."""
        names = {name for name, conns in self.connections.items() if conns} | set(self.elsewhere)
        return names | ({h.name for h in bots.HOUSE_BOTS} if self.house else set())

    def lobby_listing(self) -> list[dict[str, Any]]:
        """The bots a person may challenge now: ``{"name", "rating", "house"}``, best first."""
        return [{"name": row["name"], "rating": row["rating"], "house": row["house"]}
                for row in bots.ladder(self.store, self.online(), self.house) if row["online"]]

    async def tell_lobby(self) -> None:
        """Every open tab gets the lobby again (a bot came or went)."""
        for tab in list(self.hub.lobby_tabs.values()):
            await tab.show_lobby()

    async def say_online(self) -> None:
        """Tell the other instances which bots are connected here now (nothing when alone)."""
        if not self.bus.shared:
            return
        try:
            await self.bus.put_bots(sorted(name for name, conns in self.connections.items() if conns))
        except WebError:  # the bus is reconnecting: said again at the next connection
            return
        await self.bus.publish({"kind": "bots"})

    async def look_elsewhere(self) -> None:
        """Read again which bots are connected to the other instances; the challenges made
        here to a bot that is no longer online anywhere are declined."""
        if not self.bus.shared:
            return
        try:
            self.elsewhere = await self.bus.bots_elsewhere()
        except WebError:
            return
        online = self.online()
        for challenge in list(self.challenges.values()):
            if challenge.opponent not in online:
                del self.challenges[challenge.id]
                await self._declined(challenge, f"{challenge.opponent} went offline")

    async def on_event(self, event: dict[str, Any]) -> None:
        """An event of another instance about bots (see the module docstring)."""
        kind = event.get("kind")
        if kind == "bots":
            await self.look_elsewhere()
            await self.tell_lobby()
        elif kind == "bot_challenge":
            offer, opponent = event.get("challenge"), event.get("opponent")
            if not isinstance(offer, dict) or opponent not in self.connections:
                return
            challenge_id = str(offer.get("id"))
            self.offered[challenge_id] = (str(event["from"]), str(opponent))
            asyncio.get_running_loop().call_later(self.limits.challenge_seconds,
                                                  lambda: self.offered.pop(challenge_id, None))
            await self.tell(str(opponent), offer)
        elif kind == "bot_answer" and event.get("to") == self.bus.instance:
            challenge = self.challenges.get(event.get("challenge"))  # type: ignore[arg-type]
            if challenge is None or challenge.opponent != event.get("bot"):
                return  # withdrawn or expired meanwhile
            self._take(challenge)
            if event.get("accept"):
                try:
                    await self._start(challenge)
                except WebError as exc:
                    await self._declined(challenge, str(exc))
            else:
                await self._declined(challenge, str(event.get("reason") or "declined"))
        elif kind == "bot_seat":
            name, game_id = event.get("bot"), event.get("game")
            if name not in self.connections or (name, game_id) in self.seats:
                return
            seat = self._seat(str(name), self.hub.get(game_id), event["role"], bool(event["rated"]),
                              event.get("opponent"))
            await self.tell(seat.name, seat.start_message())
            await seat.changed({})

    async def tell(self, name: str, message: dict[str, Any]) -> None:
        """Send ``message`` to every socket of bot ``name`` (none while it is away)."""
        for connection in list(self.connections.get(name, [])):
            await connection.send(message)

    def start(self) -> None:
        """Watch for revoked tokens (and the bots of the other instances) from now on."""
        if self.watcher is None or self.watcher.done():
            self.watcher = asyncio.create_task(self._watch_revocations())

    def stop(self) -> None:
        """Stop watching (the server stops)."""
        if self.watcher is not None:
            self.watcher.cancel()
            self.watcher = None

    async def _watch_revocations(self) -> None:
        while True:
            await asyncio.sleep(self.limits.revoke_check)
            if self.bus.shared:  # bots of an instance that stopped without a word, or before this one started
                before = set(self.elsewhere)
                await self.look_elsewhere()
                if set(self.elsewhere) != before:
                    await self.tell_lobby()
            if not self.connections:
                continue
            try:
                live = bots.live_hashes(self.store)
            except Exception as exc:  # the store is away a moment: look again next time
                log.warning("cannot read the bot accounts: %s", exc)
                continue
            for name, conns in list(self.connections.items()):
                for connection in list(conns):
                    if connection.digest not in live:
                        log.info("bot=%s token revoked: its connection is closed", name)
                        await connection.close(REFUSED_CLOSE, WebError(
                            "this bot's token was revoked", "revoked").payload())
                        await self._gone(connection)

    # -- connections ------------------------------------------------------------------------
    async def socket(self, websocket: WebSocket) -> None:
        """``/api/bot/ws``: authenticate the handshake, then serve the bot until it leaves."""
        name = bots.authenticate(self.store, bearer(websocket.headers.get("authorization")))
        if name is None:
            log.info("bot connection refused: no valid token")
            await websocket.close(code=1008)  # before accept: the handshake gets HTTP 403
            return
        await websocket.accept()
        connection = BotConnection(name, bots.token_hash(bearer(websocket.headers.get("authorization")) or ""),
                                   websocket)
        connection.counted = self.bus.tab_id()
        try:
            allowed = await self.bus.open_bot_connection(connection.digest, connection.counted,
                                                         self.limits.connections)
        except WebError as exc:  # the bus is reconnecting
            await connection.close(1013, exc.payload())
            return
        if not allowed:
            await connection.close(1013, WebError(
                f"at most {self.limits.connections} connections per bot", "bot_connections",
                limit=self.limits.connections).payload())
            return
        self.start()
        self.connections.setdefault(name, []).append(connection)
        log.info("bot=%s connected", name)
        try:
            await self._hello(connection)
            await self.say_online()
            await self.tell_lobby()
            await self._serve(connection)
        finally:
            await self._gone(connection)

    async def _gone(self, connection: BotConnection) -> None:
        """A connection closed (or was closed by the server): no longer counted nor listed."""
        name, conns = connection.name, self.connections.get(connection.name, [])
        if connection not in conns:
            return
        conns.remove(connection)
        await self.bus.close_bot_connection(connection.digest, connection.counted)
        if not conns:
            self.connections.pop(name, None)
            self._drop_challenges(name)
            await self.say_online()
        log.info("bot=%s disconnected", name)
        await self.tell_lobby()

    async def _hello(self, connection: BotConnection) -> None:
        name = connection.name
        bots.settle_all(self.store)
        seated = await self._reseat(name)
        await connection.send({
            "type": "hello", "protocol": PROTOCOL_VERSION, "bot": name,
            "rating": round(bots.rating_of(self.store, name).r, 1), "games": [s.game.id for s in seated],
            "limits": {"connections": self.limits.connections, "challenges": self.limits.challenges,
                       "games": self.limits.games, "rate": self.limits.rate, "burst": self.limits.burst,
                       "max_message_bytes": MAX_MESSAGE_BYTES}})
        for seat in seated:
            await connection.send(seat.start_message())
            await connection.send(seat.state_message())

    async def _reseat(self, name: str) -> list[BotSeat]:
        """The bot's seats in its unfinished games, attached again where a restart let them go."""
        seated = []
        for game_id, role in bots.unfinished_games(self.store, name):
            seat = self.seats.get((name, game_id))
            if seat is None:
                try:
                    game = self.hub.get(game_id)
                except WebError:
                    continue
                found = bots.game_bots(self.store, game_id)
                assert found is not None
                names, rated = found
                seat = self._seat(name, game, role, rated, names.get(other(role)))
            seated.append(seat)
        return seated

    def _seat(self, name: str, game: LiveGame, role: str, rated: bool, opponent: str | None) -> BotSeat:
        seat = BotSeat(self, name, game, role, rated, {"name": opponent, "bot": opponent is not None})
        self.seats[(name, game.id)] = seat
        self.hub.attach(game, seat)
        return seat

    async def _serve(self, connection: BotConnection) -> None:
        rate = RateLimit(self.limits.rate, self.limits.burst)
        websocket = connection.websocket
        while not connection.closed:
            try:
                received = await websocket.receive()
            except (WebSocketDisconnect, RuntimeError):
                return
            if received["type"] == "websocket.disconnect":
                return
            try:
                if not rate.allow():
                    raise WebError(f"too many messages: at most {self.limits.rate:g} a second", "rate")
                msg = decode(received.get("text"))
                await self.handle(connection.name, msg)
            except WebError as exc:
                await connection.send(exc.payload())
            except Exception:  # a bug must not end the bot's connection or show its text
                log.exception("error while handling a bot's message")
                await connection.send(WebError("the server could not handle that message", "internal").payload())

    async def handle(self, name: str, msg: dict[str, Any]) -> None:
        """Carry out one decoded message of bot ``name``; raises WebError."""
        kind = msg["type"]
        if kind == "move":
            await self.move(name, msg)
        elif kind == "resign":
            seat = self._seated(name, msg.get("game"))
            await seat.game.resign(seat)
        elif kind == "challenge":
            await self.challenge_from_bot(name, msg)
        elif kind == "accept":
            await self.accept(name, msg.get("challenge"))
        elif kind == "decline":
            await self.decline(name, msg.get("challenge"), msg.get("reason"))
        elif kind == "games":
            for seat in await self._reseat(name):
                await self.tell(name, seat.start_message())
                await self.tell(name, seat.state_message())

    def _seated(self, name: str, game_id: object) -> BotSeat:
        seat = self.seats.get((name, game_id)) if isinstance(game_id, str) else None
        if seat is None:
            raise WebError("this bot has no seat in that game", "not_seated")
        return seat

    async def move(self, name: str, msg: dict[str, Any]) -> None:
        """A bot's move: checked and played as a person's (:func:`.sessions.read_move`,
        :meth:`LiveGame.move`)."""
        seat = self._seated(name, msg.get("game"))
        if ("action" in msg) == ("text" in msg):
            raise WebError("'move' needs 'action' (0..71) or 'text' (such as 'c3 X'), one of the two", "bad_message")
        if "action" in msg:
            action = msg["action"]
            if not isinstance(action, int) or isinstance(action, bool) or not 0 <= action < 72:
                raise WebError("'action' must be an integer 0..71 (a = 2*cell + symbol)", "bad_action")
            page_move = {"type": "move", "cell": action >> 1, "symbol": SYMBOLS[action & 1]}
        else:
            page_move = {"type": "move", "text": msg["text"]}
        game = seat.game
        if game.over:
            raise WebError("the game is over", "game_over")
        await game.move(seat, read_move(page_move, game.state))

    def finished(self, seat: BotSeat) -> None:
        """A game ended: rate it (once), and let the seat go."""
        try:
            bots.settle(self.store, seat.game.id)
        except Exception as exc:  # settled again when the bot next connects
            log.warning("game=%s not rated yet: %s", seat.game.id, exc)
        if self.seats.get((seat.name, seat.game.id)) is seat:
            del self.seats[(seat.name, seat.game.id)]
        self.hub.detach(seat.game, seat)

    def _games_of(self, name: str) -> int:
        return sum(1 for (bot, _) in self.seats if bot == name)

    # -- challenges ---------------------------------------------------------------------------
    def _check_opponent(self, opponent: object) -> str:
        if not isinstance(opponent, str) or opponent not in self.online():
            raise WebError("that bot is not online; GET /api/bots lists the bots", "bot_offline")
        if self._games_of(opponent) >= self.limits.games and bots.house_bot(opponent) is None:
            raise WebError(f"{opponent} is playing as many games as it may", "bot_busy")
        return opponent

    @staticmethod
    def _control(value: object) -> str:
        name = value if value is not None else NO_CLOCK
        if not isinstance(name, str):
            raise WebError("time_control must be a name such as '1+0' or 'none'", "time_control")
        try:
            parse_time_control(name)
        except ValueError as exc:
            raise WebError(str(exc), "time_control") from None
        return name

    async def challenge_from_bot(self, name: str, msg: dict[str, Any]) -> None:
        """Bot ``name`` challenges another bot: ``opponent``, ``time_control``, ``rated``
        (default true), ``side`` (the challenger's; default random)."""
        opponent = self._check_opponent(msg.get("opponent"))
        if opponent == name:
            raise WebError("a bot cannot challenge itself", "own_challenge")
        control = self._control(msg.get("time_control"))
        rated = msg.get("rated", True)
        side = msg.get("side", "random")
        if not isinstance(rated, bool):
            raise WebError("rated must be true or false", "bad_message")
        if side not in ("order", "chaos", "random"):
            raise WebError("side must be 'order', 'chaos' or 'random'", "side")
        if sum(1 for c in self.challenges.values() if c.bot == name) >= self.limits.challenges:
            raise WebError(f"at most {self.limits.challenges} challenges waiting for an answer",
                           "bot_challenges", limit=self.limits.challenges)
        if self._games_of(name) >= self.limits.games:
            raise WebError(f"at most {self.limits.games} games at once", "bot_games", limit=self.limits.games)
        challenge = Challenge(secrets.token_urlsafe(9), opponent, control, rated, side, bot=name)
        await self.tell(name, {"type": "challenge_sent", "challenge": challenge.id, "opponent": opponent})
        await self._offer(challenge)

    async def challenge_from_person(self, play: Any, bot: object, time_control: object) -> None:
        """A person's tab challenges a bot to a casual game (a house bot accepts at once)."""
        opponent = self._check_opponent(bot)
        control = self._control(time_control)
        if any(c.person is play for c in self.challenges.values()):
            raise WebError("your challenge to a bot is waiting for its answer", "bot_challenge_waiting")
        await self._offer(Challenge(secrets.token_urlsafe(9), opponent, control, False, "random", person=play))

    async def _offer(self, challenge: Challenge) -> None:
        if bots.house_bot(challenge.opponent) is not None:
            await self._start(challenge)
            return
        self.challenges[challenge.id] = challenge
        challenge.expiry = asyncio.get_running_loop().call_later(
            self.limits.challenge_seconds, lambda: self.hub._later(self._expire(challenge.id)))
        await self.tell(challenge.opponent, challenge.message())
        if challenge.opponent in self.elsewhere:
            await self.bus.publish({"kind": "bot_challenge", "opponent": challenge.opponent,
                                    "challenge": challenge.message()})

    async def _expire(self, challenge_id: str) -> None:
        challenge = self.challenges.pop(challenge_id, None)
        if challenge is not None:
            await self._declined(challenge, "expired: no answer came")

    async def _declined(self, challenge: Challenge, reason: str) -> None:
        if challenge.expiry is not None:
            challenge.expiry.cancel()
        if challenge.bot is not None:
            await self.tell(challenge.bot, {"type": "declined", "challenge": challenge.id, "reason": reason[:200]})
        elif challenge.person is not None:
            await challenge.person.send(WebError(f"{bots.bot_label(challenge.opponent)} declined: {reason[:200]}",
                                                 "bot_declined", bot=challenge.opponent).payload())

    def _take(self, challenge: Challenge) -> None:
        del self.challenges[challenge.id]
        if challenge.expiry is not None:
            challenge.expiry.cancel()

    def _taken(self, name: str, challenge_id: object) -> Challenge:
        challenge = self.challenges.get(challenge_id) if isinstance(challenge_id, str) else None
        if challenge is None or challenge.opponent != name:
            raise WebError("no such challenge to this bot (taken back or expired)", "no_challenge")
        self._take(challenge)
        return challenge

    async def _answer_elsewhere(self, name: str, challenge_id: object, accept: bool, reason: str = "") -> bool:
        """Send the answer of bot ``name`` to a challenge made on another instance to its
        instance; False when no such challenge was offered to it here."""
        offered = self.offered.get(challenge_id) if isinstance(challenge_id, str) else None
        if offered is None or offered[1] != name:
            return False
        del self.offered[str(challenge_id)]
        await self.bus.publish({"kind": "bot_answer", "to": offered[0], "challenge": challenge_id, "bot": name,
                                "accept": accept, "reason": reason[:200]})
        return True

    async def accept(self, name: str, challenge_id: object) -> None:
        """The challenged bot takes the challenge: the game starts (created by the
        challenger's instance when that is another one)."""
        if isinstance(challenge_id, str) and challenge_id in self.offered:
            if self._games_of(name) >= self.limits.games:
                await self._answer_elsewhere(name, challenge_id, False, f"{name} is playing as many games as it may")
                raise WebError(f"at most {self.limits.games} games at once", "bot_games", limit=self.limits.games)
            if await self._answer_elsewhere(name, challenge_id, True):
                return
        challenge = self._taken(name, challenge_id)
        if self._games_of(name) >= self.limits.games:
            await self._declined(challenge, f"{name} is playing as many games as it may")
            raise WebError(f"at most {self.limits.games} games at once", "bot_games", limit=self.limits.games)
        try:
            await self._start(challenge)
        except WebError as exc:
            await self._declined(challenge, str(exc))
            raise

    async def decline(self, name: str, challenge_id: object, reason: object) -> None:
        """The challenged bot declines."""
        said = reason if isinstance(reason, str) and reason else "declined"
        if await self._answer_elsewhere(name, challenge_id, False, said):
            return
        challenge = self._taken(name, challenge_id)
        self.hub._later(self._declined(challenge, said))

    def _drop_challenges(self, name: str) -> None:
        """A bot went offline here: the challenges to it are declined, its own withdrawn (the
        other instances decline theirs once they learn it is offline everywhere)."""
        for challenge_id, (_, opponent) in list(self.offered.items()):
            if opponent == name:
                del self.offered[challenge_id]
        for challenge in list(self.challenges.values()):
            if challenge.opponent == name or challenge.bot == name:
                del self.challenges[challenge.id]
                if challenge.opponent == name:
                    self.hub._later(self._declined(challenge, f"{name} went offline"))
                elif challenge.expiry is not None:
                    challenge.expiry.cancel()

    def forget_person(self, play: Any) -> None:
        """A person's tab closed: its challenge to a bot goes with it."""
        for challenge in list(self.challenges.values()):
            if challenge.person is play:
                del self.challenges[challenge.id]
                if challenge.expiry is not None:
                    challenge.expiry.cancel()

    async def _start(self, challenge: Challenge) -> None:
        """The game of an accepted challenge: seats drawn (or as the challenger asked), both
        taken at once, the bots told, the person's tab put in it."""
        first = challenge.side if challenge.side != "random" else AGENTS[secrets.randbelow(2)]
        second = other(first)
        house = bots.house_bot(challenge.opponent)
        players: dict[str, str | None] = {first: challenge.bot, second: challenge.opponent}
        specs = {first: None, second: house.spec if house is not None else None}
        labels = {role: bots.bot_label(name) if name is not None else None for role, name in players.items()}
        control = parse_time_control(challenge.time_control)
        game, first_token = await self.hub.create(first, specs, labels, invite=False, control=control)
        if house is None:  # the other seat is a connected bot's: its token is never given out
            game.tokens[second] = seat_hash(secrets.token_urlsafe(TOKEN_BYTES))
            self.store.claim_seat(game.id, second, game.tokens[second])
        bots.record_game(self.store, game.id, players, challenge.rated)
        log.info("game=%s bots: %s", game.id, " vs ".join(bots.bot_label(n) if n else "person"
                                                           for n in (players["order"], players["chaos"])))
        connected = [(role, name) for role, name in players.items()
                     if name is not None and bots.house_bot(name) is None]
        for role, name in connected:  # a bot connected to another instance is seated there
            if name in self.elsewhere:
                await self.bus.publish({"kind": "bot_seat", "game": game.id, "bot": name, "role": role,
                                        "rated": challenge.rated, "opponent": players[other(role)]})
        seats = [self._seat(name, game, role, challenge.rated, players[other(role)])
                 for role, name in connected if name in self.connections or name not in self.elsewhere]
        for seat in seats:
            await self.tell(seat.name, seat.start_message())
        if challenge.person is not None:
            await challenge.person.paired(game, first, first_token)
        else:
            await game.broadcast()

    # -- HTTP ---------------------------------------------------------------------------------
    async def api_bots(self, request: Request) -> Response:
        """``GET /api/bots``: every bot as ``{"name", "online", "rating", "rd", "games"}``."""
        await self.look_elsewhere()
        bots.settle_all(self.store)
        rows = bots.ladder(self.store, self.online(), self.house)
        return JSONResponse([{k: row[k] for k in ("name", "online", "rating", "rd", "games")} for row in rows],
                            headers={"Cache-Control": "no-store"})

    def ladder_page(self, reader_language: Callable[[Request], str]) -> Callable[[Request], Awaitable[Response]]:
        """``GET /bots``: the ladder in the reader's language."""

        async def page(request: Request) -> Response:
            await self.look_elsewhere()
            bots.settle_all(self.store)
            return HTMLResponse(render_ladder(reader_language(request), bots.ladder(
                self.store, self.online(), self.house), bots.ladder_games(self.store)),
                headers={"Cache-Control": "no-store"})

        return page


def render_ladder(lang: str, rows: list[dict[str, Any]], games: list[dict[str, Any]]) -> str:
    """The ladder page: the bots' ratings and their latest games, each game a link to watch it
    live or study it once over."""
    say = phrases(lang)

    def who(name: str | None) -> str:
        return html.escape(bots.bot_label(name)) if name else say("ladder.person")

    def result(game: dict[str, Any]) -> str:
        if game["reason"] is None:
            return say("ladder.playing")
        return say("ladder.won_" + game["winner"]) if game["winner"] else say("ladder.aborted")

    table = "\n".join(
        f'<tr><th scope="row">{who(row["name"])}{" " + say("ladder.house") if row["house"] else ""}</th>'
        f'<td>{row["rating"]:.0f} ± {row["rd"]:.0f}</td><td>{row["games"]}</td><td>{row["wins"]}</td>'
        f'<td>{say("ladder.online") if row["online"] else ""}</td></tr>' for row in rows)
    listed = "\n".join(
        f'<li><a href="/g/{html.escape(g["game"])}">{who(g["order"])} – {who(g["chaos"])}</a> '
        f'{say("ladder.rated") if g["rated"] else say("ladder.casual")}: {result(g)}</li>' for g in games)
    return html_page(lang, say("ladder.title"), f"""<p>{say("ladder.intro")} <a href="/docs/bots.md">{say("ladder.connect")}</a></p>
<table data-testid="ladder">
<thead><tr><th scope="col">{say("ladder.bot")}</th><th scope="col">{say("ladder.rating")}</th>
<th scope="col">{say("ladder.games")}</th><th scope="col">{say("ladder.wins")}</th><th scope="col"></th></tr></thead>
<tbody>
{table}
</tbody>
</table>
<h2>{say("ladder.games_title")}</h2>
<ul data-testid="ladder-games">
{listed}
</ul>""", say("proof.back"))
