"""What an operator of ``orderchaos serve`` relies on: ``/healthz``, ``/metrics``, the log lines
with the client's address, ``--backup`` of a live store, and a SIGTERM that tells the tabs and
exits 0."""

from __future__ import annotations

import asyncio
import errno
import gc
import json
import logging
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from typing import Any
from pathlib import Path

import pytest

pytest.importorskip("starlette.testclient", reason="the web extra is not installed: pip install -e '.[dev]'")
pytest.importorskip("prometheus_client", reason="the web extra is not installed: pip install -e '.[dev]'")

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from orderchaos.cli.main import main  # noqa: E402
from orderchaos.web import ops  # noqa: E402
from orderchaos.web.app import create_app  # noqa: E402
from orderchaos.web.ops import Metrics  # noqa: E402
from orderchaos.web.services import Limits, Services  # noqa: E402
from orderchaos.web.store import GameStore, damage_found  # noqa: E402

import helpers  # noqa: E402
from helpers import SOCKET_DEADLINE, free_loopback_port, next_message, wait_for, wait_until_serving  # noqa: E402

FAST = Limits(move_time=5.0, hint_time=0.3, rate=1000, burst=1000)


def samples(text: str) -> dict[str, float]:
    """The samples of a Prometheus text page, keyed ``name{label="value"}``."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
            out[sample.name + (f"{{{labels}}}" if labels else "")] = sample.value
    return out


def test_healthz_answers_while_the_store_does() -> None:
    store = GameStore(":memory:")
    with TestClient(create_app(None, FAST, db=store)) as client:
        ok = client.get("/healthz")
        assert ok.status_code == 200 and ok.text == "ok\n"
        store.close()
        down = client.get("/healthz")
        assert down.status_code == 503 and "does not answer" in down.text


def full_disk(*args: Any, **kwargs: Any) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def test_healthz_is_503_with_a_metric_while_the_store_cannot_be_written(monkeypatch: pytest.MonkeyPatch) -> None:
    store = GameStore(":memory:")
    monkeypatch.setattr(ops, "WRITE_PROBE_EVERY_S", 0.0)  # every request probes
    with TestClient(create_app(None, FAST, db=store)) as client:
        assert client.get("/healthz").status_code == 200
        with monkeypatch.context() as disk:
            disk.setattr(store, "probe_write", full_disk)
            full = client.get("/healthz")
            assert full.status_code == 503 and "cannot be written" in full.text and "No space left" in full.text
            metrics = samples(client.get("/metrics").text)
            assert metrics["orderchaos_store_write_failures_total"] == 1 and metrics["orderchaos_ready"] == 0
        # space again
        assert client.get("/healthz").status_code == 200
        assert samples(client.get("/metrics").text)["orderchaos_ready"] == 1


def test_a_move_the_full_disk_refuses_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    store = GameStore(":memory:")
    with TestClient(create_app(None, FAST, db=store)) as client, client.websocket_connect("/ws") as ws:
        next_message(ws, "hello")
        ws.send_json({"type": "new_game", "side": "order", "opponent": "easy"})
        next_message(ws, "joined")
        monkeypatch.setattr(store, "add_move", full_disk)
        ws.send_json({"type": "move", "cell": 0, "symbol": "X"})
        refused = next_message(ws, "error")
        assert refused["code"] == "store_full" and "disk is full" in refused["message"]
        assert samples(client.get("/metrics").text)["orderchaos_store_write_failures_total"] == 1


def test_healthz_is_503_until_the_workers_are_warm(tmp_path: Path) -> None:
    from worker_jobs import warm_when

    from orderchaos.agents.worker_pool import WorkerPool

    released = tmp_path / "warm"
    pool = WorkerPool("processes", 1, warm=warm_when, warm_args=(str(released),))
    with TestClient(create_app(None, FAST, workers=pool, warm_up=True)) as client:
        wait_for(lambda: pool.pids(), "the worker started", seconds=90)
        warming = client.get("/healthz")
        assert warming.status_code == 503 and "warming up (0 of 1 warm)" in warming.text
        released.touch()
        wait_for(lambda: client.get("/healthz").status_code == 200, "ready once the worker is warm", seconds=90)
def until_my_turn(ws: object, side: str) -> dict:
    """The first view in which it is ``side``'s turn and no agent is thinking."""
    while True:
        view = next_message(ws, "state")
        if view["to_play"] == side and not view["thinking"]:
            return view


