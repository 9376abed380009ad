"""``orderchaos bench store``: what one committed move costs the server in each backend of the
game store, SQLite (a file in WAL mode, as ``serve`` opens it) and PostgreSQL (the database at
``--postgres URL``, in a schema of its own that is dropped afterwards).

Each move is written as the server writes it: :meth:`GameStore.add_move` with the clocks, one
transaction, from one thread (the server's event loop), games of a seeded random sequence of
moves on the 3+2 clock. Printed: moves per second, the mean, median and 99th percentile of one
move's commit, and PostgreSQL's cost against SQLite's; with PostgreSQL's own ``fsync`` and
``synchronous_commit`` settings, which decide most of it.
"""

from __future__ import annotations

import random
import secrets
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from orderchaos.envs.rules import AGENTS, State
from orderchaos.web.clocks import PRESETS, GameClock
from orderchaos.web.store import GameStore, shown_location, token_hash

GAMES = 200
"""Games written per backend (``--quick``: :data:`QUICK_GAMES`)."""
QUICK_GAMES = 10
SEED = 0


def game_moves(rng: random.Random) -> list[int]:
    """A random legal game to its end."""
    state, actions = State(), []
    while state.winner is None:
        action = rng.choice(state.legal_actions())
        actions.append(action)
        state = state.apply(action)
    return actions


def time_moves(store: GameStore, games: list[list[int]]) -> list[float]:
    """Write every game into ``store`` as the server does; the seconds each move's commit took."""
    seconds = []
    for actions in games:
        game_id = secrets.token_urlsafe(16)
        tokens = {role: token_hash(secrets.token_urlsafe(32)) for role in AGENTS}
        store.create(game_id, {"order": None, "chaos": None}, {"order": None, "chaos": None}, tokens, None,
                     PRESETS["3+2"])
        clock, state = GameClock.fresh(PRESETS["3+2"]), State()
        for ply, action in enumerate(actions):
            clock.after_move(state.to_play, store.clock())
            state = state.apply(action)
            started = time.perf_counter()
            store.add_move(game_id, ply, action, state.winner, clock)
            seconds.append(time.perf_counter() - started)
    return seconds


def figures(seconds: list[float]) -> dict[str, float]:
    """Moves per second and the mean, median and 99th percentile of one move, in µs."""
    ordered = sorted(seconds)
    return {"moves": len(seconds), "moves_per_s": len(seconds) / sum(seconds),
            "mean_us": 1e6 * statistics.fmean(seconds), "p50_us": 1e6 * ordered[len(ordered) // 2],
            "p99_us": 1e6 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]}


def with_schema(url: str, schema: str) -> str:
    """The URL with libpq's ``options`` setting the search path to ``schema``."""
    return f"{url}{'&' if '?' in url else '?'}options={quote(f'-csearch_path={schema}')}"


def postgres_moves(url: str, games: list[list[int]]) -> tuple[list[float], dict[str, str]]:
    """:func:`time_moves` in a new schema of the database at ``url`` (dropped afterwards),
    and the database's settings that decide a commit's cost."""
    import psycopg

    schema = f"orderchaos_bench_{secrets.token_hex(4)}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        settings = {name: admin.execute(f"SHOW {name}").fetchone()[0] for name in ("fsync", "synchronous_commit")}
        try:
            store = GameStore(with_schema(url, schema))
            try:
                return time_moves(store, games), settings
            finally:
                store.close()
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def run(quick: bool = False, postgres: str | None = None) -> dict[str, Any]:
    """Measure both backends (PostgreSQL only with a ``postgres`` URL) and print a table."""
    rng = random.Random(SEED)
    games = [game_moves(rng) for _ in range(QUICK_GAMES if quick else GAMES)]
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="orderchaos-bench-store-") as folder:
        store = GameStore(Path(folder) / "games.sqlite3")
        try:
            result["sqlite"] = figures(time_moves(store, games))
        finally:
            store.close()
    if postgres is not None:
        seconds, settings = postgres_moves(postgres, games)
        result["postgresql"] = {**figures(seconds), **settings, "database": shown_location(postgres)}
        result["postgresql_per_sqlite"] = result["postgresql"]["mean_us"] / result["sqlite"]["mean_us"]
    print(report(result))
    return result


def report(result: dict[str, Any]) -> str:
    """The figures as a table."""
    lines = [f"store: one committed move (GameStore.add_move with clocks), {result['sqlite']['moves']} moves "
             f"of seeded random games per backend",
             f"  {'backend':<12}{'moves/s':>10}{'mean µs':>10}{'p50 µs':>10}{'p99 µs':>10}"]
    for backend in ("sqlite", "postgresql"):
        if backend in result:
            f = result[backend]
            lines.append(f"  {backend:<12}{f['moves_per_s']:>10.0f}{f['mean_us']:>10.0f}{f['p50_us']:>10.0f}"
                         f"{f['p99_us']:>10.0f}")
    if "postgresql" in result:
        pg = result["postgresql"]
        lines.append(f"  PostgreSQL / SQLite, mean per move: {result['postgresql_per_sqlite']:.2f}x "
                     f"({pg['database']}: fsync={pg['fsync']}, synchronous_commit={pg['synchronous_commit']}; "
                     f"SQLite: WAL, synchronous=NORMAL)")
    else:
        lines.append("  PostgreSQL: not measured (give --postgres postgresql://USER@HOST:PORT/DB)")
    return "\n".join(lines)
