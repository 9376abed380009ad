"""The game store's schema version 3 (clocks, result reasons, seating time, puzzle ratings),
its upgrades from versions 1 and 2, and the clock arithmetic it stores; an injected clock, no
sleeps. Every store test runs on both backends (the ``store_url`` fixture: a SQLite file and
a database of the tests' own PostgreSQL cluster)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest

import helpers

from orderchaos.web.clocks import PRESETS, GameClock, TimeControl, parse_time_control
from orderchaos.web.store import GameStore, export_games

V1_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE games (id TEXT PRIMARY KEY, created REAL NOT NULL, updated REAL NOT NULL,
    order_spec TEXT, chaos_spec TEXT, order_label TEXT, chaos_label TEXT,
    order_token TEXT, chaos_token TEXT, invite TEXT, winner TEXT, rematch TEXT);
CREATE TABLE moves (game TEXT NOT NULL REFERENCES games(id), ply INTEGER NOT NULL,
    action INTEGER NOT NULL, at REAL NOT NULL, PRIMARY KEY (game, ply));
CREATE INDEX games_unfinished ON games(winner) WHERE winner IS NULL;
INSERT INTO meta VALUES ('schema_version', '1');
"""


class FakeClock:
    """A settable now."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def run_statements(url: str, statements: Sequence[str]) -> None:
    """Run SQL on the store's database behind the store's back (an older version's tables)."""
    if url.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement)
        return
    db = sqlite3.connect(url)
    for statement in statements:
        db.execute(statement)
    db.commit()
    db.close()


def person_game(store: GameStore, game_id: str, control: TimeControl | None) -> None:
    store.create(game_id, {"order": None, "chaos": None}, {"order": None, "chaos": None},
                 {"order": "a" * 64, "chaos": None}, "invite", control)


def test_a_version_1_store_opens_and_is_upgraded(store_url: str) -> None:
    path = store_url
    run_statements(path, [*V1_SCHEMA.split(";")[:-1],
                          "INSERT INTO games (id, created, updated, winner) VALUES ('won', 1, 1, 'order')",
                          "INSERT INTO games (id, created, updated, winner) VALUES ('full', 2, 2, 'chaos')",
                          "INSERT INTO games (id, created, updated) VALUES ('open', 3, 3)",
                          "INSERT INTO moves VALUES ('open', 0, 7, 3)"])
    store = GameStore(path)
    version = store.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
    assert version == "3"
    assert [store.load(i).reason for i in ("won", "full", "open")] == ["five", "full_board", None]
    assert store.ids(finished=True) == ["won", "full"] and store.ids(finished=False) == ["open"]
    opened = store.load("open")
    assert opened.actions == [7] and opened.clock is None and not opened.finished
    store.finish("open", "chaos", "resign")
    store.close()
    again = GameStore(path)  # a second open of the upgraded file does not upgrade twice
    assert again.load("open").reason == "resign" and again.load("open").winner == "chaos"


def test_clocks_survive_a_reopen_and_downtime_is_not_charged(store_url: str) -> None:
    path = store_url
    now = FakeClock(1_765_000_000.0)  # Unix seconds of today: times need all of a double's digits
    store = GameStore(path, clock=now)
    person_game(store, "g", PRESETS["3+2"])
    clock = store.load("g").clock
    assert clock == GameClock.fresh(PRESETS["3+2"])
    clock.after_move("order", now())  # the first move starts Chaos's clock, charges nobody
    store.add_move("g", 0, 5, None, clock)
    now.now += 30.1
    clock.after_move("chaos", now())  # Chaos used 30.1 s and gains 2
    store.add_move("g", 1, 6, None, clock)
    now.now += 10.0  # Order thinks 10 s, then the server goes down for an hour
    store.close()

    now.now += 3600.0
    reopened = GameStore(path, clock=now)
    assert reopened.resume_clocks() == 1
    clock = reopened.load("g").clock
    assert clock.remaining == {"order": 180.0, "chaos": pytest.approx(151.9, abs=1e-6)}
    assert clock.turn_started == now()
    assert clock.left("order", "order", now() + 5.0) == 175.0


