"""Bots on the site, through Starlette's TestClient: accounts and their hashed tokens, the
handshake (bad, missing and revoked tokens; never a token in the URL), two bots playing a
rated game to its end and the ratings it moves, a bot's seat kept through a disconnect, a
revoked token mid-game (its game lost on time, its moves kept), forged seats, moves out of
turn, oversized and malformed messages, the per-token limits, a person challenging a bot from
the page, the house bots on the ladder, ``GET /api/bots`` and the ladder page. On a site of two instances
(two apps on one Redis, the tests' own redis-server on a loopback port, and one SQLite store):
a bot connected to one is listed on the other, where a person plays it to the end; two bots
connected to different instances play a rated game, one of them getting it back through the
other instance; a token revoked in the shared store ends its connection on the instance it is
on; a token's connection limit counts both instances. Every message a
bot receives is checked against its JSON Schema (:data:`~orderchaos.web.bot_protocol.TO_BOT`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette.testclient", reason="the web extra is not installed: pip install -e '.[dev]'")
jsonschema = pytest.importorskip("jsonschema", reason="jsonschema checks the protocol's messages")

from starlette.websockets import WebSocketDisconnect  # noqa: E402

from helpers import AppSite, game_actions, random_game, receive, receive_json, wait_for  # noqa: E402

from orderchaos.arena.glicko2 import Rating, update  # noqa: E402
from orderchaos.web import bots  # noqa: E402
from orderchaos.web.app import create_app  # noqa: E402
from orderchaos.web.bot_hub import BotLimits  # noqa: E402
from orderchaos.web.bot_protocol import FROM_BOT, PATH, TO_BOT  # noqa: E402
from orderchaos.web.services import Limits  # noqa: E402
from orderchaos.web.store import GameStore  # noqa: E402

FAST = Limits(move_time=5.0, hint_time=0.3, study_time=0.05, rate=1000, burst=1000)
pytestmark = pytest.mark.timeout(120)


class Clock:
    """A store clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def got(ws: Any) -> dict[str, Any]:
    """The bot's next message, checked against its schema."""
    message = receive_json(ws)
    jsonschema.validate(message, TO_BOT[message["type"]])
    return message


def until(ws: Any, kind: str, **fields: Any) -> dict[str, Any]:
    """The bot's next message of ``kind`` whose fields hold the given values."""
    for _ in range(200):
        message = got(ws)
        if message["type"] == kind and all(message.get(k) == v for k, v in fields.items()):
            return message
    raise AssertionError(f"no {kind} {fields} in 200 messages")


def send(ws: Any, message: dict[str, Any]) -> None:
    jsonschema.validate(message, FROM_BOT[message["type"]])
    ws.send_text(json.dumps(message))


@pytest.fixture
def store() -> Iterator[GameStore]:
    opened = GameStore(":memory:", clock=Clock())
    yield opened
    opened.close()


def connect_bot(site: AppSite, token: str) -> Any:
    ws = site.stack.enter_context(site.client.websocket_connect(PATH, headers={"Authorization": f"Bearer {token}"}))
    assert got(ws)["type"] == "hello"
    return ws


def start_game(site: AppSite, first: Any, second: Any, opponent: str, side: str = "order",
               rated: bool = True) -> str:
    """``first`` challenges ``opponent`` (whose socket is ``second``) taking ``side``; the game's id."""
    send(first, {"type": "challenge", "opponent": opponent, "time_control": "1+0", "rated": rated, "side": side})
    offer = until(second, "challenge")
    assert offer["rated"] is rated
    send(second, {"type": "accept", "challenge": offer["id"]})
    start = until(first, "game_start")
    assert until(second, "game_start", game=start["game"])["seat"] != side
    for ws in (first, second):
        assert until(ws, "game_state", game=start["game"])["actions"] == []
    return start["game"]


# -- accounts ---------------------------------------------------------------------------------


