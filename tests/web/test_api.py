"""The WebSocket API of ``orderchaos serve`` through Starlette's TestClient: games against
an agent and against a friend (links, seats, watchers), every kind of bad message, the
caps, cancellation of abandoned work, the store across a restart, watch and study."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the web extra is not installed: pip install -e '.[dev]'")
pytest.importorskip("starlette.testclient", reason="Starlette's TestClient needs httpx: pip install -e '.[dev]'")

from starlette.testclient import TestClient  # noqa: E402
from starlette.websockets import WebSocketDisconnect  # noqa: E402

from orderchaos.agents import cancel  # noqa: E402
from orderchaos.agents.registry import make  # noqa: E402
from orderchaos.arena import analysis  # noqa: E402
from orderchaos.arena.game_files import load_games, save_games  # noqa: E402
from orderchaos.arena.matches import play_game  # noqa: E402
from orderchaos.web import games as web_games  # noqa: E402
from orderchaos.web import sessions  # noqa: E402
from orderchaos.web import app as web_app  # noqa: E402
from orderchaos.web.app import create_app, pick_language  # noqa: E402
from orderchaos.web.clocks import PRESETS, GameClock  # noqa: E402
from orderchaos.web.errors import TimedOut, WebError  # noqa: E402
from orderchaos.web.protocol import RateLimit, nesting_depth  # noqa: E402
from orderchaos.web.proxy import is_loopback  # noqa: E402
from orderchaos.web.services import Limits, Services  # noqa: E402
from orderchaos.web.store import GameStore  # noqa: E402
from orderchaos.envs.rules import State, parse_action_name  # noqa: E402

from helpers import HEURISTIC_VS_RANDOM_GAME, RANDOM_SEED_3_GAME, SOCKET_DEADLINE, receive_json  # noqa: E402

STATIC = Path(sessions.__file__).parent / "static"
# hints and studies stop the solver by nodes, not seconds: the same answers on a busy machine
FAST = Limits(move_time=5.0, hint_time=0.3, study_time=0.05, hint_nodes=20_000, study_nodes=2_000,
              max_message_bytes=4096, max_upload_bytes=8192, rate=1000, burst=1000)


def receive(ws: Any, kind: str, mode: str | None = None, skip_errors: bool = False) -> dict:
    """The next message of type ``kind`` (and ``mode``), skipping others; fails on an
    unexpected error message."""
    for _ in range(400):
        msg = receive_json(ws)
        if msg["type"] == kind and (mode is None or msg.get("mode") == mode):
            return msg
        if msg["type"] == "error" and not skip_errors:
            raise AssertionError(f"unexpected error while waiting for {kind}: {msg['message']}")
        if msg["type"] == "state" and msg.get("error") and not skip_errors:
            raise AssertionError(f"unexpected error in a view: {msg['error']}")
    raise AssertionError(f"no {kind} message came")


def error_of(ws: Any) -> dict:
    """The next error message."""
    return receive(ws, "error", skip_errors=True)


def until_turn(ws: Any, side: str) -> dict:
    """Play views until it is ``side``'s turn (no agent thinking) or the game is over."""
    while True:
        view = receive(ws, "state", "play")
        if view["winner"] is not None or (view["to_play"] == side and not view["thinking"]):
            return view


def sockets(client: TestClient) -> ExitStack:
    stack = getattr(client, "sockets", None)
    assert stack is not None
    return stack


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    """A TestClient over an app whose games folder is ``tmp_path/games``; the sockets that
    :func:`connect` opened are closed before it stops."""
    games = tmp_path / "games"
    games.mkdir()
    with TestClient(create_app(games, FAST)) as test_client, ExitStack() as stack:
        test_client.sockets = stack  # type: ignore[attr-defined]
        yield test_client


def connect(client: TestClient) -> Any:
    """Open a socket (closed with the client) and read the greeting."""
    ws = sockets(client).enter_context(client.websocket_connect("/ws"))
    hello = receive_json(ws)
    assert hello["type"] == "hello" and hello["levels"]["strongest"] == "pretrained:sims=200,solver=26"
    return ws


def test_a_message_that_never_comes_fails_the_wait_instead_of_hanging(client: TestClient) -> None:
    ws = connect(client)  # after its greeting the server says nothing until asked
    with pytest.raises(AssertionError, match=r"^no message came from the server within 0.2 s$"):
        receive_json(ws, seconds=0.2)
    ws.send_json({"type": "state"})  # the socket still works, and no message was lost
    assert receive_json(ws)["type"] == "state"


def test_no_test_waits_on_a_socket_without_a_deadline() -> None:
    """Starlette's own receive waits forever: every test receives through
    ``helpers.receive_json``, which fails when no message comes."""
    tests = Path(__file__).resolve().parent.parent
    bare = [f"{path.relative_to(tests)}:{number}" for path in sorted(tests.rglob("*.py")) if path.name != "helpers.py"
            for number, line in enumerate(path.read_text().splitlines(), 1)
            if re.search(r"[\w)\]]\.receive(_json|_text|_bytes)?\(", line)]
    assert bare == []


def first_empty(view: dict) -> int:
    return view["board"].index("") if "board" in view else next(c for c in range(36) if not stones(view)[c])


def stones(view: dict) -> list[str]:
    """The cells of a view, rebuilt from its moves."""
    cells = [""] * 36
    for m in view["moves"]:
        from orderchaos.envs.rules import parse_cell

        name, symbol = m["move"].split()
        cells[parse_cell(name)] = symbol
    return cells


def empty_cell(view: dict) -> int:
    return stones(view).index("")


def new_agent_game(ws: Any, side: str, opponent: str) -> tuple[dict, dict]:
    """Start a game against an agent: the ``joined`` message and the first view for the
    person's turn."""
    ws.send_json({"type": "new_game", "side": side, "opponent": opponent})
    joined = receive(ws, "joined")
    return joined, until_turn(ws, side)


# -- pages and headers -------------------------------------------------------------------


