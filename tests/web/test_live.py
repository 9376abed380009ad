"""The games being played now (:mod:`orderchaos.web.live`): ``GET /api/games/live`` lists a
game while it runs and drops it when it ends; a tab that follows the list is pushed it with
how many wait to be paired and how many play; the highest-rated game leads, else the longest;
with two instances on one Redis, a game on one is in the other's list. Through Starlette's
TestClient, the lobby in memory and in Redis."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette.testclient", reason="the web extra is not installed: pip install -e '.[dev]'")

from helpers import AppSite, RedisServer, receive, receive_json, wait_for  # noqa: E402

from orderchaos.web.app import create_app  # noqa: E402
from orderchaos.web.bus import Bus  # noqa: E402
from orderchaos.web.live import merged, people_playing  # noqa: E402
from orderchaos.web.services import Limits  # noqa: E402
from orderchaos.web.store import GameStore  # noqa: E402

FAST = Limits(move_time=5.0, hint_time=0.3, study_time=0.05, rate=1000, burst=1000)


class Site(AppSite):
    """An app, its sockets and its live list."""

    def __init__(self, bus: Bus | None = None, db: Path | str = ":memory:") -> None:
        super().__init__(create_app(None, FAST, bus=bus, db=GameStore(db) if db != ":memory:" else db))

    def live(self) -> list[dict[str, Any]]:
        answer = self.client.get("/api/games/live")
        assert answer.status_code == 200 and answer.headers["cache-control"] == "no-store"
        return answer.json()


def friend_game(creator: Any, friend: Any, time_control: str = "none") -> str:
    """``creator`` takes Order in a new friend game, ``friend`` Chaos through the invite."""
    creator.send_json({"type": "play_friend", "side": "order", "time_control": time_control})
    game = receive(creator, "joined")["game"]
    invite = receive(creator, "state")["invite"]
    friend.send_json({"type": "open", "game": game, "invite": invite})
    assert receive(friend, "joined")["seat"] == "chaos"
    return game


def listed(site: Site, game: str, moves: int | None = None) -> dict[str, Any] | None:
    """``game``'s item in the site's live list (with ``moves`` moves, when given), or None."""
    return next((item for item in site.live() if item["id"] == game
                 and (moves is None or item["moves"] == moves)), None)


def pushed(ws: Any, condition: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The first ``live`` message pushed to ``ws`` that meets ``condition``."""
    for _ in range(200):
        msg = receive_json(ws)
        if msg["type"] == "live" and condition(msg):
            return msg
    raise AssertionError("no such live message came")


def test_a_game_is_listed_while_it_runs_and_dropped_when_it_ends(bus: Callable[[], Bus | None]) -> None:
    with Site(bus()) as site:
        creator, friend, watcher = site.connect(), site.connect(), site.connect()
        assert site.live() == []
        creator.send_json({"type": "play_friend", "side": "order", "time_control": "3+2"})
        game = receive(creator, "joined")["game"]
        invite = receive(creator, "state")["invite"]
        watcher.send_json({"type": "open", "game": game})
        receive(watcher, "joined")
        creator.send_json({"type": "state"})
        receive(creator, "state")
        assert listed(site, game) is None  # a seat is still free: not a game in progress yet
        friend.send_json({"type": "open", "game": game, "invite": invite})
        receive(friend, "joined")
        creator.send_json({"type": "move", "cell": 14, "symbol": "X"})
        item = wait_for(lambda: listed(site, game, moves=1), "the game listed with its move", seconds=30)
        assert item == {"id": game, "order_name": None, "chaos_name": None, "order_rating": None,
                        "chaos_rating": None, "order_agent": False, "chaos_agent": False,
                        "time_control": "3+2", "moves": 1, "to_play": "chaos"}
        friend.send_json({"type": "resign"})
        wait_for(lambda: listed(site, game) is None, "the ended game dropped", seconds=30)


def test_a_game_against_the_computer_is_listed_and_goes_when_its_player_leaves(
        bus: Callable[[], Bus | None]) -> None:
    with Site(bus()) as site:
        player = site.connect()
        player.send_json({"type": "new_game", "side": "order", "opponent": "random", "time_control": "1+0"})
        game = receive(player, "joined")["game"]
        item = wait_for(lambda: listed(site, game), "the computer game listed", seconds=30)
        assert (item["order_agent"], item["chaos_agent"], item["chaos_name"], item["order_name"]) == (
            False, True, "random", None)
        assert item["time_control"] == "1+0" and item["chaos_rating"] is None
        player.send_json({"type": "leave"})
        wait_for(lambda: listed(site, game) is None, "the left game dropped", seconds=30)


