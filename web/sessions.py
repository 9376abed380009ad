"""What one browser tab drives over its WebSocket: a game to play (against a friend or an
agent), a match between two agents to watch, saved games to study.

:class:`Connection` reads decoded messages (:mod:`.protocol`) and answers through an async
``send`` callable, so the API tests and the server share one code path. A bad request
raises :class:`~orderchaos.web.errors.WebError`, sent back as an ``error`` message; it
changes nothing. Searches run through :meth:`Services.run` (caps, cancellation), and
everything a tab started is stopped when it closes or a newer request replaces it.

This module imports no web framework; :mod:`orderchaos.web.app` wraps it in Starlette.

Messages from the page (JSON objects, by ``type``):

- who: ``identify`` (player: the id the browser keeps; answered with ``me``: the display
  name and ratings), ``rename`` (name);
- play: ``new_game`` (side: order/chaos/random, opponent: a level or a spec),
  ``challenge_bot`` (bot, time_control: a casual game against a bot online),
  ``play_friend`` (side), ``open`` (game, and token or invite), ``leave``, ``move`` (cell
  and symbol, or text such as "c3 X"), ``undo``, ``retry`` (ask the computer again for a
  move that failed), ``hint``, ``state``, ``rematch``, ``study_game``;
- watch: ``watch`` (order, chaos, delay_ms), ``pause``, ``resume``, ``step``, ``speed``;
  ``live`` (follow the games being played now: :mod:`.live`);
- study: ``list_files``, ``open_file`` (name), ``upload`` (name, content), ``analyse`` (game).

Answers: ``hello`` (levels, suggestions, limits), ``joined`` (game, seat, token when a new
one was issued), ``state`` (a play or watch view: board facts, moves with their side, seats,
invite, rematch), ``rematch`` (the new game's id), ``hint``, ``files``, ``games``,
``analysis``, ``live`` (games in progress, how many wait to be paired and play) and
``error`` (message, code, args).
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import tempfile
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

from orderchaos.agents.base import Agent
from orderchaos.arena import analysis
from orderchaos.arena.game_files import GameFileError, SavedGame, load_games
from orderchaos.arena.analysis import MoveInputError, parse_move
from orderchaos.web.bots import bot_name_taken
from orderchaos.web.clocks import NO_CLOCK, TimeControl, parse_time_control
from orderchaos.web.errors import TimedOut, WebError
from orderchaos.web.games import Client, Hub, LiveGame
from orderchaos.web.lobby import Seek
from orderchaos.web.people import lobby_names, me_view
from orderchaos.web.players import NAME_MAX, NAME_MIN, PLAYER_ID, category_of, name_refusal
from orderchaos.web.services import LEVELS, SUGGESTED_SPECS, Limits, Services, agent_move
from orderchaos.envs.rules import AGENTS, CELLS, ORDER, SYMBOLS, State, action_name, cell_name

Send = Callable[[dict[str, Any]], Awaitable[None]]
MAX_NAME_CHARS = 100
MAX_WATCH_DELAY_MS = 10_000

__all__ = ["Connection", "Limits", "Services", "WebError"]


def _field(msg: dict[str, Any], name: str, kind: type, what: str) -> Any:
    value = msg.get(name)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise WebError(f"'{msg.get('type')}' needs '{name}': {what}", "bad_message")
    return value


def read_move(msg: dict[str, Any], state: State) -> int:
    """The action a ``move`` message asks for, checked against ``state``."""
    if "text" in msg:
        text = _field(msg, "text", str, "a move such as 'c3 X'")
        try:
            action = parse_move(text[:40], State())  # the text alone; a taken cell is said below
        except MoveInputError as exc:
            raise WebError(str(exc), "move_text") from None
        cell, symbol = action >> 1, SYMBOLS[action & 1]
    else:
        cell, symbol = msg.get("cell"), msg.get("symbol")
    if not isinstance(cell, int) or isinstance(cell, bool) or not 0 <= cell < CELLS:
        raise WebError(f"'move' needs 'cell': an integer 0..{CELLS - 1}", "bad_cell")
    if symbol not in ("X", "O"):
        raise WebError("'move' needs 'symbol': 'X' or 'O'", "bad_symbol")
    if (state.x | state.o) >> cell & 1:
        raise WebError(f"illegal move: {cell_name(cell)} already holds {state.cell(cell)}; choose an empty cell",
                       "occupied", cell=cell_name(cell))
    return 2 * cell + SYMBOLS.index(symbol)


def safe_name(name: str) -> str:
    """A file name fit to show and to write: its last part, letters, digits, ``.-_`` only."""
    base = re.sub(r"[^A-Za-z0-9._-]", "_", name.replace("\\", "/").rsplit("/", 1)[-1])[:MAX_NAME_CHARS]
    return base.strip("._") or "upload.jsonl"


# -- play -----------------------------------------------------------------------------


class Play:
    """The game this tab has open, if any, and its hint."""

    def __init__(self, services: Services, hub: Hub, send: Send, address: str = "") -> None:
        self.services, self.hub, self.send, self.address = services, hub, send, address
        self.client = Client(send)
        self.tab_id = hub.bus.tab_id()
        """This tab's name in the lobby, unique on the site."""
        self.game: LiveGame | None = None
        self.hint_task: asyncio.Task | None = None
        self.player: str | None = None
        """The player id the tab's browser keeps (``identify``), None until it says."""

    # -- who the tab's player is ---------------------------------------------------------------
    async def identify(self, msg: dict[str, Any]) -> None:
        """The tab says which player it is: ``player``, the id its browser keeps; a new id
        gets a generated name. Answered with ``me``."""
        player = msg.get("player")
        if not isinstance(player, str) or not PLAYER_ID.fullmatch(player):
            raise WebError("'player' must be 16 to 64 letters, digits, '-' or '_' (the id the page keeps)",
                           "bad_player")
        self.player = player
        await self.send(me_view(self.services.store, player))

    async def rename(self, msg: dict[str, Any]) -> None:
        """Choose another display name: ``name``, checked (:func:`.players.name_refusal`) and
        unique (letter case ignored). Answered with ``me``; the open game shows the new name."""
        if self.player is None:
            raise WebError("the page has not said who you are yet; reload it", "no_player")
        name = msg.get("name")
        refusal = name_refusal(name)
        if refusal is None and bot_name_taken(self.services.store, name):
            refusal = "name_reserved"  # a bot's name, even one that does not end in "bot"
        if refusal is not None:
            raise WebError(NAME_REFUSALS[refusal], refusal, min=NAME_MIN, max=NAME_MAX)
        assert isinstance(name, str)
        store = self.services.store
        store.ensure_player(self.player)
        if not store.rename_player(self.player, name):
            raise WebError(f"the name {name} is taken; choose another", "name_taken", name=name)
        await self.send(me_view(store, self.player))
        if self.game is not None:
            self.game.read_people()
            await self.game.broadcast()

    def _seat(self, game: LiveGame, seat: str, category: str | None = None) -> None:
        """Note this tab's player in ``seat`` of ``game`` (nothing before it said who it is)."""
        if self.player is not None:
            self.services.store.seat_players(game.id, {seat: self.player}, category)
            game.read_people()

    def _side(self, msg: dict[str, Any]) -> str:
        return _resolve_side(self._side_asked(msg))

    @staticmethod
    def _side_asked(msg: dict[str, Any]) -> str:
        side = msg.get("side")
        if side != "random" and side not in AGENTS:
            raise WebError("side must be 'order', 'chaos' or 'random'", "side")
        return side

    async def _join(self, game: LiveGame, seat: str | None, token: str | None = None) -> None:
        if self.game is not game:
            self.leave()
        self.game = game
        self.client.seat = seat
        self.hub.attach(game, self.client)
        joined: dict[str, Any] = {"type": "joined", "game": game.id, "seat": seat}
        if token is not None:
            joined["token"] = token
        await self.send(joined)
        # a tab that goes into a game stops waiting to be paired and withdraws its challenges
        try:
            was_waiting = await self.hub.bus.seeking_for(self.tab_id) is not None
            withdrawn = await self.hub.bus.gone(self.tab_id)
            if withdrawn:
                await self._tell_lobby(withdrawn)
            elif was_waiting:
                await self.show_lobby()
        except WebError:  # the bus is reconnecting: the game opens all the same
            pass
        await game.broadcast()

    def _time_control(self, msg: dict[str, Any]) -> TimeControl | None:
        name = msg.get("time_control", NO_CLOCK)
        if not isinstance(name, str):
            raise WebError("time_control must be a name such as '3+2' or 'none'", "time_control")
        try:
            return parse_time_control(name)
        except ValueError as exc:
            raise WebError(str(exc), "time_control") from None

    async def new_game(self, msg: dict[str, Any]) -> None:
        """A game against an agent: ``side`` for the person, ``opponent`` a level or spec,
        ``time_control`` a preset name or ``"none"`` (the agent gets the same clock)."""
        side = self._side(msg)
        control = self._time_control(msg)
        spec, label = self.services.opponent(msg.get("opponent"), AGENTS[1 - AGENTS.index(side)])
        agent = await self.services.build(spec)
        specs = {role: (spec if role != side else None) for role in AGENTS}
        labels = {role: (label if role != side else None) for role in AGENTS}
        game, token = await self.hub.create(side, specs, labels, invite=False, control=control)
        game.agents[AGENTS[1 - AGENTS.index(side)]] = agent
        self._seat(game, side)
        await self._join(game, side, token)

    async def play_friend(self, msg: dict[str, Any]) -> None:
        """A game against a person who opens the invite link: ``side`` for the creator,
        ``time_control`` a preset name or ``"none"``."""
        side = self._side(msg)
        control = self._time_control(msg)
        game, token = await self.hub.create(
            side, {r: None for r in AGENTS}, {r: None for r in AGENTS}, invite=True, control=control)
        self._seat(game, side)
        await self._join(game, side, token)

    async def open(self, msg: dict[str, Any]) -> None:
        """Open a game by id: with its seat token, in that seat; with its invite, in the free
        seat (first come); otherwise watching."""
        game = await self.hub.open(msg.get("game"))
        seat = game.seat_for(msg.get("token"))
        if seat is not None:
            await self._join(game, seat)
            return
        async with game.lock:  # not while the game is read again (the claim would be undone)
            claimed = game.claim(msg.get("invite")) if "invite" in msg else None
        if claimed is not None:
            self._seat(game, claimed[0])
            await self._join(game, claimed[0], claimed[1])
            return
        await self._join(game, None)

    # -- the lobby ----------------------------------------------------------------------------
    async def show_lobby(self, withdrawn: int = 0) -> None:
        """Send this tab the open challenges and what it waits to be paired for; ``withdrawn``:
        how many of its challenges just went because it went into a game (the page says so)."""
        bus = self.hub.bus
        challenges = lobby_names(self.services.store, await bus.listing(self.tab_id))
        listing: dict[str, Any] = {"type": "lobby", "challenges": challenges,
                                   "seeking": await bus.seeking_for(self.tab_id),
                                   "bots": self.hub.bots.lobby_listing() if self.hub.bots is not None else []}
        if withdrawn:
            listing["withdrawn"] = withdrawn
        await self.send(listing)
        self.hub.live.changed()  # how many wait to be paired may have changed

    async def _tell_lobby(self, withdrawn: int = 0) -> None:
        """Every lobby viewer, on every instance, gets the new listing; this tab with ``withdrawn``."""
        await self.hub.bus.publish({"kind": "lobby"})
        for tab in list(self.hub.lobby_tabs.values()):
            await tab.show_lobby(withdrawn if tab is self else 0)

    async def challenge(self, msg: dict[str, Any]) -> None:
        """Open a challenge: ``side`` the creator takes (or random), ``time_control``,
        ``rated`` (default true; false: casual)."""
        side = self._side_asked(msg)
        self._time_control(msg)
        await self.hub.bus.open_challenge(self.tab_id, self.address, side, msg.get("time_control", NO_CLOCK),
                                          self.player, _rated(msg))
        await self._tell_lobby()

    async def accept(self, msg: dict[str, Any]) -> None:
        """Take an open challenge: both its creator and this tab land in the new game."""
        challenge = await self.hub.bus.take_challenge(msg.get("challenge"), self.tab_id)
        await self._tell_lobby()
        control = parse_time_control(challenge.time_control)
        first_seat = _resolve_side(challenge.side)
        rated = challenge.rated and challenge.player is not None and self.player is not None
        await pair_tabs(self.hub, {first_seat: (str(challenge.owner), challenge.player),
                                   _other(first_seat): (self.tab_id, self.player)}, control, rated)

    async def challenge_bot(self, msg: dict[str, Any]) -> None:
        """Challenge a bot online (``bot``, its name) to a casual game on ``time_control``;
        the tab lands in the game once the bot accepts."""
        if self.hub.bots is None:
            raise WebError("this site takes no bots", "no_bots")
        await self.hub.bots.challenge_from_person(self, msg.get("bot"), msg.get("time_control", NO_CLOCK))

    async def cancel(self, msg: dict[str, Any]) -> None:
        """Withdraw one of this tab's challenges, or (without one) stop waiting to be paired."""
        if "challenge" in msg:
            await self.hub.bus.cancel_challenge(msg.get("challenge"), self.tab_id)
            await self._tell_lobby()
        else:
            await self.hub.bus.unseek(self.tab_id)
            await self.show_lobby()

    async def play_anyone(self, msg: dict[str, Any]) -> None:
        """Be paired with another tab asking for the same ``time_control``, rated (the
        default) or casual (``rated`` false), of near rating first (:func:`.lobby.best_match`)."""
        self._time_control(msg)
        name = msg.get("time_control", NO_CLOCK)
        category = category_of(name)
        rating = self.services.store.rating(self.player, category)[0].r if self.player and category else 1500.0
        seek = Seek(self.tab_id, name, self.player, rating, _rated(msg))
        waiting = await self.hub.bus.seek(seek)
        if waiting is None:
            await self.show_lobby()
            return
        await pair_seeks(self.hub, waiting, seek)

    def leave_lobby(self) -> None:
        """This tab closed: its challenges and its wait for a pairing go with it."""
        self.hub.lobby_tabs.pop(self.tab_id, None)
        if self.hub.bots is not None:
            self.hub.bots.forget_person(self)
        self.hub._later(self._left_lobby())

    async def _left_lobby(self) -> None:
        self.hub.live.unfollow(self.tab_id)
        try:
            if await self.hub.bus.gone(self.tab_id):
                await self._tell_lobby()
        except WebError:  # the bus is reconnecting: an owner whose instance is alive stays listed
            pass
        self.hub.live.changed()  # it may have been waiting to be paired

    async def paired(self, game: LiveGame, seat: str, token: str) -> None:
        """The lobby paired this tab (its challenge taken, or its wait for a game met), here or
        on another instance: it lands in ``game`` in ``seat``, and its page stops waiting."""
        await self._join(game, seat, token)
        await self.show_lobby()

    def leave(self) -> None:
        """Close the open game in this tab (its hint stops)."""
        self.stop_hint()
        if self.game is not None:
            self.hub.detach(self.game, self.client)
            self.game = None
            self.client.seat = None

    def _open_game(self) -> LiveGame:
        if self.game is None:
            raise WebError("start a new game first", "no_game_open")
        return self.game

    async def move(self, msg: dict[str, Any]) -> None:
        """Play the tab's move in its game."""
        game = self._open_game()
        if self.client.seat is None:
            raise WebError("you are watching this game: only its two players can move", "watching")
        if game.over:
            raise WebError("the game is over", "game_over")
        action = read_move(msg, game.state)
        self.stop_hint()
        await game.move(self.client, action)

    async def undo(self) -> None:
        """Take back the tab's last move against an agent."""
        self.stop_hint()
        await self._open_game().undo(self.client)

    async def retry(self) -> None:
        """Ask the computer again for the move that failed."""
        await self._open_game().retry(self.client)

    async def resign(self) -> None:
        """The tab's player gives up its game."""
        self.stop_hint()
        await self._open_game().resign(self.client)

    async def state(self) -> None:
        """Send the view again."""
        if self.game is None:
            await self.send({"type": "state", "mode": "play", "game": None, **analysis.board_facts(State()),
                             "moves": [], "seat": None, "last": None})
        else:
            await self.send(self.game.view(self.client))

    async def rematch(self) -> None:
        """Start (or join) the rematch of the finished game, sides swapped."""
        game = self._open_game()
        rematch = await self.hub.rematch(game, self.client)
        for client in list(game.clients):
            await client.send({"type": "rematch", "game": rematch.id})

    def hint(self) -> None:
        """Start a hint for the tab's move (a newer one replaces it)."""
        game = self._open_game()
        if game.over:
            raise WebError("the game is over; no hint needed", "game_over")
        if self.client.seat is None or game.state.to_play != self.client.seat:
            raise WebError("hints are for your own move", "hint_turn")
        if not game.specs.get(AGENTS[1 - AGENTS.index(self.client.seat)]):
            raise WebError("no hints in a game against a person", "hint_friend")
        self.stop_hint()
        self.hint_task = asyncio.create_task(self._hint(game, game.state))

    async def _hint(self, game: LiveGame, state: State) -> None:
        limit = self.services.limits.hint_time
        try:
            found = await self.services.run(self.services.hint, state, timeout=limit + 30, what="the hint")
        except WebError as exc:
            await self.send(exc.payload("play"))
            return
        if game is self.game and game.state == state:
            await self.send({"type": "hint", "mode": "play", "time": limit, "to_play": state.to_play,
                             **found.to_dict()})

    def stop_hint(self) -> None:
        """Stop the hint being computed."""
        if self.hint_task is not None:
            self.hint_task.cancel()
            self.hint_task = None

    async def study(self, study: "Study") -> None:
        """Open the finished game in ``study``."""
        game = self._open_game()
        stored = self.services.store.load(game.id)
        if stored is None or stored.winner is None:
            raise WebError("the game is not over yet", "not_over")
        await study.loaded(f"game-{game.id[:8]}.jsonl", [stored.saved()])


