"""The load test against several ``orderchaos serve`` instances, small: its own PostgreSQL
cluster, redis-server and Caddy on loopback, two instances behind Caddy, a few games to the
end, and the PostgreSQL store checked against the moves played."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("websockets.asyncio.client", reason="the web extra is not installed: pip install -e '.[dev]'")
pytest.importorskip("redis", reason="redis-py is not installed: pip install -e '.[dev]'")
pytest.importorskip("psycopg", reason="psycopg is not installed: pip install -e '.[dev]'")

from orderchaos.web import site_load  # noqa: E402
from orderchaos.web.site_load import postgres_bindir, site_load_test  # noqa: E402

for program, package in ((site_load.CADDY, "caddy"), (site_load.REDIS_SERVER, "redis-server")):
    if not Path(program).exists():
        pytest.skip(f"{program} is missing: apt-get install -y {package}", allow_module_level=True)
if postgres_bindir() is None:
    pytest.skip("PostgreSQL is not installed: apt-get install -y postgresql", allow_module_level=True)


def test_two_instances_behind_caddy_play_a_game_between_them_and_the_store_matches() -> None:
    # one game between two players: the second opens the invite while the first is connected,
    # so Caddy's least_conn sends them to different instances, and each move crosses the bus
    result = site_load_test(2, 1, 0, seed=1, synchronous_commit=False)
    assert result["errors"] == [] and result["store_problems"] == [] and result["server_errors"] == []
    assert result["games_finished"] == 1 and result["clients"] == 2
    assert result["moves"] == 30  # the seeded game of load_test(1, 0, seed=1) on one server
    assert 0 < result["round_trip_p50_ms"] <= result["round_trip_p99_ms"]


def test_a_rolling_restart_under_the_players_loses_no_move_and_every_player_resumes_in_its_seat() -> None:
    # two games between two players and one against the computer, on a clock; once each has a
    # move, each instance in turn is SIGTERMed, started again and waited for until ready, while
    # no game goes past its third ply: every player is in a game across both restarts, so each
    # loses its connection at least once and must come back through Caddy in its own seat
    result = site_load_test(2, 2, 1, seed=2, synchronous_commit=False, agents="threads",
                            disruption="rolling-restart", hold_from_ply=3)
    assert [event["instance"] for event in result["timeline"]["events"]] == [0, 1]
    assert not result["timeline"]["players_done_first"]
    assert result["errors"] == [] and result["server_errors"] == []
    assert result["games_finished"] == 3 and result["games_broken"] == 0 and result["store_problems"] == []
    assert result["moves_lost"] == 0
    assert result["resumes"] >= result["clients"] == 5
    assert result["clock_faults"] == [] and result["clock_checks"] >= 1


def test_a_friend_who_arrives_after_the_stall_bound_still_gets_the_invite_and_plays() -> None:
    # the second game's creator arrives 11 s into the run, past the 10 s a player waits for a
    # message: its friend arrives with it and waits for the invite from then, not from the start
    result = site_load_test(1, 2, 0, seed=1, synchronous_commit=False, agents="threads", ramp=22, stall=10)
    assert result["errors"] == [] and result["games_finished"] == 2 and result["store_problems"] == []
