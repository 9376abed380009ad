"""The lobby: its bookkeeping (:class:`Lobby`) and, through Starlette's TestClient, open
challenges seen live by every lobby viewer, accepted with one message, cancelled, gone with
their tab, at most three per client address; "play anyone" pairing by time control. The
tests through the server run with the lobby in memory and in Redis (``serve --bus``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("starlette.testclient", reason="the web extra is not installed: pip install -e '.[dev]'")


from helpers import AppSite, receive, until_moves  # noqa: E402

from orderchaos.web.app import create_app  # noqa: E402
from orderchaos.web.bus import Bus  # noqa: E402
from orderchaos.web.errors import WebError  # noqa: E402
from orderchaos.web.lobby import Lobby, Seek  # noqa: E402
from orderchaos.web.services import Limits  # noqa: E402


FAST = Limits(move_time=5.0, hint_time=0.3, study_time=0.05, rate=1000, burst=1000)




# -- the bookkeeping ------------------------------------------------------------------------


def counter() -> Any:
    numbers = iter(range(1000))
    return lambda: f"c{next(numbers)}"


def test_lobby_open_take_cancel_and_gone() -> None:
    lobby = Lobby(new_id=counter())
    first = lobby.open("tab1", "127.0.0.1", "order", "3+2")
    second = lobby.open("tab1", "127.0.0.1", "random", "none")
    assert [c["id"] for c in lobby.listing("tab2")] == ["c0", "c1"]
    assert lobby.listing("tab1")[0]["mine"] and not lobby.listing("tab2")[0]["mine"]
    with pytest.raises(WebError) as own:
        lobby.take(first.id, "tab1")
    assert own.value.code == "own_challenge"
    assert lobby.take(first.id, "tab2") == first
    with pytest.raises(WebError) as taken:
        lobby.take(first.id, "tab3")
    assert taken.value.code == "no_challenge"
    with pytest.raises(WebError) as not_mine:
        lobby.cancel(second.id, "tab2")
    assert not_mine.value.code == "no_challenge" and lobby.listing("x") != []
    third = lobby.open("tab3", "127.0.0.3", "chaos", "1+0")
    assert lobby.gone("tab1") and [c["id"] for c in lobby.listing("x")] == [third.id]
    lobby.cancel(third.id, "tab3")
    assert lobby.listing("x") == [] and not lobby.gone("tab3")


def test_lobby_caps_open_challenges_per_address() -> None:
    lobby = Lobby(new_id=counter())
    for tab in ("a", "b", "c"):
        lobby.open(tab, "127.0.0.1", "order", "none")
    with pytest.raises(WebError) as caught:
        lobby.open("d", "127.0.0.1", "order", "none")
    assert (caught.value.code, caught.value.args_) == ("lobby_limit", {"limit": 3})
    lobby.open("d", "127.0.0.2", "order", "none")  # another address has its own three
    lobby.gone("a")
    lobby.open("d", "127.0.0.1", "order", "none")  # a gone challenge frees its place


def test_play_anyone_pairs_the_first_two_on_the_same_time_control() -> None:
    lobby = Lobby()

    def seek(owner: str, control: str) -> str | None:
        found = lobby.seek(Seek(owner, control))
        return None if found is None else str(found.owner)

    assert seek("a", "3+2") is None and lobby.seeking_for("a") == "3+2"
    assert seek("b", "1+0") is None  # another time control: waits
    assert seek("a", "3+2") is None  # asking twice does not pair a tab with itself
    assert seek("c", "3+2") == "a" and lobby.seeking_for("a") is None
    assert seek("d", "3+2") is None  # "a" is paired: "d" waits for the next
    assert seek("b", "3+2") == "d" and lobby.seeking_for("b") is None  # "b" switched, and left 1+0
    assert seek("e", "1+0") is None
    lobby.gone("e")
    assert seek("f", "1+0") is None


# -- through the server ---------------------------------------------------------------------


class Site(AppSite):
    """An app and its sockets (all from the test client's one address)."""

    def __init__(self, bus: Bus | None = None) -> None:
        super().__init__(create_app(None, FAST, bus=bus))

    def close(self, ws: Any) -> None:
        ws.close()


def test_a_challenge_is_seen_live_accepted_with_one_click_and_both_play(bus: Callable[[], Bus | None]) -> None:
    with Site(bus()) as site:
        creator, viewer, taker = site.connect(), site.connect(), site.connect()
        for ws in (viewer, taker):
            ws.send_json({"type": "lobby"})
            assert receive(ws, "lobby")["challenges"] == []
        creator.send_json({"type": "challenge", "side": "chaos", "time_control": "3+2"})
        mine = receive(creator, "lobby")["challenges"]
        assert [(c["side"], c["time_control"], c["mine"]) for c in mine] == [("chaos", "3+2", True)]
        seen = receive(viewer, "lobby")["challenges"]
        assert [(c["side"], c["mine"]) for c in seen] == [("chaos", False)]
        receive(taker, "lobby")
        taker.send_json({"type": "accept", "challenge": seen[0]["id"]})
        assert receive(viewer, "lobby")["challenges"] == []  # taken: gone for everyone
        created, took = receive(creator, "joined"), receive(taker, "joined")
        assert (created["seat"], took["seat"]) == ("chaos", "order") and created["game"] == took["game"]
        assert created["token"] and took["token"]
        taker.send_json({"type": "move", "cell": 0, "symbol": "X"})
        for _ in range(50):
            view = receive(creator, "state")
            if len(view["moves"]) == 1:
                break
        assert view["clock"]["control"] == "3+2" and view["clock"]["running"] == "chaos" and view["invite"] is None
        viewer.send_json({"type": "accept", "challenge": seen[0]["id"]})
        assert receive(viewer, "error", error_ok=True)["code"] == "no_challenge"


def test_challenges_go_when_cancelled_or_when_their_tab_closes(bus: Callable[[], Bus | None]) -> None:
    with Site(bus()) as site:
        creator, viewer = site.connect(), site.connect()
        viewer.send_json({"type": "lobby"})
        receive(viewer, "lobby")
        creator.send_json({"type": "challenge", "side": "random", "time_control": "none"})
        creator.send_json({"type": "challenge", "side": "order", "time_control": "1+0"})
        receive(viewer, "lobby")
        listed = receive(viewer, "lobby")["challenges"]
        assert [(c["side"], c["time_control"]) for c in listed] == [("random", "none"), ("order", "1+0")]
        viewer.send_json({"type": "cancel", "challenge": listed[0]["id"]})  # not the viewer's
        assert receive(viewer, "error", error_ok=True)["code"] == "no_challenge"
        creator.send_json({"type": "cancel", "challenge": listed[0]["id"]})
        assert [c["id"] for c in receive(viewer, "lobby")["challenges"]] == [listed[1]["id"]]
        site.close(creator)
        assert receive(viewer, "lobby")["challenges"] == []


def test_at_most_three_open_challenges_per_client_address(bus: Callable[[], Bus | None]) -> None:
    with Site(bus()) as site:
        tabs = [site.connect() for _ in range(2)]
        for i in range(3):
            tabs[i % 2].send_json({"type": "challenge", "side": "order", "time_control": "none"})
            receive(tabs[i % 2], "lobby")
        tabs[1].send_json({"type": "challenge", "side": "order", "time_control": "none"})
        error = receive(tabs[1], "error", error_ok=True)
        assert (error["code"], error["args"]) == ("lobby_limit", {"limit": 3})
        tabs[0].send_json({"type": "challenge", "side": "sideways", "time_control": "none"})
        assert receive(tabs[0], "error", error_ok=True)["code"] == "side"
        tabs[0].send_json({"type": "challenge", "side": "order", "time_control": "2+1"})
        assert receive(tabs[0], "error", error_ok=True)["code"] == "time_control"


def wait_to_be_paired(ws: Any, time_control: str) -> None:
    """Ask to play anyone at ``time_control``; the tab is told it waits."""
    ws.send_json({"type": "play_anyone", "time_control": time_control})
    assert receive(ws, "lobby")["seeking"] == time_control


def test_play_anyone_pairs_two_tabs_asking_for_the_same_time_control(bus: Callable[[], Bus | None]) -> None:
    with Site(bus()) as site:
        first, other_clock, second = site.connect(), site.connect(), site.connect()
        wait_to_be_paired(first, "1+0")
        wait_to_be_paired(other_clock, "5+3")
        second.send_json({"type": "play_anyone", "time_control": "1+0"})
        one, two = receive(first, "joined"), receive(second, "joined")
        assert one["game"] == two["game"] and {one["seat"], two["seat"]} == {"order", "chaos"}
        other_clock.send_json({"type": "cancel"})
        assert receive(other_clock, "lobby")["seeking"] is None


def test_a_paired_tab_is_told_it_no_longer_waits(bus: Callable[[], Bus | None]) -> None:
    with Site(bus()) as site:
        first, second = site.connect(), site.connect()
        wait_to_be_paired(first, "3+2")
        second.send_json({"type": "play_anyone", "time_control": "3+2"})
        seats = {receive(first, "joined")["seat"]: first, receive(second, "joined")["seat"]: second}
        seats["order"].send_json({"type": "move", "cell": 0, "symbol": "X"})
        told = [msg for msg in until_moves(first, 1) if msg["type"] == "lobby"]
        assert [msg["seeking"] for msg in told] == [None]  # else its page keeps saying "waiting"


def test_a_tab_waiting_to_be_paired_that_starts_another_game_stops_waiting(bus: Callable[[], Bus | None]) -> None:
    with Site(bus()) as site:
        waiting, later, third = site.connect(), site.connect(), site.connect()
        wait_to_be_paired(waiting, "none")
        waiting.send_json({"type": "play_friend", "side": "order"})
        friend_game = receive(waiting, "joined")["game"]
        wait_to_be_paired(later, "none")  # waits: the first tab left the queue
        third.send_json({"type": "play_anyone", "time_control": "none"})
        assert receive(later, "joined")["game"] == receive(third, "joined")["game"] != friend_game
        assert receive(waiting, "lobby")["seeking"] is None  # and its page was told


def test_a_tab_that_goes_into_a_game_withdraws_its_open_challenges(bus: Callable[[], Bus | None]) -> None:
    with Site(bus()) as site:
        creator, viewer = site.connect(), site.connect()
        viewer.send_json({"type": "lobby"})
        receive(viewer, "lobby")
        creator.send_json({"type": "challenge", "side": "order", "time_control": "3+2"})
        assert len(receive(viewer, "lobby")["challenges"]) == 1
        creator.send_json({"type": "new_game", "side": "order", "opponent": "random"})
        receive(creator, "state")  # the game's first view comes after the lobby was told
        viewer.send_json({"type": "lobby"})
        # else accepting it would pull the creator out of the game it is playing
        assert receive(viewer, "lobby")["challenges"] == []


def test_a_tab_that_goes_into_a_game_is_told_its_challenges_were_withdrawn() -> None:
    """A new friend game withdraws the tab's open challenges: its page is told how many, so it
    can say so; a tab that had none is told nothing."""
    with Site() as site:
        creator, other = site.connect(), site.connect()
        for side in ("order", "chaos"):
            creator.send_json({"type": "challenge", "side": side, "time_control": "3+2"})
            assert receive(creator, "lobby").get("withdrawn") is None
        creator.send_json({"type": "play_friend", "side": "order"})
        assert receive(creator, "lobby")["withdrawn"] == 2
        other.send_json({"type": "play_friend", "side": "order"})
        receive(other, "joined")
        other.send_json({"type": "lobby"})
        assert receive(other, "lobby").get("withdrawn") is None