# -- watch ----------------------------------------------------------------------------


def _resolve_side(side: str) -> str:
    """A side as asked for, a random one drawn for ``"random"``."""
    return AGENTS[secrets.randbelow(2)] if side == "random" else side


def _other(side: str) -> str:
    return AGENTS[1 - AGENTS.index(side)]


def _rated(msg: dict[str, Any]) -> bool:
    rated = msg.get("rated", True)
    if not isinstance(rated, bool):
        raise WebError("rated must be true (rated) or false (casual)", "rated")
    return rated


NAME_REFUSALS = {
    "name_length": f"a name has {NAME_MIN} to {NAME_MAX} characters",
    "name_chars": "a name is made of letters a-z, digits, '_' and '-', starting with a letter or digit",
    "name_reserved": "that name belongs to the computer's players (or looks like a bot's); choose another",
}
"""The English text of each refusal :func:`.players.name_refusal` gives."""


async def pair_seeks(hub: Hub, one: Seek, two: Seek) -> None:
    """Two tabs that "play anyone" were paired: a game on their clock, sides drawn, rated when
    both asked for a rated game and both said who they are."""
    first_seat = AGENTS[secrets.randbelow(2)]
    rated = one.rated and two.rated and one.player is not None and two.player is not None
    await pair_tabs(hub, {first_seat: (str(one.owner), one.player), _other(first_seat): (str(two.owner), two.player)},
                    parse_time_control(one.time_control), rated)


