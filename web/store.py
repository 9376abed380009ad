"""The web server's game store: the one module that knows its schema, on either of two
backends (:class:`Database`): a SQLite file (the default; one machine needs nothing else) or
a PostgreSQL database that any number of servers share (``--db postgresql://...``).

Every game played on the page (against a friend or an agent) is a row of ``games``, and
each of its moves a row of ``moves``; a move is committed before the server tells anyone
about it, so a restart loses nothing that a player saw. A SQLite file is opened in WAL mode
(readers never wait for the writer). The statements, the schema and its upgrades are the
same on both backends. Schema, version 3 (REAL below is DOUBLE PRECISION in the tables:
PostgreSQL's REAL has 4 bytes, too few for Unix seconds)::

    games(id TEXT PRIMARY KEY,       -- secrets.token_urlsafe(16): 128 random bits
          created REAL, updated REAL,  -- Unix seconds
          order_spec TEXT, chaos_spec TEXT,   -- the agent's spec for an agent seat, NULL: a person
          order_label TEXT, chaos_label TEXT, -- how the page names the agent (e.g. "hard")
          order_token TEXT, chaos_token TEXT, -- SHA-256 (hex) of the seat token, NULL: seat free
          invite TEXT,                 -- the invite secret while the other seat is free, else NULL
          winner TEXT,                 -- 'order' / 'chaos' once finished, else NULL
          rematch TEXT,                -- the id of the rematch game, once asked for
          reason TEXT,                 -- why it ended: five, full_board, resign, time, aborted
          time_base REAL, time_increment REAL,  -- the time control in seconds, NULL: no clock
          order_left REAL, chaos_left REAL,     -- each side's seconds left as of turn_started
          turn_started REAL,           -- when the running clock started, NULL: none runs
          seated REAL)                 -- when both seats were first taken
    moves(game TEXT, ply INTEGER, action INTEGER, at REAL, PRIMARY KEY (game, ply))
    meta(key TEXT PRIMARY KEY, value TEXT)   -- schema_version
    puzzle_players(id TEXT PRIMARY KEY,   -- the anonymous id a browser keeps
                   r REAL, rd REAL, sigma REAL,  -- Glicko-2 rating, deviation, volatility
                   attempts INTEGER, solved INTEGER, updated REAL)
    puzzle_ratings(id TEXT PRIMARY KEY,   -- a puzzle's id; no row: its start rating
                   r REAL, rd REAL, sigma REAL, attempts INTEGER, solved INTEGER, updated REAL)
    puzzle_attempts(player TEXT, puzzle TEXT, at REAL,
                    solved INTEGER,            -- 1 solved, 0 failed
                    before REAL, after REAL,   -- the player's rating around the attempt
                    PRIMARY KEY (player, puzzle))  -- only a first attempt is rated
    players(id TEXT PRIMARY KEY,          -- the same anonymous id as puzzle_players'
            name TEXT, name_key TEXT UNIQUE,  -- the display name, and it case-folded
            created REAL, seen REAL)
    game_players(game TEXT PRIMARY KEY,   -- the people seated in a game (NULL: an agent or nobody)
                 order_player TEXT, chaos_player TEXT,
                 category TEXT)           -- bullet/blitz/rapid when rated, NULL: not rated
    ratings(player TEXT, category TEXT, r REAL, rd REAL, sigma REAL, games INTEGER, updated REAL,
            PRIMARY KEY (player, category))
    rating_changes(game TEXT, player TEXT, category TEXT, opponent TEXT, score REAL,
                   before_r REAL, before_rd REAL, r REAL, rd REAL, at REAL,
                   PRIMARY KEY (game, player))  -- one row per player and game: rated once

A rated game's ratings change in the same transaction that ends it (:meth:`GameStore.add_move`
of its last move, :meth:`GameStore.finish` of a resignation or a loss on time), and only
when that transaction is the one that ended it; the key of ``rating_changes`` refuses a
second rating of the same game all the same. An aborted game is not rated.
    bot_accounts, bot_ratings, bot_games   -- bots, their ratings and games: see orderchaos.web.bots

Seat tokens are kept only as hashes: the file alone does not let anyone take a seat.
A game is finished once ``reason`` is set; ``winner`` stays NULL for an aborted game.
A version 1 file is upgraded in place when opened: the new columns are added, and a
finished game's reason is read off its winner (Order can only win by five, Chaos only by a
full board); a version 2 file gains the three (empty) puzzle tables. :meth:`GameStore.resume_clocks` restarts running clocks from the moment the
server starts, so the time it was down is not charged.
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from orderchaos.arena.game_files import OFF_BOARD_ENDS, GameRecord, SavedGame, game_line
from orderchaos.arena.glicko2 import Rating
from orderchaos.web.bots import label_bot
from orderchaos.web.clocks import GameClock, TimeControl
from orderchaos.web.players import CATEGORY_NAMES, generated_name, name_key, rate_game, score
from orderchaos.envs.rules import AGENTS, State
from orderchaos.files import atomic_write_bytes

PERSON = "person"
T = TypeVar("T")
"""How a seat held by a person is labelled in game files."""
SCHEMA_VERSION = "3"
REASONS = ("five", "full_board", "resign", "time", "aborted")
"""Why a game ended, as the store and the protocol name it."""
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS games (
    id TEXT PRIMARY KEY,
    created DOUBLE PRECISION NOT NULL,
    updated DOUBLE PRECISION NOT NULL,
    order_spec TEXT, chaos_spec TEXT,
    order_label TEXT, chaos_label TEXT,
    order_token TEXT, chaos_token TEXT,
    invite TEXT,
    winner TEXT,
    rematch TEXT,
    reason TEXT,
    time_base DOUBLE PRECISION, time_increment DOUBLE PRECISION,
    order_left DOUBLE PRECISION, chaos_left DOUBLE PRECISION,
    turn_started DOUBLE PRECISION,
    seated DOUBLE PRECISION
);
CREATE TABLE IF NOT EXISTS moves (
    game TEXT NOT NULL REFERENCES games(id),
    ply INTEGER NOT NULL,
    action INTEGER NOT NULL,
    at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (game, ply)
);
CREATE INDEX IF NOT EXISTS games_open ON games(reason) WHERE reason IS NULL;
CREATE TABLE IF NOT EXISTS puzzle_players (
    id TEXT PRIMARY KEY,
    r DOUBLE PRECISION NOT NULL, rd DOUBLE PRECISION NOT NULL, sigma DOUBLE PRECISION NOT NULL,
    attempts INTEGER NOT NULL, solved INTEGER NOT NULL,
    updated DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS puzzle_ratings (
    id TEXT PRIMARY KEY,
    r DOUBLE PRECISION NOT NULL, rd DOUBLE PRECISION NOT NULL, sigma DOUBLE PRECISION NOT NULL,
    attempts INTEGER NOT NULL, solved INTEGER NOT NULL,
    updated DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS puzzle_attempts (
    player TEXT NOT NULL,
    puzzle TEXT NOT NULL,
    at DOUBLE PRECISION NOT NULL,
    solved INTEGER NOT NULL,
    before DOUBLE PRECISION NOT NULL,
    after DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (player, puzzle)
);
CREATE TABLE IF NOT EXISTS players (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    name_key TEXT NOT NULL UNIQUE,
    created DOUBLE PRECISION NOT NULL,
    seen DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS game_players (
    game TEXT PRIMARY KEY REFERENCES games(id),
    order_player TEXT, chaos_player TEXT,
    category TEXT
);
CREATE TABLE IF NOT EXISTS ratings (
    player TEXT NOT NULL,
    category TEXT NOT NULL,
    r DOUBLE PRECISION NOT NULL, rd DOUBLE PRECISION NOT NULL, sigma DOUBLE PRECISION NOT NULL,
    games INTEGER NOT NULL,
    updated DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (player, category)
);
CREATE TABLE IF NOT EXISTS rating_changes (
    game TEXT NOT NULL REFERENCES games(id),
    player TEXT NOT NULL,
    category TEXT NOT NULL,
    opponent TEXT NOT NULL,
    score DOUBLE PRECISION NOT NULL,
    before_r DOUBLE PRECISION NOT NULL, before_rd DOUBLE PRECISION NOT NULL,
    r DOUBLE PRECISION NOT NULL, rd DOUBLE PRECISION NOT NULL,
    at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (game, player)
);
CREATE INDEX IF NOT EXISTS rating_changes_player ON rating_changes(player, at);
CREATE INDEX IF NOT EXISTS game_players_order ON game_players(order_player);
CREATE INDEX IF NOT EXISTS game_players_chaos ON game_players(chaos_player);
CREATE TABLE IF NOT EXISTS bot_accounts (
    name TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL,
    created DOUBLE PRECISION NOT NULL,
    revoked DOUBLE PRECISION
);
CREATE TABLE IF NOT EXISTS bot_ratings (
    name TEXT PRIMARY KEY,
    r DOUBLE PRECISION NOT NULL, rd DOUBLE PRECISION NOT NULL, sigma DOUBLE PRECISION NOT NULL,
    games INTEGER NOT NULL, wins INTEGER NOT NULL,
    updated DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS bot_games (
    game TEXT PRIMARY KEY REFERENCES games(id),
    order_bot TEXT, chaos_bot TEXT,
    rated INTEGER NOT NULL,
    created DOUBLE PRECISION NOT NULL,
    settled DOUBLE PRECISION
);
"""
V2_COLUMNS = (
    "reason TEXT", "time_base DOUBLE PRECISION", "time_increment DOUBLE PRECISION", "order_left DOUBLE PRECISION",
    "chaos_left DOUBLE PRECISION", "turn_started DOUBLE PRECISION", "seated DOUBLE PRECISION",
)
"""The columns version 2 added to ``games``, in the order :func:`upgrade_from_1` adds them."""


