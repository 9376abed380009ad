"""Games on the page: against a friend or an agent, with links, seats and spectators.

Each game has an id of 128 random bits and lives in the store (:mod:`.store`). A seat is
held by whoever has its token (kept by the browser); a friend game's creator also gets an
invite secret, which gives the other seat to the first person who opens the invite link.
Anyone else with the id watches. A :class:`LiveGame` is the in-memory copy of a game that
some tab has open: it checks moves, commits them to the store *before* telling the tabs,
runs the agent's moves, and is dropped (its agent stopped) when its last tab leaves; it is
read back from the store when a tab opens it again, after a restart too.

With a shared bus (:mod:`.bus`) several instances serve one site: each change is published,
and every instance that has the game open reads it again from the store and tells its tabs.
An agent's move is computed only where a player of the game has a tab, and the clock sweep
runs where the sweep's lease is held.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from orderchaos.agents.base import Agent
from orderchaos.agents.fallback import fallback_action
from orderchaos.arena.analysis import board_facts, move_list
from orderchaos.web.bots import label_bot
from orderchaos.web.bus import Bus, LocalBus
from orderchaos.web.errors import Busy, StoreAway, TimedOut, WebError
from orderchaos.web.live import LiveBoard
from orderchaos.web.ops import log_game_end
from orderchaos.web.clocks import TimeControl
from orderchaos.web.services import Services, agent_move
from orderchaos.web.store import REASONS, GameStore, StoredGame, StoreUnavailable, token_hash
from orderchaos.web.lobby import Seek
from orderchaos.web.people import seat_people
from orderchaos.envs.rules import AGENTS, CHAOS, ORDER, State, cell_name

log = logging.getLogger("orderchaos.web")
Send = Callable[[dict[str, Any]], Awaitable[None]]
ID_BYTES = 16
"""Random bytes in a game id and an invite secret (128 bits)."""
TOKEN_BYTES = 32
"""Random bytes in a seat token."""
ABORT_AFTER = 60.0
"""Seconds after both seats are taken within which the first move must come, or the game is aborted."""
SWEEP_SECONDS = 0.5
"""How often the server looks for games to abort, open or not."""
SWEEP_LEASE_SECONDS = 3.0
"""How long the lease to sweep lasts unless its holder renews it (a stopped holder's
successor takes over after at most this long)."""
STORE_RETRY_SECONDS = 1.0
"""How often an agent's move is offered again to a game store that does not answer."""


def other(role: str) -> str:
    """The other side."""
    return CHAOS if role == ORDER else ORDER


def read_game(store: GameStore, game_id: str) -> tuple[StoredGame, dict[str, Any]] | None:
    """The game with this id and its people (:func:`seat_people`), or None: all a
    :class:`LiveGame` reads from the store, in one call that may run on a reading thread."""
    stored = store.load(game_id)
    if stored is None:
        return None
    control = stored.clock.control.name if stored.clock is not None else None
    return stored, seat_people(store, game_id, stored.finished, control)


def valid_id(value: object) -> bool:
    """True for a string that could be a game id (URL-safe base64, bounded length)."""
    return isinstance(value, str) and 16 <= len(value) <= 64 and all(
        c.isascii() and (c.isalnum() or c in "-_") for c in value
    )


class Client:
    """One tab's part in a game: its ``send`` and the seat it holds there (None: watching)."""

    def __init__(self, send: Send) -> None:
        self.send = send
        self.seat: str | None = None