async def pair_tabs(hub: Hub, seats: dict[str, tuple[str, str | None]], control: TimeControl | None,
                    rated: bool) -> None:
    """A new game between two tabs, ``seats``: role -> (tab id, player id or None); both land in
    it (through the bus when it is another instance's tab). Rated in the control's category
    when ``rated`` and on the clock."""
    order_tab, chaos_tab = seats["order"][0], seats["chaos"][0]
    game, order_token, chaos_token = await hub.create_seated("order", control)
    category = category_of(control.name) if rated and control is not None else None
    hub.services.store.seat_players(game.id, {role: seats[role][1] for role in AGENTS}, category)
    game.read_people()
    for role, tab, token in (("order", order_tab, order_token), ("chaos", chaos_tab, chaos_token)):
        owner = hub.lobby_tabs.get(tab)
        if owner is not None:
            await owner.paired(game, role, token)
        else:
            await hub.bus.publish({"kind": "paired", "tab": tab, "game": game.id, "seat": role, "token": token})


class WatchGame:
    """Two agents play each other at a chosen speed, with pause and step."""

    def __init__(self, services: Services, send: Send) -> None:
        self.services, self.send = services, send
        self.state = State()
        self.specs: dict[str, str] = {}
        self.labels: dict[str, str] = {}
        self.agents: dict[str, Agent | None] = {}
        self.history: list[int] = []
        self.delay = 0.5
        self.running = False
        self.wake = asyncio.Event()
        self.steps = 0
        self.task: asyncio.Task | None = None
        self.error: dict[str, Any] | None = None

    def view(self) -> dict[str, Any]:
        """The ``state`` message for the page."""
        return {
            "type": "state",
            "mode": "watch",
            **analysis.board_facts(self.state),
            "last": self.history[-1] >> 1 if self.history else None,
            "moves": analysis.move_list(self.history),
            "order": self.labels.get(ORDER, ""),
            "chaos": self.labels.get("chaos", ""),
            "started": bool(self.specs),
            "running": self.running,
            "error": self.error,
        }

    async def start(self, msg: dict[str, Any]) -> None:
        """Start a match: ``order`` and ``chaos`` (levels or specs), ``delay_ms`` between moves."""
        picked = {role: self.services.opponent(msg.get(role), role) for role in AGENTS}
        delay = self._read_delay(msg)
        agents = {role: await self.services.build(spec) for role, (spec, _) in picked.items()}
        self.stop()
        self.state, self.history, self.error = State(), [], None
        self.specs = {role: spec for role, (spec, _) in picked.items()}
        self.labels = {role: label for role, (_, label) in picked.items()}
        self.agents, self.delay = agents, delay
        self.running, self.steps = True, 0
        self.wake.set()
        await self.send(self.view())
        self.task = asyncio.create_task(self._loop())

    def _read_delay(self, msg: dict[str, Any]) -> float:
        delay = msg.get("delay_ms", 500)
        if not isinstance(delay, (int, float)) or isinstance(delay, bool) or not 0 <= delay <= MAX_WATCH_DELAY_MS:
            raise WebError(f"delay_ms must be a number 0..{MAX_WATCH_DELAY_MS}", "delay")
        return delay / 1000

    async def control(self, kind: str, msg: dict[str, Any]) -> None:
        """``pause``, ``resume``, ``step`` (one move while paused) or ``speed`` (delay_ms)."""
        if kind == "speed":
            self.delay = self._read_delay(msg)
            return
        if self.task is None:
            raise WebError("start watching first", "watch_first")
        if self.state.is_terminal:
            raise WebError("the game is over; start a new one", "game_over")
        if kind == "pause":
            self.running = False
            self.wake.clear()
        elif kind == "resume":
            self.running, self.error = True, None
            self.wake.set()
        elif kind == "step":
            if self.running:
                raise WebError("pause first, then step", "pause_first")
            self.steps += 1
            self.error = None
            self.wake.set()
        await self.send(self.view())

    async def _loop(self) -> None:
        limits = self.services.limits
        while not self.state.is_terminal:
            await self.wake.wait()
            stepping = not self.running
            if stepping:
                self.steps -= 1
                if self.steps <= 0:
                    self.steps = 0
                    self.wake.clear()
            role = self.state.to_play
            try:
                agent = self.agents[role]
                if agent is None:
                    agent = self.agents[role] = await self.services.build(self.specs[role])
                action = await self.services.run(
                    agent_move, agent, self.state, timeout=limits.move_time, what="the agent's move"
                )
            except WebError as exc:
                if isinstance(exc, TimedOut):  # it was told to stop; build a fresh one next time
                    self.agents[role] = None
                self.error = exc.payload("watch")
                self.running = False
                self.wake.clear()
                await self.send(self.view())
                continue
            if not self.running and not stepping:  # paused while it thought: nothing moves
                continue
            self.state = self.state.apply(action)
            self.history.append(action)
            if self.state.is_terminal:
                self.running = False
            await self.send(self.view())
            if self.running and not self.state.is_terminal:
                await asyncio.sleep(self.delay)
        self.running = False

    def stop(self) -> None:
        """End the match being played (its search is told to stop)."""
        if self.task is not None:
            self.task.cancel()
            self.task = None
        self.running = False


