"""Reads of the game store off the event loop: a game a tab opens (or one read again after
another instance changed it) is read on a reading thread with its own connection, and a move
made here meanwhile is never undone by that read. The load tool's player of a game against
the computer asks again when its connection goes before the game was joined."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("websockets.asyncio.server", reason="the web extra is not installed: pip install -e '.[dev]'")

from orderchaos.web import games, load  # noqa: E402
from orderchaos.web.games import Client, Hub  # noqa: E402
from orderchaos.web.load import GameLog, Resumes  # noqa: E402
from orderchaos.web.services import Limits, Services  # noqa: E402
from orderchaos.web.store import GameStore  # noqa: E402

FAST = Limits(move_time=5.0, hint_time=0.3, study_time=0.05, rate=1000, burst=1000)


def test_a_game_opened_on_a_fresh_instance_is_read_on_a_reading_thread_with_its_own_connection(
        store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[threading.Thread, GameStore]] = []
    real_read = games.read_game

    def recorded(store: GameStore, game_id: str) -> Any:
        seen.append((threading.current_thread(), store))
        return real_read(store, game_id)

    monkeypatch.setattr(games, "read_game", recorded)
    set_ups: list[GameStore] = []
    real_set_up = GameStore.set_up

    def counted_set_up(store: GameStore) -> None:
        set_ups.append(store)
        real_set_up(store)

    monkeypatch.setattr(GameStore, "set_up", counted_set_up)

    async def scenario() -> None:
        first, second = (Services(FAST, None, GameStore(store_url)) for _ in range(2))
        try:
            game, _, _ = await Hub(first).create_seated("order", None)
            player = Client(lambda message: asyncio.sleep(0))
            player.seat = "order"
            await game.move(player, 7)
            opened = await Hub(second).open(game.id)  # the other instance, just started
            assert opened.actions == [7] and opened.id == game.id
            assert opened.people["people"] == {"order": None, "chaos": None}  # read with the game
            assert len(seen) == 1
            thread, store = seen[0]
            assert thread is not threading.current_thread() and store is not second.store
            # the reading connection skips the setup (and SQLite's check of the whole file)
            assert set_ups == [first.store, second.store]
        finally:
            for services in (first, second):
                services.close()
                services.store.close()

    asyncio.run(asyncio.wait_for(scenario(), 60))


def test_a_move_made_here_while_the_game_is_read_again_is_not_undone_by_the_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read, release = threading.Event(), threading.Event()
    real_read = games.read_game

    def slow_read(store: GameStore, game_id: str) -> Any:
        found = real_read(store, game_id)  # the state before the move below
        read.set()
        release.wait(30)
        return found

    async def scenario() -> None:
        services = Services(FAST, None, GameStore(tmp_path / "games.sqlite3"))
        try:
            hub = Hub(services)
            game, _, _ = await hub.create_seated("order", None)
            player = Client(lambda message: asyncio.sleep(0))
            player.seat = "order"
            monkeypatch.setattr(games, "read_game", slow_read)
            reading = asyncio.create_task(game.reload())
            assert await asyncio.to_thread(read.wait, 30)
            moving = asyncio.create_task(game.move(player, 7))
            for _ in range(50):  # the move gets every chance to run; it must wait for the read
                await asyncio.sleep(0)
            release.set()
            await reading
            await moving
            assert game.actions == [7] and services.store.load(game.id).actions == [7]
        finally:
            release.set()
            services.close()
            services.store.close()

    asyncio.run(asyncio.wait_for(scenario(), 60))


async def _flaky_site(closes: int, asked: list[dict[str, Any]], refusal: str | None = None) -> tuple[Any, str]:
    """A scripted server: its first ``closes`` connections close once asked for a game (with
    ``refusal``, after refusing it with that error code); the next joins the player and ends
    the game at once."""
    from websockets.asyncio.server import serve

    async def handler(ws: Any) -> None:
        await ws.send(json.dumps({"type": "hello"}))
        asked.append(json.loads(await ws.recv()))
        if len(asked) <= closes:
            if refusal is not None:
                await ws.send(json.dumps({"type": "error", "code": refusal, "message": "refused"}))
                await ws.wait_closed()
            return
        await ws.send(json.dumps({"type": "joined", "game": "g1", "seat": "order", "token": "t"}))
        await ws.send(json.dumps({"type": "state", "mode": "play", "game": "g1", "moves": [],
                                  "winner": "chaos", "clock": None}))
        await ws.wait_closed()

    server = await serve(handler, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"ws://127.0.0.1:{port}/ws"


@pytest.mark.parametrize("kind", ["new_game", "play_friend"])
def test_a_game_lost_before_it_was_joined_is_asked_for_again_against_the_computer_only(
        kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import random

    monkeypatch.setattr(load, "RESUME_FIRST_S", 0.001)

    async def scenario() -> None:
        asked: list[dict[str, Any]] = []
        server, url = await _flaky_site(2, asked)
        log, resumes = GameLog("agent"), Resumes()
        first = {"type": kind, "side": "order"}
        try:
            if kind == "play_friend":  # its friend waits for the invite: nothing to ask again
                with pytest.raises(RuntimeError, match="connection lost"):
                    await load._player(url, log, random.Random(0), first=first, stall=30, resumes=resumes)
                assert len(asked) == 1
                return
            await load._player(url, log, random.Random(0), first=first, stall=30, resumes=resumes)
            assert asked == [first, first, first] and resumes.asked_again == 2
            assert log.game == "g1" and log.winner == "chaos" and resumes.times == []
        finally:
            server.close()
            await server.wait_closed()

    asyncio.run(asyncio.wait_for(scenario(), 60))


def test_asking_again_ends_after_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    import random

    monkeypatch.setattr(load, "RESUME_FIRST_S", 0.001)

    async def scenario() -> None:
        asked: list[dict[str, Any]] = []
        server, url = await _flaky_site(100, asked)
        try:
            with pytest.raises(RuntimeError, match="connection lost"):
                await load._player(url, GameLog("agent"), random.Random(0), first={"type": "new_game"},
                                   stall=30, resumes=Resumes())
            assert len(asked) == load.ASK_AGAIN_MOST + 1
        finally:
            server.close()
            await server.wait_closed()

    asyncio.run(asyncio.wait_for(scenario(), 60))


def test_a_game_against_the_computer_refused_while_the_bus_reconnects_is_asked_for_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import random

    monkeypatch.setattr(load, "RESUME_FIRST_S", 0.001)

    async def scenario() -> None:
        asked: list[dict[str, Any]] = []
        server, url = await _flaky_site(1, asked, refusal="reconnecting")
        resumes = Resumes()
        try:
            log = GameLog("agent")
            await load._player(url, log, random.Random(0), first={"type": "new_game"}, stall=30, resumes=resumes)
            assert len(asked) == 2 and resumes.asked_again == 1 and log.winner == "chaos"
            asked.clear()
            server.close()
            await server.wait_closed()
            server, url = await _flaky_site(1, asked, refusal="reconnecting")
            with pytest.raises(RuntimeError, match="refused"):  # a friend's game: nothing to ask again
                await load._player(url, GameLog("friend"), random.Random(0), first={"type": "play_friend"},
                                   stall=30, resumes=resumes)
        finally:
            server.close()
            await server.wait_closed()

    asyncio.run(asyncio.wait_for(scenario(), 60))