def test_an_account_keeps_only_the_hash_of_its_token(tmp_path: Any) -> None:
    db = tmp_path / "site.sqlite3"
    store = GameStore(db)
    token = bots.add_account(store, "alpha")
    assert bots.authenticate(store, token) == "alpha"
    assert bots.authenticate(store, token + "x") is None and bots.authenticate(store, "") is None
    store.close()  # the write-ahead log is folded into the file
    assert token.encode() not in db.read_bytes()
    assert bots.token_hash(token).encode() in db.read_bytes()


def test_bot_names_are_checked_and_never_shared(store: GameStore) -> None:
    bots.add_account(store, "alpha")
    for name, said in [("Alpha", "taken by a bot"), ("heuristic", "taken by a bot"), ("a b", "bad bot name"),
                       ("x", "bad bot name"), ("1abc", "bad bot name")]:
        with pytest.raises(bots.BotAccountError, match=said):
            bots.add_account(store, name)
    store.ensure_player("p1")
    assert store.rename_player("p1", "Carol")
    with pytest.raises(bots.BotAccountError, match="taken by a person"):
        bots.add_account(store, "carol")
    assert bots.bot_name_taken(store, "ALPHA") and bots.bot_name_taken(store, "Strongest")
    assert not bots.bot_name_taken(store, "carol")
    bots.revoke_account(store, "alpha")
    assert bots.bot_name_taken(store, "alpha")  # a revoked bot's name stays its own
    with pytest.raises(bots.BotAccountError, match="already revoked"):
        bots.revoke_account(store, "alpha")
    with pytest.raises(bots.BotAccountError, match="no bot named"):
        bots.revoke_account(store, "nobody")


# -- the handshake ----------------------------------------------------------------------------


def test_bad_missing_and_revoked_tokens_are_refused_at_the_handshake(store: GameStore) -> None:
    token = bots.add_account(store, "alpha")
    revoked = bots.add_account(store, "beta")
    bots.revoke_account(store, "beta")
    with AppSite(create_app(db=store, limits=FAST)) as site:
        for headers, path in [({}, PATH), ({"Authorization": "Bearer " + token[:-1]}, PATH),
                              ({"Authorization": "Bearer " + revoked}, PATH), ({"Authorization": token}, PATH),
                              ({}, f"{PATH}?token={token}"), ({}, f"{PATH}?access_token={token}")]:
            with pytest.raises(WebSocketDisconnect) as refused:
                with site.client.websocket_connect(path, headers=headers):
                    pass
            assert refused.value.code == 1008, (headers, path)
        connect_bot(site, token)  # the good token opens


# -- a rated game -----------------------------------------------------------------------------


def test_two_bots_play_a_rated_game_to_its_end_and_their_ratings_move(store: GameStore) -> None:
    tokens = {name: bots.add_account(store, name) for name in ("alpha", "beta")}
    actions = game_actions(random_game(3))
    with AppSite(create_app(db=store, limits=FAST)) as site:
        alpha, beta = connect_bot(site, tokens["alpha"]), connect_bot(site, tokens["beta"])
        game = start_game(site, alpha, beta, "beta")
        sockets = {"order": alpha, "chaos": beta}
        for ply, action in enumerate(actions):
            mover = sockets["order" if ply % 2 == 0 else "chaos"]
            as_text = ply % 3 == 1  # some moves as text, the rest as actions
            move = {"type": "move", "game": game, "text": f"{'abcdef'[(action >> 1) % 6]}{(action >> 1) // 6 + 1} "
                    f"{'XO'[action & 1]}"} if as_text else {"type": "move", "game": game, "action": action}
            send(mover, move)
            for ws in (alpha, beta):
                state = until(ws, "game_state", game=game)
                assert state["actions"] == actions[:ply + 1]
        assert state["over"] and state["winner"] is not None
        winner = "alpha" if state["winner"] == "order" else "beta"
        listed = {row["name"]: row for row in site.client.get("/api/bots").json()}
        assert set(listed["alpha"]) == {"name", "online", "rating", "rd", "games"}
        assert listed["alpha"]["games"] == listed["beta"]["games"] == 1
        assert listed[winner]["rating"] > 1500 > listed[{"alpha": "beta", "beta": "alpha"}[winner]]["rating"]
        assert listed["alpha"]["online"] and listed["alpha"]["rd"] < 350
        stored = store.load(game)
        assert stored.saved().order == "bot:alpha" and stored.saved().chaos == "bot:beta"
        page = site.client.get("/bots").text
        assert "bot:alpha" in page and f'href="/g/{game}"' in page and 'href="/docs/bots.md"' in page


