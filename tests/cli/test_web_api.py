"""The WebSocket API of ``orderchaos serve`` through Starlette's TestClient: a full game,
every kind of bad message, two games at once, watch mode, study mode and the agent limits."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the web extra is not installed: pip install -e '.[dev]'")
pytest.importorskip("starlette.testclient", reason="Starlette's TestClient needs httpx2: pip install -e '.[dev]'")

from starlette.testclient import TestClient  # noqa: E402

from orderchaos.arena.game_files import save_games  # noqa: E402
from orderchaos.arena.matches import play_game  # noqa: E402
from orderchaos.agents.registry import make  # noqa: E402
from orderchaos.cli.commands.serve import is_loopback  # noqa: E402
from orderchaos.cli.web import sessions  # noqa: E402
from orderchaos.cli.web.app import create_app  # noqa: E402
from orderchaos.cli.web.sessions import Limits  # noqa: E402
from orderchaos.envs.rules import State  # noqa: E402

STATIC = Path(sessions.__file__).parent / "static"
FAST = Limits(move_time=5.0, hint_time=0.3, study_time=0.05, max_message_bytes=4096, max_upload_bytes=8192)


def receive(ws: Any, kind: str, mode: str | None = None, skip_errors: bool = False) -> dict:
    """The next message of type ``kind`` (and ``mode``), skipping others; fails on an
    unexpected error message."""
    for _ in range(200):
        msg = ws.receive_json()
        if msg["type"] == kind and (mode is None or msg.get("mode") == mode):
            return msg
        if msg["type"] == "error" and not skip_errors:
            raise AssertionError(f"unexpected error while waiting for {kind}: {msg['message']}")
    raise AssertionError(f"no {kind} message came")


def until_turn(ws: Any, side: str) -> dict:
    """State messages until it is ``side``'s turn (not thinking) or the game is over."""
    while True:
        view = receive(ws, "state", "play")
        if view["winner"] is not None or (view["to_play"] == side and not view["thinking"]):
            return view


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    """A TestClient over an app whose games folder is ``tmp_path/games``; the sockets that
    :func:`connect` opened are closed before it stops."""
    games = tmp_path / "games"
    games.mkdir()
    with TestClient(create_app(games, FAST)) as test_client, ExitStack() as sockets:
        test_client.sockets = sockets  # type: ignore[attr-defined]
        yield test_client


def connect(client: TestClient) -> Any:
    """Open a socket (closed with the client) and read the greeting: hello, the play view."""
    ws = client.sockets.enter_context(client.websocket_connect("/ws"))  # type: ignore[attr-defined]
    hello = ws.receive_json()
    assert hello["type"] == "hello" and "pretrained:sims=200,solver=26" in hello["suggestions"]
    assert receive(ws, "state", "play")["board"] == [""] * 36
    return ws


def first_empty(view: dict) -> int:
    return view["board"].index("")