def schema_statements() -> list[str]:
    """:data:`SCHEMA` one statement at a time."""
    return [statement.strip() for statement in SCHEMA.split(";") if statement.strip()]


def upgrade_from_1(db: Database) -> None:
    """Bring a version 1 store to version 2, inside the caller's transaction (see the module
    docstring)."""
    for column in V2_COLUMNS:
        db.execute(f"ALTER TABLE games ADD COLUMN {column}")
    db.execute("UPDATE games SET reason = CASE winner WHEN 'order' THEN 'five' ELSE 'full_board' END"
               " WHERE winner IS NOT NULL")
    db.execute("DROP INDEX IF EXISTS games_unfinished")
    db.execute("UPDATE meta SET value='2' WHERE key='schema_version'")


def upgrade_from_2(db: Database) -> None:
    """Bring a version 2 store to version 3, inside the caller's transaction: the puzzle
    tables, empty."""
    for statement in schema_statements():
        if "puzzle_" in statement:
            db.execute(statement)
    db.execute("UPDATE meta SET value='3' WHERE key='schema_version'")


class StoreError(ValueError):
    """A store that cannot be used (not SQLite, another schema version, unwritable)."""


class StoreURLError(StoreError):
    """A store location (``--db``) that is neither a path nor a URL of a kind the store knows."""


class CopyMismatch(Exception):
    """A copy of a store whose counts differ from its source's (and was therefore not kept)."""


class StoreUnavailable(Exception):
    """The store's database does not answer (PostgreSQL down or out of reach): at start the
    server cannot begin, while running a request fails and ``/healthz`` says 503 until it is
    back."""


def damage_found(db: sqlite3.Connection, check: str = "integrity_check") -> str | None:
    """None when SQLite's ``PRAGMA quick_check`` or ``integrity_check`` finds the file whole,
    else its first problem and how many it found, in one line (SQLite reports up to 100,
    one a line)."""
    try:
        rows = db.execute(f"PRAGMA {check}").fetchall()
    except sqlite3.DatabaseError as exc:  # damage where the check itself must read ("malformed")
        return str(exc)
    problems = [line for (row,) in rows for line in str(row).splitlines()
                if line.strip() and not line.startswith("*** in database")]
    if problems == ["ok"]:
        return None
    more = f"; {len(problems) - 1} more problems found" if len(problems) > 1 else ""
    return f"{problems[0] if problems else 'no answer from the check'}{more}"


def damaged_store(path: str, problem: str) -> "StoreError":
    """The error that refuses a damaged SQLite store, with its first ``problem``."""
    return StoreError(f"{path}: the game store is damaged ({problem}); "
                      f"move it aside (or export what is readable with sqlite3 .recover)")


def unusable_store(path: str, exc: sqlite3.DatabaseError) -> "StoreError":
    """The error that refuses a file SQLite could not use: damaged when SQLite says malformed
    (damage met before the store's own check could run), else not a usable game store."""
    if "malformed" in str(exc):
        return damaged_store(path, str(exc))
    return StoreError(f"{path}: not a usable game store ({exc})")


def token_hash(token: str) -> str:
    """The SHA-256 (hex) of a seat token: what the store keeps instead of the token."""
    return hashlib.sha256(token.encode()).hexdigest()