def test_a_casual_game_between_bots_moves_no_rating(store: GameStore) -> None:
    tokens = {name: bots.add_account(store, name) for name in ("alpha", "beta")}
    with AppSite(create_app(db=store, limits=FAST)) as site:
        alpha, beta = connect_bot(site, tokens["alpha"]), connect_bot(site, tokens["beta"])
        game = start_game(site, alpha, beta, "beta", rated=False)
        send(alpha, {"type": "resign", "game": game})
        assert until(beta, "game_state", game=game)["reason"] == "resign"
        listed = {row["name"]: row for row in site.client.get("/api/bots").json()}
        assert listed["alpha"]["rating"] == listed["beta"]["rating"] == 1500 and listed["beta"]["games"] == 0


# -- seats kept, tokens revoked -----------------------------------------------------------------


def test_a_bot_that_drops_keeps_its_seat_and_goes_on_after_reconnecting(store: GameStore) -> None:
    tokens = {name: bots.add_account(store, name) for name in ("alpha", "beta")}
    with AppSite(create_app(db=store, limits=FAST)) as site:
        alpha, beta = connect_bot(site, tokens["alpha"]), connect_bot(site, tokens["beta"])
        game = start_game(site, alpha, beta, "beta")
        send(alpha, {"type": "move", "game": game, "action": 28})
        until(beta, "game_state", game=game, actions=[28])
        beta.close()
        store.clock.now += 10  # beta's clock runs while it is away
        with site.client.websocket_connect(PATH, headers={"Authorization": f"Bearer {tokens['beta']}"}) as back:
            hello = got(back)
            assert hello["games"] == [game]
            start = until(back, "game_start", game=game)
            state = until(back, "game_state", game=game)
            assert state["actions"] == [28] and state["to_play"] == start["seat"] == "chaos"
            assert state["clock"]["chaos"] == pytest.approx(50.0, abs=0.01)
            send(back, {"type": "move", "game": game, "action": 31})
            until(alpha, "game_state", game=game, actions=[28, 31])


def test_a_revoked_token_ends_its_connection_and_its_game_is_lost_on_time(store: GameStore) -> None:
    tokens = {name: bots.add_account(store, name) for name in ("alpha", "beta")}
    limits = BotLimits(revoke_check=0.05)
    with AppSite(create_app(db=store, limits=FAST, bot_limits=limits)) as site:
        alpha, beta = connect_bot(site, tokens["alpha"]), connect_bot(site, tokens["beta"])
        game = start_game(site, alpha, beta, "beta")
        send(alpha, {"type": "move", "game": game, "action": 28})
        until(beta, "game_state", game=game, actions=[28])
        send(beta, {"type": "move", "game": game, "action": 31})
        until(alpha, "game_state", game=game, actions=[28, 31])
        bots.revoke_account(store, "alpha")
        told = until(alpha, "error")
        assert told["code"] == "revoked"
        with pytest.raises(WebSocketDisconnect) as closed:
            receive_json(alpha)
        assert closed.value.code == 4403
        store.clock.now += 61  # alpha, to move, runs out of time
        ended = until(beta, "game_state", game=game, over=True)
        assert (ended["reason"], ended["winner"], ended["actions"]) == ("time", "chaos", [28, 31])
        assert store.load(game).actions == [28, 31]
        with pytest.raises(WebSocketDisconnect):
            connect_bot(site, tokens["alpha"])


# -- what a bot may not do ------------------------------------------------------------------------


