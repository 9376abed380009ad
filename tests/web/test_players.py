"""Players without an account and rated games: display names (generated, changed, checked,
unique without regard to case), ratings per category applied exactly once in the transaction
that ends a game (on both store backends), "play anyone" pairing by rating, and the player
API, through the library, the store and Starlette's TestClient."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette.testclient", reason="the web extra is not installed: pip install -e '.[dev]'")

from orderchaos.web.app import create_app  # noqa: E402
from orderchaos.web.clocks import PRESETS  # noqa: E402
from orderchaos.web.games import ABORT_AFTER  # noqa: E402
from orderchaos.web.lobby import Lobby, Seek, best_match  # noqa: E402
from orderchaos.web.players import (  # noqa: E402
    PAIRING_WIDENING, PAIRING_WINDOW, category_of, generated_name, name_refusal, rate_game,
)
from orderchaos.web.services import Limits  # noqa: E402
from orderchaos.web.store import GameStore, copy_store, table_counts  # noqa: E402
from orderchaos.arena.glicko2 import Rating  # noqa: E402

from helpers import AppSite, receive  # noqa: E402

FAST = Limits(move_time=5, hint_time=0.2)
ALICE, BOB, CAROL = "alice-player-id-0001", "bob-player-id-000002", "carol-player-id-0003"
ORDER_FIVE = [0, 30, 1, 31, 2, 32, 3, 33, 4]
"""Cells of a game Order wins: X on a1..e1 (cells 0..4), Chaos's O on a6..d6 between them."""


# -- names ----------------------------------------------------------------------------------


def test_a_generated_name_is_readable_and_the_same_for_the_same_id() -> None:
    name = generated_name(ALICE)
    assert name == generated_name(ALICE) != generated_name(BOB)
    assert name_refusal(name) is None and name[0].isupper() and name[-2:].isdigit()
    assert generated_name(ALICE, 1) != name


@pytest.mark.parametrize("name,code", [
    ("ab", "name_length"), ("x" * 21, "name_length"), (None, "name_length"),
    ("two words", "name_chars"), ("_under", "name_chars"), ("Åsa", "name_chars"),
    ("RoboBot", "name_reserved"), ("killerbot99", "name_reserved"), ("Heuristic", "name_reserved"),
    ("hard", "name_reserved"), ("Strongest7", "name_reserved"), ("MCTS", "name_reserved"),
])
def test_a_name_that_is_too_short_odd_or_imitates_the_house_is_refused(name: Any, code: str) -> None:
    assert name_refusal(name) == code


def test_names_of_people_pass() -> None:
    for name in ("Ada", "grace_hopper", "Bot-ham", "Robotics7", "x" * 20):
        assert name_refusal(name) is None, name


def test_a_first_visit_gets_a_name_and_a_name_is_unique_whatever_its_case(store_url: str) -> None:
    store = GameStore(store_url)
    try:
        first = store.ensure_player(ALICE)
        assert first == generated_name(ALICE) and store.ensure_player(ALICE) == first
        assert store.rename_player(ALICE, "Ada")
        store.ensure_player(BOB)
        assert not store.rename_player(BOB, "ADA")  # taken, whatever the case
        assert store.player_name(BOB) == generated_name(BOB)
        assert store.rename_player(ALICE, "ADA")  # one's own name in another case
        assert store.player_id("ada") == ALICE and store.player_name(ALICE) == "ADA"
        # a generated name that someone chose is skipped for the next choice
        assert store.rename_player(BOB, generated_name(CAROL))
        assert store.ensure_player(CAROL) == generated_name(CAROL, 1)
    finally:
        store.close()


# -- ratings in the store ---------------------------------------------------------------------


