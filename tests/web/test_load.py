"""The web load test, small: a real ``orderchaos serve`` on loopback, a few games of each
kind to the end, and the store checked against the moves played."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("websockets.asyncio.client", reason="the web extra is not installed: pip install -e '.[dev]'")

from orderchaos.web.load import GameLog, check_store, load_test, moves_lost  # noqa: E402
from orderchaos.web.store import GameStore  # noqa: E402
from orderchaos.envs.rules import action_name  # noqa: E402

from helpers import wait_for  # noqa: E402


def test_a_small_load_test_plays_every_game_to_the_end_and_the_store_matches() -> None:
    result = load_test(2, 2, seed=1)
    assert result["clients"] == 6 and result["store_problems"] == [] and result["server_errors"] == []
    assert result["time_control"] == "5+3"  # every game on the clock, and stored so (the store check)
    # seeded scripted players and a seeded heuristic: the same games every run, every move
    # of the two friend games and half of the agent games' moves by the scripted players
    assert (result["moves"], result["person_moves"]) == (101, 79)
    assert 0 < result["round_trip_p50_ms"] <= result["round_trip_p99_ms"]


def test_thinking_and_arriving_over_a_ramp_change_when_moves_are_sent_not_which_moves() -> None:
    result = load_test(2, 2, seed=1, think=0.005, ramp=0.02)
    assert result["store_problems"] == [] and result["server_errors"] == []
    assert (result["moves"], result["person_moves"]) == (101, 79)  # the same games as without thinking
    assert (result["think_s"], result["ramp_s"]) == (0.005, 0.02)
    assert set(result["gc_pauses"]) == {"0", "1", "2"} and result["server_peak_memory_mb"] > 0


def test_the_store_check_finds_a_game_that_differs(tmp_path) -> None:
    db = tmp_path / "games.sqlite3"
    store = GameStore(db)
    store.create("g" * 22, {"order": None, "chaos": None}, {"order": None, "chaos": None}, {}, None)
    for ply, action in enumerate([0, 13, 2, 15, 4, 17, 6, 19, 8]):  # X on a1..e1, O on a2..d2
        store.add_move("g" * 22, ply, action, "order" if ply == 8 else None)
    store.close()
    actions = [0, 13, 2, 15, 4, 17, 6, 19, 8]
    played = [action_name(a) for a in actions]
    good = GameLog("friend", "g" * 22, dict(enumerate(actions)), played, "order")
    assert check_store(db, [good]) == []
    wrong = GameLog("agent", "g" * 22, {0: 0, 1: 12}, played, "order")
    assert check_store(db, [wrong]) == [f"game {'g' * 22}: a move sent is not the move stored at its ply"]
    short = GameLog("agent", "g" * 22, {0: 0}, played[:-1], "order")
    assert check_store(db, [short]) == [f"game {'g' * 22}: stored 9 moves, the players saw 8"]
    unsent = GameLog("friend", "g" * 22, {0: 0}, played, "order")
    assert check_store(db, [unsent]) == [f"game {'g' * 22}: 9 moves, 1 sent by its players"]
    assert check_store(db, [good], "5+3") == [f"game {'g' * 22}: stored with clock none, asked for 5+3"]
    lost = GameLog("agent", "g" * 22, dict(enumerate(actions)), played, "chaos")
    assert check_store(db, [lost]) == [f"game {'g' * 22}: stored winner order, the players saw chaos"]
    missing = GameLog("agent", "h" * 22, {}, [], None)
    assert check_store(db, [missing]) == [f"game {'h' * 22}: not in the store"]
    # moves seen acknowledged: in the store at their ply, or lost (a game unfinished counts too)
    good.seen = dict(enumerate(actions))
    assert moves_lost(db, [good]) == 0
    assert moves_lost(db, [GameLog("agent", "g" * 22, seen={3: 15, 9: 10, 4: 5})]) == 2
    assert moves_lost(db, [GameLog("agent", "h" * 22, seen={0: 0})]) == 1


STUBBORN_SERVER = """
import os, signal, socket, subprocess, sys
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a server stuck in its shutdown
child = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"])  # a worker, until killed
listener = socket.create_server(("127.0.0.1", int(sys.argv[1])))
with open(sys.argv[2] + ".tmp", "w") as pids:
    pids.write(f"{os.getpid()} {child.pid}")
os.replace(sys.argv[2] + ".tmp", sys.argv[2])
while True:  # accepts and hangs up: every request of the tool fails
    connection, _ = listener.accept()
    connection.close()
"""


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_failed_run_stops_the_server_and_its_workers_even_when_sigterm_does_not(tmp_path, monkeypatch) -> None:
    from orderchaos.web import load

    pid_file = tmp_path / "pids"
    monkeypatch.setattr(load, "STOP_GRACE_S", 1.0)
    monkeypatch.setattr(load, "serve_command", lambda port, *_: [sys.executable, "-c", STUBBORN_SERVER, str(port),
                                                                  str(pid_file)])
    with pytest.raises(OSError):  # the stub hangs up on the tool's first scrape of /metrics
        load_test(1, 0, agents="threads")
    server, worker = map(int, pid_file.read_text().split())
    # a hang guard only: the kill is sent before load_test returns
    wait_for(lambda: not alive(server) and not alive(worker), "the server and its worker end after the failed run",
             seconds=60)


def test_the_startup_probe_times_every_healthz_answer_of_a_fresh_server() -> None:
    from orderchaos.web.load import startup_probe, startup_report

    result = startup_probe(20.0, agents="threads", every=0.1)  # serve listens within seconds
    assert result["probes"] == 200 and result["failed"] == 0 and result["server_errors"] == []
    answered = result["ok"] + result["not_ready"]
    assert answered + result["not_listening"] == 200 and answered > 0
    assert result["ready_after_s"] is not None  # without workers it is ready once it listens
    assert result["wait_histogram"]["<=infs"] == answered and result["wait_max_ms"] >= result["wait_p50_ms"]
    assert "wait for an answer: p50" in startup_report(result)