def test_forged_seats_moves_out_of_turn_and_bad_messages_are_refused(store: GameStore) -> None:
    tokens = {name: bots.add_account(store, name) for name in ("alpha", "beta", "gamma")}
    with AppSite(create_app(db=store, limits=FAST)) as site:
        alpha, beta, gamma = (connect_bot(site, tokens[n]) for n in ("alpha", "beta", "gamma"))
        game = start_game(site, alpha, beta, "beta")
        person = site.connect()  # two people's game, by the page's lobby
        person.send_json({"type": "play_friend", "side": "order"})
        people_game = receive(person, "joined")["game"]

        def refused(ws: Any, message: Any, code: str) -> None:
            ws.send_text(message if isinstance(message, str) else json.dumps(message))
            assert until(ws, "error")["code"] == code

        refused(gamma, {"type": "move", "game": game, "action": 28}, "not_seated")  # another bots' game
        refused(gamma, {"type": "resign", "game": game}, "not_seated")
        refused(alpha, {"type": "move", "game": people_game, "action": 28}, "not_seated")  # a person's seat
        refused(beta, {"type": "move", "game": game, "action": 28}, "not_your_turn")  # Order moves first
        refused(alpha, {"type": "move", "game": game, "action": 72}, "bad_action")
        refused(alpha, {"type": "move", "game": game, "action": True}, "bad_action")
        refused(alpha, {"type": "move", "game": game, "action": 28, "text": "c3 X"}, "bad_message")
        refused(alpha, {"type": "move", "game": game, "text": "z9 Q"}, "move_text")
        refused(alpha, {"type": "move", "game": game, "action": 28, "seat": "chaos"}, "bad_message")
        refused(alpha, {"type": "open", "game": people_game}, "bad_message")  # no such message for bots
        refused(alpha, json.dumps({"type": "move", "game": game, "text": "c3 X" + " " * 5000}), "too_large")
        refused(alpha, "{not json", "bad_message")
        send(alpha, {"type": "move", "game": game, "action": 28})  # the connection is still open
        assert until(beta, "game_state", game=game)["actions"] == [28]
        refused(alpha, {"type": "move", "game": game, "action": 30}, "not_your_turn")
        refused(beta, {"type": "move", "game": game, "action": 28}, "occupied")
        send(alpha, {"type": "challenge", "opponent": "alpha", "time_control": "1+0"})
        assert until(alpha, "error")["code"] == "own_challenge"
        send(alpha, {"type": "challenge", "opponent": "nobody", "time_control": "1+0"})
        assert until(alpha, "error")["code"] == "bot_offline"
        send(alpha, {"type": "challenge", "opponent": "beta", "time_control": "2+1"})
        assert until(alpha, "error")["code"] == "time_control"
        assert store.load(game).actions == [28]
        assert store.load(people_game).actions == []


def test_each_token_has_its_limits(store: GameStore) -> None:
    tokens = {name: bots.add_account(store, name) for name in ("alpha", "beta")}
    limits = BotLimits(connections=1, challenges=2, games=1)
    with AppSite(create_app(db=store, limits=FAST, bot_limits=limits)) as site:
        alpha, beta = connect_bot(site, tokens["alpha"]), connect_bot(site, tokens["beta"])
        with site.client.websocket_connect(PATH, headers={"Authorization": f"Bearer {tokens['alpha']}"}) as second:
            assert got(second)["code"] == "bot_connections"
        for _ in range(2):
            send(alpha, {"type": "challenge", "opponent": "beta", "time_control": "1+0"})
            until(alpha, "challenge_sent")
        send(alpha, {"type": "challenge", "opponent": "beta", "time_control": "1+0"})
        assert until(alpha, "error")["code"] == "bot_challenges"
        first = until(beta, "challenge")
        second_offer = until(beta, "challenge")
        send(beta, {"type": "accept", "challenge": first["id"]})
        until(alpha, "game_start")
        send(beta, {"type": "accept", "challenge": second_offer["id"]})  # beta plays one game at a time
        assert until(beta, "error")["code"] == "bot_games"
        assert until(alpha, "declined")["challenge"] == second_offer["id"]


# -- people and house bots ------------------------------------------------------------------------


