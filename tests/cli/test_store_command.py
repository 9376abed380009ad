"""``orderchaos store copy``: a site moved from SQLite to PostgreSQL and back keeps every row of
every table; a target that holds games is refused unless --replace; a copy whose counts differ
is not kept; bad locations get one line and exit 2, a database out of reach exit 1. And
``serve --db`` with a PostgreSQL URL: a malformed one, one out of reach, --backup and
--export-games of a PostgreSQL store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import helpers
from orderchaos.arena.glicko2 import Rating
from orderchaos.cli.main import main
from orderchaos.web import bots
from orderchaos.web import store as web_store
from orderchaos.web.clocks import PRESETS
from orderchaos.web.store import STORE_TABLES, GameStore, table_counts


def build_site(path: Path) -> None:
    """A SQLite store with something in every table: a finished game with a rematch, a game on
    the clock with both seats taken, an agent game, puzzle ratings and attempts, two named
    players and the ratings the finished game gave them, two bots and their rated game."""
    store = GameStore(path, clock=lambda: 1_765_000_000.125)
    people = {"order": None, "chaos": None}
    store.create("finished", people, people, {"order": "a" * 64, "chaos": "b" * 64}, None)
    store.ensure_player("player1")
    store.ensure_player("player2")
    store.seat_players("finished", {"order": "player1", "chaos": "player2"}, "bullet")
    for ply, action in enumerate([0, 3, 12, 15, 24, 27, 36, 39, 48]):
        store.add_move("finished", ply, action, "order" if ply == 8 else None)
    store.create("rematch", people, people, {"order": "b" * 64, "chaos": "a" * 64}, None, PRESETS["3+2"])
    store.set_rematch("finished", "rematch")
    clock = store.load("rematch").clock
    clock.after_move("order", 1_765_000_000.125)
    store.add_move("rematch", 0, 14, None, clock)
    store.create("agent", {"order": None, "chaos": "random"}, {"order": None, "chaos": "easy"},
                 {"order": "c" * 64, "chaos": None}, "invite-secret")
    store.finish("agent", None, "aborted")
    store.record_puzzle_attempt("player1", "p1", True, Rating(), Rating(1600.5, 290.25, 0.06), Rating(1400, 200, 0.06))
    store.record_puzzle_attempt("player1", "p2", False, Rating(1600.5, 290.25, 0.06), Rating(1550, 280, 0.06),
                                Rating(1450, 210, 0.06))
    for name in ("alpha", "beta"):
        bots.add_account(store, name)
    bots.record_game(store, "finished", {"order": "alpha", "chaos": "beta"}, True)
    assert bots.settle(store, "finished")  # a rated game between bots: both ratings stored
    store.close()


def rows(path: Path) -> dict[str, list[tuple]]:
    """Every row of every table of a SQLite store, in a fixed order."""
    db = sqlite3.connect(path)
    try:
        return {table: db.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall() for table in STORE_TABLES}
    finally:
        db.close()


def test_a_site_goes_to_postgresql_and_back_with_every_row(
    postgres_cluster: helpers.PostgresCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site, back = tmp_path / "site.sqlite3", tmp_path / "back.sqlite3"
    build_site(site)
    url = postgres_cluster.new_database()
    assert main(["store", "copy", "--from", str(site), "--to", url]) == 0
    out = capsys.readouterr().out
    printed = {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:-1]}
    assert printed == {"games": ["3", "3"], "moves": ["10", "10"], "puzzle_players": ["1", "1"],
                       "puzzle_ratings": ["2", "2"], "puzzle_attempts": ["2", "2"], "players": ["2", "2"],
                       "game_players": ["1", "1"], "ratings": ["2", "2"], "rating_changes": ["2", "2"],
                       "bot_accounts": ["2", "2"], "bot_ratings": ["2", "2"], "bot_games": ["1", "1"]}, out
    assert "every count matches" in out
    assert main(["store", "copy", "--from", url, "--to", f"sqlite://{back}"]) == 0
    capsys.readouterr()
    assert rows(back) == rows(site)
    assert GameStore(back).load("rematch").clock.turn_started == 1_765_000_000.125

    # a target that holds games is refused, and stays as it was; --replace replaces it
    assert main(["store", "copy", "--from", str(site), "--to", url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already holds 3 games" in err and "--replace" in err
    assert main(["store", "copy", "--from", str(back), "--to", url, "--replace"]) == 0
    capsys.readouterr()
    assert table_counts(GameStore(url))["moves"] == 10


def test_a_copy_whose_counts_differ_is_not_kept(
    postgres_cluster: helpers.PostgresCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    site = tmp_path / "site.sqlite3"
    build_site(site)
    url = postgres_cluster.new_database()
    real = web_store.Database.executemany

    def losing_a_move(db: web_store.Database, sql: str, batch: list) -> None:
        real(db, sql, batch[:-1] if "INTO moves" in sql else batch)

    monkeypatch.setattr(web_store.Database, "executemany", losing_a_move)
    assert main(["store", "copy", "--from", str(site), "--to", url]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "moves 10 -> 9" in err and "nothing was kept" in err
    assert set(table_counts(GameStore(url)).values()) == {0}


@pytest.mark.parametrize("source, target, wrong", [
    ("{site}", "mysql://u@127.0.0.1/db", "unknown kind of store 'mysql'"),
    ("{site}", "postgresql://u@127.0.0.1:notaport/db", "the port must be a number"),
    ("{site}", "postgresql://u@127.0.0.1:5432", "name one database"),
    ("{site}", "postgresql:///db", "no host"),
    ("sqlite://site.sqlite3", "{tmp}/b.sqlite3", "sqlite:///PATH"),
    ("{tmp}/none.sqlite3", "{tmp}/b.sqlite3", "no such store file"),
    ("{site}", "{site}", "the same store"),
])
def test_bad_locations_get_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str, target: str, wrong: str
) -> None:
    site = tmp_path / "site.sqlite3"
    GameStore(site).close()
    names = {"site": site, "tmp": tmp_path}
    assert main(["store", "copy", "--from", source.format(**names), "--to", target.format(**names)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and wrong in err and "Traceback" not in err, err
    assert not (tmp_path / "b.sqlite3").exists()


def test_a_database_out_of_reach_gets_one_line_and_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("psycopg")
    closed = f"postgresql://orderchaos@127.0.0.1:{helpers.free_loopback_port()}/games"
    site = tmp_path / "site.sqlite3"
    GameStore(site).close()
    assert main(["store", "copy", "--from", str(site), "--to", closed]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot be reached" in err and "Traceback" not in err, err
    assert main(["serve", "--db", closed, "--port", "1"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot be reached" in err, err
    assert main(["serve", "--db", "postgresql://orderchaos@127.0.0.1:99999/games"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--db" in err and "port must be a number" in err, err


def test_serve_backs_up_and_exports_a_postgresql_store(
    postgres_cluster: helpers.PostgresCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = tmp_path / "site.sqlite3"
    build_site(site)
    url = postgres_cluster.new_database()
    assert main(["store", "copy", "--from", str(site), "--to", url]) == 0
    backup = tmp_path / "backup.sqlite3"
    assert main(["serve", "--db", url, "--backup", str(backup)]) == 0
    assert "copied 3 games" in capsys.readouterr().out
    assert rows(backup) == rows(site)
    assert not list(tmp_path.glob(".*partial"))
    assert main(["serve", "--db", url, "--export-games", str(tmp_path / "out")]) == 0
    assert "wrote 1 finished games into 1 files" in capsys.readouterr().out


def test_bench_store_prints_both_backends_and_leaves_nothing_behind(
    postgres_cluster: helpers.PostgresCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    import psycopg

    url = postgres_cluster.new_database()
    assert main(["bench", "store", "--quick", "--postgres", url]) == 0
    out = capsys.readouterr().out
    rows_printed = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith("  s")
                    or line.startswith("  p")}
    assert {"sqlite", "postgresql"} <= set(rows_printed) and "PostgreSQL / SQLite, mean per move:" in out, out
    assert all(float(value) > 0 for value in rows_printed["postgresql"][:4])
    with psycopg.connect(url) as conn:  # the benchmark's schema is gone
        assert conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'orderchaos_bench_%'").fetchone()[0] == 0
    assert main(["bench", "store", "--postgres", "sqlite:///tmp/x.sqlite3"]) == 2
    assert "--postgres" in capsys.readouterr().err