# -- study ----------------------------------------------------------------------------


def list_games_dir(games_dir: Path | None) -> list[str]:
    """The names of the regular files directly inside ``games_dir`` (none without one)."""
    if games_dir is None or not games_dir.is_dir():
        return []
    root = games_dir.resolve()
    return sorted(
        p.name for p in root.iterdir()
        if p.is_file() and not p.name.startswith(".") and p.resolve().parent == root
    )


def load_upload(name: str, content: str) -> list[SavedGame]:
    """Check an uploaded games file's text as :func:`load_games` checks a file on disk;
    errors name the (already safe) ``name``, never the temporary folder."""
    with tempfile.TemporaryDirectory(prefix="orderchaos-upload-") as tmp:
        path = Path(tmp) / name
        path.write_text(content)
        try:
            return load_games(path)
        except GameFileError as exc:
            raise WebError(str(exc).replace(str(path), name).replace(tmp + os.sep, ""), "game_file") from None


class Study:
    """Saved games from the games folder, an upload or a game played here, and their analysis."""

    def __init__(self, services: Services, send: Send) -> None:
        self.services, self.send = services, send
        self.games: list[SavedGame] = []
        self.task: asyncio.Task | None = None

    async def list_files(self) -> None:
        """Send the names of the files in the games folder."""
        await self.send({"type": "files", "mode": "study", "files": list_games_dir(self.services.games_dir),
                         "games_dir": self.services.games_dir is not None})

    async def open_file(self, msg: dict[str, Any]) -> None:
        """Open a games file by ``name``; only a file directly in the games folder."""
        name = _field(msg, "name", str, "a file name from the games folder")
        folder = self.services.games_dir
        if folder is None:
            raise WebError("the server has no games folder: upload a file instead", "no_games_dir")
        if name not in list_games_dir(folder):
            raise WebError("no file of that name in the games folder; choose one from the list", "no_file")
        path = folder.resolve() / name
        if path.stat().st_size > self.services.limits.max_upload_bytes:
            raise WebError(f"{name} is larger than {self.services.limits.max_upload_bytes} bytes", "too_large")
        try:
            games = await self.services.run(load_games, path, timeout=60, what=f"reading {name}")
        except GameFileError as exc:
            raise WebError(str(exc).replace(str(path), name), "game_file") from None
        await self.loaded(name, games)

    async def upload(self, msg: dict[str, Any]) -> None:
        """Read an uploaded games file: ``name`` and its text ``content``."""
        name = safe_name(_field(msg, "name", str, "the file's name"))
        content = _field(msg, "content", str, "the file's text")
        if len(content.encode()) > self.services.limits.max_upload_bytes:
            raise WebError(f"uploads are limited to {self.services.limits.max_upload_bytes} bytes", "too_large")
        games = await self.services.run(load_upload, name, content, timeout=60, what=f"reading {name}")
        await self.loaded(name, games)

    async def loaded(self, name: str, games: list[SavedGame]) -> None:
        """Make ``games`` the ones studied and send their list."""
        if not games:
            raise WebError(f"{name} holds no games", "no_games")
        self.games = games
        await self.send({
            "type": "games", "mode": "study", "file": name,
            "games": [
                {"index": g.index, "order": g.order, "chaos": g.chaos, "winner": g.record.winner,
                 "length": g.record.length, "opening_plies": g.record.opening_plies,
                 "actions": g.record.actions, "moves": [action_name(a) for a in g.record.actions],
                 "positions": [analysis.board_facts(s) for s in _positions(g.record.actions)]}
                for g in games
            ],
        })

    def analyse(self, msg: dict[str, Any]) -> None:
        """Start the ``analysis`` of game number ``game`` (a newer request replaces it)."""
        index = _field(msg, "game", int, "the game's position in the file")
        if not 0 <= index < len(self.games):
            raise WebError("open a file first" if not self.games else f"game position must be 0..{len(self.games) - 1}",
                           "no_game_there")
        self.stop()
        self.task = asyncio.create_task(self._analyse(index))

    async def _analyse(self, index: int) -> None:
        actions = self.games[index].record.actions
        limit = self.services.limits.study_time
        try:
            result = await self.services.run(
                self.services.study, actions, timeout=60 + limit * (len(actions) + 1) * 4, what="the analysis"
            )
        except WebError as exc:
            await self.send(exc.payload("study"))
            return
        await self.send({"type": "analysis", "mode": "study", "game": index, **result,
                         "network": any(v is not None for v in result["values"][:-1]) or len(actions) == 0})

    def stop(self) -> None:
        """Stop the analysis being computed."""
        if self.task is not None:
            self.task.cancel()
            self.task = None