def rated_game(store: GameStore, game_id: str, category: str | None = "bullet",
               players: tuple[str, str] = (ALICE, BOB)) -> None:
    """A new game between two people on the 1+0 clock, ``players`` as (Order, Chaos)."""
    store.ensure_player(players[0])
    store.ensure_player(players[1])
    store.create(game_id, {"order": None, "chaos": None}, {"order": None, "chaos": None},
                 {"order": "a" * 64, "chaos": "b" * 64}, None, PRESETS["1+0"])
    store.seat_players(game_id, {"order": players[0], "chaos": players[1]}, category)


def play_order_five(store: GameStore, game_id: str) -> None:
    for ply, cell in enumerate(ORDER_FIVE):
        action = 2 * cell + (0 if ply % 2 == 0 else 1)
        store.add_move(game_id, ply, action, "order" if ply == len(ORDER_FIVE) - 1 else None)


def test_a_won_game_rates_the_winner_up_and_the_loser_down_once(store_url: str) -> None:
    store = GameStore(store_url)
    try:
        rated_game(store, "g" * 22)
        play_order_five(store, "g" * 22)
        (alice, games), (bob, _) = store.rating(ALICE, "bullet"), store.rating(BOB, "bullet")
        assert games == 1 and alice.r > 1500 > bob.r and alice.rd < 350
        assert (alice, bob) == rate_game(Rating(), Rating(), "order")
        assert store.rating(ALICE, "blitz") == (Rating(), 0)  # another category: untouched
        changes = store.rating_changes("g" * 22)
        assert changes[ALICE][0] == 1500 and changes[ALICE][1] == alice.r and changes[BOB][1] == bob.r
        # the game cannot be ended again, and rating it again changes nothing
        store.finish("g" * 22, "chaos", "resign")
        with store.db.transaction():
            store._rate("g" * 22, "order", store.clock())
        assert store.rating(ALICE, "bullet") == (alice, 1) and store.rating(BOB, "bullet") == (bob, 1)
        games_of = store.player_games(BOB)
        assert [(g["id"], g["seat"], g["opponent"], g["winner"], g["reason"]) for g in games_of] == [
            ("g" * 22, "chaos", ALICE, "order", "five")]
    finally:
        store.close()


def test_resignation_and_time_are_rated_an_aborted_or_casual_game_is_not(store_url: str) -> None:
    store = GameStore(store_url)
    try:
        for game_id, category in (("resigned" * 3, "blitz"), ("flagged0" * 3, "blitz"),
                                  ("aborted0" * 3, "blitz"), ("casual00" * 3, None)):
            rated_game(store, game_id, category)
        store.add_move("resigned" * 3, 0, 0, None)
        store.finish("resigned" * 3, "order", "resign")  # Chaos (Bob) resigned
        after_resign = store.rating(BOB, "blitz")
        assert after_resign[1] == 1 and after_resign[0].r < 1500
        store.add_move("flagged0" * 3, 0, 0, None)
        alice_before = store.rating(ALICE, "blitz")[0].r
        store.finish("flagged0" * 3, "chaos", "time")  # Order (Alice) lost on time
        assert store.rating(ALICE, "blitz")[0].r < alice_before
        assert store.rating(ALICE, "blitz")[1] == 2 and store.rating(BOB, "blitz")[1] == 2
        before = (store.rating(ALICE, "blitz"), store.rating(BOB, "blitz"))
        store.finish("aborted0" * 3, None, "aborted")
        store.add_move("casual00" * 3, 0, 0, None)
        store.finish("casual00" * 3, "order", "resign")
        assert (store.rating(ALICE, "blitz"), store.rating(BOB, "blitz")) == before
        assert store.rating_changes("aborted0" * 3) == {} and store.rating_changes("casual00" * 3) == {}
    finally:
        store.close()


def test_two_servers_ending_one_game_rate_it_once(store_url: str) -> None:
    one, two = GameStore(store_url), GameStore(store_url)
    try:
        rated_game(one, "twice" * 5)
        one.add_move("twice" * 5, 0, 0, None)
        one.finish("twice" * 5, "order", "resign")
        two.finish("twice" * 5, "order", "time")  # another server saw the clock run out too
        assert one.rating(ALICE, "bullet")[1] == 1 and two.rating(BOB, "bullet")[1] == 1
    finally:
        one.close()
        two.close()