def test_a_lost_postgresql_makes_healthz_503_loses_nothing_and_comes_back(
    own_postgres_cluster: helpers.PostgresCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    from orderchaos.web import games as web_games

    cluster = own_postgres_cluster
    url = cluster.new_database()
    store = GameStore(url)
    sweeps = {"while down": 0, "down": False}
    swept_while_down = threading.Event()
    real_sweep, real_move = web_games.Hub.sweep, web_games.agent_move
    agent_may_move = threading.Event()

    async def counted_sweep(hub: web_games.Hub) -> None:
        sweeps["while down"] += sweeps["down"]
        if sweeps["while down"] >= 2:
            swept_while_down.set()
        await real_sweep(hub)

    def gated_move(agent: object, state: object) -> int:
        assert agent_may_move.wait(60), "the test never let the agent move"
        return real_move(agent, state)

    monkeypatch.setattr(web_games.Hub, "sweep", counted_sweep)
    monkeypatch.setattr(web_games, "agent_move", gated_move)
    with TestClient(create_app(None, FAST, db=store)) as client, client.websocket_connect("/ws") as ws:
        next_message(ws, "hello")
        ws.send_json({"type": "new_game", "side": "order", "opponent": "random"})
        game = next_message(ws, "joined")["game"]
        until_my_turn(ws, "order")
        ws.send_json({"type": "move", "cell": 0, "symbol": "X"})
        while not ((view := next_message(ws, "state"))["thinking"] and len(view["moves"]) == 1):
            pass  # the move is committed and the agent thinks before the database goes
        cluster.stop()
        down = client.get("/healthz")
        assert down.status_code == 503 and "does not answer" in down.text
        agent_may_move.set()  # its move cannot be committed: the page is told, the move waits
        while (next_message(ws, "state")["error"] or {}).get("code") != "store_unavailable":
            pass
        cluster.start()
        assert client.get("/healthz").status_code == 200  # back by itself, on a new connection
        view = until_my_turn(ws, "order")  # the agent's move, committed once the database was back
        assert view["error"] is None

        cluster.stop()
        sweeps["down"] = True
        cell = next(c for c in range(36) if not view["board"][c])
        ws.send_json({"type": "move", "cell": cell, "symbol": "X"})
        error = next_message(ws, "error")
        assert error["code"] == "store_unavailable" and "Traceback" not in error["message"]
        assert swept_while_down.wait(60)  # the clock sweep met the outage (and must live on)
        cluster.start()
        sweeps["down"] = False
        assert client.get("/healthz").status_code == 200
        assert not client.app.state.hub.sweeper.done()
        ws.send_json({"type": "move", "cell": cell, "symbol": "X"})
        until_my_turn(ws, "order")
    again = GameStore(url)
    assert len(again.load(game).actions) == 4  # two moves across each outage: none lost
    again.close()
    for restart in range(2):  # restarted while the store was idle: the next statement finds out
        cluster.stop()
        cluster.start()
        if restart == 0:
            assert len(store.load(game).actions) == 4  # a read is asked again on a new connection
        else:
            store.finish(game, "chaos", "resign")  # so is a transaction's BEGIN
    assert store.load(game).reason == "resign"
    store.close()


def test_metrics_count_connections_moves_refusals_and_round_trips() -> None:
    with TestClient(create_app(None, FAST)) as client, TestClient(create_app(None, FAST)) as other:
        with client.websocket_connect("/ws") as ws:
            next_message(ws, "hello")
            ws.send_json({"type": "new_game", "side": "order", "opponent": "random"})
            next_message(ws, "joined")
            ws.send_json({"type": "move", "cell": 0, "symbol": "X"})  # committed
            next_message(ws, "state")
            ws.send_json({"type": "move", "cell": 99, "symbol": "X"})  # refused
            assert next_message(ws, "error")["code"] == "bad_cell"
            ws.send_json({"type": "state"})
            next_message(ws, "state")
            page = client.get("/metrics")
            assert page.headers["content-type"].startswith("text/plain")
            values = samples(page.text)
        assert values["orderchaos_connections"] == 1
        assert values["orderchaos_games_open"] == 1
        assert values["orderchaos_moves_total"] == 1
        assert values['orderchaos_moves_refused_total{kind="bad_cell"}'] == 1
        assert values["orderchaos_move_round_trip_seconds_count"] == 1
        assert values["orderchaos_agent_moves_queued"] == 0 and values["orderchaos_agent_moves_running"] == 0
        assert samples(client.get("/metrics").text)["orderchaos_connections"] == 0
        # another app in the same process counts apart
        assert samples(other.get("/metrics").text)["orderchaos_moves_total"] == 0


def test_metrics_show_the_process_and_the_lobby_limit_refusals() -> None:
    with TestClient(create_app(None, FAST)) as client, client.websocket_connect("/ws") as ws:
        next_message(ws, "hello")
        for _ in range(3):
            ws.send_json({"type": "challenge", "side": "order", "time_control": "none"})
            next_message(ws, "lobby")
        ws.send_json({"type": "challenge", "side": "order", "time_control": "none"})
        assert next_message(ws, "error")["code"] == "lobby_limit"
        metrics = samples(client.get("/metrics").text)
    assert metrics["orderchaos_lobby_refused_total"] == 1
    assert metrics["process_resident_memory_bytes"] > 0 and metrics["process_open_fds"] > 0
    assert metrics["process_cpu_seconds_total"] > 0


def test_queued_and_running_searches_are_counted() -> None:
    services = Services(Limits(max_searches=1))
    metrics = Metrics(lambda: 0, lambda: services.queued, lambda: services.running)
    release = threading.Event()

    async def two_searches() -> dict[str, float]:
        first = asyncio.create_task(services.run(release.wait, timeout=60, what="a search"))
        second = asyncio.create_task(services.run(release.wait, timeout=60, what="a search"))
        for _ in range(1000):  # until both reached their places (no time passes on a clock)
            if services.queued == 1 and services.running == 1:
                break
            await asyncio.sleep(0)
        seen = samples(metrics.text().decode())
        release.set()
        await asyncio.gather(first, second)
        return seen

    seen = asyncio.run(two_searches())
    assert seen["orderchaos_agent_moves_queued"] == 1 and seen["orderchaos_agent_moves_running"] == 1
    assert services.queued == 0


def test_garbage_collections_are_timed_while_the_app_runs_and_not_after() -> None:
    def full_collections(client_or_metrics: TestClient | Metrics) -> float:
        text = (client_or_metrics.get("/metrics").text if isinstance(client_or_metrics, TestClient)
                else client_or_metrics.text().decode())
        return samples(text).get('orderchaos_gc_pause_seconds_count{generation="2"}', 0.0)

    app = create_app(None, FAST)
    with TestClient(app) as client:
        before = full_collections(client)
        gc.collect()
        gc.collect()
        assert full_collections(client) == before + 2
        metrics = app.state.site.metrics
    gc.collect()  # the app has stopped: its metrics no longer watch the collector
    assert full_collections(metrics) == before + 2
    assert all(getattr(callback, "__self__", None) is not metrics for callback in gc.callbacks)


def test_settle_heap_freezes_what_startup_built_and_makes_full_collections_rarer() -> None:
    # in a process of its own: freezing would keep this test process's garbage forever
    probe = ("import gc; from orderchaos.web.ops import settle_heap, FULL_COLLECTION_EVERY; "
             "before = gc.get_threshold(); settle_heap(); "
             "print(gc.get_freeze_count() > 1000, gc.get_threshold() == before[:2] + (FULL_COLLECTION_EVERY,), "
             "FULL_COLLECTION_EVERY > before[2])")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["True", "True", "True"], done.stderr


def test_game_events_are_logged_with_the_client_address(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="orderchaos.web")
    with TestClient(create_app(None, FAST), client=("127.0.0.9", 5000)) as client:
        with client.websocket_connect("/ws") as ws:
            next_message(ws, "hello")
            ws.send_json({"type": "new_game", "side": "order", "opponent": "random"})
            game = next_message(ws, "joined")["game"]
            ws.send_json({"type": "move", "cell": 0, "symbol": "X"})
            next_message(ws, "state")
            ws.send_json({"type": "state"})
            next_message(ws, "state")
    lines = [r.getMessage() for r in caplog.records]
    [opened] = [line for line in lines if line.startswith("client=127.0.0.9 websocket /ws request=")]
    socket_id = opened.rsplit("=", 1)[1]
    assert re.fullmatch("[0-9a-f]{32}", socket_id)  # made up here: the page sent none
    # every line of the WebSocket carries its id
    assert f"client=127.0.0.9 game={game} new_game request={socket_id}" in lines
    assert f"client=127.0.0.9 game={game} move request={socket_id}" in lines


def test_an_http_request_logs_and_answers_its_request_id(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="orderchaos.web")
    given = "0f5e4c3b2a1948f7b6e5d4c3b2a19876"  # a proxy's X-Request-ID (a UUID4) is kept
    with TestClient(create_app(None, FAST)) as client:
        answer = client.get("/healthz", headers={"X-Request-ID": given})
        made_up = client.get("/healthz").headers["X-Request-ID"]
    assert answer.headers["X-Request-ID"] == given and made_up != given
    lines = [r.getMessage() for r in caplog.records if "GET /healthz" in r.getMessage()]
    assert lines[0].endswith(f"request={given}") and lines[1].endswith(f"request={made_up}")


def ended(caplog: pytest.LogCaptureFixture, game: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith(f"game={game} ended")]


def test_the_log_says_how_each_game_ended(caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    from orderchaos.web.clocks import PRESETS
    from orderchaos.web.games import ABORT_AFTER, Hub

    caplog.set_level(logging.INFO, logger="orderchaos.web")
    with TestClient(create_app(None, FAST)) as client, client.websocket_connect("/ws") as ws:
        next_message(ws, "hello")
        ws.send_json({"type": "new_game", "side": "order", "opponent": "random"})
        resigned = next_message(ws, "joined")["game"]
        ws.send_json({"type": "resign"})
        while next_message(ws, "state").get("reason") is None:
            pass
        ws.send_json({"type": "play_friend", "side": "order"})
        won = next_message(ws, "joined")["game"]
        with client.websocket_connect("/ws") as other:
            next_message(other, "hello")
            view = next_message(ws, "state")
            other.send_json({"type": "open", "game": won, "invite": view["invite"]})
            next_message(other, "joined")
            for ply, cell in enumerate([0, 6, 1, 7, 2, 8, 3, 9, 4]):  # X on a1..e1 by Order: five
                mover, symbol = (ws, "X") if ply % 2 == 0 else (other, "O")
                mover.send_json({"type": "move", "cell": cell, "symbol": symbol})
                while len(next_message(other, "state")["moves"]) <= ply:
                    pass
        request = [r.getMessage() for r in caplog.records if r.getMessage().startswith("client=testclient websocket")]
        socket_id = request[0].rsplit("=", 1)[1]
    assert ended(caplog, resigned) == [f"game={resigned} ended: resign (resign), winner chaos request={socket_id}"]
    assert ended(caplog, won)[0].startswith(f"game={won} ended: win (five), winner order request=")
    # no tab open: the clock sweep ends them, outside any request
    now = {"t": 1000.0}
    store = GameStore(tmp_path / "games.sqlite3", clock=lambda: now["t"])
    store.create("a" * 22, {"order": None, "chaos": None}, {}, {"order": "x", "chaos": "y"}, None)
    store.create("t" * 22, {"order": None, "chaos": None}, {}, {"order": "x", "chaos": "y"}, None, PRESETS["1+0"])
    clock = store.load("t" * 22).clock  # type: ignore[union-attr]
    clock.after_move("order", now["t"])  # Order's first move starts Chaos's minute
    store.add_move("t" * 22, 0, 0, None, clock)
    now["t"] += ABORT_AFTER + 120
    asyncio.run(Hub(Services(store=store)).sweep())
    assert ended(caplog, "a" * 22) == [f"game={'a' * 22} ended: abort (aborted), winner none request=-"]
    assert ended(caplog, "t" * 22) == [f"game={'t' * 22} ended: time (time), winner order request=-"]



def test_backup_checks_its_output_before_copying(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "games.sqlite3"
    GameStore(db).close()
    taken = tmp_path / "taken.sqlite3"
    taken.write_text("keep me")
    assert main(["serve", "--db", str(db), "--backup", str(taken)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already exists" in err and taken.read_text() == "keep me"
    assert main(["serve", "--db", str(db), "--backup", str(tmp_path / "no" / "such" / "b.sqlite3")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a writable folder" in err
    assert main(["serve", "--db", str(tmp_path / "none.sqlite3"), "--backup", str(tmp_path / "b.sqlite3")]) == 2
    assert "no such file to back up" in capsys.readouterr().err
    not_a_store = tmp_path / "notes.txt"
    not_a_store.write_text("not sqlite " * 100)
    assert main(["serve", "--db", str(not_a_store), "--backup", str(tmp_path / "b.sqlite3")]) == 2
    assert "not a usable game store" in capsys.readouterr().err and not (tmp_path / "b.sqlite3").exists()


def health_status(port: int) -> int:
    """The status of ``GET /healthz`` on 127.0.0.1:``port``."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=30) as answer:
            return answer.status
    except urllib.error.HTTPError as refused:
        return refused.code


def host_status(port: int, host: str) -> int:
    """The status of ``GET /`` on 127.0.0.1:``port`` addressed to ``host``."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}/", headers={"Host": host})
    try:
        with urllib.request.urlopen(request, timeout=SOCKET_DEADLINE) as answer:
            return answer.status
    except urllib.error.HTTPError as refused:
        return refused.code


def test_a_running_server_behind_a_public_url_backs_up_tells_its_tabs_on_sigterm_and_exits_0(tmp_path: Path) -> None:
    from websockets.sync.client import connect

    db, port = tmp_path / "games.sqlite3", free_loopback_port()
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    server = subprocess.Popen(
        [sys.executable, "-m", "orderchaos", "serve", "--db", str(db), "--port", str(port),
         "--public-url", "https://games.example.org", "--workers", "1"],
        # its log into a file: a pipe nobody reads fills up and stops the server at its next line
        stdout=subprocess.PIPE, stderr=(tmp_path / "serve.log").open("w"), text=True, env=env)
    try:
        def still_starting() -> None:
            assert server.poll() is None, (tmp_path / "serve.log").read_text()[-2000:]

        wait_until_serving(f"http://127.0.0.1:{port}", still_starting, workers=1)
        ws = connect(f"ws://127.0.0.1:{port}/ws", open_timeout=SOCKET_DEADLINE)
        # the public host is answered (a proxy passes it on), another host is not (DNS rebinding)
        assert host_status(port, "games.example.org") == 200 and host_status(port, "rebound.example") == 400
        with ws:
            assert json.loads(ws.recv(timeout=SOCKET_DEADLINE))["type"] == "hello"
            ws.send(json.dumps({"type": "new_game", "side": "order", "opponent": "easy"}))
            game = next(m for m in (json.loads(ws.recv(timeout=SOCKET_DEADLINE)) for _ in range(10)) if m["type"] == "joined")
            ws.send(json.dumps({"type": "move", "cell": 0, "symbol": "X"}))
            while len(json.loads(ws.recv(timeout=SOCKET_DEADLINE)).get("moves", [])) < 2:  # the move and the reply
                pass
            # a copy of the live store, from another process, while the server holds it open
            copy = tmp_path / "copy.sqlite3"
            assert main(["serve", "--db", str(db), "--backup", str(copy)]) == 0
            with sqlite3.connect(copy) as copied:
                assert copied.execute("SELECT id FROM games").fetchall() == [(game["game"],)]
                assert copied.execute("SELECT ply, action FROM moves ORDER BY ply").fetchall()[0] == (0, 0)
            server.send_signal(signal.SIGTERM)
            told = json.loads(ws.recv(timeout=SOCKET_DEADLINE))
            assert told["type"] == "error" and told["code"] == "restarting"
        assert server.wait(timeout=SOCKET_DEADLINE) == 0
        out, _ = server.communicate()
        err = (tmp_path / "serve.log").read_text()
        assert "the game store is closed" in out and "Traceback" not in err
        assert f"client=127.0.0.1 game={game['game']} move" in err
    finally:
        if server.poll() is None:
            server.kill()
            server.communicate()


@pytest.fixture
def no_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if ``serve`` would start a server."""
    import orderchaos.web.server as server

    monkeypatch.setattr(server, "serve", lambda *a, **k: pytest.fail("the server started"))


def one_line(capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    """The captured stderr, one line holding every needle; nothing on stdout."""
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "Traceback" not in captured.err, captured
    for needle in needles:
        assert needle in captured.err, captured.err
    return captured.err


def damaged_store(path: Path) -> Path:
    """A game store whose schema reads but whose later pages are overwritten (as a disk
    fault leaves them): SQLite's quick_check finds many problems in it."""
    store = GameStore(path)
    for i in range(300):
        store.create(f"g{i}", {"order": "random", "chaos": None}, {"order": None, "chaos": None},
                     {"order": None, "chaos": None}, None)
        for ply in range(5):
            store.add_move(f"g{i}", ply, 2 * ply, None)
    store.close()
    with sqlite3.connect(path) as db:  # the leaves of the moves table: the schema and every tree's inner pages stay readable
        leaves = [row[0] for row in db.execute("SELECT pageno FROM dbstat WHERE name = 'moves' AND pagetype = 'leaf'")]
    db.close()
    data = bytearray(path.read_bytes())
    for page in leaves:
        data[(page - 1) * 4096 + 100:(page - 1) * 4096 + 4000] = b"A" * 3900
    path.write_bytes(data)
    with sqlite3.connect(path) as db:
        assert damage_found(db, "quick_check") is not None  # the damage is there
    return path


def test_a_damaged_store_is_refused_in_one_line_and_not_backed_up(
    tmp_path: Path, no_server: None, capsys: pytest.CaptureFixture[str]
) -> None:
    db = damaged_store(tmp_path / "games.sqlite3")
    assert main(["serve", "--db", str(db), "--agents", "threads"]) == 2
    one_line(capsys, "the game store is damaged (", "more problems found)")
    copy = tmp_path / "copy.sqlite3"
    assert main(["serve", "--db", str(db), "--backup", str(copy)]) == 2
    one_line(capsys, "the game store is damaged", "none was made")
    assert [p.name for p in tmp_path.iterdir() if "copy" in p.name] == []


def test_a_backup_on_a_full_disk_fails_in_one_line_and_leaves_no_partial_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "games.sqlite3"
    _finished_game_store(db)
    real_connect = sqlite3.connect

    def connect(path, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        db = real_connect(path, *args, **kwargs)
        if str(path).endswith(".partial"):
            db.execute("PRAGMA max_page_count=2")  # the copy's disk holds two pages: SQLITE_FULL
        return db

    monkeypatch.setattr(sqlite3, "connect", connect)
    copy = tmp_path / "copy.sqlite3"
    assert main(["serve", "--db", str(db), "--backup", str(copy)]) == 1
    one_line(capsys, f"--backup {copy}: cannot write", "database or disk is full", "no copy was made")
    assert [p.name for p in tmp_path.iterdir() if "copy" in p.name] == []  # no 0-byte .partial either


def test_a_backup_into_a_folder_that_refuses_files_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "games.sqlite3"
    _finished_game_store(db)
    assert main(["serve", "--db", str(db), "--backup", "/proc/orderchaos-backup.sqlite3"]) == 2
    one_line(capsys, "cannot write --backup copy /proc/orderchaos-backup.sqlite3")


def test_a_backup_beside_an_export_is_refused_not_half_done(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "games.sqlite3"
    _finished_game_store(db)
    out, copy = tmp_path / "out", tmp_path / "copy.sqlite3"
    assert main(["serve", "--db", str(db), "--backup", str(copy), "--export-games", str(out)]) == 2
    one_line(capsys, "--backup and --export-games each run alone")
    assert not copy.exists() and not out.exists()


def _finished_game_store(path: Path) -> None:
    store = GameStore(path)
    store.create("g1", {"order": "random", "chaos": None}, {"order": None, "chaos": None},
                 {"order": None, "chaos": None}, None)
    store.add_move("g1", 0, 0, None)
    store.close()


def test_a_store_another_program_is_writing_is_refused_before_the_server_starts(
    tmp_path: Path, no_server: None, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "games.sqlite3"
    _finished_game_store(db)
    writer = sqlite3.connect(db, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")  # holds the write lock, as a second server mid-write
        assert main(["serve", "--db", str(db), "--agents", "threads", "--port", str(free_loopback_port())]) == 2
    finally:
        writer.close()
    one_line(capsys, f"--db {db}: ", "database is locked", "is another server or program writing to it?")


@pytest.mark.parametrize("workers", [str((os.cpu_count() or 1) + 1), "100000"])
def test_workers_are_bounded_by_the_cores(workers: str, no_server: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--db", ":memory:", "--agents", "threads", "--workers", workers]) == 2
    one_line(capsys, f"--workers must be from 1 to {os.cpu_count() or 1} (one per CPU core here), got {workers}")


def test_an_address_that_cannot_be_listened_on_is_refused_before_the_server_says_open(
    no_server: None, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--db", ":memory:", "--agents", "threads", "--port", str(port)]) == 2
    one_line(capsys, f"cannot listen on 127.0.0.1:{port}: Address already in use")
    assert main(["serve", "--db", ":memory:", "--agents", "threads", "--host", "999.1.1.1"]) == 2
    one_line(capsys, "--host 999.1.1.1: not an IP address")


def test_a_public_url_on_port_0_is_refused(no_server: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--db", ":memory:", "--agents", "threads", "--public-url", "https://games.example.org:0"]) == 2
    one_line(capsys, "--public-url 'https://games.example.org:0' names port 0")


def test_exported_games_that_ended_off_the_board_are_read_by_replay_and_puzzles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, out = tmp_path / "games.sqlite3", tmp_path / "out"
    store = GameStore(db)
    for game, reason, winner in (("resigned", "resign", "order"), ("late", "time", "chaos")):
        store.create(game, {"order": None, "chaos": "random"}, {"order": None, "chaos": "easy"},
                     {"order": "t", "chaos": None}, None)
        for ply, action in enumerate([0, 13, 2][: 1 + (game == "late") * 2]):
            store.add_move(game, ply, action, None)
        store.finish(game, winner, reason)
    store.close()
    assert main(["serve", "--db", str(db), "--export-games", str(out)]) == 0
    (exported,) = out.iterdir()
    capsys.readouterr()
    assert main(["replay", str(exported), "--list"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "game 0: person (order) vs easy (chaos): order wins by resignation after 1 plies (0 opening plies)",
        "game 1: person (order) vs easy (chaos): chaos wins on time after 3 plies (0 opening plies)"]
    assert main(["puzzles", "generate", "--games", str(exported), "--out", str(tmp_path / "p.jsonl"),
                 "--empties", "1-35", "--node-limit", "1000"]) == 0


def test_damage_that_stops_the_check_itself_is_told_as_damage(tmp_path: Path) -> None:
    """An interior page whose right-child pointer is overwritten makes SQLite's check raise
    "malformed" instead of listing problems: that is damage found, not a crash."""
    path = tmp_path / "damaged.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE t (a, b)")
        db.executemany("INSERT INTO t VALUES (?, ?)", [(i, "x" * 200) for i in range(2000)])
        root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 't'").fetchone()[0]
    db.close()
    data = bytearray(path.read_bytes())
    page = (root - 1) * 4096
    data[page + 8:page + 12] = b"\xff" * 4
    path.write_bytes(data)
    db = sqlite3.connect(path)
    try:
        assert damage_found(db, "quick_check") == "database disk image is malformed"
    finally:
        db.close()
