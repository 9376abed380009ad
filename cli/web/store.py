"""The web server's game store: the one module that knows its SQLite schema.

Every game played on the page (against a friend or an agent) is a row of ``games``, and
each of its moves a row of ``moves``; a move is committed before the server tells anyone
about it, so a restart loses nothing that a player saw. The file is opened in WAL mode
(readers never wait for the writer). Schema, version 1::

    games(id TEXT PRIMARY KEY,       -- secrets.token_urlsafe(16): 128 random bits
          created REAL, updated REAL,  -- Unix seconds
          order_spec TEXT, chaos_spec TEXT,   -- the agent's spec for an agent seat, NULL: a person
          order_label TEXT, chaos_label TEXT, -- how the page names the agent (e.g. "hard")
          order_token TEXT, chaos_token TEXT, -- SHA-256 (hex) of the seat token, NULL: seat free
          invite TEXT,                 -- the invite secret while the other seat is free, else NULL
          winner TEXT,                 -- 'order' / 'chaos' once finished, else NULL
          rematch TEXT)                -- the id of the rematch game, once asked for
    moves(game TEXT, ply INTEGER, action INTEGER, at REAL, PRIMARY KEY (game, ply))
    meta(key TEXT PRIMARY KEY, value TEXT)   -- schema_version

Seat tokens are kept only as hashes: the file alone does not let anyone take a seat.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

from orderchaos.arena.game_files import GameRecord, SavedGame, game_line
from orderchaos.envs.rules import AGENTS, State
from orderchaos.files import atomic_write_bytes

PERSON = "person"
"""How a seat held by a person is labelled in game files."""
SCHEMA_VERSION = "1"
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS games (
    id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    order_spec TEXT, chaos_spec TEXT,
    order_label TEXT, chaos_label TEXT,
    order_token TEXT, chaos_token TEXT,
    invite TEXT,
    winner TEXT,
    rematch TEXT
);
CREATE TABLE IF NOT EXISTS moves (
    game TEXT NOT NULL REFERENCES games(id),
    ply INTEGER NOT NULL,
    action INTEGER NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (game, ply)
);
CREATE INDEX IF NOT EXISTS games_unfinished ON games(winner) WHERE winner IS NULL;
"""


class StoreError(ValueError):
    """A database file that cannot be used (not SQLite, another schema version, unwritable)."""


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

    def state(self) -> State:
        """The position after the stored moves."""
        state = State()
        for action in self.actions:
            state = state.apply(action)
        return state

    def label(self, role: str) -> str:
        """Who played ``role``: the agent's level or spec, or :data:`PERSON`."""
        if self.specs.get(role) is None:
            return PERSON
        return self.labels.get(role) or self.specs[role] or PERSON

    def saved(self) -> SavedGame:
        """The finished game as a :class:`SavedGame` (raises ValueError if unfinished)."""
        state = self.state()
        if state.winner is None:
            raise ValueError(f"game {self.id} is not finished")
        record = GameRecord(list(self.actions), state.winner, len(self.actions), 0)
        return SavedGame(0, self.label("order"), self.label("chaos"), record)