def test_the_copy_of_a_store_holds_its_players_and_ratings(store_url: str, tmp_path: Path) -> None:
    source, target = GameStore(store_url), GameStore(tmp_path / "copy.sqlite3")
    try:
        rated_game(source, "copied" * 4)
        play_order_five(source, "copied" * 4)
        counts = copy_store(source, target)
        assert {t: counts[t] for t in ("players", "game_players", "ratings", "rating_changes")} == {
            "players": (2, 2), "game_players": (1, 1), "ratings": (2, 2), "rating_changes": (2, 2)}
        assert target.rating(ALICE, "bullet") == source.rating(ALICE, "bullet")
        assert table_counts(target)["rating_changes"] == 2
    finally:
        source.close()
        target.close()


def test_the_leaderboard_needs_ten_games_and_one_within_thirty_days(store_url: str) -> None:
    now = {"t": 1_000_000_000.0}
    store = GameStore(store_url, lambda: now["t"])
    try:
        for n in range(10):
            rated_game(store, f"board{n:02d}" * 3)
            play_order_five(store, f"board{n:02d}" * 3)
        rated_game(store, "lastgame" * 3, "bullet", (CAROL, BOB))
        play_order_five(store, "lastgame" * 3)
        leaders = store.leaderboard("bullet", 10, now["t"] - 30 * 86400)
        assert [(p, games) for p, _, _, games in leaders] == [(ALICE, 10), (BOB, 11)]  # Carol: one game
        now["t"] += 31 * 86400
        assert store.leaderboard("bullet", 10, now["t"] - 30 * 86400) == []
    finally:
        store.close()


# -- pairing by rating --------------------------------------------------------------------------


def test_play_anyone_pairs_near_ratings_first_and_widens_with_the_wait() -> None:
    now = {"t": 100.0}
    lobby = Lobby(clock=lambda: now["t"])
    assert lobby.seek(Seek("strong", "3+2", "s" * 16, 1900.0)) is None
    assert lobby.seek(Seek("mid", "3+2", "m" * 16, 1550.0)) is None
    # a newcomer at 1500 meets the near one, not the strong one who waited longer
    assert lobby.seek(Seek("new", "3+2", "n" * 16, 1500.0)).owner == "mid"
    # of two who both fit, the nearer in rating, though the other waited longer
    assert lobby.seek(Seek("older", "5+3", "o" * 16, 1600.0)) is None
    assert lobby.seek(Seek("nearer", "5+3", "r" * 16, 1450.0)) is None  # 150 from "older": waits
    assert lobby.seek(Seek("third", "5+3", "t" * 16, 1500.0)).owner == "nearer"
    del lobby.seekers["older"]
    assert lobby.seek(Seek("weak", "3+2", "w" * 16, 1300.0)) is None
    assert lobby.pair_waiting() == []  # 600 apart: too far at first
    gap = 1900.0 - 1300.0
    now["t"] += (gap - PAIRING_WINDOW) / PAIRING_WIDENING - 0.5
    assert lobby.pair_waiting() == []
    now["t"] += 0.5
    assert [(one.owner, two.owner) for one, two in lobby.pair_waiting()] == [("strong", "weak")]
    # rated and casual seekers never meet, nor two tabs of one player
    assert lobby.seek(Seek("a", "1+0", ALICE, rated=False)) is None
    assert lobby.seek(Seek("b", "1+0", ALICE)) is None
    waiting = list(lobby.seekers.values())
    assert best_match(Seek("c", "1+0", ALICE), waiting, now["t"]) is None
    assert best_match(Seek("d", "1+0", CAROL, rated=False), waiting, now["t"]).owner == "a"
    assert best_match(Seek("e", "1+0", CAROL), waiting, now["t"]).owner == "b"