class LiveGame:
    """A game some tab has open (see the module docstring)."""

    def __init__(self, hub: "Hub", stored: StoredGame, people: dict[str, Any] | None = None) -> None:
        self.hub, self.services = hub, hub.services
        self.id = stored.id
        self.specs, self.labels = stored.specs, stored.labels
        self.tokens = stored.tokens
        self.invite = stored.invite
        self.rematch = stored.rematch
        self.actions = list(stored.actions)
        self.state = stored.state()
        self.winner, self.reason = stored.winner, stored.reason
        self.clock = stored.clock
        self.clients: list[Client] = []
        self.elsewhere: dict[str, dict[str, Any]] = {}
        """Other instances' tabs on this game: instance -> seats held there, agent thinking."""
        self.agents: dict[str, Agent | None] = {role: None for role in AGENTS}
        self.task: asyncio.Task | None = None
        self.error: dict[str, Any] | None = None
        self.lock = asyncio.Lock()
        self.people: dict[str, Any] = {}
        if people is None:
            self.read_people()
        else:
            self.people = people

    def read_people(self) -> None:
        """Read again who sits in the game, their ratings and, once over, the rating changes."""
        self.people = seat_people(self.services.store, self.id, self.over,
                                  self.clock.control.name if self.clock is not None else None)

    async def reload(self) -> None:
        """Read the game again from the store (another instance changed it), off the event
        loop; nothing changes it here meanwhile (its lock is held)."""
        async with self.lock:
            await self._reread()

    async def _reread(self) -> None:
        """:meth:`reload` for a caller that holds the lock."""
        found = await self.services.read(read_game, self.id)
        if found is None:
            return
        stored, people = found
        self.tokens, self.invite, self.rematch = stored.tokens, stored.invite, stored.rematch
        if stored.actions != self.actions:
            self.error = None
        self.actions = list(stored.actions)
        self.state = stored.state()
        self.winner, self.reason = stored.winner, stored.reason
        self.clock = stored.clock
        self.people = people

    # -- seats ------------------------------------------------------------------------------
    def seat_for(self, token: object) -> str | None:
        """The seat whose token this is, or None."""
        if not isinstance(token, str) or not token:
            return None
        digest = token_hash(token)
        for role in AGENTS:
            stored = self.tokens.get(role)
            if stored is not None and secrets.compare_digest(stored, digest):
                return role
        return None

    def free_seat(self) -> str | None:
        """The seat no person holds and no agent plays, if any."""
        for role in AGENTS:
            if self.tokens.get(role) is None and self.specs.get(role) is None:
                return role
        return None

    def claim(self, invite: object) -> tuple[str, str] | None:
        """Give the free seat to the opener of the invite link: (seat, new token), or None
        when the invite is wrong or already used."""
        seat = self.free_seat()
        if seat is None or self.invite is None or not isinstance(invite, str):
            return None
        if not secrets.compare_digest(invite.encode(), self.invite.encode()):
            return None
        token = secrets.token_urlsafe(TOKEN_BYTES)
        self.tokens[seat] = token_hash(token)
        self.invite = None
        self.hub.services.store.claim_seat(self.id, seat, self.tokens[seat])
        return seat, token

    # -- views ------------------------------------------------------------------------------
    def view(self, client: Client, board: dict[str, Any] | None = None) -> dict[str, Any]:
        """The ``state`` message for one tab (its seat decides what it may do). ``board`` is
        :meth:`shared_view` when the caller already made it for another tab."""
        seat = client.seat
        return {
            **(board if board is not None else self.shared_view()),
            "seat": seat,
            "can_undo": self.can_undo(seat) and not (self.task is not None),
            "invite": self.invite if seat is not None and self.free_seat() is not None else None,
            "can_resign": seat is not None and not self.over,
            "can_retry": self.can_retry(seat),
        }

    def shared_view(self) -> dict[str, Any]:
        """The part of the ``state`` message that every tab of the game gets alike."""
        here = {role: any(c.seat == role for c in self.clients)
                or any(role in there["here"] for there in self.elsewhere.values()) for role in AGENTS}
        agent_turn = not self.over and self.specs.get(self.state.to_play) is not None
        thinking = self.task is not None or any(there["thinking"] for there in self.elsewhere.values())
        return {
            "type": "state",
            "mode": "play",
            "game": self.id,
            "players": {
                role: {"agent": self.labels.get(role) if self.specs.get(role) else None,
                       "bot": label_bot(self.labels.get(role)),
                       "taken": self.tokens.get(role) is not None or self.specs.get(role) is not None,
                       "here": here[role]}
                for role in AGENTS
            },
            **board_facts(self.state),
            "last": self.actions[-1] >> 1 if self.actions else None,
            "moves": move_list(self.actions),
            "thinking": agent_turn and thinking,
            "vs_agent": any(self.specs.get(r) for r in AGENTS),
            "rematch": self.rematch,
            "error": self.error,
            "winner": self.winner,
            "reason": self.reason,
            "clock": self.clock_view(),
            **self.people,
        }

    def clock_view(self) -> dict[str, Any] | None:
        """Both sides' seconds left now and whether a clock runs (None: no clock)."""
        if self.clock is None:
            return None
        now, to_move = self.services.store.clock(), self.state.to_play
        return {
            "control": self.clock.control.name,
            "left": {role: self.clock.left(role, to_move, now) for role in AGENTS},
            "running": None if self.over or self.clock.turn_started is None else to_move,
        }

    @property
    def over(self) -> bool:
        """Whether the game has ended, on the board or off it (resigned, aborted)."""
        return self.reason is not None

    @property
    def ended_off_board(self) -> bool:
        """Whether the game was resigned, lost on time or aborted: no undo brings it back."""
        return self.reason in REASONS[2:]

    def can_undo(self, seat: str | None) -> bool:
        """Undo is for a person playing an agent, once they have moved, and not once the game
        ended off the board (resigned, lost on time)."""
        if seat is None or self.specs.get(other(seat)) is None or self.ended_off_board:
            return False
        probe = State()
        for action in self.actions:
            if probe.to_play == seat:
                return True
            probe = probe.apply(action)
        return False

    async def broadcast(self, publish: bool = True) -> None:
        """Send every tab its view (the board's part made once for all of them), and with
        ``publish`` tell the other instances that the game changed."""
        if publish:
            await self.hub.publish(self)
        self.hub.live.changed(self)
        board = self.shared_view()
        for client in list(self.clients):
            await client.send(self.view(client, board))

    # -- moves ------------------------------------------------------------------------------
    async def move(self, client: Client, action: int) -> None:
        """A person's move from ``client``: only the seat to move may play, and not once its
        time has run out (even before the sweeper has looked)."""
        if await self.flag():
            raise WebError("the game is over", "game_over")
        async with self.lock:
            if self.hub.bus.shared:  # another instance may have changed it a moment ago
                await self._reread()
            if client.seat is None:
                raise WebError("you are watching this game: only its two players can move", "watching")
            if self.over:
                raise WebError("the game is over", "game_over")
            if self.free_seat() is not None:
                raise WebError("wait for the other player to open the invite link", "no_opponent")
            if self.state.to_play != client.seat:
                raise WebError("not your turn", "not_your_turn")
            if action not in self.state.legal_actions():
                cell = cell_name(action >> 1)
                raise WebError(f"illegal move: {cell} is taken; choose an empty cell", "occupied", cell=cell)
            await self._commit(action)
        await self.broadcast()
        self.agent_turn()

    async def _commit(self, action: int) -> None:
        state = self.state.apply(action)
        if self.clock is not None:
            now = self.services.store.clock()
            self.clock.after_move(self.state.to_play, now)
            if state.winner is not None:
                self.clock.stop(state.to_play, now)
        self.services.store.add_move(self.id, len(self.actions), action, state.winner, self.clock)
        self.state = state
        self.actions.append(action)
        self.error = None
        if state.winner is not None:
            self.winner, self.reason = state.winner, "five" if state.winner == ORDER else "full_board"
            log_game_end(self.id, self.winner, self.reason)
            self.read_people()

    async def end(self, winner: str | None, reason: str) -> None:
        """End the game off the board (resign, time, aborted): stored first, then told."""
        async with self.lock:
            if self.over:
                return
            if self.clock is not None:
                self.clock.stop(self.state.to_play, self.services.store.clock())
            self.services.store.finish(self.id, winner, reason, self.clock)
            self.winner, self.reason = winner, reason
            log_game_end(self.id, winner, reason)
            self.read_people()
            self.stop()
        await self.broadcast()

    async def flag(self) -> bool:
        """End the game as lost on time when the side to move has run out; True if it did."""
        now = self.services.store.clock()
        if self.over or self.clock is None or not self.clock.flagged(self.state.to_play, now):
            return False
        await self.end(other(self.state.to_play), "time")
        return True

    def move_budget(self) -> float:
        """Seconds the agent to move may think: the server's cap; on the clock, its time left
        shared over the moves it still has to make, plus its increment, and never more than
        half of what is left (past it, the agent plays its move without search)."""
        cap = self.services.limits.move_time
        if self.clock is None:
            return cap
        left = self.clock.left(self.state.to_play, self.state.to_play, self.services.store.clock())
        moves_to_make = (len(self.state.legal_actions()) // 2 + 1) // 2
        share = left / max(1, moves_to_make) + self.clock.control.increment
        return max(0.001, min(cap, share, left / 2))

    async def resign(self, client: Client) -> None:
        """The tab's player gives up: the other side wins."""
        if client.seat is None:
            raise WebError("you are watching this game: only its two players can resign", "watching")
        if self.over:
            raise WebError("the game is over", "game_over")
        await self.end(other(client.seat), "resign")

    def agent_turn(self) -> None:
        """Start the agent's move when an agent is to move, a tab is open and none is running."""
        if self.over or self.task is not None or not self.clients:
            return
        role = self.state.to_play
        if self.specs.get(role) is None:
            return
        if self.hub.bus.shared and not any(c.seat is not None for c in self.clients):
            return  # the instance where a player has a tab computes it
        self.task = asyncio.create_task(self._agent_move(role, len(self.actions)))

    async def _agent_move(self, role: str, ply: int) -> None:
        spec = self.specs[role]
        assert spec is not None
        try:
            await self.broadcast()  # "thinking"
            agent = self.agents[role]
            if agent is None:
                agent = self.agents[role] = await self.services.build(spec)
            action = await self.services.run(
                agent_move, agent, self.state, timeout=self.move_budget(), what="the opponent's move"
            )
        except WebError as exc:
            if isinstance(exc, TimedOut):  # it was told to stop; build a fresh one next time
                self.agents[role] = None
            if not (isinstance(exc, TimedOut) and self.clock is not None):
                self.task = None
                if len(self.actions) == ply:
                    self.error = exc.payload()
                await self.broadcast()
                return
            # on the clock the agent still moves in time: its move without search
            action = await asyncio.to_thread(fallback_action, self.state)
        except asyncio.CancelledError:
            self.task = None
            raise
        while True:
            try:
                async with self.lock:
                    if self.hub.bus.shared:  # the player's tab on another instance may have had it played there
                        await self._reread()
                    if len(self.actions) != ply or self.over:  # taken back or played meanwhile
                        self.task = None
                        return
                    await self._commit(action)
                    self.task = None
                break
            except StoreUnavailable as exc:  # told, and committed once the database is back
                if self.error is None or self.error["code"] != "store_unavailable":
                    log.warning("game=%s the opponent's move waits for the game store: %s", self.id, exc)
                self.error = StoreAway().payload()
                await self.broadcast()
                await asyncio.sleep(STORE_RETRY_SECONDS)
        await self.broadcast()
        self.agent_turn()

    def can_retry(self, seat: str | None) -> bool:
        """Whether the player in ``seat`` may ask the agent to move again: its move failed
        (an error shown, nothing running) and it is still to move."""
        return (seat is not None and self.error is not None and self.task is None and not self.over
                and self.specs.get(self.state.to_play) is not None)

    async def retry(self, client: Client) -> None:
        """Ask the agent whose move failed to move again (the page's retry button)."""
        if not self.can_retry(client.seat):
            raise WebError("there is no failed move of the computer to ask again", "no_retry")
        self.error = None
        self.agent_turn()
        await self.broadcast()

    async def undo(self, client: Client) -> None:
        """Take back the person's last move (and the agent's replies after it)."""
        seat = client.seat
        if self.ended_off_board:
            raise WebError("the game is over", "game_over")
        if not self.can_undo(seat):
            raise WebError("nothing to undo: undo is for your own moves against an agent", "no_undo")
        if self.task is not None:
            raise WebError("wait for the opponent to move", "wait")
        async with self.lock:
            states = [State()]
            for action in self.actions:
                states.append(states[-1].apply(action))
            keep = max(p for p in range(len(self.actions)) if states[p].to_play == seat)
            if self.clock is not None:  # every move but the first earned its mover the increment
                rewarded = [states[p].to_play for p in range(max(1, keep), len(self.actions))]
                self.clock.take_back(self.state.to_play, rewarded, self.services.store.clock(), started=keep > 0)
            self.services.store.take_back(self.id, keep, self.clock)
            self.actions = self.actions[:keep]
            self.state = states[keep]
            self.winner = self.reason = None
            self.error = None
        await self.broadcast()

    def stop(self) -> None:
        """Stop the agent's move being computed (its thread is told to stop)."""
        if self.task is not None:
            self.task.cancel()
            self.task = None


class Hub:
    """The games that tabs have open, and how tabs create, open and leave them."""

    def __init__(self, services: Services, bus: Bus | None = None) -> None:
        self.services = services
        self.bus = bus or LocalBus()
        self.games: dict[str, LiveGame] = {}
        self.lobby_tabs: dict[str, Any] = {}  # every open tab's Play by its tab id: each sees the lobby live
        self.bots: Any = None  # the bots' hub (.bot_hub.BotHub) when the site takes bots
        self.pending: set[asyncio.Task] = set()  # messages sent after a tab left
        self.sweeper: asyncio.Task | None = None
        self.store_away = False  # the last sweep met a game store that did not answer
        self.pairing: Callable[[Seek, Seek], Awaitable[None]] | None = None
        """Puts two tabs that "play anyone" paired after waiting into a game (:mod:`.sessions`)."""
        self.live = LiveBoard(self)
        """The games in progress, for the start page."""

    async def sweep(self) -> None:
        """Abort every game, open in a tab or not, whose first move did not come within
        :data:`ABORT_AFTER` seconds of both seats being taken, end every game whose side
        to move has run out of time as lost on time, and pair the tabs waiting to "play
        anyone" whose wait widened their rating window enough."""
        store = self.services.store
        if not await self.bus.lease("sweep", SWEEP_LEASE_SECONDS):
            return  # another instance sweeps
        if self.pairing is not None:
            try:
                for one, two in await self.bus.pair_waiting():
                    await self.pairing(one, two)
            except WebError:  # the bus is reconnecting: the next sweep pairs them
                pass
        for game_id in store.clocks_out(store.clock()):
            live = self.games.get(game_id)
            if live is not None:
                await live.flag()
                continue
            stored = store.load(game_id)
            if stored is None or stored.clock is None or stored.finished:
                continue
            to_move = stored.state().to_play
            now = store.clock()
            if stored.clock.flagged(to_move, now):
                stored.clock.stop(to_move, now)
                store.finish(game_id, other(to_move), "time", stored.clock)
                log_game_end(game_id, other(to_move), "time")
                await self.bus.publish({"kind": "game", "game": game_id, "here": [], "thinking": False})
        for game_id in store.unstarted_since(store.clock() - ABORT_AFTER):
            live = self.games.get(game_id)
            if live is not None:
                await live.end(None, "aborted")
            else:
                store.finish(game_id, None, "aborted")
                log_game_end(game_id, None, "aborted")
                await self.bus.publish({"kind": "game", "game": game_id, "here": [], "thinking": False})

    async def publish(self, game: LiveGame, ask: bool = False) -> None:
        """Tell the other instances that ``game`` changed, with the seats held by this
        instance's tabs and whether its agent is thinking; ``ask``: and ask those that hold
        the game to say the same of theirs (this instance has just read it from the store and
        missed what they said before)."""
        here = sorted({c.seat for c in game.clients if c.seat is not None})
        event = {"kind": "game", "game": game.id, "here": here, "thinking": game.task is not None}
        await self.bus.publish({**event, "ask": True} if ask else event)

    async def on_event(self, event: dict[str, Any]) -> None:
        """Another instance's event: a game it changed is read again from the store and
        shown to this instance's tabs; the lobby changed; a tab here was paired there."""
        kind = event.get("kind")
        if kind == "game":
            game = self.games.get(event.get("game"))  # type: ignore[arg-type]
            if game is None:
                return
            game.elsewhere[event["from"]] = {"here": list(event.get("here", [])),
                                             "thinking": bool(event.get("thinking"))}
            await game.reload()
            await game.broadcast(publish=False)
            game.agent_turn()
            if event.get("ask"):
                await self.publish(game)
        elif kind == "lobby":
            for tab in list(self.lobby_tabs.values()):
                await tab.show_lobby()
        elif kind == "live":
            self.live.elsewhere()
        elif isinstance(kind, str) and kind.startswith("bot") and self.bots is not None:
            await self.bots.on_event(event)
        elif kind == "paired":
            tab = self.lobby_tabs.get(event.get("tab"))  # type: ignore[arg-type]
            if tab is not None:
                await tab.paired(self.get(event.get("game")), event["seat"], event["token"])

    async def bus_lost(self) -> None:
        """The bus went away: every tab is told the site is reconnecting."""
        from orderchaos.web.bus import reconnecting

        notice = reconnecting().payload()
        for tab in list(self.lobby_tabs.values()):
            await tab.send(notice)

    async def bus_back(self) -> None:
        """The bus is back: every open game is read again from the store (what changed
        meanwhile on other instances) and every tab gets its view."""
        self.live.bus_back()
        for game in list(self.games.values()):
            await game.reload()
            await game.broadcast()
            game.agent_turn()
        for tab in list(self.lobby_tabs.values()):
            if tab.game is None:
                await tab.state()
            await tab.show_lobby()

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(SWEEP_SECONDS)
            try:
                await self.sweep()
            except StoreUnavailable as exc:  # the database is away: sweep again once it is back
                if not self.store_away:  # said once, not every half second
                    log.warning("clock sweeps wait for the game store: %s", exc)
                self.store_away = True
                continue
            if self.store_away:
                log.info("the game store answers again; clock sweeps go on")
                self.store_away = False
            await self.forget_stopped_instances()

    async def forget_stopped_instances(self) -> None:
        """Stop showing the players whose tabs were on an instance that stopped without
        saying so (killed): their games' tabs here are told."""
        seen = {name for game in self.games.values() for name in game.elsewhere}
        if not seen:
            return
        stopped = seen - await self.bus.alive(seen)
        for game in list(self.games.values()):
            if stopped & game.elsewhere.keys():
                for name in stopped:
                    game.elsewhere.pop(name, None)
                await game.broadcast(publish=False)

    def start_sweeper(self) -> None:
        """Run :meth:`sweep` every :data:`SWEEP_SECONDS` from now on (once per hub)."""
        if self.sweeper is None or self.sweeper.done():
            self.sweeper = asyncio.create_task(self._sweep_forever())

    def _new_id(self) -> str:
        return secrets.token_urlsafe(ID_BYTES)

    async def create(
        self, seat: str, specs: dict[str, str | None], labels: dict[str, str | None], *, invite: bool,
        token: str | None = None, control: TimeControl | None = None,
    ) -> tuple[LiveGame, str]:
        """A new game with ``seat`` held by a new (or the given) token: returns it and the token."""
        if len(self.games) >= self.services.limits.max_games:
            raise Busy("too many games are open")
        token = token or secrets.token_urlsafe(TOKEN_BYTES)
        tokens = {role: token_hash(token) if role == seat else None for role in AGENTS}
        game_id = self._new_id()
        secret = secrets.token_urlsafe(ID_BYTES) if invite else None
        self.services.store.create(game_id, specs, labels, tokens, secret, control)
        stored = self.services.store.load(game_id)
        assert stored is not None
        game = self.games[game_id] = LiveGame(self, stored)
        return game, token

    async def create_seated(self, seat: str, control: TimeControl | None) -> tuple[LiveGame, str, str]:
        """A new game between two people, both seats taken at once: the game, ``seat``'s
        token and the other seat's."""
        nobody = {role: None for role in AGENTS}
        game, token = await self.create(seat, nobody, nobody, invite=False, control=control)
        other_token = secrets.token_urlsafe(TOKEN_BYTES)
        game.tokens[other(seat)] = token_hash(other_token)
        self.services.store.claim_seat(game.id, other(seat), game.tokens[other(seat)])
        return game, token, other_token

    def get(self, game_id: object) -> LiveGame:
        """The game with this id, from memory or the store; WebError when there is none."""
        if not valid_id(game_id):
            raise WebError("no such game: check the link", "no_game")
        assert isinstance(game_id, str)
        game = self.games.get(game_id)
        if game is None:
            stored = self.services.store.load(game_id)
            if stored is None:
                raise WebError("no such game: check the link", "no_game")
            if len(self.games) >= self.services.limits.max_games:
                raise Busy("too many games are open")
            game = self.games[game_id] = self._read_in(LiveGame(self, stored))
        return game

    async def open(self, game_id: object) -> LiveGame:
        """:meth:`get`, with a game not in memory read from the store off the event loop (the
        many tabs that come back at once to an instance just started)."""
        if not valid_id(game_id) or game_id in self.games:
            return self.get(game_id)
        assert isinstance(game_id, str)
        found = await self.services.read(read_game, game_id)
        game = self.games.get(game_id)  # another tab may have opened it meanwhile
        if game is not None:
            return game
        if found is None:
            raise WebError("no such game: check the link", "no_game")
        if len(self.games) >= self.services.limits.max_games:
            raise Busy("too many games are open")
        game = self.games[game_id] = self._read_in(LiveGame(self, *found))
        return game

    def _read_in(self, game: LiveGame) -> LiveGame:
        """``game``, just read from the store: the other instances are asked which of its seats
        their tabs hold (what they said before it was read here was not kept)."""
        self._later(self.publish(game, ask=True))
        return game

    def attach(self, game: LiveGame, client: Client) -> None:
        """Add a tab to a game (and start the agent's move it may be waiting for)."""
        self.start_sweeper()
        if client not in game.clients:
            game.clients.append(client)
        self.games.setdefault(game.id, game)
        game.agent_turn()

    def detach(self, game: LiveGame, client: Client) -> None:
        """Remove a tab; the last one out stops the game's work and drops it from memory."""
        if client in game.clients:
            game.clients.remove(client)
        self.live.changed(game)
        if not game.clients:
            game.stop()
            if self.games.get(game.id) is game:
                del self.games[game.id]
            if client.seat is not None and self.bus.shared:  # the other instances' tabs learn it
                self._later(self.publish(game))
        elif client.seat is not None and not any(c.seat == client.seat for c in game.clients):
            self._later(game.broadcast())  # the tabs still there learn that this player has left

    def _later(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` after this call (nothing when no event loop runs: nobody to tell)."""
        try:
            task = asyncio.get_running_loop().create_task(work)
        except RuntimeError:
            work.close()
            return
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    async def rematch(self, game: LiveGame, client: Client) -> LiveGame:
        """The rematch of a finished game, sides swapped (each seat's token moves with its
        holder); created by the first who asks, found by the others."""
        if client.seat is None:
            raise WebError("only the players can ask for a rematch", "watching")
        if not game.over:
            raise WebError("the game is not over yet", "not_over")
        if game.rematch is not None:
            return self.get(game.rematch)
        if len(self.games) >= self.services.limits.max_games:
            raise Busy("too many games are open")
        swapped = {role: game.tokens[other(role)] for role in AGENTS}
        specs = {role: game.specs[other(role)] for role in AGENTS}
        labels = {role: game.labels[other(role)] for role in AGENTS}
        new_id = self._new_id()
        store = self.services.store
        control = game.clock.control if game.clock is not None else None
        store.create(new_id, specs, labels, swapped, None, control)
        seats, category = store.game_players(game.id)
        if any(seats.values()):  # each player keeps their seat's token, on the other side
            store.seat_players(new_id, {role: seats[other(role)] for role in AGENTS}, category)
        store.set_rematch(game.id, new_id)
        game.rematch = new_id
        stored = store.load(new_id)
        assert stored is not None
        rematch = self.games[new_id] = LiveGame(self, stored)
        return rematch