def default_db_path() -> Path:
    """``$XDG_DATA_HOME/orderchaos/games.sqlite3`` (``~/.local/share`` without XDG_DATA_HOME)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "orderchaos" / "games.sqlite3"


@dataclass
class StoredGame:
    """One game as the store holds it."""

    id: str
    specs: dict[str, str | None]
    labels: dict[str, str | None]
    tokens: dict[str, str | None]
    invite: str | None
    winner: str | None
    rematch: str | None
    created: float
    actions: list[int] = field(default_factory=list)
    reason: str | None = None
    clock: GameClock | None = None
    seated: float | None = None

    @property
    def finished(self) -> bool:
        """Whether the game has ended (a win of either kind, or an abort)."""
        return self.reason is not None

    def state(self) -> State:
        """The position after the stored moves."""
        state = State()
        for action in self.actions:
            state = state.apply(action)
        return state

    def label(self, role: str) -> str:
        """Who played ``role``: the agent's level or spec, a bot as ``bot:NAME``, or :data:`PERSON`."""
        if self.specs.get(role) is None:
            label = self.labels.get(role)
            return label if label_bot(label) is not None else PERSON
        return self.labels.get(role) or self.specs[role] or PERSON

    def saved(self) -> SavedGame:
        """The finished game as a :class:`SavedGame`, saying how it ended when that was off
        the board (resign, time); raises ValueError if unfinished or aborted."""
        if self.winner is None:
            raise ValueError(f"game {self.id} has no winner")
        off_board = self.reason if self.reason in OFF_BOARD_ENDS else None
        record = GameRecord(list(self.actions), self.winner, len(self.actions), 0, off_board)
        return SavedGame(0, self.label("order"), self.label("chaos"), record)


class Database:
    """One connection to the store's database, the part of the store that differs between
    SQLite and PostgreSQL: statements are written once, with ``?`` placeholders, and run on
    either. It adds up the seconds spent in statements (``statement_seconds``) and in
    committing transactions (``commit_seconds``), which the load test reports as the store's
    share of the server's time."""

    kind = ""
    begin_write = "BEGIN"
    begin_snapshot = "BEGIN"
    for_update = ""
    """What a SELECT ends with to lock the rows it reads until the transaction ends (SQLite's
    write transaction locks the whole file already)."""

    def __init__(self, location: str) -> None:
        self.location = location
        self.statement_seconds = 0.0
        self.commit_seconds = 0.0
        self.commits = 0
        self.in_transaction = False

    def run(self, sql: str, params: Sequence[Any]) -> Any:
        """Run one statement on the connection (the backend's own call)."""
        raise NotImplementedError

    def run_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run one statement once per row (the backend's own call)."""
        raise NotImplementedError

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run a statement and return its cursor (rows as tuples, ``rowcount``)."""
        started = time.perf_counter()
        try:
            return self.run(sql, params)
        finally:
            self.statement_seconds += time.perf_counter() - started

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run a statement once per row."""
        started = time.perf_counter()
        try:
            self.run_many(sql, rows)
        finally:
            self.statement_seconds += time.perf_counter() - started

    @contextmanager
    def transaction(self, begin: str | None = None) -> Iterator[None]:
        """A write transaction: committed when the block ends, rolled back if it raises."""
        self.execute(begin or self.begin_write)
        self.in_transaction = True
        try:
            yield
        except BaseException:
            self.in_transaction = False
            self.rollback()
            raise
        self.in_transaction = False
        started = time.perf_counter()
        try:
            self.execute("COMMIT")
        finally:
            self.commit_seconds += time.perf_counter() - started
            self.commits += 1

    def snapshot(self) -> AbstractContextManager[None]:
        """A transaction that reads one consistent state of the store (a copy, a backup)."""
        return self.transaction(self.begin_snapshot)

    def rollback(self) -> None:
        """Roll back the open transaction; a lost connection has nothing left to roll back."""
        self.execute("ROLLBACK")

    def is_unique_violation(self, exc: BaseException) -> bool:
        """Whether ``exc`` is this backend's refusal of a duplicate key."""
        return False

    def has_table(self, name: str) -> bool:
        """Whether the database has a table of this name."""
        raise NotImplementedError

    def lock_schema(self) -> None:
        """Inside the setup transaction: keep other servers opening the store from creating or
        upgrading the tables at the same time."""

    def damage(self) -> str | None:
        """What is damaged in the database, or None when its own check finds nothing."""
        return None

    def close(self) -> None:
        """Close the connection."""
        raise NotImplementedError


class SQLiteDatabase(Database):
    """The store in one SQLite file (``":memory:"``: a store that dies with it), in WAL mode
    (readers never wait for the writer). Errors are sqlite3's own."""

    kind = "sqlite"
    begin_write = "BEGIN IMMEDIATE"

    def __init__(self, path: str) -> None:
        super().__init__(path)
        if path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")

    def run(self, sql: str, params: Sequence[Any]) -> sqlite3.Cursor:  # noqa: D102 - Database's
        return self.db.execute(sql, params)

    def run_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:  # noqa: D102 - Database's
        self.db.executemany(sql, rows)

    def is_unique_violation(self, exc: BaseException) -> bool:  # noqa: D102 - Database's
        return isinstance(exc, sqlite3.IntegrityError) and "UNIQUE" in str(exc)

    def has_table(self, name: str) -> bool:  # noqa: D102 - Database's
        return self.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)).fetchone() is not None

    def damage(self) -> str | None:  # noqa: D102 - Database's; corrupt pages would fail games one by one
        return damage_found(self.db, "quick_check")

    def close(self) -> None:  # noqa: D102 - Database's
        self.db.close()


class PostgresDatabase(Database):
    """The store in a PostgreSQL database (psycopg 3), shared by any number of servers.

    A connection lost while the server runs (the database restarted, the network went) is
    replaced by a new one on the next statement; a read that met the loss is asked again once
    on the new connection, a write raises :class:`StoreUnavailable` (nothing of it was
    committed unless the database had already answered). Until the database answers again
    every statement raises :class:`StoreUnavailable`."""

    kind = "postgresql"
    begin_snapshot = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
    for_update = " FOR UPDATE"
    CONNECT_TIMEOUT = 5
    SCHEMA_LOCK = 0x6F726465  # any constant: the advisory lock the servers take around setup

    def __init__(self, url: str) -> None:
        super().__init__(shown_location(url))
        try:
            import psycopg
        except ImportError as exc:
            raise StoreError(f"a PostgreSQL store needs psycopg ({exc}); "
                             f"install it with: pip install 'orderchaos[web]'") from None
        self.psycopg = psycopg
        self.url = url
        self.conn: Any = None
        self.placeholders: dict[str, str] = {}
        self.connect()

    def connect(self) -> None:
        """Open a new connection; :class:`StoreUnavailable` when the database does not answer."""
        try:
            self.conn = self.psycopg.connect(self.url, autocommit=True, connect_timeout=self.CONNECT_TIMEOUT)
        except self.psycopg.OperationalError as exc:
            self.conn = None
            raise StoreUnavailable(f"{self.location}: the database cannot be reached "
                                   f"({first_line(exc)})") from None

    def lost(self) -> bool:
        """Whether there is no usable connection (never opened, closed, or broken)."""
        return self.conn is None or self.conn.closed or self.conn.broken

    def sql(self, sql: str) -> str:
        """The statement with psycopg's placeholders (``%s``) for the store's ``?``."""
        translated = self.placeholders.get(sql)
        if translated is None:
            translated = self.placeholders[sql] = sql.replace("%", "%%").replace("?", "%s")
        return translated

    def run(self, sql: str, params: Sequence[Any]) -> Any:  # noqa: D102 - Database's
        safe_again = sql.lstrip().startswith(("SELECT", "BEGIN"))  # nothing written yet
        return self.guarded(lambda: self.conn.execute(self.sql(sql), params), retry=safe_again)

    def run_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:  # noqa: D102 - Database's
        def many() -> None:
            with self.conn.cursor() as cursor:
                cursor.executemany(self.sql(sql), rows)
        self.guarded(many, retry=False)

    def guarded(self, call: Callable[[], Any], retry: bool) -> Any:
        """Run ``call`` on a live connection, once more on a new one when ``retry`` (outside a
        transaction) and the first found the connection dead; a lost connection becomes
        StoreUnavailable."""
        for _ in range(2 if retry and not self.in_transaction else 1):
            if self.lost():
                if self.in_transaction:
                    raise StoreUnavailable(f"{self.location}: the connection to the database was lost")
                self.connect()
            try:
                return call()
            except self.psycopg.OperationalError as exc:
                if not self.lost():
                    raise
                failure = first_line(exc)
        raise StoreUnavailable(f"{self.location}: the database cannot be reached ({failure})")

    def rollback(self) -> None:  # noqa: D102 - Database's
        if not self.lost():
            self.execute("ROLLBACK")

    def is_unique_violation(self, exc: BaseException) -> bool:  # noqa: D102 - Database's
        return isinstance(exc, self.psycopg.errors.UniqueViolation)

    def has_table(self, name: str) -> bool:  # noqa: D102 - Database's
        return self.execute("SELECT to_regclass(?) IS NOT NULL", (name,)).fetchone()[0]

    def lock_schema(self) -> None:  # noqa: D102 - Database's
        self.execute("SELECT pg_advisory_xact_lock(?)", (self.SCHEMA_LOCK,))

    def close(self) -> None:  # noqa: D102 - Database's
        if self.conn is not None:
            self.conn.close()


