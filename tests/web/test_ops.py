"""What an operator of ``orderchaos serve`` relies on: ``/healthz``, ``/metrics``, the log lines
with the client's address, ``--backup`` of a live store, and a SIGTERM that tells the tabs and
exits 0."""

from __future__ import annotations

import asyncio
import faulthandler
import gc
import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("starlette.testclient", reason="the web extra is not installed: pip install -e '.[dev]'")
pytest.importorskip("prometheus_client", reason="the web extra is not installed: pip install -e '.[dev]'")

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from orderchaos.cli.main import main  # noqa: E402
from orderchaos.web.app import create_app  # noqa: E402
from orderchaos.web.ops import Metrics  # noqa: E402
from orderchaos.web.services import Limits, Services  # noqa: E402
from orderchaos.web.store import GameStore  # noqa: E402

import helpers  # noqa: E402
from helpers import free_loopback_port, next_message  # noqa: E402

FAST = Limits(move_time=5.0, hint_time=0.3, rate=1000, burst=1000)


@pytest.fixture(autouse=True)
def no_hang() -> Iterator[None]:
    """A test waiting for a message that never comes fails after two minutes instead of hanging."""
    faulthandler.dump_traceback_later(120, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()



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
        ws.send_json({"type": "move", "cell": 0, "symbol": "X"})  # committed; the agent thinks
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
    assert f"client=127.0.0.9 game={game} new_game" in lines
    assert f"client=127.0.0.9 game={game} move" in lines
    assert "client=127.0.0.9 websocket /ws" in lines



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


def host_status(port: int, host: str) -> int:
    """The status of ``GET /healthz`` on 127.0.0.1:``port`` addressed to ``host``."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}/healthz", headers={"Host": host})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status
    except urllib.error.HTTPError as refused:
        return refused.code


def test_a_running_server_behind_a_public_url_backs_up_tells_its_tabs_on_sigterm_and_exits_0(tmp_path: Path) -> None:
    from websockets.sync.client import connect

    db, port = tmp_path / "games.sqlite3", free_loopback_port()
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    server = subprocess.Popen(
        [sys.executable, "-m", "orderchaos", "serve", "--db", str(db), "--port", str(port),
         "--public-url", "https://games.example.org"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        ws = None
        for _ in range(600):  # until it listens (startup imports take a while on a busy machine)
            try:
                ws = connect(f"ws://127.0.0.1:{port}/ws", open_timeout=5)
                break
            except OSError:
                assert server.poll() is None, server.communicate()
                time.sleep(0.1)
        assert ws is not None, "the server never listened"
        # the public host is answered (a proxy passes it on), another host is not (DNS rebinding)
        assert host_status(port, "games.example.org") == 200 and host_status(port, "rebound.example") == 400
        with ws:
            assert json.loads(ws.recv(timeout=30))["type"] == "hello"
            ws.send(json.dumps({"type": "new_game", "side": "order", "opponent": "easy"}))
            game = next(m for m in (json.loads(ws.recv(timeout=30)) for _ in range(10)) if m["type"] == "joined")
            ws.send(json.dumps({"type": "move", "cell": 0, "symbol": "X"}))
            while len(json.loads(ws.recv(timeout=30)).get("moves", [])) < 2:  # the move and the reply
                pass
            # a copy of the live store, from another process, while the server holds it open
            copy = tmp_path / "copy.sqlite3"
            assert main(["serve", "--db", str(db), "--backup", str(copy)]) == 0
            with sqlite3.connect(copy) as copied:
                assert copied.execute("SELECT id FROM games").fetchall() == [(game["game"],)]
                assert copied.execute("SELECT ply, action FROM moves ORDER BY ply").fetchall()[0] == (0, 0)
            server.send_signal(signal.SIGTERM)
            told = json.loads(ws.recv(timeout=30))
            assert told["type"] == "error" and told["code"] == "restarting"
        assert server.wait(timeout=10) == 0
        out, err = server.communicate()
        assert "the game store is closed" in out and "Traceback" not in err
        assert f"client=127.0.0.1 game={game['game']} move" in err
    finally:
        if server.poll() is None:
            server.kill()
            server.communicate()