def test_page_and_static_files_are_served(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and 'data-testid="status"' in page.text
    for name in ("app.js", "style.css"):
        assert client.get(f"/static/{name}").status_code == 200
    for name in ("index.html", "app.js", "style.css"):  # offline: nothing from another host
        text = (STATIC / name).read_text()
        assert not re.findall(r"https?://(?!www\.w3\.org/2000/svg)", text), name


def test_full_game_against_random_as_order(client: TestClient) -> None:
    ws = connect(client)
    ws.send_json({"type": "new_game", "side": "order", "opponent": "random:seed=3"})
    view = until_turn(ws, "order")
    moves = 0
    while view["winner"] is None:
        ws.send_json({"type": "move", "cell": first_empty(view), "symbol": "X"})
        moves += 1
        view = until_turn(ws, "order")
    assert view["winner"] in ("order", "chaos")
    assert "Game over" in view["status"]
    assert len(view["moves"]) == sum(1 for s in view["board"] if s)
    if view["winner"] == "order":
        assert len(view["winning_line"]) >= 5


def test_play_as_chaos_the_agent_moves_first_and_undo_takes_back_a_pair(client: TestClient) -> None:
    ws = connect(client)
    ws.send_json({"type": "new_game", "side": "chaos", "opponent": "heuristic"})
    view = until_turn(ws, "chaos")
    assert len(view["moves"]) == 1 and view["last"] is not None
    ws.send_json({"type": "move", "text": "f6 o"})
    view = until_turn(ws, "chaos")
    assert view["board"][35] == "O" and len(view["moves"]) == 3
    ws.send_json({"type": "undo"})
    view = receive(ws, "state", "play")
    assert len(view["moves"]) == 1 and view["board"][35] == ""
    ws.send_json({"type": "undo"})
    assert "nothing to undo" in receive(ws, "error", skip_errors=True)["message"]


BAD_MESSAGES = [
    ("not json at all", "not JSON"),
    ("[1, 2]", "JSON object"),
    (json.dumps({"kind": "move"}), "unknown message type"),
    (json.dumps({"type": "launch"}), "unknown message type"),
    (json.dumps({"type": "move", "cell": 99, "symbol": "X"}), "integer 0..35"),
    (json.dumps({"type": "move", "cell": "a1", "symbol": "X"}), "integer 0..35"),
    (json.dumps({"type": "move", "cell": True, "symbol": "X"}), "integer 0..35"),
    (json.dumps({"type": "move", "cell": 0, "symbol": "Z"}), "'X' or 'O'"),
    (json.dumps({"type": "move", "text": "z9 q"}), "could not read"),
    (json.dumps({"type": "move", "text": 5}), "a move such as"),
    (json.dumps({"type": "new_game", "side": "both", "opponent": "random"}), "side must be"),
    (json.dumps({"type": "new_game", "side": "order", "opponent": "grandmaster"}), "unknown agent"),
    (json.dumps({"type": "new_game", "side": "order", "opponent": "mcts:sims=lots"}), "must be int"),
    (json.dumps({"type": "new_game", "side": "order", "opponent": "x" * 500}), "at most"),
    (json.dumps({"type": "new_game", "side": "order"}), "give an agent spec"),
    (json.dumps({"type": "move", "text": "x" * 5000}), "message too large"),
    (json.dumps({"type": "watch", "order": "random", "chaos": "random", "delay_ms": -1}), "delay_ms"),
    (json.dumps({"type": "open_file", "name": "../secret.jsonl"}), "no file"),
    (json.dumps({"type": "open_file", "name": "/etc/passwd"}), "no file"),
    (json.dumps({"type": "analyse", "game": 0}), "open a file first"),
    (json.dumps({"type": "upload", "name": "big.jsonl", "content": "x" * 9000}), "limited to"),
    (json.dumps({"type": "upload", "name": "bad.jsonl", "content": "{not json\n"}), "bad.jsonl:1: bad JSON"),
    (json.dumps({"type": "step"}), "start watching first"),
]


def test_every_bad_message_gets_an_error_and_changes_nothing(client: TestClient) -> None:
    ws = connect(client)
    ws.send_json({"type": "new_game", "side": "order", "opponent": "random"})
    until_turn(ws, "order")
    ws.send_json({"type": "move", "cell": 14, "symbol": "X"})
    before = until_turn(ws, "order")
    assert before["board"][14] == "X"
    for text, expected in BAD_MESSAGES + [
        (json.dumps({"type": "move", "cell": 14, "symbol": "O"}), "already holds X"),
        (json.dumps({"type": "move", "text": "c3 x"}), "already holds X"),
    ]:
        ws.send_text(text)
        error = receive(ws, "error", skip_errors=True)
        assert expected in error["message"], (text[:80], error["message"])
    ws.send_bytes(b"\x00\x01")
    assert "binary" in receive(ws, "error", skip_errors=True)["message"]
    ws.send_json({"type": "state"})  # the connection is still open and the game unchanged
    after = receive(ws, "state", "play")
    assert after["board"] == before["board"] and after["moves"] == before["moves"]


def test_moves_before_the_start_and_after_the_end_are_refused(client: TestClient) -> None:
    ws = connect(client)
    ws.send_json({"type": "move", "cell": 0, "symbol": "X"})
    assert "new game first" in receive(ws, "error", skip_errors=True)["message"]
    ws.send_json({"type": "new_game", "side": "order", "opponent": "random"})
    view = until_turn(ws, "order")
    while view["winner"] is None:
        ws.send_json({"type": "move", "cell": first_empty(view), "symbol": "O"})
        view = until_turn(ws, "order")
    if "" in view["board"]:
        ws.send_json({"type": "move", "cell": first_empty(view), "symbol": "X"})
        assert "the game is over" in receive(ws, "error", skip_errors=True)["message"]
    ws.send_json({"type": "hint"})
    assert "no hint needed" in receive(ws, "error", skip_errors=True)["message"]


def test_two_games_at_once_stay_separate(client: TestClient) -> None:
    one, two = connect(client), connect(client)
    one.send_json({"type": "new_game", "side": "order", "opponent": "random"})
    two.send_json({"type": "new_game", "side": "chaos", "opponent": "heuristic"})
    view_one = until_turn(one, "order")
    view_two = until_turn(two, "chaos")
    one.send_json({"type": "move", "cell": 0, "symbol": "O"})
    two.send_json({"type": "move", "cell": 35, "symbol": "X"})
    view_one = until_turn(one, "order")
    view_two = until_turn(two, "chaos")
    assert view_one["board"][0] == "O" and view_one["side"] == "order"
    assert view_two["board"][35] == "X" and view_two["side"] == "chaos"
    assert view_two["board"][0] == "" or len(view_two["moves"]) == 3
    assert len(view_one["moves"]) == 2 and len(view_two["moves"]) == 3


def test_hint_gives_the_solvers_winning_move(client: TestClient) -> None:
    ws = connect(client)
    ws.send_json({"type": "new_game", "side": "order", "opponent": "random"})
    until_turn(ws, "order")
    ws.send_json({"type": "hint"})
    hint = receive(ws, "hint")
    assert hint["source"] in ("solver", "network", "none") and hint["text"]
    near_win = State.from_string("XXXX." + "." * 31)
    result = sessions.make_hint(sessions.Services(FAST), near_win)
    assert result["source"] == "solver" and result["winner"] == "order" and 8 in result["actions"]


def test_a_crashing_or_stuck_agent_ends_its_move_with_an_error(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_act = sessions._act

    def crashing(agent: Any, state: State, spec: str) -> int:
        if state.num_stones == 1:
            raise RuntimeError("boom")
        return real_act(agent, state, spec)

    monkeypatch.setattr(sessions, "_act", crashing)
    ws = connect(client)
    ws.send_json({"type": "new_game", "side": "order", "opponent": "random"})
    until_turn(ws, "order")
    ws.send_json({"type": "move", "cell": 7, "symbol": "X"})
    error = receive(ws, "error", skip_errors=True)
    assert "the agent random failed: RuntimeError: boom" in error["message"]
    ws.send_json({"type": "undo"})  # the game goes on from before the failed move
    assert receive(ws, "state", "play")["moves"] == []

    def stuck(agent: Any, state: State, spec: str) -> int:
        time.sleep(3)
        return real_act(agent, state, spec)

    monkeypatch.setattr(sessions, "_act", stuck)
    with TestClient(create_app(None, Limits(move_time=0.3))) as quick, ExitStack() as sockets:
        quick.sockets = sockets  # type: ignore[attr-defined]
        ws = connect(quick)
        ws.send_json({"type": "new_game", "side": "chaos", "opponent": "random"})
        started = time.perf_counter()
        error = receive(ws, "error", skip_errors=True)
        assert "did not finish within 0.3 s" in error["message"]
        assert time.perf_counter() - started < 2.5
        ws.send_json({"type": "state"})
        view = receive(ws, "state", "play")
        assert view["moves"] == [] and not view["thinking"]


def test_solver_gets_the_move_time_as_its_budget() -> None:
    assert sessions.effective_spec("solver", Limits(move_time=30)) == "solver:time=3"
    assert sessions.effective_spec("solver", Limits(move_time=2.5)) == "solver:time=2"
    assert sessions.effective_spec("solver:seed=2", Limits(move_time=30)) == "solver:seed=2,time=3"
    assert sessions.effective_spec("solver:time=1", Limits(move_time=5)) == "solver:time=1"
    assert sessions.effective_spec("mcts:sims=800", Limits(move_time=5)) == "mcts:sims=800"


def test_watch_plays_pauses_and_steps(client: TestClient) -> None:
    ws = connect(client)
    ws.send_json({"type": "watch", "order": "heuristic", "chaos": "random", "delay_ms": 0})
    view = receive(ws, "state", "watch")
    while view["winner"] is None:
        view = receive(ws, "state", "watch")
    assert view["winner"] in ("order", "chaos") and "Game over" in view["status"]
    ws.send_json({"type": "watch", "order": "random", "chaos": "random", "delay_ms": 2000})
    receive(ws, "state", "watch")
    ws.send_json({"type": "pause"})
    paused = receive(ws, "state", "watch")
    while paused["running"]:
        paused = receive(ws, "state", "watch")
    assert "paused" in paused["status"]
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
    assert sessions.move_marks(verdicts) == ["keeps", None, None, "keeps", "keeps", "throws"]
    assert sessions.move_marks(["order", "chaos"]) == ["throws"]


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
    assert receive(ws, "files")["files"] == ["match.jsonl"]
    for name in ("link.jsonl", "../secret.jsonl", str(tmp_path / "secret.jsonl"), "", "."):
        ws.send_json({"type": "open_file", "name": name})
        assert "no file" in receive(ws, "error", skip_errors=True)["message"]
    ws.send_json({"type": "open_file", "name": "match.jsonl"})
    games = receive(ws, "games")
    assert games["file"] == "match.jsonl" and len(games["games"]) == 2
    first = games["games"][0]
    assert first["order"] == "heuristic" and len(first["moves"]) == first["length"]
    ws.send_json({"type": "analyse", "game": 0})
    analysis = receive(ws, "analysis")
    n = first["length"]
    assert len(analysis["verdicts"]) == n + 1 and len(analysis["marks"]) == n
    assert len(analysis["values"]) == n + 1
    assert analysis["verdicts"][-1] == first["winner"]
    assert set(analysis["marks"]) <= {"keeps", "throws", None}
    assert analysis["values"][-1] == (1.0 if first["winner"] == "order" else -1.0)


def test_study_upload(client: TestClient, tmp_path: Path) -> None:
    path = tmp_path / "up.jsonl"
    saved_games(path, 1)
    ws = connect(client)
    ws.send_json({"type": "upload", "name": "../../up.jsonl", "content": path.read_text()})
    games = receive(ws, "games")
    assert games["file"] == "../../up.jsonl" and len(games["games"]) == 1
    ws.send_json({"type": "upload", "name": "cut.jsonl", "content": '{"actions": [0, 2]}\n'})
    assert "cut.jsonl:1: the game is not finished" in receive(ws, "error", skip_errors=True)["message"]


def test_cross_site_sockets_are_refused(client: TestClient) -> None:
    from starlette.websockets import WebSocketDisconnect

    with pytest.raises(WebSocketDisconnect):
        with client.websocket_connect("/ws", headers={"origin": "http://evil.example"}) as ws:
            ws.receive_json()


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
        "bad = [k for k in sys.modules if k.split('.')[0] in ('starlette', 'uvicorn', 'orderchaos.cli.web')"
        " or k.startswith('orderchaos.cli.web')]; print(bad); sys.exit(1 if bad else 0)"
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
    assert "--move-time must be positive" in capsys.readouterr().err