def test_resign_and_abort_are_kept_with_their_reason(store_url: str, tmp_path: Path) -> None:
    now = FakeClock()
    store = GameStore(store_url, clock=now)
    person_game(store, "resigned", None)
    person_game(store, "aborted", None)
    assert store.load("resigned").seated is None
    now.now += 4.0
    store.claim_seat("aborted", "chaos", "b" * 64)
    assert store.load("aborted").seated == now()
    store.add_move("resigned", 0, 3, None)
    store.finish("resigned", "order", "resign")
    store.finish("aborted", None, "aborted")
    store.finish("aborted", "order", "time")  # an ended game stays ended
    assert store.load("aborted").reason == "aborted" and store.load("aborted").winner is None
    assert store.load("resigned").saved().record.winner == "order"
    written = export_games(store, tmp_path / "out")
    assert len(written) == 1 and len(written[0].read_text().splitlines()) == 1
    with pytest.raises(ValueError, match="reason must be one of"):
        store.finish("resigned", "order", "five")


def test_the_clock_charges_the_mover_adds_the_increment_and_flags() -> None:
    clock = GameClock.fresh(TimeControl(10.0, 1.0))
    assert clock.flag_at("order") is None and not clock.flagged("order", 1e9)
    clock.after_move("order", 100.0)
    assert clock.left("chaos", "chaos", 104.0) == 6.0 and clock.left("order", "chaos", 104.0) == 10.0
    clock.after_move("chaos", 104.0)
    assert clock.remaining == {"order": 10.0, "chaos": 7.0}
    assert clock.flag_at("order") == 114.0
    assert not clock.flagged("order", 113.9) and clock.flagged("order", 114.0)
    clock.stop("order", 120.0)
    assert clock.remaining["order"] == 0.0 and clock.turn_started is None


def test_time_controls_by_name() -> None:
    assert parse_time_control("5+3") == TimeControl(300.0, 3.0)
    assert parse_time_control("none") is None
    assert PRESETS["10+5"].name == "10+5" and TimeControl(2.0, 0.0).name == "2s+0"
    with pytest.raises(ValueError, match="known: none, 1\\+0"):
        parse_time_control("2+1")


def test_a_version_2_store_gains_the_puzzle_tables(store_url: str) -> None:
    from orderchaos.arena.glicko2 import Rating

    path = store_url
    run_statements(path, [*V1_SCHEMA.split(";")[:-1],
                          "INSERT INTO games (id, created, updated, winner) VALUES ('won', 1, 1, 'order')"])
    GameStore(path).close()  # 1 -> 3 in one open
    run_statements(path, [*(f"DROP TABLE {table}" for table in ("puzzle_players", "puzzle_ratings", "puzzle_attempts")),
                          "UPDATE meta SET value='2' WHERE key='schema_version'"])  # a version 2 store as it was

    store = GameStore(path, clock=FakeClock(50.0))
    assert store.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == "3"
    assert store.load("won").reason == "five" and store.puzzle_player("someone") is None
    before, after, puzzle = Rating(), Rating(1600, 300, 0.06), Rating(1400, 200, 0.06)
    assert store.record_puzzle_attempt("someone", "p1", True, before, after, puzzle)
    assert not store.record_puzzle_attempt("someone", "p1", False, after, Rating(1, 2, 3), Rating(4, 5, 6))
    store.close()

    again = GameStore(path)  # what a first attempt wrote survives a reopen; a second was refused
    assert again.puzzle_player("someone") == after and again.puzzle_rating("p1") == puzzle
    assert again.puzzle_attempt("someone", "p1") == (True, 1500.0, 1600.0)
    assert again.attempted_puzzles("someone") == {"p1"} and again.puzzle_ratings() == {"p1": 1400.0}
    row = again.db.execute("SELECT attempts, solved FROM puzzle_players WHERE id='someone'").fetchone()
    assert row == (1, 1)