def person_challenges_alpha(tab: Any, alpha: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A person's tab challenges the bot alpha on 3+2 (never rated: a person and a bot), alpha
    accepts: its ``game_start`` and the tab's ``joined``, in the same game on opposite seats."""
    tab.send_json({"type": "challenge_bot", "bot": "alpha", "time_control": "3+2"})
    offer = until(alpha, "challenge")
    assert (offer["from"], offer["rated"], offer["time_control"]) == ("person", False, "3+2")
    send(alpha, {"type": "accept", "challenge": offer["id"]})
    start = until(alpha, "game_start")
    joined = receive(tab, "joined")
    assert joined["game"] == start["game"] and joined["seat"] != start["seat"]
    assert start["opponent"] == {"name": None, "bot": False}
    return start, joined


def test_a_person_challenges_a_bot_from_the_lobby_and_the_game_is_not_rated(store: GameStore) -> None:
    token = bots.add_account(store, "alpha")
    with AppSite(create_app(db=store, limits=FAST)) as site:
        tab = site.connect()
        alpha = connect_bot(site, token)
        lobby = receive(tab, "lobby")
        assert lobby["bots"] == [{"name": "alpha", "rating": 1500.0, "house": False}]
        start, joined = person_challenges_alpha(tab, alpha)
        view = receive(tab, "state")
        assert view["players"][start["seat"]]["bot"] == "alpha"
        if joined["seat"] == "order":
            tab.send_json({"type": "move", "cell": 14, "symbol": "X"})
        else:
            send(alpha, {"type": "move", "game": start["game"], "action": 28})
        until(alpha, "game_state", actions=[28])
        tab.send_json({"type": "resign"})
        assert until(alpha, "game_state", over=True)["reason"] == "resign"
        listed = {row["name"]: row for row in site.client.get("/api/bots").json()}
        assert listed["alpha"] == {"name": "alpha", "online": True, "rating": 1500.0, "rd": 350.0, "games": 0}


def test_a_bot_declines_a_person_and_the_page_is_told(store: GameStore) -> None:
    token = bots.add_account(store, "alpha")
    with AppSite(create_app(db=store, limits=FAST)) as site:
        tab = site.connect()
        alpha = connect_bot(site, token)
        tab.send_json({"type": "challenge_bot", "bot": "alpha", "time_control": "1+0"})
        send(alpha, {"type": "decline", "challenge": until(alpha, "challenge")["id"], "reason": "rated only"})
        error = receive(tab, "error", error_ok=True)
        assert (error["code"], error["args"]) == ("bot_declined", {"bot": "alpha"})


def test_house_bots_sit_on_the_ladder_as_fixed_anchors(store: GameStore) -> None:
    token = bots.add_account(store, "alpha")
    with AppSite(create_app(db=store, limits=FAST, house_bots=True)) as site:
        listed = {row["name"]: row for row in site.client.get("/api/bots").json()}
        assert {"heuristic", "pretrained", "strongest"} <= set(listed)
        assert all(listed[h.name]["online"] and listed[h.name]["rating"] == h.rating for h in bots.HOUSE_BOTS)
        alpha = connect_bot(site, token)
        send(alpha, {"type": "challenge", "opponent": "heuristic", "time_control": "1+0", "side": "chaos"})
        start = until(alpha, "game_start")
        assert start["opponent"] == {"name": "heuristic", "bot": True} and start["seat"] == "chaos"
        state = until(alpha, "game_state", to_play="chaos")  # the house bot moved, on the site's own workers
        assert len(state["actions"]) == 1
        send(alpha, {"type": "resign", "game": start["game"]})
        until(alpha, "game_state", over=True)
        listed = {row["name"]: row for row in site.client.get("/api/bots").json()}
        assert listed["heuristic"]["rating"] == 1300.0 and listed["heuristic"]["games"] == 1
        expected = update(Rating(), [(Rating(1300.0, bots.HOUSE_DEVIATION), 0.0)])  # against the anchor's rating
        assert (listed["alpha"]["rating"], listed["alpha"]["games"]) == (round(expected.r, 1), 1)
        assert bots.rating_of(store, "heuristic") == Rating(1300.0, bots.HOUSE_DEVIATION)
        assert "bot:heuristic" in site.client.get("/bots").text
    with AppSite(create_app(db=store, limits=FAST)) as site:  # without --house-bots: no house bot
        assert "heuristic" not in {row["name"] for row in site.client.get("/api/bots").json()}
        alpha = connect_bot(site, token)
        send(alpha, {"type": "challenge", "opponent": "heuristic", "time_control": "1+0"})
        assert until(alpha, "error")["code"] == "bot_offline"


def test_the_protocol_document_shows_every_message_schema(repo: Any) -> None:
    text = (repo / "docs" / "bots.md").read_text()
    for direction in (TO_BOT, FROM_BOT):
        for schema in direction.values():
            assert json.dumps(schema, indent=2) in text, schema["title"]


def test_a_person_cannot_take_a_bots_name(store: GameStore) -> None:
    bots.add_account(store, "alpha")
    with AppSite(create_app(db=store, limits=FAST)) as site:
        tab = site.connect()
        tab.send_json({"type": "identify", "player": "p" * 22})
        receive(tab, "me")
        tab.send_json({"type": "rename", "name": "ALPHA"})
        assert receive(tab, "error", error_ok=True)["code"] == "name_reserved"
        tab.send_json({"type": "rename", "name": "Carol"})
        assert receive(tab, "me")["name"] == "Carol"


# -- several instances of one site -------------------------------------------------------------


class Instance(AppSite):
    """One server of the site: an app on the store file ``db`` joined through Redis at ``url``."""

    def __init__(self, db: Path, url: str, limits: BotLimits | None = None) -> None:
        from orderchaos.web.bus import RedisBus

        self.store = GameStore(db)
        super().__init__(create_app(None, FAST, db=self.store, bus=RedisBus(url), bot_limits=limits))

    def listed(self) -> dict[str, dict[str, Any]]:
        """``GET /api/bots`` by name."""
        return {row["name"]: row for row in self.client.get("/api/bots").json()}


def accounts(db: Path, *names: str) -> dict[str, str]:
    """New bot accounts in the store ``db``: their tokens by name."""
    store = GameStore(db)
    try:
        return {name: bots.add_account(store, name) for name in names}
    finally:
        store.close()


def text_of(action: int) -> str:
    cell = action >> 1
    return f"{'abcdef'[cell % 6]}{cell // 6 + 1} {'XO'[action & 1]}"


def test_a_bot_on_one_instance_is_listed_on_the_other_and_a_person_there_plays_it_to_the_end(
        tmp_path: Path, redis_url: str) -> None:
    db = tmp_path / "site.sqlite3"
    token = accounts(db, "alpha")["alpha"]
    actions = game_actions(random_game(5))
    with Instance(db, redis_url) as a, Instance(db, redis_url) as b:
        tab = b.connect()
        tab.send_json({"type": "lobby"})
        assert receive(tab, "lobby")["bots"] == []
        alpha = connect_bot(a, token)
        shown = receive(tab, "lobby")  # told live, across instances
        assert [row["name"] for row in shown["bots"]] == ["alpha"] and shown["bots"][0]["rating"] == 1500
        assert b.listed()["alpha"]["online"]
        start, joined = person_challenges_alpha(tab, alpha)
        for ply, action in enumerate(actions):
            if ("order" if ply % 2 == 0 else "chaos") == joined["seat"]:
                tab.send_json({"type": "move", "cell": action >> 1, "symbol": "XO"[action & 1]})
            else:
                send(alpha, {"type": "move", "game": start["game"], "action": action})
            state = until(alpha, "game_state", actions=actions[:ply + 1])
        assert state["over"] and state["winner"] is not None
        assert a.store.load(start["game"]).finished
    with Instance(db, redis_url) as b:  # the instance that held alpha is gone: so is alpha
        assert not b.listed()["alpha"]["online"]


def test_two_bots_on_different_instances_play_a_rated_game_and_one_gets_it_back_through_the_other(
        tmp_path: Path, redis_url: str) -> None:
    db = tmp_path / "site.sqlite3"
    tokens = accounts(db, "alpha", "beta")
    actions = game_actions(random_game(3))
    with Instance(db, redis_url) as a, Instance(db, redis_url) as b:
        alpha = connect_bot(a, tokens["alpha"])
        wait_for(lambda: b.listed()["alpha"]["online"], "alpha listed on the other instance")
        with b.client.websocket_connect(PATH, headers={"Authorization": f"Bearer {tokens['beta']}"}) as first:
            assert got(first)["type"] == "hello"
            wait_for(lambda: a.listed()["beta"]["online"], "beta listed on the other instance")
            send(first, {"type": "challenge", "opponent": "alpha", "time_control": "1+0", "side": "order"})
            offer = until(alpha, "challenge")
            assert (offer["from"], offer["rated"]) == ("bot:beta", True)
            send(alpha, {"type": "accept", "challenge": offer["id"]})
            start = until(first, "game_start")
            game = start["game"]
            assert start["seat"] == "order" and start["opponent"] == {"name": "alpha", "bot": True}
            assert until(alpha, "game_start", game=game)["opponent"] == {"name": "beta", "bot": True}
            send(first, {"type": "move", "game": game, "action": actions[0]})
            until(alpha, "game_state", game=game, actions=actions[:1])
        # beta dropped; it connects again through the other instance and gets its game back
        beta = b.stack.enter_context(a.client.websocket_connect(
            PATH, headers={"Authorization": f"Bearer {tokens['beta']}"}))
        assert got(beta)["games"] == [game]
        sockets = {"order": beta, "chaos": alpha}
        for ply, action in enumerate(actions[1:], start=1):
            mover = sockets["order" if ply % 2 == 0 else "chaos"]
            send(mover, {"type": "move", "game": game, "text": text_of(action)} if ply % 3 == 1
                 else {"type": "move", "game": game, "action": action})
            for ws in (alpha, beta):
                state = until(ws, "game_state", game=game, actions=actions[:ply + 1])
        assert state["over"] and state["winner"] is not None
        winner, loser = ("beta", "alpha") if state["winner"] == "order" else ("alpha", "beta")
        listed = wait_for(lambda: (rows := b.listed())[winner]["games"] == 1 and rows, "the game rated")
        assert listed[winner]["rating"] > 1500 > listed[loser]["rating"] and listed[loser]["games"] == 1
        saved = b.store.load(game).saved()
        assert (saved.order, saved.chaos) == ("bot:beta", "bot:alpha")


def test_a_token_revoked_in_the_shared_store_ends_its_connection_on_the_instance_it_is_on(
        tmp_path: Path, redis_url: str) -> None:
    db = tmp_path / "site.sqlite3"
    token = accounts(db, "alpha")["alpha"]
    with Instance(db, redis_url, BotLimits(revoke_check=0.05)) as a, Instance(db, redis_url) as b:
        alpha = connect_bot(a, token)
        wait_for(lambda: b.listed()["alpha"]["online"], "alpha listed on the other instance")
        bots.revoke_account(b.store, "alpha")
        assert until(alpha, "error")["code"] == "revoked"
        with pytest.raises(WebSocketDisconnect) as closed:
            receive_json(alpha)
        assert closed.value.code == 4403
        wait_for(lambda: "alpha" not in b.app.state.bots.online(), "alpha offline on the other instance")


def test_a_tokens_connection_limit_counts_both_instances(tmp_path: Path, redis_url: str) -> None:
    db = tmp_path / "site.sqlite3"
    token = accounts(db, "alpha")["alpha"]
    headers = {"Authorization": f"Bearer {token}"}
    limits = BotLimits(connections=1)
    with Instance(db, redis_url, limits) as a, Instance(db, redis_url, limits) as b:
        with a.client.websocket_connect(PATH, headers=headers) as first:
            assert got(first)["type"] == "hello"
            with b.client.websocket_connect(PATH, headers=headers) as second:
                refused = got(second)
                assert (refused["code"], refused["args"]) == ("bot_connections", {"limit": 1})
                with pytest.raises(WebSocketDisconnect) as closed:
                    receive_json(second)
                assert closed.value.code == 1013

        def opens_on_b() -> bool:
            with b.client.websocket_connect(PATH, headers=headers) as again:
                return got(again)["type"] == "hello"

        wait_for(opens_on_b, "a connection on the other instance once the first closed")