def test_a_follower_is_pushed_the_games_and_how_many_seek_and_play(bus: Callable[[], Bus | None]) -> None:
    with Site(bus()) as site:
        follower, first, second, third = (site.connect() for _ in range(4))
        follower.send_json({"type": "live"})
        assert receive(follower, "live") == {"type": "live", "games": [], "count": 0, "seeking": 0, "playing": 0}
        first.send_json({"type": "play_anyone", "time_control": "1+0"})
        pushed(follower, lambda msg: msg["seeking"] == 1 and msg["playing"] == 0)
        third.send_json({"type": "new_game", "side": "chaos", "opponent": "random"})
        pushed(follower, lambda msg: msg["seeking"] == 1 and msg["playing"] == 1 and msg["count"] == 1)
        second.send_json({"type": "play_anyone", "time_control": "1+0"})
        paired = receive(second, "joined")["game"]
        now = pushed(follower, lambda msg: msg["seeking"] == 0 and msg["playing"] == 3)
        assert paired in [item["id"] for item in now["games"]] and now["count"] == 2
        third.close()  # its game against the computer goes with its only player
        pushed(follower, lambda msg: msg["playing"] == 2 and msg["count"] == 1)
        first.send_json({"type": "play_anyone", "time_control": "5+3"})
        pushed(follower, lambda msg: msg["seeking"] == 1 and msg["playing"] == 2)
        first.send_json({"type": "cancel"})
        pushed(follower, lambda msg: msg["seeking"] == 0)


def test_the_highest_rated_game_leads_else_the_one_with_most_moves() -> None:
    def item(game: str, moves: int, order: float | None = None, chaos: float | None = None) -> dict[str, Any]:
        return {"id": game, "moves": moves, "order_rating": order, "chaos_rating": chaos,
                "order_agent": False, "chaos_agent": chaos is None and game == "c"}

    unrated = [item("a", 3), item("b", 9), item("c", 5)]
    assert [g["id"] for g in merged([unrated])] == ["b", "c", "a"]
    rated = [item("a", 3, 1500, 1720), item("b", 9, 1600, 1610), item("c", 30)]
    assert [g["id"] for g in merged([rated])] == ["a", "b", "c"]  # the higher of the two ratings
    # a game open on two instances is listed once, as its freshest item says
    both = merged([[item("a", 3)], [item("a", 4), item("b", 1)]])
    assert [(g["id"], g["moves"]) for g in both] == [("a", 4), ("b", 1)]
    assert people_playing(merged([unrated])) == 5


def test_a_game_on_one_instance_is_in_the_live_list_of_another(tmp_path: Path, redis_url: str) -> None:
    from orderchaos.web.bus import RedisBus

    db = tmp_path / "games.sqlite3"
    with Site(RedisBus(redis_url), db) as a, Site(RedisBus(redis_url), db) as b:
        follower = b.connect()
        follower.send_json({"type": "live"})
        assert receive(follower, "live")["games"] == []
        order, chaos = a.connect(), a.connect()  # both players' tabs on A
        game = friend_game(order, chaos)
        order.send_json({"type": "move", "cell": 0, "symbol": "X"})
        assert wait_for(lambda: listed(b, game, moves=1), "A's game in B's list", seconds=30)
        told = pushed(follower, lambda msg: [g["id"] for g in msg["games"]] == [game])
        assert told["playing"] == 2
        chaos.send_json({"type": "resign"})
        wait_for(lambda: listed(b, game) is None, "the ended game gone from B's list", seconds=30)
        pushed(follower, lambda msg: msg["games"] == [])


def test_an_instance_says_its_games_again_when_redis_comes_back_empty(tmp_path: Path) -> None:
    """Redis restarted holds nothing: once it is back, the game open on A is in B's list again
    (while Redis is away, the list is refused with 503, not answered stale)."""
    from orderchaos.web.bus import RedisBus

    if not Path(RedisServer.BINARY).exists():
        pytest.skip(f"{RedisServer.BINARY} is missing: install it with `apt-get install -y redis-server`")
    redis_server = RedisServer(tmp_path / "redis")
    redis_server.start()
    db = tmp_path / "games.sqlite3"
    try:
        with Site(RedisBus(redis_server.url()), db) as a, Site(RedisBus(redis_server.url()), db) as b:
            order, chaos = a.connect(), a.connect()
            game = friend_game(order, chaos)
            wait_for(lambda: listed(b, game), "A's game in B's list", seconds=30)
            redis_server.stop()
            wait_for(lambda: b.client.get("/api/games/live").status_code == 503, "the list refused", seconds=30)
            redis_server.start()
            wait_for(lambda: b.client.get("/healthz").status_code == 200, "B ready again", seconds=30)
            wait_for(lambda: listed(b, game), "A's game in B's list again", seconds=30)
    finally:
        redis_server.stop()