def test_page_static_files_and_security_headers(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and 'data-testid="status"' in page.text
    csp = page.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert page.headers["x-content-type-options"] == "nosniff" and page.headers["referrer-policy"] == "no-referrer"
    assert client.get("/g/abcdefghijklmnopqrstuv").status_code == 200  # a game link is the page too
    proof = client.get("/docs/proof.md")  # the rules panel's link, in a checkout of the repository
    assert proof.status_code == 200 and "proof" in proof.text.lower()
    assert client.get("/games/abcdefghijklmnopqrstuv.jsonl").status_code == 404
    for name in ("app.js", "style.css"):
        answer = client.get(f"/static/{name}")
        assert answer.status_code == 200 and "content-security-policy" in answer.headers
    for name in ("index.html", "app.js", "style.css"):  # offline: nothing from another host
        text = (STATIC / name).read_text()
        assert not re.findall(r"https?://(?!www\.w3\.org/2000/svg)", text), name


def test_page_language_follows_accept_language(client: TestClient) -> None:
    assert pick_language("sv-SE,sv;q=0.9,en;q=0.8") == "sv"
    assert pick_language("fr-FR, de;q=0.7, en;q=0.9") == "en"
    assert pick_language("nn-NO") == "nb" and pick_language("no") == "nb"
    assert pick_language("de-AT;q=0.5, xx") == "de" and pick_language(None) == "en" and pick_language("fr") == "en"
    assert '<html lang="de"' in client.get("/", headers={"accept-language": "de-DE"}).text


# -- against an agent --------------------------------------------------------------------


def test_full_game_against_random_as_order(client: TestClient) -> None:
    ws = connect(client)
    joined, view = new_agent_game(ws, "order", "random:seed=3")
    assert joined["seat"] == "order" and len(joined["token"]) >= 43 and len(joined["game"]) >= 22
    while view["winner"] is None:
        ws.send_json({"type": "move", "cell": empty_cell(view), "symbol": "X"})
        view = until_turn(ws, "order")
    assert [m["move"] for m in view["moves"]] == RANDOM_SEED_3_GAME
    assert [m["side"] for m in view["moves"]] == ["order", "chaos"] * 15 + ["order"]
    # e4 X completes the diagonal b1-f5 (cells 1, 8, 15, 22, 29)
    assert (view["winner"], view["line"], view["winning_line"]) == ("order", "b1–f5", [1, 8, 15, 22, 29])


def test_play_as_chaos_the_agent_moves_first_and_undo_takes_back_a_pair(client: TestClient) -> None:
    ws = connect(client)
    _, view = new_agent_game(ws, "chaos", "easy")
    assert len(view["moves"]) == 1 and view["last"] is not None and view["players"]["order"]["agent"] == "easy"
    ws.send_json({"type": "move", "text": "f6 o"})
    view = until_turn(ws, "chaos")
    assert stones(view)[35] == "O" and len(view["moves"]) == 3
    ws.send_json({"type": "undo"})
    view = receive(ws, "state", "play")
    assert len(view["moves"]) == 1 and stones(view)[35] == ""
    ws.send_json({"type": "undo"})
    assert error_of(ws)["code"] == "no_undo"
    ws.send_json({"type": "move", "text": "a6 x"})  # the store dropped both moves taken back
    view = until_turn(ws, "chaos")
    assert len(view["moves"]) == 3 and stones(view)[30] == "X" and stones(view)[35] == ""


def test_the_store_takes_back_from_the_given_ply_on(tmp_path: Path) -> None:
    store = GameStore(tmp_path / "games.sqlite3")
    store.create("g" * 22, {"order": None, "chaos": None}, {"order": None, "chaos": None},
                 {"order": None, "chaos": None}, None)
    for ply, action in enumerate([0, 3, 5, 7]):
        store.add_move("g" * 22, ply, action, None)
    store.take_back("g" * 22, 2)
    loaded = store.load("g" * 22)
    assert loaded is not None and loaded.actions == [0, 3]
    store.add_move("g" * 22, 2, 9, None)  # ply 2 is free again
    assert store.load("g" * 22).actions == [0, 3, 9]  # type: ignore[union-attr]
    store.close()


BAD_MESSAGES = [
    ("not json at all", "not JSON"),
    ("[1, 2]", "JSON object"),
    ('{"type": "move", "cell": ' + "9" * 5000 + ', "symbol": "X"}', "more than 12 digits"),
    ('{"type": "move", "cell": -' + "1" * 40 + ', "symbol": "X"}', "more than 12 digits"),
    ("[" * 100_000 + "]" * 100_000, "too large"),
    ('{"type": "move", "cell": ' + "[" * 1000 + "]" * 1000 + "}", "nested too deeply"),
    ('{"type": "move", "cell": NaN, "symbol": "X"}', "not a number"),
    (json.dumps({"type": "move", "cell": {"a": 1}, "symbol": "X"}), "not a list or object"),
    (json.dumps({"kind": "move"}), "unknown message type"),
    (json.dumps({"type": "launch"}), "unknown message type"),
    (json.dumps({"type": ["move"]}), "unknown message type"),
    (json.dumps({"type": "move", "cell": 14, "symbol": "X", "as": "chaos"}), "unknown field 'as'"),
    (json.dumps({"type": "move", "cell": 99, "symbol": "X"}), "integer 0..35"),
    (json.dumps({"type": "move", "cell": "a1", "symbol": "X"}), "integer 0..35"),
    (json.dumps({"type": "move", "cell": True, "symbol": "X"}), "integer 0..35"),
    (json.dumps({"type": "move", "cell": 2.5, "symbol": "X"}), "integer 0..35"),
    (json.dumps({"type": "move", "cell": 0, "symbol": "Z"}), "'X' or 'O'"),
    (json.dumps({"type": "move", "text": "z9 q"}), "could not read"),
    (json.dumps({"type": "move", "text": 5}), "a move such as"),
    (json.dumps({"type": "open", "game": "x" * 40}), "no such game"),
    (json.dumps({"type": "open", "game": 12}), "no such game"),
    (json.dumps({"type": "new_game", "side": "both", "opponent": "random"}), "side must be"),
    (json.dumps({"type": "new_game", "side": "order", "opponent": "grandmaster"}), "unknown agent"),
    (json.dumps({"type": "new_game", "side": "order", "opponent": "/etc"}), "unknown agent"),
    (json.dumps({"type": "new_game", "side": "order", "opponent": "mcts:sims=lots"}), "must be int"),
    (json.dumps({"type": "new_game", "side": "order", "opponent": "pretrained:sims=100000"}), "sims is at most"),
    (json.dumps({"type": "new_game", "side": "order", "opponent": "mcts:time=1000"}), "time is at most"),
    (json.dumps({"type": "new_game", "side": "order", "opponent": "x" * 500}), "at most"),
    (json.dumps({"type": "new_game", "side": "order"}), "give an opponent level"),
    (json.dumps({"type": "move", "text": "x" * 5000}), "message too large"),
    (json.dumps({"type": "watch", "order": "random", "chaos": "random", "delay_ms": -1}), "delay_ms"),
    (json.dumps({"type": "open_file", "name": "../secret.jsonl"}), "no file"),
    (json.dumps({"type": "open_file", "name": "/etc/passwd"}), "no file"),
    (json.dumps({"type": "analyse", "game": 0}), "open a file first"),
    (json.dumps({"type": "upload", "name": "big.jsonl", "content": "x" * 9000}), "limited to"),
    (json.dumps({"type": "upload", "name": "bad.jsonl", "content": "{not json\n"}), "bad.jsonl:1: bad JSON"),
    (json.dumps({"type": "step"}), "start watching first"),
    (json.dumps({"type": "rematch"}), "not over"),
]


def test_every_bad_message_gets_an_error_changes_nothing_and_keeps_the_connection(client: TestClient) -> None:
    ws = connect(client)
    _, view = new_agent_game(ws, "order", "random")
    ws.send_json({"type": "move", "cell": 14, "symbol": "X"})
    before = until_turn(ws, "order")
    assert stones(before)[14] == "X"
    for text, expected in BAD_MESSAGES + [
        (json.dumps({"type": "move", "cell": 14, "symbol": "O"}), "already holds X"),
        (json.dumps({"type": "move", "text": "c3 x"}), "already holds X"),
    ]:
        ws.send_text(text)
        ws.send_json({"type": "probe"})  # answered with an error too, so a missing answer fails, not hangs
        error = error_of(ws)
        assert expected in error["message"], (text[:80], error["message"])
        assert error["code"] and "Traceback" not in error["message"]
        assert "'probe'" in error_of(ws)["message"]
    ws.send_bytes(b"\x00\x01")
    assert "binary" in error_of(ws)["message"]
    ws.send_json({"type": "state"})  # the connection is still open and the game unchanged
    after = receive(ws, "state", "play")
    assert after["moves"] == before["moves"] and after["game"] == before["game"]


def test_nesting_depth_skips_strings() -> None:
    assert nesting_depth('{"a": "[[[[[[{{{{"}') == 1
    assert nesting_depth('{"a": "\\"[[[["}') == 1
    assert nesting_depth("[[[]]]") == 3


def test_a_burst_of_messages_is_refused_past_the_rate_limit_and_the_connection_stays(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """The connection's bucket runs on a clock the test moves: 30 messages at one instant
    give exactly the burst of 5 answers and 25 refusals; a second later one more is served."""
    now = [0.0]
    monkeypatch.setattr(web_app, "RateLimit", lambda rate, burst: RateLimit(rate, burst, clock=lambda: now[0]))
    limits = Limits(move_time=5, rate=1.0, burst=5)
    with TestClient(create_app(None, limits)) as quick, ExitStack() as stack:
        quick.sockets = stack  # type: ignore[attr-defined]
        ws = connect(quick)
        for _ in range(30):
            ws.send_json({"type": "state"})
        answers = [receive_json(ws) for _ in range(30)]
        refused = [a for a in answers if a["type"] == "error" and a["code"] == "rate"]
        assert len(refused) == 25 and [a["type"] for a in answers if a not in refused] == ["state"] * 5
        now[0] = 1.0  # the bucket refills: the connection is open and served again
        ws.send_json({"type": "state"})
        assert receive_json(ws)["type"] == "state"
        ws.send_json({"type": "state"})
        assert receive_json(ws)["code"] == "rate"


def test_rate_limit_refills_at_its_rate_up_to_its_burst() -> None:
    now = [0.0]
    bucket = RateLimit(2.0, 3, clock=lambda: now[0])
    assert [bucket.allow() for _ in range(4)] == [True, True, True, False]
    now[0] = 0.5
    assert bucket.allow() and not bucket.allow()
    now[0] = 1000.0  # a long quiet spell fills the bucket to its burst, no further
    assert [bucket.allow() for _ in range(4)] == [True, True, True, False]


def test_an_exception_inside_the_server_never_reaches_the_page(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crashing(agent: Any, state: State) -> int:
        raise RuntimeError("boom in /srv/secret/path")

    monkeypatch.setattr(web_games, "agent_move", crashing)
    ws = connect(client)
    ws.send_json({"type": "new_game", "side": "chaos", "opponent": "random"})
    view = receive(ws, "state", "play")
    while not view.get("error"):
        view = receive(ws, "state", "play", skip_errors=True)
    assert view["error"]["code"] == "internal"
    assert "boom" not in json.dumps(view) and "/srv" not in json.dumps(view) and "RuntimeError" not in json.dumps(view)


def test_a_stuck_agent_ends_its_move_with_an_error_and_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    def stuck(agent: Any, state: State) -> int:
        while True:
            cancel.check()
            time.sleep(0.01)

    monkeypatch.setattr(web_games, "agent_move", stuck)
    with TestClient(create_app(None, Limits(move_time=0.3))) as quick, ExitStack() as stack:
        quick.sockets = stack  # type: ignore[attr-defined]
        services = quick.app.state.services  # type: ignore[attr-defined]
        ws = connect(quick)
        ws.send_json({"type": "new_game", "side": "chaos", "opponent": "random"})
        view = receive(ws, "state", "play")
        while not view.get("error"):
            view = receive(ws, "state", "play", skip_errors=True)
        assert view["error"]["code"] == "timeout" and view["moves"] == [] and not view["thinking"]
        assert wait_until(lambda: services.running == 0)


def test_spec_policy_levels_only_and_no_directories(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    open_server = Services(Limits(free_specs=True, spec_dirs=False))
    for name in (str(run_dir), str(tmp_path / "missing")):  # the same answer, existing or not
        with pytest.raises(sessions.WebError, match="unknown agent") as caught:
            open_server.opponent(name, "chaos")
        assert str(tmp_path) not in str(caught.value).replace(repr(name)[1:-1][:40], "")
    assert open_server.opponent("Hard", "chaos") == ("pretrained:sims=200", "hard")
    assert open_server.opponent("solver", "chaos")[0] == "solver:time=3"
    levels_only = Services(Limits(free_specs=False))
    assert levels_only.opponent("easy", "chaos") == ("heuristic", "easy")
    with pytest.raises(sessions.WebError, match="choose an opponent level"):
        levels_only.opponent("random", "chaos")


def test_solver_gets_the_move_time_as_its_budget() -> None:
    assert Services(Limits(move_time=30)).checked_spec("solver") == "solver:time=3"
    assert Services(Limits(move_time=2.5)).checked_spec("solver") == "solver:time=2"
    assert Services(Limits(move_time=30)).checked_spec("solver:seed=2") == "solver:seed=2,time=3"
    assert Services(Limits(move_time=5)).checked_spec("solver:time=1") == "solver:time=1"
    assert Services(Limits(move_time=5)).checked_spec("mcts:sims=800") == "mcts:sims=800"


def test_connections_past_the_cap_are_told_the_server_is_busy() -> None:
    with TestClient(create_app(None, Limits(max_connections=2))) as capped, ExitStack() as stack:
        capped.sockets = stack  # type: ignore[attr-defined]
        connect(capped), connect(capped)
        with capped.websocket_connect("/ws") as third:
            assert receive_json(third)["code"] == "busy"
            with pytest.raises(WebSocketDisconnect):
                receive_json(third)


def test_games_past_the_cap_are_refused_as_busy() -> None:
    with TestClient(create_app(None, Limits(max_games=1))) as capped, ExitStack() as stack:
        capped.sockets = stack  # type: ignore[attr-defined]
        one, two = connect(capped), connect(capped)
        one.send_json({"type": "play_friend", "side": "order"})
        receive(one, "joined")
        two.send_json({"type": "play_friend", "side": "order"})
        assert "busy" in error_of(two)["message"]


def test_reopening_a_saved_game_counts_against_the_cap_too() -> None:
    """A game no tab has open lives only in the store; opening it again while the cap is
    reached is refused as busy, like a new game."""
    with TestClient(create_app(None, Limits(max_games=1))) as capped, ExitStack() as stack:
        capped.sockets = stack  # type: ignore[attr-defined]
        with capped.websocket_connect("/ws") as one:
            receive_json(one)
            one.send_json({"type": "play_friend", "side": "order"})
            saved = receive(one, "joined")["game"]
        two = connect(capped)
        assert wait_until(lambda: not capped.app.state.hub.games)  # the closed tab's game left memory
        two.send_json({"type": "play_friend", "side": "order"})
        receive(two, "joined")
        three = connect(capped)
        three.send_json({"type": "open", "game": saved})
        answer = receive_json(three)
        assert (answer["type"], answer.get("code")) == ("error", "busy"), answer


# -- cancellation --------------------------------------------------------------------------


def wait_until(condition: Any, seconds: float = SOCKET_DEADLINE) -> bool:
    """Poll ``condition`` until true or ``seconds`` passed; its last value. The default is
    far more than any condition here takes on a busy machine: only one that never holds
    reaches it."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


class EndlessSearch:
    """A search that never ends by itself: it counts its steps and checks the cancel flag
    at each, as MCTS and the solver do."""

    def __init__(self) -> None:
        self.steps = 0
        self.started = threading.Event()
        self.stopped = threading.Event()

    def __call__(self, *args: Any) -> Any:
        self.started.set()
        try:
            while True:
                cancel.check()
                self.steps += 1
                time.sleep(0.005)
        finally:
            self.stopped.set()


def test_closing_the_tab_stops_the_agents_search(monkeypatch: pytest.MonkeyPatch) -> None:
    search = EndlessSearch()
    monkeypatch.setattr(web_games, "agent_move", search)
    with TestClient(create_app(None, Limits(move_time=600))) as quick:
        services = quick.app.state.services  # type: ignore[attr-defined]
        with quick.websocket_connect("/ws") as ws:
            receive_json(ws)
            ws.send_json({"type": "new_game", "side": "chaos", "opponent": "random"})
            assert search.started.wait(SOCKET_DEADLINE)
        assert search.stopped.wait(SOCKET_DEADLINE), "the search went on after its tab closed"
        steps = search.steps
        assert wait_until(lambda: services.running == 0)
        time.sleep(0.05)
        assert search.steps == steps


def test_a_newer_hint_replaces_the_older_and_closing_stops_it(monkeypatch: pytest.MonkeyPatch) -> None:
    searches: list[EndlessSearch] = []

    def endless_hint(*args: Any, **options: Any) -> Any:
        searches.append(EndlessSearch())
        return searches[-1]()

    monkeypatch.setattr(analysis, "hint", endless_hint)
    with TestClient(create_app(None, Limits(move_time=5, hint_time=600))) as quick:
        services = quick.app.state.services  # type: ignore[attr-defined]
        with quick.websocket_connect("/ws") as ws:
            receive_json(ws)
            new_agent_game(ws, "order", "random")
            ws.send_json({"type": "hint"})
            assert wait_until(lambda: len(searches) == 1 and searches[0].started.is_set())
            ws.send_json({"type": "hint"})
            assert wait_until(lambda: len(searches) == 2 and searches[1].started.is_set())
            assert searches[0].stopped.wait(SOCKET_DEADLINE), "the replaced hint went on"
            assert not searches[1].stopped.is_set()
        assert searches[1].stopped.wait(SOCKET_DEADLINE), "the hint went on after its tab closed"
        assert wait_until(lambda: services.running == 0)


def test_hint_gives_the_solvers_winning_move(client: TestClient) -> None:
    """X on b1, c1 and d1 against ``random:seed=1`` (which answers f3 O and b4 O, then e5
    X): row 1 reads .XXX.., and only X on e1 leaves two completion cells (a1 and f1), a
    win the solver proves at once. X on a1 would leave one, which Chaos blocks."""
    ws = connect(client)
    new_agent_game(ws, "order", "random:seed=1")
    for cell in (1, 2, 3):
        ws.send_json({"type": "move", "cell": cell, "symbol": "X"})
        view = until_turn(ws, "order")
    assert [m["move"] for m in view["moves"]] == ["b1 X", "f3 O", "c1 X", "b4 O", "d1 X", "e5 X"]
    ws.send_json({"type": "hint"})
    assert receive(ws, "hint") == {"type": "hint", "mode": "play", "time": 0.3, "to_play": "order", "winner": "order",
                                   "actions": [8], "moves": ["e1 X"], "source": "solver", "more": 0, "value": None}
    near_win = State.from_string("XXXX." + "." * 31)  # X on e1 is the one five
    services = Services(FAST)
    assert analysis.hint(near_win, services.solve, 0.3, node_limit=FAST.hint_nodes) == analysis.Hint("order", [8], "solver", 0)


def test_a_node_limit_bounds_hints_and_studies_instead_of_their_time() -> None:
    """An hour of solver time but 100 nodes a call: the empty board is not proven (the
    network's favourites come instead) and a study proves only the last four positions;
    had the node limit been dropped, each call would have run for its hour."""
    services = Services(Limits(hint_time=3600, study_time=3600, hint_nodes=100, study_nodes=100))
    found = services.hint(State())
    assert (found.winner, found.source, len(found.actions)) == (None, "network", 3)
    actions = [parse_action_name(move) for move in HEURISTIC_VS_RANDOM_GAME]
    assert services.study(actions)["verdicts"] == [None] * 6 + ["order"] * 4


# -- against a friend ------------------------------------------------------------------------


def friend_game(client: TestClient, side: str = "order") -> tuple[Any, dict, dict]:
    """A creator's socket, its ``joined`` and its first view (holding the invite)."""
    creator = connect(client)
    creator.send_json({"type": "play_friend", "side": side})
    joined = receive(creator, "joined")
    view = receive(creator, "state", "play")
    return creator, joined, view


def test_a_friend_game_through_the_invite_link_with_a_watcher(client: TestClient) -> None:
    order, joined, view = friend_game(client)
    game, invite = joined["game"], view["invite"]
    assert joined["seat"] == "order" and invite and len(game) >= 22 and invite != game
    assert not view["players"]["chaos"]["taken"]
    watcher = connect(client)
    watcher.send_json({"type": "open", "game": game})  # the watch link: the id alone
    assert receive(watcher, "joined")["seat"] is None
    assert receive(watcher, "state", "play")["invite"] is None  # a watcher never sees the invite
    second_tab = connect(client)  # the creator's reload or second tab shows the invite again
    second_tab.send_json({"type": "open", "game": game, "token": joined["token"]})
    assert receive(second_tab, "joined")["seat"] == "order"
    assert receive(second_tab, "state", "play")["invite"] == invite
    chaos = connect(client)
    chaos.send_json({"type": "open", "game": game, "invite": invite})
    chaos_joined = receive(chaos, "joined")
    assert chaos_joined["seat"] == "chaos" and chaos_joined["token"] != joined.get("token")
    late = connect(client)  # the invite gives the seat once: the next opener watches
    late.send_json({"type": "open", "game": game, "invite": invite})
    assert receive(late, "joined")["seat"] is None
    players = {"order": order, "chaos": chaos}
    turn, cell = "order", 0
    view = receive(watcher, "state", "play")
    while view["winner"] is None:
        players[turn].send_json({"type": "move", "cell": cell, "symbol": "X"})
        view = receive(watcher, "state", "play")
        while len(view["moves"]) <= cell:
            view = receive(watcher, "state", "play")
        cell += 1
        turn = "chaos" if turn == "order" else "order"
    assert view["winner"] == "order" and view["line"] == "a1–e1" and view["moves"][-1]["side"] == "order"
    assert view["seat"] is None


def test_seats_watchers_cannot_move_and_an_id_without_the_token_takes_no_seat(client: TestClient) -> None:
    order, joined, view = friend_game(client)
    game = joined["game"]
    thief = connect(client)
    for attempt in ({"type": "open", "game": game},
                    {"type": "open", "game": game, "token": "guessed-token"},
                    {"type": "open", "game": game, "invite": "guessed-invite"}):
        thief.send_json(attempt)
        assert receive(thief, "joined")["seat"] is None
        thief.send_json({"type": "move", "cell": 0, "symbol": "X"})
        assert error_of(thief)["code"] == "watching"
    thief.send_json({"type": "state"})
    assert receive(thief, "state", "play")["moves"] == []
    order.send_json({"type": "move", "cell": 7, "symbol": "O"})  # not before the friend has come
    assert error_of(order)["code"] == "no_opponent"
    friend = connect(client)
    friend.send_json({"type": "open", "game": game, "invite": view["invite"]})
    assert receive(friend, "joined")["seat"] == "chaos"
    order.send_json({"type": "move", "cell": 7, "symbol": "O"})  # the seat holder can
    moved = receive(order, "state", "play")
    while not moved["moves"]:  # (views sent as the thief came and went)
        moved = receive(order, "state", "play")
    assert moved["moves"][0]["move"] == "b2 O"
    order.send_json({"type": "move", "cell": 8, "symbol": "O"})  # but not out of turn
    assert error_of(order)["code"] == "not_your_turn"
    again = connect(client)  # a reload / second tab: the token puts it back in its seat
    again.send_json({"type": "open", "game": game, "token": joined["token"]})
    assert receive(again, "joined")["seat"] == "order"
    assert receive(again, "state", "play")["invite"] is None  # claimed: no longer shown


def test_rematch_swaps_the_sides_and_moves_the_tokens(client: TestClient) -> None:
    order, joined, view = friend_game(client)
    chaos = connect(client)
    chaos.send_json({"type": "open", "game": joined["game"], "invite": view["invite"]})
    chaos_token = receive(chaos, "joined")["token"]
    for ply in range(9):  # Order completes a1..e1 with X, Chaos plays a2.. with O
        mover = order if ply % 2 == 0 else chaos
        mover.send_json({"type": "move", "cell": ply // 2 + (0 if ply % 2 == 0 else 6), "symbol": "X" if ply % 2 == 0 else "O"})
        receive(mover, "state", "play")
    order.send_json({"type": "study_game"})
    studied = receive(order, "games")
    assert studied["games"][0]["winner"] == "order" and studied["games"][0]["order"] == "person"
    assert client.get(f"/games/{joined['game']}.jsonl").status_code == 200
    chaos.send_json({"type": "rematch"})
    new_game = receive(chaos, "rematch")["game"]
    assert receive(order, "rematch")["game"] == new_game
    chaos.send_json({"type": "open", "game": new_game, "token": chaos_token})
    assert receive(chaos, "joined")["seat"] == "order"
    order.send_json({"type": "open", "game": new_game, "token": joined["token"]})
    assert receive(order, "joined")["seat"] == "chaos"


def test_a_random_side_is_drawn_from_the_two(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    draws: list[int] = []

    def draw(n: int) -> int:
        draws.append(n)
        return len(draws) - 1  # 0, then 1

    monkeypatch.setattr(sessions.secrets, "randbelow", draw)
    for seat in ("order", "chaos"):
        ws = connect(client)
        ws.send_json({"type": "play_friend", "side": "random"})
        assert receive(ws, "joined")["seat"] == seat
    assert draws == [2, 2]


# -- the store -------------------------------------------------------------------------------


def test_games_survive_a_restart_with_a_file_database(store_url: str) -> None:
    db = store_url  # a SQLite file, and a PostgreSQL database
    with TestClient(create_app(None, FAST, db=db)) as first, ExitStack() as stack:
        first.sockets = stack  # type: ignore[attr-defined]
        order, joined, view = friend_game(first)
        chaos = connect(first)
        chaos.send_json({"type": "open", "game": joined["game"], "invite": view["invite"]})
        chaos_token = receive(chaos, "joined")["token"]
        order.send_json({"type": "move", "cell": 0, "symbol": "X"})
        receive(order, "state", "play")
        agent_ws = connect(first)
        agent_joined, agent_view = new_agent_game(agent_ws, "order", "heuristic")
        agent_ws.send_json({"type": "move", "cell": 14, "symbol": "X"})
        agent_view = until_turn(agent_ws, "order")
    with TestClient(create_app(None, FAST, db=db)) as second, ExitStack() as stack:
        second.sockets = stack  # type: ignore[attr-defined]
        chaos = connect(second)
        chaos.send_json({"type": "open", "game": joined["game"], "token": chaos_token})
        assert receive(chaos, "joined")["seat"] == "chaos"
        assert [m["move"] for m in receive(chaos, "state", "play")["moves"]] == ["a1 X"]
        chaos.send_json({"type": "move", "cell": 1, "symbol": "O"})
        assert len(receive(chaos, "state", "play")["moves"]) == 2
        again = connect(second)  # the agent is rebuilt from its spec and plays on
        again.send_json({"type": "open", "game": agent_joined["game"], "token": agent_joined["token"]})
        assert receive(again, "joined")["seat"] == "order"
        view = until_turn(again, "order")
        assert view["moves"] == agent_view["moves"] and view["players"]["chaos"]["agent"] == "heuristic"
        again.send_json({"type": "move", "cell": 21, "symbol": "X"})
        view = until_turn(again, "order")
        assert len(view["moves"]) == 4
    store = GameStore(db)
    assert store.load(joined["game"]).actions == [0, 3]  # type: ignore[union-attr]
    assert sorted(store.ids(finished=False)) == sorted([joined["game"], agent_joined["game"]])


def test_export_games_writes_game_files_that_replay_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from orderchaos.cli.main import main

    db = tmp_path / "games.sqlite3"
    with TestClient(create_app(None, FAST, db=db)) as first, ExitStack() as stack:
        first.sockets = stack  # type: ignore[attr-defined]
        ws = connect(first)
        _, view = new_agent_game(ws, "order", "random:seed=1")
        while view["winner"] is None:
            ws.send_json({"type": "move", "cell": empty_cell(view), "symbol": "X"})
            view = until_turn(ws, "order")
        friend_game(first)  # unfinished: not exported
    out = tmp_path / "export"
    assert main(["serve", "--db", str(db), "--export-games", str(out)]) == 0
    assert "wrote 1 finished games into 1 files" in capsys.readouterr().out
    (path,) = out.iterdir()
    (saved,) = load_games(path)
    assert saved.order == "person" and saved.chaos == "random:seed=1" and saved.record.winner == view["winner"]
    assert main(["replay", str(path), "--game", "0"]) == 0
    assert main(["serve", "--db", str(tmp_path / "none.sqlite3"), "--export-games", str(out)]) == 2


def test_the_store_refuses_a_file_that_is_not_sqlite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from orderchaos.cli.main import main

    bad = tmp_path / "bad.sqlite3"
    bad.write_text("not a database" * 100)
    assert main(["serve", "--db", str(bad), "--export-games", str(tmp_path / "out")]) == 2
    assert "not a usable game store" in capsys.readouterr().err


def test_a_store_with_damaged_pages_is_refused_at_start_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from orderchaos.cli.main import main

    db = tmp_path / "games.sqlite3"
    store = GameStore(db)
    for n in range(400):  # enough rows for the tables to span many pages
        store.create(f"game{n:04d}", {"order": "random", "chaos": None}, {"order": None, "chaos": None},
                     {"order": None, "chaos": None}, f"invite{n:04d}")
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    data = bytearray(db.read_bytes())
    page = 4096
    assert len(data) > 6 * page
    data[3 * page:5 * page] = b"\xa5" * (2 * page)  # the header page stays intact
    db.write_bytes(bytes(data))
    assert main(["serve", "--db", str(db), "--export-games", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "damaged" in err and "Traceback" not in err, err


def test_a_store_locked_by_another_program_answers_with_a_coded_error(tmp_path: Path) -> None:
    import sqlite3

    store = GameStore(tmp_path / "games.sqlite3")
    store.db.execute("PRAGMA busy_timeout=0")  # refuse at once rather than wait for the lock
    other = sqlite3.connect(tmp_path / "games.sqlite3", isolation_level=None)
    with TestClient(create_app(None, FAST, db=store)) as test_client, ExitStack() as stack:
        test_client.sockets = stack  # type: ignore[attr-defined]
        ws = connect(test_client)
        other.execute("BEGIN EXCLUSIVE")
        ws.send_json({"type": "new_game", "side": "order", "opponent": "random"})
        error = error_of(ws)
        assert error["code"] == "store_busy" and "another program" in error["message"]
        other.execute("ROLLBACK")
        new_agent_game(ws, "order", "random")  # the same connection goes on once the lock is gone
    other.close()


# -- watch and study ---------------------------------------------------------------------------


def test_watch_plays_pauses_and_steps(client: TestClient) -> None:
    ws = connect(client)
    ws.send_json({"type": "watch", "order": "heuristic", "chaos": "random", "delay_ms": 0})
    view = receive(ws, "state", "watch")
    while view["winner"] is None:
        view = receive(ws, "state", "watch")
    # the server seeds its players (seed 0)
    assert [m["move"] for m in view["moves"]] == HEURISTIC_VS_RANDOM_GAME
    assert (view["winner"], view["line"], view["running"]) == ("order", "b2–f6", False)
    ws.send_json({"type": "watch", "order": "random", "chaos": "random", "delay_ms": 2000})
    receive(ws, "state", "watch")
    ws.send_json({"type": "pause"})
    paused = receive(ws, "state", "watch")
    while paused["running"]:
        paused = receive(ws, "state", "watch")
    ws.send_json({"type": "state"})  # nothing moves while paused
    receive(ws, "state", "play")
    ws.send_json({"type": "step"})
    stepped = [receive(ws, "state", "watch"), receive(ws, "state", "watch")]
    assert len(stepped[-1]["moves"]) == len(paused["moves"]) + 1
    ws.send_json({"type": "resume"})
    ws.send_json({"type": "speed", "delay_ms": 0})
    view = receive(ws, "state", "watch")
    while view["winner"] is None:
        view = receive(ws, "state", "watch")


def test_move_marks() -> None:
    # ply 0 Order keeps its win; 1 and 2 touch an unproven position; 3 Chaos keeps its win;
    # 4 Order, lost, keeps the result whatever it plays; 5 Chaos throws its win away
    verdicts = ["order", "order", None, "chaos", "chaos", "chaos", "order"]
    assert analysis.move_marks(verdicts) == ["keeps", None, None, "keeps", "keeps", "throws"]
    assert analysis.move_marks(["order", "chaos"]) == ["throws"]


def saved_games(path: Path, n: int = 2) -> None:
    """Write ``n`` heuristic-vs-random games as ``orderchaos eval --save-games`` does."""
    records = [play_game(make("heuristic", seed=i), make("random", seed=i)) for i in range(n)]
    save_games(path, records, "heuristic", "random")


def test_study_opens_files_by_name_only_inside_the_folder(client: TestClient, tmp_path: Path) -> None:
    games_dir = tmp_path / "games"
    saved_games(games_dir / "match.jsonl")
    (tmp_path / "secret.jsonl").write_text("{}")
    (games_dir / "link.jsonl").symlink_to(tmp_path / "secret.jsonl")
    ws = connect(client)
    ws.send_json({"type": "list_files"})
    files = receive(ws, "files")
    assert files["files"] == ["match.jsonl"] and str(tmp_path) not in json.dumps(files)
    for name in ("link.jsonl", "../secret.jsonl", str(tmp_path / "secret.jsonl"), "", "."):
        ws.send_json({"type": "open_file", "name": name})
        assert "no file" in error_of(ws)["message"]
    ws.send_json({"type": "open_file", "name": "match.jsonl"})
    games = receive(ws, "games")
    assert games["file"] == "match.jsonl" and len(games["games"]) == 2
    first = games["games"][0]
    # heuristic (seed 0) against random (seed 0): the game the watch test sees, nine moves
    # to Order's diagonal b2-f6
    assert (first["order"], first["winner"], first["length"]) == ("heuristic", "order", 9)
    assert len(first["positions"]) == 10  # board facts per position, from the server
    assert first["moves"] == HEURISTIC_VS_RANDOM_GAME
    assert first["positions"][-1]["winning_line"] == [7, 14, 21, 28, 35]
    ws.send_json({"type": "analyse", "game": 0})
    analysed = receive(ws, "analysis")
    assert len(analysed["verdicts"]) == 10 and len(analysed["marks"]) == 9 and len(analysed["values"]) == 10
    assert analysed["verdicts"][-1] == "order" and analysed["values"][-1] == 1.0


def test_study_upload_names_are_made_safe_and_no_server_path_is_shown(client: TestClient, tmp_path: Path) -> None:
    path = tmp_path / "up.jsonl"
    saved_games(path, 1)
    ws = connect(client)
    ws.send_json({"type": "upload", "name": "../../up.jsonl", "content": path.read_text()})
    assert receive(ws, "games")["file"] == "up.jsonl"
    for name in ("..", ".", "", "a/b/../../c d.jsonl"):
        ws.send_json({"type": "upload", "name": name, "content": '{"actions": [0, 2]}\n'})
        message = error_of(ws)["message"]
        assert "orderchaos-upload" not in message and "/tmp" not in message and "the game is not finished" in message


def test_cross_site_sockets_are_refused(client: TestClient) -> None:
    with pytest.raises(WebSocketDisconnect):
        with client.websocket_connect("/ws", headers={"origin": "http://evil.example"}) as ws:
            receive_json(ws)


def test_requests_to_other_host_names_are_refused_when_asked() -> None:
    with TestClient(create_app(None, FAST, allowed_hosts=["127.0.0.1"])) as guarded:
        assert guarded.get("/", headers={"host": "rebound.example"}).status_code == 400
        assert guarded.get("/", headers={"host": "127.0.0.1:8000"}).status_code == 200


def test_loopback_check() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("example.org")


def test_import_orderchaos_does_not_import_the_web_stack() -> None:
    code = (
        "import sys, orderchaos, orderchaos.cli.main as m; m.build_parser(); "
        "bad = [k for k in sys.modules if k.split('.')[0] in ('starlette', 'uvicorn', 'orderchaos.web')"
        " or k.startswith('orderchaos.web')]; print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_serve_refuses_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from orderchaos.cli.main import main

    assert main(["serve", "--games-dir", str(tmp_path / "missing")]) == 2
    assert "no such folder" in capsys.readouterr().err
    assert main(["serve", "--port", "70000"]) == 2
    assert "--port must be" in capsys.readouterr().err
    assert main(["serve", "--move-time", "0"]) == 2
    assert "--move-time: must be a number greater than 0" in capsys.readouterr().err
    assert main(["serve", "--max-connections", "0"]) == 2
    assert "--max-connections must be at least 1" in capsys.readouterr().err


def test_exposure_names_what_a_public_server_offers() -> None:
    from orderchaos.cli.commands.serve import exposure
    from orderchaos.cli.main import build_parser

    args = build_parser().parse_args(["serve", "--host", "0.0.0.0", "--games-dir", "/srv/g"])
    text = exposure(args)
    assert "0.0.0.0" in text and "named opponent levels only" in text and "/srv/g" in text and "no TLS" in text
    args = build_parser().parse_args(["serve", "--host", "0.0.0.0", "--allow-specs"])
    assert "training run folders" in exposure(args)


def test_a_move_the_store_cannot_commit_is_told_to_nobody(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    order, joined, view = friend_game(client)
    chaos = connect(client)
    chaos.send_json({"type": "open", "game": joined["game"], "invite": view["invite"]})
    receive(chaos, "joined")

    def disk_full(*args: Any) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(GameStore, "add_move", disk_full)
    order.send_json({"type": "move", "cell": 0, "symbol": "X"})
    error = error_of(order)
    # the page's own words (nothing was saved), not the database's text
    assert error["code"] == "store_full" and "nothing of this was saved" in error["message"]
    assert "database or disk" not in error["message"]
    for ws in (order, chaos):
        ws.send_json({"type": "state"})
        assert receive(ws, "state", "play")["moves"] == []  # no view holds the move


def seated_friend_game(client: TestClient) -> tuple[Any, Any, dict, str]:
    """Both seats of a new friend game taken: Order's and Chaos's sockets, Order's
    ``joined`` and Chaos's token."""
    order, joined, view = friend_game(client)
    chaos = connect(client)
    chaos.send_json({"type": "open", "game": joined["game"], "invite": view["invite"]})
    chaos_token = receive(chaos, "joined")["token"]
    receive(chaos, "state", "play")
    return order, chaos, joined, chaos_token


def test_resign_ends_the_game_for_the_other_side_and_survives_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "games.sqlite3"
    with TestClient(create_app(None, FAST, db=db)) as first, ExitStack() as stack:
        first.sockets = stack  # type: ignore[attr-defined]
        order, chaos, joined, chaos_token = seated_friend_game(first)
        order.send_json({"type": "move", "cell": 0, "symbol": "X"})
        view = receive(chaos, "state", "play")
        assert view["can_resign"] and view["reason"] is None
        chaos.send_json({"type": "resign"})
        view = receive(order, "state", "play")
        while view["reason"] is None:
            view = receive(order, "state", "play")
        assert view["winner"] == "order" and view["reason"] == "resign" and not view["can_resign"]
        order.send_json({"type": "move", "cell": 1, "symbol": "X"})
        assert error_of(order)["code"] == "game_over"
        chaos.send_json({"type": "resign"})
        assert error_of(chaos)["code"] == "game_over"
    with TestClient(create_app(None, FAST, db=db)) as second, ExitStack() as stack:
        second.sockets = stack  # type: ignore[attr-defined]
        chaos = connect(second)
        chaos.send_json({"type": "open", "game": joined["game"], "token": chaos_token})
        receive(chaos, "joined")
        view = receive(chaos, "state", "play")
        assert (view["winner"], view["reason"], view["can_resign"]) == ("order", "resign", False)
        chaos.send_json({"type": "rematch"})  # a resigned game is over: a rematch may follow
        assert receive(chaos, "rematch")["game"] != joined["game"]


def test_a_game_without_a_first_move_within_a_minute_of_seating_is_aborted(tmp_path: Path) -> None:
    now = {"t": 5000.0}
    store = GameStore(tmp_path / "games.sqlite3", clock=lambda: now["t"])
    with TestClient(create_app(None, FAST, db=store)) as client, ExitStack() as stack:
        client.sockets = stack  # type: ignore[attr-defined]
        lonely, lonely_joined, _ = friend_game(client)  # one seat taken: never aborted
        order, chaos, joined, _ = seated_friend_game(client)
        now["t"] += web_games.ABORT_AFTER - 1
        moved, moved_chaos, moved_joined, _ = seated_friend_game(client)
        moved.send_json({"type": "move", "cell": 0, "symbol": "X"})
        receive(moved, "state", "play")
        now["t"] += 2
        view = receive(chaos, "state", "play")
        while view["reason"] is None:
            view = receive(chaos, "state", "play")
        assert view["reason"] == "aborted" and view["winner"] is None and not view["can_resign"]
        order.send_json({"type": "move", "cell": 0, "symbol": "X"})
        assert error_of(order)["code"] == "game_over"
        _, probe, _, _ = seated_friend_game(client)  # seated after the game that has its first move
        now["t"] += web_games.ABORT_AFTER * 2
        view = receive(probe, "state", "play")
        while view["reason"] is None:  # one sweep aborts the probe and passes the other by
            view = receive(probe, "state", "play")
        moved_chaos.send_json({"type": "move", "cell": 1, "symbol": "O"})
        assert receive(moved, "state", "play")["reason"] is None
    assert store.load(joined["game"]).reason == "aborted"  # type: ignore[union-attr]
    assert store.load(lonely_joined["game"]).reason is None  # type: ignore[union-attr]
    assert store.load(moved_joined["game"]).reason is None  # type: ignore[union-attr]


# -- clocks: charged from each committed move, stored, run out with no tab open, paused while
# the server is down, the agent's thinking capped by its clock (time is a clock the test moves)


def clocked_pair(client: TestClient, control: str) -> tuple[Any, Any, str]:
    """A friend game with ``control`` and both seats taken: Order's and Chaos's sockets, its id."""
    order = connect(client)
    order.send_json({"type": "play_friend", "side": "order", "time_control": control})
    game = receive(order, "joined")["game"]
    invite = receive(order, "state", "play")["invite"]
    chaos = connect(client)
    chaos.send_json({"type": "open", "game": game, "invite": invite})
    receive(chaos, "joined")
    receive(chaos, "state", "play")
    return order, chaos, game


def test_moves_charge_the_mover_add_the_increment_and_are_stored(tmp_path: Path) -> None:
    now = {"t": 1000.0}
    store = GameStore(tmp_path / "games.sqlite3", clock=lambda: now["t"])
    with TestClient(create_app(None, FAST, db=store)) as client, ExitStack() as stack:
        client.sockets = stack  # type: ignore[attr-defined]
        order, chaos, game = clocked_pair(client, "3+2")
        order.send_json({"type": "move", "cell": 0, "symbol": "X"})  # the first move is not charged
        view = receive(chaos, "state", "play")
        assert view["clock"] == {"control": "3+2", "left": {"order": 180.0, "chaos": 180.0}, "running": "chaos"}
        now["t"] += 10
        chaos.send_json({"type": "move", "cell": 1, "symbol": "O"})
        view = receive(order, "state", "play")
        while view["moves"] != receive_moves(view, 2):
            view = receive(order, "state", "play")
        assert view["clock"]["left"] == {"order": 180.0, "chaos": 172.0} and view["clock"]["running"] == "order"
        now["t"] += 4
        order.send_json({"type": "state"})
        assert receive(order, "state", "play")["clock"]["left"]["order"] == 176.0
    stored = store.load(game)
    assert stored is not None and stored.clock is not None
    assert stored.clock.remaining == {"order": 180.0, "chaos": 172.0} and stored.clock.turn_started == 1010.0


def receive_moves(view: dict, count: int) -> list:
    """``view``'s move list when it holds ``count`` moves, else a marker that never matches."""
    return view["moves"] if len(view["moves"]) == count else ["(not yet)"]


def test_a_clock_running_out_with_both_tabs_closed_loses_on_time(tmp_path: Path) -> None:
    now = {"t": 1000.0}
    store = GameStore(tmp_path / "games.sqlite3", clock=lambda: now["t"])
    with TestClient(create_app(None, FAST, db=store)) as client:
        with ExitStack() as stack:
            client.sockets = stack  # type: ignore[attr-defined]
            order, chaos, game = clocked_pair(client, "1+0")
            order.send_json({"type": "move", "cell": 0, "symbol": "X"})
            receive(chaos, "state", "play")
        now["t"] += 59  # Chaos has a second left: nothing ends
        assert not wait_until(lambda: store.load(game).reason is not None, 1.5)  # type: ignore[union-attr]
        now["t"] += 2
        assert wait_until(lambda: store.load(game).reason is not None)  # type: ignore[union-attr]
    stored = store.load(game)
    assert stored is not None and (stored.reason, stored.winner) == ("time", "order")
    assert stored.clock is not None and stored.clock.remaining["chaos"] == 0.0 and stored.clock.turn_started is None


def test_a_restart_keeps_both_clocks_without_charging_the_downtime(store_url: str) -> None:
    now = {"t": 1000.0}
    db = store_url
    with TestClient(create_app(None, FAST, db=GameStore(db, clock=lambda: now["t"]))) as first:
        with ExitStack() as stack:
            first.sockets = stack  # type: ignore[attr-defined]
            order, chaos, game = clocked_pair(first, "5+3")
            order.send_json({"type": "move", "cell": 0, "symbol": "X"})
            receive(chaos, "state", "play")
            now["t"] += 20
            chaos.send_json({"type": "move", "cell": 1, "symbol": "O"})
            receive(chaos, "state", "play")
            order_token = None  # opened without a token: watched, the clock is what is checked
            now["t"] += 7  # Order thinks 7 s, then the server goes down
    now["t"] += 3600  # an hour down
    with TestClient(create_app(None, FAST, db=GameStore(db, clock=lambda: now["t"]))) as second:
        with ExitStack() as stack:
            second.sockets = stack  # type: ignore[attr-defined]
            watcher = connect(second)
            watcher.send_json({"type": "open", "game": game, "token": order_token})
            receive(watcher, "joined")
            view = receive(watcher, "state", "play")
            assert view["reason"] is None
            assert view["clock"]["left"] == {"order": 300.0, "chaos": 283.0}  # the 7 s before going down are lost too
            now["t"] += 5
            watcher.send_json({"type": "state"})
            assert receive(watcher, "state", "play")["clock"]["left"] == {"order": 295.0, "chaos": 283.0}


def test_an_unknown_time_control_is_refused_with_a_code(tmp_path: Path) -> None:
    with TestClient(create_app(None, FAST, db=tmp_path / "g.sqlite3")) as client, ExitStack() as stack:
        client.sockets = stack  # type: ignore[attr-defined]
        ws = connect(client)
        ws.send_json({"type": "play_friend", "side": "order", "time_control": "2+1"})
        assert error_of(ws)["code"] == "time_control"


def agent_budgets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, control: str,
                  first_move: float) -> tuple[list[float], float]:
    """The budgets the agent (Chaos, ``random``) gets for its first two moves on ``control``
    when its first move takes ``first_move`` seconds and the second none (time is a clock
    the test moves), and its time left after them."""
    now = {"t": 1000.0}
    budgets: list[float] = []
    real_run = Services.run

    async def recording_run(self: Services, fn: Any, *args: Any, timeout: float, what: str) -> Any:
        if what == "the opponent's move":
            budgets.append(timeout)
            now["t"] += first_move if len(budgets) == 1 else 0
        return await real_run(self, fn, *args, timeout=timeout, what=what)

    monkeypatch.setattr(Services, "run", recording_run)
    store = GameStore(tmp_path / "games.sqlite3", clock=lambda: now["t"])
    with TestClient(create_app(None, FAST, db=store)) as client, ExitStack() as stack:
        client.sockets = stack  # type: ignore[attr-defined]
        ws = connect(client)
        ws.send_json({"type": "new_game", "side": "order", "opponent": "random", "time_control": control})
        receive(ws, "joined")
        view = receive(ws, "state", "play")
        for _ in range(2):
            ws.send_json({"type": "move", "cell": view["board"].index(""), "symbol": "X"})
            count = len(view["moves"]) + 2
            while len(view["moves"]) < count:
                view = receive(ws, "state", "play")
    return budgets, view["clock"]["left"]["chaos"]


def test_the_agent_thinks_within_its_clock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 60 s left for its 18 moves to come, then 2 s for its 17: the time left shared over them
    budgets, left = agent_budgets(tmp_path, monkeypatch, "1+0", 58)
    assert budgets == pytest.approx([60 / 18, 2 / 17]) and left == 2.0


def test_the_agents_budget_is_the_servers_cap_and_never_more_than_half_its_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On 3+2 its share of 180 s over 18 moves plus 2 s is 12 s, past the server's cap of
    5 s; after a first move of 179 s it has 3 s (1 left and the increment): its share over
    17 moves plus the increment, 2.18 s, is more than half of what is left, 1.5 s."""
    budgets, left = agent_budgets(tmp_path, monkeypatch, "3+2", 179)
    assert budgets == pytest.approx([FAST.move_time, 1.5]) and left == 5.0


def test_an_agent_out_of_budget_on_the_clock_still_moves_in_time(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A search cut off by its budget leaves the agent its move without search, not an
    error that would lose it the game on time."""
    real_run = Services.run

    async def timed_out_run(self: Services, fn: Any, *args: Any, timeout: float, what: str) -> Any:
        if what == "the opponent's move":
            raise TimedOut("the opponent's move took too long", "timeout")
        return await real_run(self, fn, *args, timeout=timeout, what=what)

    monkeypatch.setattr(Services, "run", timed_out_run)
    with TestClient(create_app(None, FAST, db=tmp_path / "g.sqlite3")) as client, ExitStack() as stack:
        client.sockets = stack  # type: ignore[attr-defined]
        ws = connect(client)
        ws.send_json({"type": "new_game", "side": "order", "opponent": "random", "time_control": "1+0"})
        receive(ws, "joined")
        view = receive(ws, "state", "play")
        ws.send_json({"type": "move", "cell": 14, "symbol": "X"})
        while len(view["moves"]) < 2 and view.get("error") is None:
            view = receive(ws, "state", "play")
        assert view.get("error") is None
        assert len(view["moves"]) == 2


# -- undo on the clock: time spent stays spent, the increments of the moves taken back go with
# them, and the clock of the side to move runs from the undo (time is a clock the test moves)


@contextmanager
def site_on_a_hand_clock(tmp_path: Path, now: dict[str, float]) -> Iterator[tuple[TestClient, GameStore]]:
    """An app on ``tmp_path``'s store, whose time is ``now["t"]``: its client and store."""
    store = GameStore(tmp_path / "games.sqlite3", clock=lambda: now["t"])
    with TestClient(create_app(None, FAST, db=store)) as client, ExitStack() as stack:
        client.sockets = stack  # type: ignore[attr-defined]
        yield client, store


def clocked_agent_game(client: TestClient, control: str) -> tuple[Any, dict]:
    """Order against ``random:seed=3`` (which answers at once) on ``control``: the socket and
    the first view."""
    ws = connect(client)
    ws.send_json({"type": "new_game", "side": "order", "opponent": "random:seed=3", "time_control": control})
    game = receive(ws, "joined")["game"]
    return ws, {"game": game, **until_turn(ws, "order")}


def play_first_empty(ws: Any, view: dict) -> dict:
    """X on the first empty cell, and the view once the agent has answered (or the game ended)."""
    count = len(view["moves"]) + 2
    ws.send_json({"type": "move", "cell": first_empty(view), "symbol": "X"})
    view = until_turn(ws, "order")
    while view["winner"] is None and len(view["moves"]) < count:
        view = until_turn(ws, "order")
    return view


def test_an_undo_keeps_time_spent_takes_back_increments_and_restarts_the_movers_clock(tmp_path: Path) -> None:
    now = {"t": 1000.0}
    with site_on_a_hand_clock(tmp_path, now) as (client, store):
        ws, view = clocked_agent_game(client, "3+2")
        game = view["game"]
        view = play_first_empty(ws, view)  # not charged; Chaos answers at once: 180 + 2
        now["t"] += 10
        view = play_first_empty(ws, view)  # Order thought 10 s: 180 - 10 + 2; Chaos 184
        assert view["clock"]["left"] == {"order": 172.0, "chaos": 184.0}
        now["t"] += 5
        ws.send_json({"type": "undo"})
        view = receive(ws, "state", "play")
        assert len(view["moves"]) == 2 and view["clock"]["running"] == "order"
        # the 5 s since Chaos's answer stay spent, and both increments of the two moves go
        assert view["clock"]["left"] == {"order": 165.0, "chaos": 182.0}
        now["t"] += 3
        ws.send_json({"type": "state"})
        assert receive(ws, "state", "play")["clock"]["left"] == {"order": 162.0, "chaos": 182.0}
        stored = store.load(game)
        assert stored is not None and stored.clock is not None and len(stored.actions) == 2
        assert stored.clock.remaining == {"order": 165.0, "chaos": 182.0} and stored.clock.turn_started == 1015.0
    now["t"] += 3600  # a restart: Order's clock runs on from what the undo stored
    with site_on_a_hand_clock(tmp_path, now) as (second, _):
        watcher = connect(second)
        watcher.send_json({"type": "open", "game": game})
        receive(watcher, "joined")
        view = receive(watcher, "state", "play")
        assert len(view["moves"]) == 2 and view["clock"]["running"] == "order"
        assert view["clock"]["left"] == {"order": 165.0, "chaos": 182.0}


def test_undo_cannot_bring_back_a_game_lost_on_time(tmp_path: Path) -> None:
    now = {"t": 1000.0}
    with site_on_a_hand_clock(tmp_path, now) as (client, store):
        ws, view = clocked_agent_game(client, "1+0")
        view = play_first_empty(ws, view)
        assert view["can_undo"]
        now["t"] += 61  # Order's minute runs out
        while view["reason"] is None:
            view = receive(ws, "state", "play")
        assert (view["winner"], view["reason"], view["can_undo"]) == ("chaos", "time", False)
        ws.send_json({"type": "undo"})
        assert error_of(ws)["code"] == "game_over"
        stored = store.load(view["game"])
        assert stored is not None and (stored.reason, len(stored.actions)) == ("time", 2)


def test_undo_of_the_winning_move_restarts_the_clock_without_its_increment(tmp_path: Path) -> None:
    now = {"t": 1000.0}
    with site_on_a_hand_clock(tmp_path, now) as (client, store):
        ws, view = clocked_agent_game(client, "3+2")
        while view["winner"] is None:  # each of Order's moves but the first takes 1 s
            view = play_first_empty(ws, view)
            now["t"] += 1
        assert [m["move"] for m in view["moves"]] == RANDOM_SEED_3_GAME and view["clock"]["running"] is None
        # Order's 15 charged moves: 15 s spent, 15 increments; Chaos answered each at once
        assert view["clock"]["left"] == {"order": 180.0 - 15 + 30, "chaos": 180.0 + 30}
        now["t"] += 100  # a while after the end: nobody's clock runs
        ws.send_json({"type": "undo"})
        view = receive(ws, "state", "play")
        assert view["winner"] is None and len(view["moves"]) == 30
        assert view["clock"] == {"control": "3+2", "left": {"order": 193.0, "chaos": 210.0}, "running": "order"}
        now["t"] += 4
        ws.send_json({"type": "state"})
        assert receive(ws, "state", "play")["clock"]["left"]["order"] == 189.0


def test_undo_back_to_the_empty_board_is_a_fresh_start_for_the_clock_and_the_abort_rule(tmp_path: Path) -> None:
    now = {"t": 1000.0}
    with site_on_a_hand_clock(tmp_path, now) as (client, store):
        ws, view = clocked_agent_game(client, "1+0")
        now["t"] += 50
        view = play_first_empty(ws, view)  # the first move is not charged; Chaos's answer is
        now["t"] += 20
        ws.send_json({"type": "undo"})
        view = receive(ws, "state", "play")
        # Order's 20 s stay spent; as in a new game, no clock runs before the first move
        assert view["moves"] == [] and view["clock"]["left"] == {"order": 40.0, "chaos": 60.0}
        assert view["clock"]["running"] is None
        now["t"] += web_games.ABORT_AFTER - 1  # the minute to make a first move counts from the undo
        client.portal.call(client.app.state.hub.sweep)  # type: ignore[attr-defined]
        ws.send_json({"type": "move", "cell": 0, "symbol": "X"})
        view = until_turn(ws, "order")
        assert view["reason"] is None and len(view["moves"]) == 2
        assert view["clock"]["left"] == {"order": 40.0, "chaos": 60.0}


def test_undo_back_to_the_empty_board_takes_back_only_the_increments_earned(tmp_path: Path) -> None:
    """On 3+2 the first move earns no increment (it is not charged either), Chaos's answer
    does: an undo of both leaves Order 180 s less the 20 s since the answer, Chaos 180 s."""
    now = {"t": 1000.0}
    with site_on_a_hand_clock(tmp_path, now) as (client, store):
        ws, view = clocked_agent_game(client, "3+2")
        now["t"] += 50
        view = play_first_empty(ws, view)
        assert view["clock"]["left"] == {"order": 180.0, "chaos": 182.0}
        now["t"] += 20
        ws.send_json({"type": "undo"})
        view = receive(ws, "state", "play")
        assert view["moves"] == [] and view["clock"] == {"control": "3+2", "left": {"order": 160.0, "chaos": 180.0},
                                                         "running": None}
        stored = store.load(view["game"])
        assert stored is not None and stored.clock is not None
        assert stored.clock.remaining == {"order": 160.0, "chaos": 180.0} and stored.clock.turn_started is None


def test_a_take_back_never_leaves_a_clock_below_zero() -> None:
    clock = GameClock(PRESETS["3+2"], {"order": 1.5, "chaos": 100.0}, turn_started=10.0)
    clock.take_back("chaos", ["order", "order"], 12.0, started=True)  # two increments Order no longer has
    assert clock.remaining == {"order": 0.0, "chaos": 98.0} and clock.turn_started == 12.0


def test_a_move_after_the_flag_fell_loses_on_time_even_before_the_server_looks(tmp_path: Path) -> None:
    now = {"t": 1000.0}
    with site_on_a_hand_clock(tmp_path, now) as (client, store):
        client.portal.call(lambda: client.app.state.hub.sweeper.cancel())  # type: ignore[attr-defined]
        order, chaos, game = clocked_pair(client, "1+0")
        order.send_json({"type": "move", "cell": 0, "symbol": "X"})
        receive(chaos, "state", "play")
        now["t"] += 60  # Chaos's minute is gone, and no sweep has seen it
        chaos.send_json({"type": "move", "cell": 1, "symbol": "O"})
        for ws in (chaos, order):
            view = receive(ws, "state", "play")
            while view["reason"] is None and len(view["moves"]) < 2:  # views from before the move
                view = receive(ws, "state", "play")
            assert (view["winner"], view["reason"], len(view["moves"])) == ("order", "time", 1)
        assert error_of(chaos)["code"] == "game_over"
    stored = store.load(game)
    assert stored is not None and (stored.reason, stored.actions) == ("time", [0])


def test_a_tab_opening_a_game_keeps_the_hubs_pending_tasks() -> None:
    """The tasks that tell tabs something after one left are held in ``Hub.pending`` so that
    they are not collected half done; opening a game (which starts the sweeper) keeps them."""
    async def opened_with_a_task_pending() -> bool:
        hub = web_games.Hub(Services(FAST, store=GameStore(":memory:")))
        task = asyncio.create_task(asyncio.sleep(0))
        hub.pending.add(task)
        hub.start_sweeper()
        kept = task in hub.pending
        hub.sweeper.cancel()
        await task
        return kept

    assert asyncio.run(opened_with_a_task_pending())


def test_a_typed_move_on_a_taken_cell_says_the_cell_is_taken() -> None:
    """"c3 X" on a board where c3 is taken is a move, on the wrong cell: the same answer as a
    click there (``occupied``, naming the cell), not "that is not a move"."""
    state = State().apply(2 * 14)  # X on c3
    for text in ("c3 X", "o c3", "C3o"):
        with pytest.raises(WebError) as typed:
            sessions.read_move({"type": "move", "text": text}, state)
        assert typed.value.code == "occupied" and typed.value.args_ == {"cell": "c3"}, text
    with pytest.raises(WebError) as clicked:
        sessions.read_move({"type": "move", "cell": 14, "symbol": "O"}, state)
    assert clicked.value.code == "occupied"
    with pytest.raises(WebError) as nonsense:
        sessions.read_move({"type": "move", "text": "c9 X"}, state)
    assert nonsense.value.code == "move_text"
    assert sessions.read_move({"type": "move", "text": "d4 o"}, state) == 2 * 21 + 1