def _positions(actions: list[int]) -> list[State]:
    states = [State()]
    for a in actions:
        states.append(states[-1].apply(a))
    return states


# -- one connection -------------------------------------------------------------------


class Connection:
    """One tab's games and the dispatch of its messages."""

    def __init__(self, services: Services, hub: Hub, send: Send, address: str = "") -> None:
        self.services = services
        self.play = Play(services, hub, send, address)
        hub.lobby_tabs[self.play.tab_id] = self.play
        hub.pairing = lambda one, two: pair_seeks(hub, one, two)
        self.watch = WatchGame(services, send)
        self.study = Study(services, send)
        self.send = send

    async def hello(self) -> None:
        """The first message: the levels, the suggestions and the limits."""
        limits = self.services.limits
        await self.send({
            "type": "hello",
            "levels": LEVELS,
            "free_specs": limits.free_specs,
            "suggestions": SUGGESTED_SPECS if limits.free_specs else [],
            "limits": {
                "move_time": limits.move_time, "hint_time": limits.hint_time,
                "max_message_bytes": limits.max_message_bytes, "max_upload_bytes": limits.max_upload_bytes,
                "max_sims": limits.max_sims,
            },
            "games_dir": self.services.games_dir is not None,
            "public_url": self.services.public_url,
        })

    async def handle(self, msg: dict[str, Any]) -> None:
        """Carry out one decoded message (:func:`.protocol.decode`); raises WebError."""
        kind = msg["type"]
        handlers: dict[str, Callable[[], Coroutine[Any, Any, None] | None]] = {
            "new_game": lambda: self.play.new_game(msg),
            "play_friend": lambda: self.play.play_friend(msg),
            "open": lambda: self.play.open(msg),
            "leave": self.play.leave,
            "move": lambda: self.play.move(msg),
            "undo": self.play.undo,
            "resign": self.play.resign,
            "retry": self.play.retry,
            "hint": self.play.hint,
            "state": self.play.state,
            "rematch": self.play.rematch,
            "study_game": lambda: self.play.study(self.study),
            "watch": lambda: self.watch.start(msg),
            "pause": lambda: self.watch.control("pause", msg),
            "resume": lambda: self.watch.control("resume", msg),
            "step": lambda: self.watch.control("step", msg),
            "speed": lambda: self.watch.control("speed", msg),
            "list_files": self.study.list_files,
            "open_file": lambda: self.study.open_file(msg),
            "upload": lambda: self.study.upload(msg),
            "analyse": lambda: self.study.analyse(msg),
            "lobby": self.play.show_lobby,
            "challenge": lambda: self.play.challenge(msg),
            "accept": lambda: self.play.accept(msg),
            "cancel": lambda: self.play.cancel(msg),
            "play_anyone": lambda: self.play.play_anyone(msg),
            "identify": lambda: self.play.identify(msg),
            "rename": lambda: self.play.rename(msg),
            "live": lambda: self.play.hub.live.follow(self.play.tab_id, self.send),
            "challenge_bot": lambda: self.play.challenge_bot(msg),
        }
        result = handlers[kind]()
        if result is not None:
            await result

    def close(self) -> None:
        """Stop everything this tab started, leave its game and the lobby."""
        self.play.leave_lobby()
        self.play.leave()
        self.watch.stop()
        self.study.stop()