def test_the_redis_lobby_pairs_by_rating_as_one_instance_does(redis_url: str) -> None:
    import asyncio

    from orderchaos.web.bus import RedisBus

    async def scenario() -> None:
        now = {"t": 1000.0}
        one, other = RedisBus(redis_url, clock=lambda: now["t"]), RedisBus(redis_url, clock=lambda: now["t"])
        for bus in (one, other):
            await bus.start(lambda event: asyncio.sleep(0), lambda: asyncio.sleep(0), lambda: asyncio.sleep(0))
        try:
            strong, mid, new, weak = one.tab_id(), other.tab_id(), one.tab_id(), other.tab_id()
            assert await one.seek(Seek(strong, "3+2", "s" * 16, 1900.0)) is None
            assert await other.seek(Seek(mid, "3+2", "m" * 16, 1550.0)) is None
            assert (await one.seek(Seek(new, "3+2", "n" * 16, 1500.0))).owner == mid
            assert await other.seek(Seek(weak, "3+2", "w" * 16, 1300.0)) is None
            assert await one.pair_waiting() == [] and await one.seeking_for(strong) == "3+2"
            now["t"] += (600 - PAIRING_WINDOW) / PAIRING_WIDENING
            assert [(a.owner, b.owner) for a, b in await other.pair_waiting()] == [(strong, weak)]
            assert await one.seeking_for(strong) is None and await other.seeking_for(weak) is None
        finally:
            await one.close()
            await other.close()

    asyncio.run(asyncio.wait_for(scenario(), 60))


# -- through the server ---------------------------------------------------------------------------


class Site(AppSite):
    """An app on a SQLite store whose clock the test moves."""

    def __init__(self, path: Path) -> None:
        self.now = {"t": 1_000_000_000.0}
        self.store = GameStore(path, lambda: self.now["t"])
        super().__init__(create_app(None, FAST, db=self.store))

    def player(self, player: str) -> tuple[Any, dict]:
        """A tab that said who it is, and the server's ``me`` answer."""
        ws = self.connect()
        ws.send_json({"type": "identify", "player": player})
        return ws, receive(ws, "me")


def pair(site: Site, rated: bool = True) -> tuple[dict[str, Any], str]:
    """Alice and Bob play anyone at 1+0: their sockets by seat, and the game id."""
    alice, _ = site.player(ALICE)
    bob, _ = site.player(BOB)
    alice.send_json({"type": "play_anyone", "time_control": "1+0", "rated": rated})
    receive(alice, "lobby")
    bob.send_json({"type": "play_anyone", "time_control": "1+0", "rated": rated})
    joined = {ws: receive(ws, "joined") for ws in (alice, bob)}
    seats = {msg["seat"]: ws for ws, msg in joined.items()}
    site.tokens = {ws: msg["token"] for ws, msg in joined.items()}
    return seats, joined[alice]["game"]


def play_to_five(seats: dict[str, Any]) -> dict:
    view: dict = {}
    for ply, cell in enumerate(ORDER_FIVE):
        role = "order" if ply % 2 == 0 else "chaos"
        seats[role].send_json({"type": "move", "cell": cell, "symbol": "X" if role == "order" else "O"})
        while True:
            view = receive(seats["order"], "state")
            if len(view["moves"]) == ply + 1:
                break
    return view