def test_clocks_out_names_exactly_the_games_whose_side_to_move_ran_out(store_url: str) -> None:
    now = FakeClock()
    store = GameStore(store_url, clock=now)
    control = parse_time_control("1+0")
    for game_id, plies in (("even", 2), ("odd", 1)):
        person_game(store, game_id, control)
        clock = store.load(game_id).clock
        for ply in range(plies):
            clock.after_move("order" if ply % 2 == 0 else "chaos", now())
            store.add_move(game_id, ply, 2 * ply, None, clock)
            now.now += 50.0
    # "even" (two moves, Order to move: 60 s from 1050; Chaos, not on move, has 10 s left)
    # runs out at 1110; "odd" (one move, Chaos to move: 60 s from 1100) at 1160
    person_game(store, "unstarted", control)  # no clock runs before the first move
    assert store.clocks_out(1110.0 - 1e-6) == [] and store.clocks_out(1110.0) == ["even"]
    assert store.clocks_out(1160.0) == ["even", "odd"]  # the earlier started clock first
    store.finish("even", "chaos", "time")
    assert store.clocks_out(1160.0) == ["odd"]


def test_servers_opening_one_new_postgresql_store_take_turns_at_its_tables(
    postgres_cluster: helpers.PostgresCluster,
) -> None:
    import threading
    import time

    import psycopg

    from orderchaos.web.store import PostgresDatabase

    url = postgres_cluster.new_database()
    opened: list[GameStore] = []
    with psycopg.connect(url, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s)", (PostgresDatabase.SCHEMA_LOCK,))  # another server sets up
        opener = threading.Thread(target=lambda: opened.append(GameStore(url)), daemon=True)
        opener.start()
        waiting = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        deadline = time.monotonic() + 60  # a bound, so that a bug fails rather than hangs
        while other.execute(waiting).fetchone()[0] == 0:  # it waits for the lock before any table
            assert opener.is_alive(), "the store was opened without waiting for the schema lock"
            assert time.monotonic() < deadline, "the store neither waited for the lock nor opened"
        assert other.execute("SELECT to_regclass('games')").fetchone()[0] is None
        other.execute("SELECT pg_advisory_unlock(%s)", (PostgresDatabase.SCHEMA_LOCK,))
        opener.join(60)
    assert len(opened) == 1 and opened[0].ids() == []
    opened[0].close()


def test_a_game_is_read_from_one_state_while_another_server_writes(store_url: str) -> None:
    """A server reading a game (its row, then its moves) while another server commits a move
    sees the game before the move or after it, never the new moves beside the old clocks: the
    read is one snapshot (a clock shown as stopped after the first move was the symptom)."""
    now = FakeClock(1_765_000_000.0)
    writer, reader = GameStore(store_url, clock=now), GameStore(store_url, clock=now)
    person_game(writer, "g", PRESETS["3+2"])
    read = reader.db.execute

    def read_while_the_other_writes(sql: str, params: Sequence = ()) -> object:
        cursor = read(sql, params)
        if "FROM games WHERE id=?" in sql:  # the game row is read: the other server moves now
            clock = GameClock.fresh(PRESETS["3+2"])
            clock.after_move("order", now())
            writer.add_move("g", 0, 5, None, clock)
        return cursor

    reader.db.execute = read_while_the_other_writes  # type: ignore[method-assign]
    seen = reader.load("g")
    assert seen is not None
    assert (seen.actions, seen.clock.turn_started) in (([], None), ([5], now()))
    reader.db.execute = read  # type: ignore[method-assign]
    assert reader.load("g").actions == [5]
    writer.close()
    reader.close()