def first_line(exc: BaseException) -> str:
    """An exception's message on one line (libpq's run over several)."""
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def shown_location(url: str) -> str:
    """A PostgreSQL URL as messages show it: without its password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}@{netloc}"))


def parse_store_url(text: str) -> tuple[str, str]:
    """Where ``--db`` says the store is: ``("sqlite", path)`` for a file path, ``:memory:`` or
    ``sqlite:///PATH``, ``("postgresql", url)`` for ``postgresql://USER@HOST:PORT/DB``.
    Raises StoreURLError, naming what is accepted, for anything else."""
    accepted = "a file path, sqlite:///PATH or postgresql://USER@HOST:PORT/DB"
    if "://" not in text:
        if not text.strip():
            raise StoreURLError(f"an empty store location; give {accepted}")
        return "sqlite", text
    scheme = text.split("://", 1)[0].lower()
    parts = urlsplit(text)
    if scheme == "sqlite":
        if parts.netloc or not parts.path.strip("/") or parts.query or parts.fragment:
            raise StoreURLError(f"{text}: a SQLite URL is sqlite:///PATH (three slashes, then the file's path)")
        return "sqlite", parts.path
    if scheme in ("postgresql", "postgres"):
        try:
            port = parts.port
        except ValueError:
            raise StoreURLError(f"{text}: the port must be a number 1..65535") from None
        if not parts.hostname:
            raise StoreURLError(f"{text}: no host; a PostgreSQL URL is postgresql://USER@HOST:PORT/DB")
        if port == 0:
            raise StoreURLError(f"{text}: the port must be a number 1..65535")
        database = parts.path.lstrip("/")
        if not database or "/" in database:
            raise StoreURLError(f"{text}: name one database after the host: postgresql://USER@HOST:PORT/DB")
        return "postgresql", text
    raise StoreURLError(f"{text}: unknown kind of store {scheme!r}; give {accepted}")


class GameStore:
    """Games, moves and puzzle ratings in a SQLite file or a PostgreSQL database: ``location``
    is what :func:`parse_store_url` accepts (a path, ``":memory:"``, ``sqlite:///PATH``,
    ``postgresql://...``). The same schema, statements and upgrades on both. ``prepared``: a
    further connection to a store this process has opened already (no setup, no check).

    Used from one thread (the server's event loop); every write is committed at once. Reads
    that must not hold up the event loop go through a :class:`StoreReader` (its own connections).
    """

    def __init__(self, location: str | os.PathLike, clock: Callable[[], float] = time.time,
                 prepared: bool = False) -> None:
        self.clock = clock
        self.location = os.fspath(location)
        kind, target = parse_store_url(self.location)
        self.kind = kind
        self.path = target if kind == "sqlite" else shown_location(target)
        try:
            self.db: Database = SQLiteDatabase(target) if kind == "sqlite" else PostgresDatabase(target)
        except sqlite3.DatabaseError as exc:
            raise unusable_store(self.path, exc) from None
        if prepared:  # a second connection of this server's: set up and checked by the first
            return
        try:
            self.set_up()
        except sqlite3.OperationalError as exc:
            self.db.close()
            if "locked" in str(exc):  # another program holds the write lock (a second server mid-write)
                raise StoreError(f"{self.path}: cannot write the game store ({exc}); is another server "
                                 "or program writing to it?") from None
            raise unusable_store(self.path, exc) from None
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise unusable_store(self.path, exc) from None
        except (StoreError, StoreUnavailable):
            self.db.close()
            raise

    def set_up(self) -> None:
        """Create the tables of a new store, upgrade an older one, refuse a damaged one or one
        of a version this server does not read."""
        with self.db.transaction():
            self.db.lock_schema()
            has_meta = self.db.has_table("meta")
            row = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() if has_meta else None
            if row is not None and row[0] == "1":
                upgrade_from_1(self.db)
                row = ("2",)
            if row is not None and row[0] == "2":
                upgrade_from_2(self.db)
                row = ("3",)
            for statement in schema_statements():
                self.db.execute(statement)
            if row is None:
                self.db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
        damage = self.db.damage()
        if damage is not None:
            raise damaged_store(self.path, damage)
        row = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row[0] != SCHEMA_VERSION:
            raise StoreError(f"{self.path}: game store schema version {row[0]}, this server reads {SCHEMA_VERSION}")

    def close(self) -> None:
        """Close the file or the connection."""
        self.db.close()

    def check_writable(self) -> None:
        """Raise StoreError unless a write can begin within the busy timeout: a file whose
        write lock another program holds (a second server on it) is refused before a server
        starts on it, not by its first write."""
        try:
            with self.db.transaction():
                pass
        except sqlite3.OperationalError as exc:
            raise StoreError(f"{self.path}: cannot write the game store ({exc}); is another server "
                             "or program writing to it?") from None

    def answers(self) -> bool:
        """True while the database answers a query (what ``/healthz`` reports); a PostgreSQL
        store that lost its connection tries a new one here, so it comes back by itself."""
        try:
            return self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() is not None
        except (sqlite3.Error, StoreUnavailable):
            return False

    def probe_write(self) -> None:
        """Write and commit one small row: ``/healthz``'s check that the store takes writes.
        Raises what the write raised (sqlite3.Error, OSError: a full disk, a read-only file;
        :class:`StoreUnavailable` or psycopg's errors for PostgreSQL)."""
        with self.db.transaction():
            self.db.execute("INSERT INTO meta VALUES ('write_probe', ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                            (repr(time.time()),))

    def create(
        self,
        game_id: str,
        specs: dict[str, str | None],
        labels: dict[str, str | None],
        tokens: dict[str, str | None],
        invite: str | None,
        control: TimeControl | None = None,
    ) -> None:
        """Add a new game without moves; ``tokens`` are already hashed; ``control`` None: no clock.
        A game whose both seats are filled (a token or an agent each) is seated at once."""
        now = self.clock()
        full = all(tokens.get(role) or specs.get(role) for role in AGENTS)
        self.db.execute(
            "INSERT INTO games (id, created, updated, order_spec, chaos_spec, order_label, chaos_label,"
            " order_token, chaos_token, invite, time_base, time_increment, order_left, chaos_left, seated)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (game_id, now, now, specs.get("order"), specs.get("chaos"), labels.get("order"),
             labels.get("chaos"), tokens.get("order"), tokens.get("chaos"), invite,
             *((control.base, control.increment, control.base, control.base) if control else (None,) * 4),
             now if full else None),
        )

    def add_move(
        self, game_id: str, ply: int, action: int, winner: str | None, clock: GameClock | None = None
    ) -> None:
        """Commit move number ``ply`` (0-based), the clocks after it, and, when it ended the
        game, the winner (by five for Order, by a full board for Chaos) and, for a rated game,
        both players' new ratings."""
        now = self.clock()
        reason = None if winner is None else "five" if winner == "order" else "full_board"
        with self.db.transaction():  # the game row and its clocks in one UPDATE: each statement is a
            # round trip to PostgreSQL
            self.db.execute("INSERT INTO moves VALUES (?, ?, ?, ?)", (game_id, ply, action, now))
            if clock is None:
                self.db.execute("UPDATE games SET updated=?, winner=?, reason=? WHERE id=?",
                                (now, winner, reason, game_id))
            else:
                self.db.execute(
                    "UPDATE games SET updated=?, winner=?, reason=?, order_left=?, chaos_left=?, turn_started=?"
                    " WHERE id=?", (now, winner, reason, clock.remaining["order"], clock.remaining["chaos"],
                                    clock.turn_started, game_id))
            if winner is not None:
                self._rate(game_id, winner, now)

    def _write_clock(self, game_id: str, clock: GameClock) -> None:
        self.db.execute(
            "UPDATE games SET order_left=?, chaos_left=?, turn_started=? WHERE id=?",
            (clock.remaining["order"], clock.remaining["chaos"], clock.turn_started, game_id),
        )

    def finish(self, game_id: str, winner: str | None, reason: str, clock: GameClock | None = None) -> None:
        """End a game off the board: ``reason`` one of resign, time, aborted (winner None). A
        rated game that this call ends (not one already over) is rated in the same transaction."""
        if reason not in REASONS[2:]:
            raise ValueError(f"reason must be one of {REASONS[2:]}, got {reason!r}")
        now = self.clock()
        with self.db.transaction():
            ended = self.db.execute("UPDATE games SET updated=?, winner=?, reason=? WHERE id=? AND reason IS NULL",
                                    (now, winner, reason, game_id)).rowcount
            if clock is not None:
                self._write_clock(game_id, clock)
            if ended and winner is not None and reason != "aborted":
                self._rate(game_id, winner, now)

    def unstarted_since(self, before: float) -> list[str]:
        """Unfinished games without a move whose seats were both taken at ``before`` or earlier."""
        return [i for (i,) in self.db.execute(
            "SELECT id FROM games WHERE reason IS NULL AND seated <= ?"
            " AND NOT EXISTS (SELECT 1 FROM moves WHERE game=games.id) ORDER BY seated", (before,))]

    def clocks_out(self, now: float) -> list[str]:
        """Unfinished games whose side to move (Order after an even number of moves) has run
        out of time at ``now``: asked of SQLite, so that a sweep loads no other game."""
        return [i for (i,) in self.db.execute(
            "SELECT id FROM games AS g WHERE reason IS NULL AND turn_started IS NOT NULL AND turn_started"
            " + CASE (SELECT COUNT(*) FROM moves WHERE game = g.id) % 2 WHEN 0 THEN order_left ELSE chaos_left END"
            " <= ? ORDER BY turn_started", (now,))]

    def resume_clocks(self) -> int:
        """Restart every running clock of an unfinished game from now (the server starts:
        the time it was down is not charged); returns how many were running."""
        now = self.clock()
        with self.db.transaction():
            cursor = self.db.execute(
                "UPDATE games SET turn_started=? WHERE reason IS NULL AND turn_started IS NOT NULL", (now,))
        return cursor.rowcount

    def take_back(self, game_id: str, plies: int, clock: GameClock | None = None) -> None:
        """Remove every move from ply ``plies`` on (an undo), with the clocks after it; back to
        no move at all, the minute to make a first move counts from now."""
        now = self.clock()
        with self.db.transaction():
            self.db.execute("DELETE FROM moves WHERE game=? AND ply>=?", (game_id, plies))
            self.db.execute("UPDATE games SET updated=?, winner=NULL, reason=NULL WHERE id=?", (now, game_id))
            if plies == 0:
                self.db.execute("UPDATE games SET seated=? WHERE id=? AND seated IS NOT NULL", (now, game_id))
            if clock is not None:
                self._write_clock(game_id, clock)

    def claim_seat(self, game_id: str, role: str, token: str) -> None:
        """Give the free seat ``role`` to the holder of ``token`` (hashed), spend the invite,
        and note when both seats became taken."""
        if role not in AGENTS:
            raise ValueError(f"role must be one of {AGENTS}, got {role!r}")
        now = self.clock()
        self.db.execute(
            f"UPDATE games SET {role}_token=?, invite=NULL, updated=?, seated=COALESCE(seated, ?) WHERE id=?",
            (token, now, now, game_id),
        )

    def set_rematch(self, game_id: str, rematch_id: str) -> None:
        """Record the rematch of a game."""
        self.db.execute("UPDATE games SET rematch=? WHERE id=?", (rematch_id, game_id))

    def load(self, game_id: str) -> StoredGame | None:
        """The game with this id, or None: its row and its moves read from one state of the
        store, so that a move another server commits meanwhile is seen whole or not at all."""
        if self.db.in_transaction:
            return self._load(game_id)
        with self.db.snapshot():
            return self._load(game_id)

    def _load(self, game_id: str) -> StoredGame | None:
        row = self.db.execute(
            "SELECT id, order_spec, chaos_spec, order_label, chaos_label, order_token, chaos_token,"
            " invite, winner, rematch, created, reason, time_base, time_increment, order_left, chaos_left,"
            " turn_started, seated FROM games WHERE id=?",
            (game_id,),
        ).fetchone()
        if row is None:
            return None
        actions = [a for (a,) in self.db.execute("SELECT action FROM moves WHERE game=? ORDER BY ply", (game_id,))]
        return StoredGame(
            id=row[0], specs={"order": row[1], "chaos": row[2]}, labels={"order": row[3], "chaos": row[4]},
            tokens={"order": row[5], "chaos": row[6]}, invite=row[7], winner=row[8], rematch=row[9],
            created=row[10], actions=actions, reason=row[11], seated=row[17],
            clock=None if row[12] is None else GameClock(
                TimeControl(row[12], row[13]), {"order": row[14], "chaos": row[15]}, row[16]),
        )

    # -- players and ratings ------------------------------------------------------------------
    def player_name(self, player: str) -> str | None:
        """The display name of the player with this id, or None for an id not seen yet."""
        row = self.db.execute("SELECT name FROM players WHERE id=?", (player,)).fetchone()
        return None if row is None else row[0]

    def player_id(self, name: str) -> str | None:
        """The id of the player with this display name (letter case ignored), or None."""
        row = self.db.execute("SELECT id FROM players WHERE name_key=?", (name_key(name),)).fetchone()
        return None if row is None else row[0]

    def names(self, players: Iterable[str | None]) -> dict[str, str]:
        """id -> display name for those of ``players`` that have one."""
        wanted = sorted({p for p in players if p})
        if not wanted:
            return {}
        marks = ", ".join("?" for _ in wanted)
        return dict(self.db.execute(f"SELECT id, name FROM players WHERE id IN ({marks})", wanted))

    def ensure_player(self, player: str) -> str:
        """The display name of ``player``, given a generated one (:func:`generated_name`, the
        next choice while one is taken) on their first visit."""
        name = self.player_name(player)
        if name is not None:
            return name
        now = self.clock()
        for attempt in range(100):
            name = generated_name(player, attempt)
            with self.db.transaction():
                self.db.execute("INSERT INTO players VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                                (player, name, name_key(name), now, now))
            found = self.player_name(player)
            if found is not None:
                return found
        raise StoreError(f"no free generated name for player {player[:8]}")

    def rename_player(self, player: str, name: str) -> bool:
        """Give ``player`` (who must exist) the display name ``name``; False when another player
        has it (letter case ignored), nothing changed."""
        try:
            with self.db.transaction():
                holder = self.db.execute("SELECT id FROM players WHERE name_key=?", (name_key(name),)).fetchone()
                if holder is not None and holder[0] != player:
                    return False
                self.db.execute("UPDATE players SET name=?, name_key=?, seen=? WHERE id=?",
                                (name, name_key(name), self.clock(), player))
        except Exception as exc:
            if self.db.is_unique_violation(exc):  # another server gave it away meanwhile
                return False
            raise
        return True

    def seat_players(self, game_id: str, players: dict[str, str | None], category: str | None) -> None:
        """Note who sits in a game (a player id per seat, None: an agent or nobody yet) and its
        rated category (None: not rated); a seat already noted keeps its player."""
        self.db.execute(
            "INSERT INTO game_players VALUES (?, ?, ?, ?) ON CONFLICT(game) DO UPDATE SET"
            " order_player=COALESCE(game_players.order_player, excluded.order_player),"
            " chaos_player=COALESCE(game_players.chaos_player, excluded.chaos_player)",
            (game_id, players.get("order"), players.get("chaos"), category))

    def game_players(self, game_id: str) -> tuple[dict[str, str | None], str | None]:
        """The player id in each seat of a game and its rated category (None: not rated)."""
        row = self.db.execute("SELECT order_player, chaos_player, category FROM game_players WHERE game=?",
                              (game_id,)).fetchone()
        if row is None:
            return {"order": None, "chaos": None}, None
        return {"order": row[0], "chaos": row[1]}, row[2]

    def rating(self, player: str, category: str) -> tuple[Rating, int]:
        """A player's rating in a category and the rated games behind it (a newcomer's: 1500, 0)."""
        row = self.db.execute("SELECT r, rd, sigma, games FROM ratings WHERE player=? AND category=?",
                              (player, category)).fetchone()
        return (Rating(), 0) if row is None else (Rating(*row[:3]), row[3])

    def ratings(self, player: str) -> dict[str, tuple[Rating, int]]:
        """A player's rating and rated games in every category (a newcomer's where none)."""
        held = {category: (Rating(r, rd, sigma), games) for category, r, rd, sigma, games in self.db.execute(
            "SELECT category, r, rd, sigma, games FROM ratings WHERE player=?", (player,))}
        return {category: held.get(category, (Rating(), 0)) for category in CATEGORY_NAMES}

    def _rate(self, game_id: str, winner: str, now: float) -> None:
        """Inside the transaction that ends a game: rate it when it is rated and both seats
        hold people, at most once (the key of ``rating_changes``)."""
        seats, category = self.game_players(game_id)
        if category is None or not seats["order"] or not seats["chaos"] or seats["order"] == seats["chaos"]:
            return
        players = (seats["order"], seats["chaos"])
        for player in sorted(players):  # rows locked in one order: two games never wait on each other
            self.db.execute("INSERT INTO ratings VALUES (?, ?, ?, ?, ?, 0, ?) ON CONFLICT DO NOTHING",
                            (player, category, Rating().r, Rating().rd, Rating().sigma, now))
            self.db.execute(f"SELECT r FROM ratings WHERE player=? AND category=?{self.db.for_update}",
                            (player, category)).fetchone()
        before = {role: self.rating(player, category)[0] for role, player in zip(AGENTS, players)}
        after = dict(zip(AGENTS, rate_game(before["order"], before["chaos"], winner)))
        for role, player, opponent in (("order", players[0], players[1]), ("chaos", players[1], players[0])):
            added = self.db.execute(
                "INSERT INTO rating_changes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (game_id, player, category, opponent, score(winner, role), before[role].r, before[role].rd,
                 after[role].r, after[role].rd, now)).rowcount
            if not added:  # rated already
                return
            self.db.execute("UPDATE ratings SET r=?, rd=?, sigma=?, games=games+1, updated=? WHERE player=?"
                            " AND category=?", (after[role].r, after[role].rd, after[role].sigma, now, player,
                                                category))

    def rating_changes(self, game_id: str) -> dict[str, tuple[float, float, float]]:
        """A rated game's change for each player: player id -> (rating before, after, rd after)."""
        return {player: (before, r, rd) for player, before, r, rd in self.db.execute(
            "SELECT player, before_r, r, rd FROM rating_changes WHERE game=?", (game_id,))}

    def rating_history(self, player: str, category: str) -> list[tuple[float, float]]:
        """A player's rating after each rated game of a category, oldest first: (when, rating)."""
        return [(at, r) for at, r in self.db.execute(
            "SELECT at, r FROM rating_changes WHERE player=? AND category=? ORDER BY at, game",
            (player, category))]

    def player_games(self, player: str, limit: int = 100) -> list[dict[str, Any]]:
        """A player's finished games, newest first: id, seat, opponent (id or None), winner,
        reason, time control (seconds), category, when it ended and the rating change."""
        rows = self.db.execute(
            "SELECT g.id, p.order_player, p.chaos_player, p.category, g.winner, g.reason, g.time_base,"
            " g.time_increment, g.updated, c.before_r, c.r, g.order_label, g.chaos_label"
            " FROM game_players p JOIN games g ON g.id = p.game"
            " LEFT JOIN rating_changes c ON c.game = g.id AND c.player = ?"
            " WHERE (p.order_player = ? OR p.chaos_player = ?) AND g.reason IS NOT NULL"
            " ORDER BY g.updated DESC, g.id LIMIT ?", (player, player, player, limit))
        games = []
        for (game, order, chaos, category, winner, reason, base, increment, ended, before, after,
             order_label, chaos_label) in rows:
            seat = "order" if order == player else "chaos"
            games.append({"id": game, "seat": seat, "opponent": chaos if seat == "order" else order,
                          "opponent_agent": chaos_label if seat == "order" else order_label,
                          "winner": winner, "reason": reason, "control": None if base is None else (base, increment),
                          "category": category, "ended": ended,
                          "rating": None if before is None else (before, after)})
        return games

    def leaderboard(self, category: str, min_games: int, since: float, limit: int = 100) -> list[tuple[str, str, Rating, int]]:
        """The best ratings of a category among players with at least ``min_games`` rated
        games there and one at ``since`` or later: (id, name, rating, games), best first."""
        return [(player, name, Rating(r, rd, sigma), games) for player, name, r, rd, sigma, games in self.db.execute(
            "SELECT r.player, p.name, r.r, r.rd, r.sigma, r.games FROM ratings r JOIN players p ON p.id = r.player"
            " WHERE r.category=? AND r.games >= ? AND r.updated >= ? ORDER BY r.r DESC, p.name_key LIMIT ?",
            (category, min_games, since, limit))]

    # -- puzzles ----------------------------------------------------------------------------
    def puzzle_player(self, player: str) -> Rating | None:
        """A puzzle player's rating, or None before their first rated attempt."""
        row = self.db.execute("SELECT r, rd, sigma FROM puzzle_players WHERE id=?", (player,)).fetchone()
        return None if row is None else Rating(*row)

    def puzzle_rating(self, puzzle: str) -> Rating | None:
        """A puzzle's rating, or None before its first rated attempt."""
        row = self.db.execute("SELECT r, rd, sigma FROM puzzle_ratings WHERE id=?", (puzzle,)).fetchone()
        return None if row is None else Rating(*row)

    def puzzle_ratings(self) -> dict[str, float]:
        """Every attempted puzzle's rating: id -> r."""
        return dict(self.db.execute("SELECT id, r FROM puzzle_ratings"))

    def attempted_puzzles(self, player: str) -> set[str]:
        """The puzzles this player has made a rated attempt at."""
        return {p for (p,) in self.db.execute("SELECT puzzle FROM puzzle_attempts WHERE player=?", (player,))}

    def puzzle_attempt(self, player: str, puzzle: str) -> tuple[bool, float, float] | None:
        """The player's rated attempt at the puzzle: (solved, rating before, rating after), or None."""
        row = self.db.execute("SELECT solved, before, after FROM puzzle_attempts WHERE player=? AND puzzle=?",
                              (player, puzzle)).fetchone()
        return None if row is None else (bool(row[0]), row[1], row[2])

    def record_puzzle_attempt(
        self, player: str, puzzle: str, solved: bool, before: Rating, player_after: Rating, puzzle_after: Rating
    ) -> bool:
        """Store a first attempt and both new ratings in one transaction; False (and nothing
        written) when the player has attempted this puzzle before."""
        now = self.clock()
        with self.db.transaction():
            cursor = self.db.execute(
                "INSERT INTO puzzle_attempts VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (player, puzzle, now, int(solved), before.r, player_after.r))
            if cursor.rowcount == 0:
                return False
            for table, key, rating in (("puzzle_players", player, player_after),
                                       ("puzzle_ratings", puzzle, puzzle_after)):
                self.db.execute(
                    f"INSERT INTO {table} VALUES (?, ?, ?, ?, 1, ?, ?) ON CONFLICT(id) DO UPDATE SET"
                    f" r=excluded.r, rd=excluded.rd, sigma=excluded.sigma, attempts={table}.attempts+1,"
                    f" solved={table}.solved+excluded.solved, updated=excluded.updated",
                    (key, rating.r, rating.rd, rating.sigma, int(solved), now))
        return True

    def ids(self, finished: bool | None = None) -> list[str]:
        """Game ids, oldest first: all, only finished (True) or only unfinished (False) ones."""
        where = "" if finished is None else " WHERE reason IS NOT NULL" if finished else " WHERE reason IS NULL"
        return [i for (i,) in self.db.execute(f"SELECT id FROM games{where} ORDER BY created, id")]


STORE_TABLES = ("games", "moves", "puzzle_players", "puzzle_ratings", "puzzle_attempts", "players", "game_players",
                "ratings", "rating_changes", "bot_accounts", "bot_ratings", "bot_games")
"""Every table that holds a site (all but ``meta``), games before the moves that refer to them."""
COPY_BATCH = 1000
"""Rows read and written at a time by :func:`copy_store`."""


class StoreReader:
    """Reads of the store run off the event loop: each of a few threads opens its own
    connection to the same store (a connection is never shared between threads), so that a
    server does not stop answering while many tabs open their games at once (an instance just
    restarted). A store that lives in memory has no second connection: its reads run on the
    calling thread, on the store itself."""

    THREADS = 4

    def __init__(self, store: GameStore, threads: int = THREADS) -> None:
        self.store = store
        self.in_memory = store.kind == "sqlite" and store.path == ":memory:"
        self.executor = None if self.in_memory else ThreadPoolExecutor(threads, thread_name_prefix="store-read")
        self.local = threading.local()
        self.opened: list[GameStore] = []
        self.opened_lock = threading.Lock()

    def _connection(self) -> GameStore:
        """This thread's own store (opened on its first read)."""
        store = getattr(self.local, "store", None)
        if store is None:
            store = self.local.store = GameStore(self.store.location, self.store.clock, prepared=True)
            with self.opened_lock:
                self.opened.append(store)
        return store

    def _call(self, fn: Callable[..., T], args: tuple) -> T:
        return fn(self._connection(), *args)

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(store, *args)`` on a reading thread's own store (in memory: on the store,
        here); what it raises is raised here."""
        if self.executor is None:
            return fn(self.store, *args)
        return await asyncio.get_running_loop().run_in_executor(self.executor, self._call, fn, args)

    def close(self) -> None:
        """Stop the threads and close their connections."""
        if self.executor is not None:
            self.executor.shutdown(wait=True)
        with self.opened_lock:
            for store in self.opened:
                store.close()
            self.opened.clear()


def table_counts(store: GameStore) -> dict[str, int]:
    """The number of rows in each of :data:`STORE_TABLES`."""
    return {table: store.db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] for table in STORE_TABLES}


def copy_store(source: GameStore, target: GameStore, replace: bool = False) -> dict[str, tuple[int, int]]:
    """Copy everything ``source`` holds (games with their moves, clocks and seats, puzzle
    ratings and attempts, players, their ratings and rating changes) into ``target``, of either backend, as it stood at one moment (the
    source is read in one snapshot, so a server may go on writing to it). The target is
    written in one transaction and checked count by count before it commits: on any
    difference nothing is kept. Returns table -> (rows in the source, rows in the target).
    Raises StoreError when the target already holds something, unless ``replace`` (its rows
    are deleted first, in the same transaction), CopyMismatch when the counts differ."""
    with source.db.snapshot(), target.db.transaction():
        held = {table: n for table, n in table_counts(target).items() if n}
        if held and not replace:
            raise StoreError(f"{target.path} already holds " + ", ".join(f"{n} {t}" for t, n in held.items())
                             + "; copy into an empty store, or replace what it holds (--replace)")
        for table in reversed(STORE_TABLES):
            target.db.execute(f"DELETE FROM {table}")
        for table in STORE_TABLES:
            cursor = source.db.execute(f"SELECT * FROM {table}")
            columns = [column[0] for column in cursor.description]
            insert = (f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})")
            while rows := cursor.fetchmany(COPY_BATCH):
                target.db.executemany(insert, rows)
        counts = {table: (n, m) for (table, n), m in zip(table_counts(source).items(), table_counts(target).values())}
        wrong = [f"{table} {n} -> {m}" for table, (n, m) in counts.items() if n != m]
        if wrong:
            raise CopyMismatch(f"the copy in {target.path} does not match its source ({', '.join(wrong)}); "
                               f"nothing was kept")
    return counts


def same_store(first: str, second: str) -> bool:
    """Whether two store locations name the same SQLite file or the same PostgreSQL database."""
    (kind, one), (other_kind, two) = parse_store_url(first), parse_store_url(second)
    if kind != other_kind:
        return False
    if kind == "sqlite":
        return one != ":memory:" and Path(one).resolve() == Path(two).resolve()
    a, b = urlsplit(one), urlsplit(two)
    return (a.hostname, a.port or 5432, a.path) == (b.hostname, b.port or 5432, b.path)


def copy_site(source: str, target: str, replace: bool = False) -> dict[str, tuple[int, int]]:
    """``orderchaos store copy``: open the store at ``source`` (which must exist) and the one
    at ``target`` (created when new), and :func:`copy_store` the first into the second.
    Raises StoreURLError for a malformed location, StoreError for a source that is not
    there, the same store twice or a target that holds something, StoreUnavailable for a
    database that does not answer."""
    kind, where = parse_store_url(source)
    parse_store_url(target)
    if kind == "sqlite" and (where == ":memory:" or not Path(where).is_file()):
        raise StoreError(f"{source}: no such store file to copy from")
    if same_store(source, target):
        raise StoreError(f"{source} and {target} are the same store")
    origin = GameStore(source)
    try:
        copy = GameStore(target)
        try:
            return copy_store(origin, copy, replace)
        finally:
            copy.close()
    finally:
        origin.close()


def backup_store(source: str | os.PathLike, target: str | os.PathLike) -> int:
    """Copy the game store ``source`` into the new SQLite file ``target``: a consistent copy
    even while servers write to ``source`` (a SQLite file: SQLite's backup API; a PostgreSQL
    database: :func:`copy_store` from one snapshot). The copy is written beside ``target`` and
    renamed into place when complete. Returns the number of games copied. Raises StoreError
    for a source that is not a game store of this schema version, StoreUnavailable for a
    database that does not answer."""
    target = Path(target)
    partial = target.with_name(f".{target.name}.partial")
    kind, source = parse_store_url(os.fspath(source))
    if kind == "postgresql":
        return backup_from_postgres(source, target, partial)
    try:
        src = sqlite3.connect(f"file:{Path(source).resolve()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise StoreError(f"{source}: cannot be opened ({exc})") from None
    try:
        try:
            row = src.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{source}: not a usable game store ({exc})") from None
        if row is None or row[0] != SCHEMA_VERSION:
            raise StoreError(f"{source}: game store schema version {row and row[0]}, this server reads {SCHEMA_VERSION}")
        partial.unlink(missing_ok=True)
        try:
            dst = sqlite3.connect(partial)
            try:
                src.backup(dst)
                dst.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
                damage = damage_found(dst)
                games = dst.execute("SELECT COUNT(*) FROM games").fetchone()[0] if damage is None else 0
            finally:
                dst.close()
            if damage is not None:
                raise StoreError(f"{source}: the game store is damaged ({damage}), so a copy would be too; "
                                 "none was made")
            os.replace(partial, target)
        except sqlite3.Error as exc:  # writing the copy failed: a full disk, a folder that refuses files
            code = errno.ENOSPC if getattr(exc, "sqlite_errorname", "") == "SQLITE_FULL" else errno.EIO
            raise OSError(code, f"cannot write {partial} ({exc})") from None
        finally:
            partial.unlink(missing_ok=True)
    finally:
        src.close()
    return games


def backup_from_postgres(source: str, target: Path, partial: Path) -> int:
    """:func:`backup_store` of a PostgreSQL store: copied into ``partial``, then renamed."""
    partial.unlink(missing_ok=True)
    origin = GameStore(source)
    try:
        copy = GameStore(partial)
        try:
            games = copy_store(origin, copy)["games"][1]
        finally:
            copy.close()
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    finally:
        origin.close()
    with sqlite3.connect(partial) as db:
        db.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
    os.replace(partial, target)
    return games


def export_games(store: GameStore, folder: str | os.PathLike) -> list[Path]:
    """Write every finished game into ``folder`` as games files (JSON lines, the format of
    :mod:`orderchaos.arena.game_files`), one file per pairing of players, named
    ``web_<order>_vs_<chaos>.jsonl``; returns the files written."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    groups: dict[tuple[str, str], list[str]] = {}
    for game_id in store.ids(finished=True):
        stored = store.load(game_id)
        assert stored is not None
        if stored.winner is None:  # aborted: nobody won, nothing to learn from
            continue
        game = stored.saved()
        line = game_line(game.record, game.order, game.chaos, len(groups.get((game.order, game.chaos), [])))
        groups.setdefault((game.order, game.chaos), []).append(line)
    written = []
    for (order, chaos), lines in sorted(groups.items()):
        safe = "_vs_".join("".join(ch if ch.isalnum() else "-" for ch in label) for label in (order, chaos))
        path = out / f"web_{safe}.jsonl"
        atomic_write_bytes(path, "".join(line + "\n" for line in lines).encode())  # never half a file
        written.append(path)
    return written