def test_a_rated_game_through_play_anyone_moves_both_ratings_and_shows_on_the_player_pages(tmp_path: Path) -> None:
    with Site(tmp_path / "games.sqlite3") as site:
        seats, game = pair(site)
        end = play_to_five(seats)
        assert end["winner"] == "order" and end["rated"] == "bullet"
        names = {role: end["people"][role]["name"] for role in ("order", "chaos")}
        changes = end["rating_changes"]
        assert changes["order"]["change"] > 0 > changes["chaos"]["change"]
        assert changes["order"]["before"] == changes["chaos"]["before"] == 1500
        answer = site.client.get(f"/api/player/{names['order']}").json()
        assert answer["name"] == names["order"]
        assert answer["ratings"]["bullet"]["games"] == 1 and answer["ratings"]["bullet"]["rating"] > 1500
        assert answer["ratings"]["blitz"] == {"rating": 1500, "rd": 350, "games": 0, "provisional": True}
        assert [(g["id"], g["result"], g["opponent"], g["time_control"], g["reason"]) for g in answer["games"]] == [
            (game, "win", names["chaos"], "1+0", "five")]
        loser = site.client.get(f"/api/player/{names['chaos'].upper()}").json()  # any case finds it
        assert loser["ratings"]["bullet"]["rating"] < 1500 and loser["games"][0]["result"] == "loss"
        assert ALICE not in str(answer) and BOB not in str(loser)  # the ids stay with their owners
        page = site.client.get(f"/player/{names['order']}?lang=de")
        assert page.status_code == 200 and 'lang="de"' in page.text and f'href="/g/{game}"' in page.text
        assert "<svg" in page.text and "Partien von" in page.text
        # the rematch, sides swapped, is rated in the same category
        seats["chaos"].send_json({"type": "rematch"})
        rematch = receive(seats["chaos"], "rematch")["game"]
        assert receive(seats["order"], "rematch")["game"] == rematch
        swapped = {}
        for ws in seats.values():
            ws.send_json({"type": "open", "game": rematch, "token": site.tokens[ws]})
            swapped[receive(ws, "joined")["seat"]] = ws
        assert swapped == {"order": seats["chaos"], "chaos": seats["order"]}
        again = play_to_five(swapped)
        assert again["rated"] == "bullet" and again["people"]["order"]["name"] == names["chaos"]
        assert again["rating_changes"]["order"]["change"] > 0 > again["rating_changes"]["chaos"]["change"]
        assert site.client.get(f"/api/player/{names['chaos']}").json()["ratings"]["bullet"]["games"] == 2


def test_a_casual_game_and_an_aborted_game_change_no_rating(tmp_path: Path) -> None:
    with Site(tmp_path / "games.sqlite3") as site:
        seats, _ = pair(site, rated=False)
        end = play_to_five(seats)
        assert end["winner"] == "order" and end["rated"] is None and end["rating_changes"] is None
        for player in (ALICE, BOB):
            assert site.store.rating(player, "bullet") == (Rating(), 0)
        seats, _ = pair(site)
        site.now["t"] += ABORT_AFTER + 1  # nobody moved within the minute
        site.client.portal.call(site.app.state.hub.sweep)
        view = receive(seats["order"], "state")
        while view["reason"] is None:  # the views sent as both took their seats come first
            view = receive(seats["order"], "state")
        assert view["reason"] == "aborted" and view["rating_changes"] is None
        for player in (ALICE, BOB):
            assert site.store.rating(player, "bullet") == (Rating(), 0)


def test_a_name_is_changed_checked_and_seen_by_the_opponent(tmp_path: Path) -> None:
    with Site(tmp_path / "games.sqlite3") as site:
        seats, _ = pair(site)
        order, chaos = seats["order"], seats["chaos"]
        order.send_json({"type": "rename", "name": "Ada"})
        assert receive(order, "me")["name"] == "Ada"
        shown = receive(chaos, "state")["people"]["order"]["name"]
        while shown != "Ada":  # the views sent as both took their seats come first
            shown = receive(chaos, "state")["people"]["order"]["name"]
        for name, code in (("ADA", "name_taken"), ("HouseBot", "name_reserved"), ("a b", "name_chars"),
                           ("ab", "name_length")):
            chaos.send_json({"type": "rename", "name": name})
            assert receive(chaos, "error", error_ok=True)["code"] == code, name
        lone = site.connect()
        lone.send_json({"type": "rename", "name": "Grace"})
        assert receive(lone, "error", error_ok=True)["code"] == "no_player"