class GameStore:
    """Games and moves in one SQLite file (``":memory:"`` for a store that dies with it).

    Used from one thread (the server's event loop); every write is committed at once.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            self.db.executescript(SCHEMA)
            damage = [row[0] for row in self.db.execute("PRAGMA quick_check")]
            if damage != ["ok"]:  # corrupt pages would fail later games one by one
                raise StoreError(f"{self.path}: the game store is damaged ({damage[0]}); "
                                 f"move it aside (or export what is readable with sqlite3 .recover)")
            row = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is None:
                self.db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
            elif row[0] != SCHEMA_VERSION:
                raise StoreError(f"{self.path}: game store schema version {row[0]}, this server reads {SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: not a usable game store ({exc})") from None

    def close(self) -> None:
        """Close the file."""
        self.db.close()

    def answers(self) -> bool:
        """True while the file answers a query (what ``/healthz`` reports)."""
        try:
            return self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() is not None
        except sqlite3.Error:
            return False

    def create(
        self,
        game_id: str,
        specs: dict[str, str | None],
        labels: dict[str, str | None],
        tokens: dict[str, str | None],
        invite: str | None,
    ) -> None:
        """Add a new game without moves; ``tokens`` are already hashed."""
        now = time.time()
        self.db.execute(
            "INSERT INTO games (id, created, updated, order_spec, chaos_spec, order_label, chaos_label,"
            " order_token, chaos_token, invite) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (game_id, now, now, specs.get("order"), specs.get("chaos"), labels.get("order"),
             labels.get("chaos"), tokens.get("order"), tokens.get("chaos"), invite),
        )

    def add_move(self, game_id: str, ply: int, action: int, winner: str | None) -> None:
        """Commit move number ``ply`` (0-based) and, when it ended the game, the winner."""
        now = time.time()
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute("INSERT INTO moves VALUES (?, ?, ?, ?)", (game_id, ply, action, now))
            self.db.execute("UPDATE games SET updated=?, winner=? WHERE id=?", (now, winner, game_id))

    def take_back(self, game_id: str, plies: int) -> None:
        """Remove every move from ply ``plies`` on (an undo)."""
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute("DELETE FROM moves WHERE game=? AND ply>=?", (game_id, plies))
            self.db.execute("UPDATE games SET updated=?, winner=NULL WHERE id=?", (time.time(), game_id))

    def claim_seat(self, game_id: str, role: str, token: str) -> None:
        """Give the free seat ``role`` to the holder of ``token`` (hashed) and spend the invite."""
        if role not in AGENTS:
            raise ValueError(f"role must be one of {AGENTS}, got {role!r}")
        self.db.execute(
            f"UPDATE games SET {role}_token=?, invite=NULL, updated=? WHERE id=?",
            (token, time.time(), game_id),
        )

    def set_rematch(self, game_id: str, rematch_id: str) -> None:
        """Record the rematch of a game."""
        self.db.execute("UPDATE games SET rematch=? WHERE id=?", (rematch_id, game_id))

    def load(self, game_id: str) -> StoredGame | None:
        """The game with this id, or None."""
        row = self.db.execute(
            "SELECT id, order_spec, chaos_spec, order_label, chaos_label, order_token, chaos_token,"
            " invite, winner, rematch, created FROM games WHERE id=?",
            (game_id,),
        ).fetchone()
        if row is None:
            return None
        actions = [a for (a,) in self.db.execute("SELECT action FROM moves WHERE game=? ORDER BY ply", (game_id,))]
        return StoredGame(
            id=row[0], specs={"order": row[1], "chaos": row[2]}, labels={"order": row[3], "chaos": row[4]},
            tokens={"order": row[5], "chaos": row[6]}, invite=row[7], winner=row[8], rematch=row[9],
            created=row[10], actions=actions,
        )

    def ids(self, finished: bool | None = None) -> list[str]:
        """Game ids, oldest first: all, only finished (True) or only unfinished (False) ones."""
        where = "" if finished is None else " WHERE winner IS NOT NULL" if finished else " WHERE winner IS NULL"
        return [i for (i,) in self.db.execute(f"SELECT id FROM games{where} ORDER BY created, id")]


def backup_store(source: str | os.PathLike, target: str | os.PathLike) -> int:
    """Copy the game store ``source`` into the new file ``target`` with SQLite's backup API: a
    consistent copy even while a server writes to ``source``. The copy is written beside
    ``target`` and renamed into place when complete. Returns the number of games copied.
    Raises StoreError for a source that is not a game store of this schema version."""
    target = Path(target)
    partial = target.with_name(f".{target.name}.partial")
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
        dst = sqlite3.connect(partial)
        try:
            src.backup(dst)
            dst.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
            games = dst.execute("SELECT COUNT(*) FROM games").fetchone()[0]
        finally:
            dst.close()
    finally:
        src.close()
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