def test_the_api_answers_unknown_names_and_categories_with_coded_errors(tmp_path: Path) -> None:
    with Site(tmp_path / "games.sqlite3") as site:
        missing = site.client.get("/api/player/Nobody")
        assert missing.status_code == 404 and missing.json()["code"] == "unknown_player"
        bad = site.client.get("/api/leaderboard?category=classical")
        assert bad.status_code == 400 and bad.json()["code"] == "bad_category"
        assert "bullet, blitz, rapid" in bad.json()["message"]
        board = site.client.get("/api/leaderboard?category=blitz").json()
        assert board["players"] == [] and board["min_games"] == 10
        assert site.client.get("/player/Nobody").status_code == 404
        assert site.client.get("/leaderboard?category=rapid&lang=sv").status_code == 200


def test_play_anyone_on_the_server_pairs_the_nearer_rating(tmp_path: Path) -> None:
    with Site(tmp_path / "games.sqlite3") as site:
        for player, rating in ((ALICE, 2000.0), (BOB, 1500.0), (CAROL, 1450.0)):
            site.store.ensure_player(player)
            site.store.db.execute("INSERT INTO ratings VALUES (?, 'bullet', ?, 60, 0.06, 20, ?)",
                                  (player, rating, site.now["t"]))
        tabs = {player: site.player(player)[0] for player in (ALICE, BOB, CAROL)}
        for player in (ALICE, BOB):
            tabs[player].send_json({"type": "play_anyone", "time_control": "1+0"})
            receive(tabs[player], "lobby")
        tabs[CAROL].send_json({"type": "play_anyone", "time_control": "1+0"})
        carol, bob = receive(tabs[CAROL], "joined"), receive(tabs[BOB], "joined")
        assert carol["game"] == bob["game"]
        assert category_of("1+0") == "bullet"


def test_two_instances_on_one_redis_pair_rate_once_and_show_both_names(tmp_path: Path, redis_url: str) -> None:
    """Alice's tab on one server, Bob's on another (``serve --bus``): paired through Redis with
    their ids kept, the game rated once, both names on both servers."""
    from orderchaos.web.bus import RedisBus

    db = tmp_path / "games.sqlite3"
    sites = [AppSite(create_app(None, FAST, db=GameStore(db), bus=RedisBus(redis_url))) for _ in range(2)]
    with sites[0] as one, sites[1] as two:
        tabs = {}
        for site, player in ((one, ALICE), (two, BOB)):
            ws = site.connect()
            ws.send_json({"type": "identify", "player": player})
            receive(ws, "me")
            ws.send_json({"type": "play_anyone", "time_control": "1+0"})
            tabs[player] = ws
            if player == ALICE:  # waiting before Bob asks
                receive(ws, "lobby")
        seats = {receive(ws, "joined")["seat"]: ws for ws in tabs.values()}
        end = play_to_five(seats)
        assert end["rated"] == "bullet" and end["rating_changes"]["order"]["change"] > 0
        names = {end["people"][role]["name"] for role in ("order", "chaos")}
        store = GameStore(db)
        try:
            assert names == {store.player_name(ALICE), store.player_name(BOB)}
            assert store.rating(ALICE, "bullet")[1] == store.rating(BOB, "bullet")[1] == 1
        finally:
            store.close()


def test_a_casual_game_shows_each_player_at_the_rating_of_its_time_control(tmp_path: Path) -> None:
    """After a rated bullet game, a casual 1+0 game seats both at their bullet ratings (not at
    blitz's 1500), and changes none."""
    with Site(tmp_path / "games.sqlite3") as site:
        seats, _ = pair(site)
        end = play_to_five(seats)
        after = {role: end["rating_changes"][role]["after"] for role in ("order", "chaos")}
        seats, _ = pair(site, rated=False)
        view = receive(seats["order"], "state")
        while any(view["people"][role] is None for role in ("order", "chaos")):
            view = receive(seats["order"], "state")
        shown = {view["people"][role]["name"]: view["people"][role]["rating"] for role in ("order", "chaos")}
        expected = {end["people"][role]["name"]: after[role] for role in ("order", "chaos")}
        assert view["rated"] is None and shown == expected
