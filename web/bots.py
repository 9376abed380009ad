"""Bot accounts, their tokens and the bots' own rating pool: what the store keeps about bots.

A bot account is a name and the SHA-256 of its token; the token itself (32 random bytes,
URL-safe base64) is shown once, when the account is made, and never stored, logged or put in
a URL. A token is checked with :func:`hmac.compare_digest` against every live account's hash.
Revoking an account keeps its row (its games and rating stay on the ladder) but no token
opens it again.

Bots are rated among themselves only, in Glicko-2 (:mod:`orderchaos.arena.glicko2`): each
rated game between two bots is a one-game rating period for each of them, against the
other's rating before the game. A game between a person and a bot is rated in neither pool
(docs/bots.md says why). The house bots (``serve --house-bots``) are fixed anchors: they
play rated games but their ratings never move, so the pool keeps one scale over time.

Everywhere a bot's name shows (a game's seat label, a game file, the lobby, the ladder) it is
written ``bot:NAME`` (:func:`bot_label`), so a bot never passes for a person; and
:func:`bot_name_taken` is the one answer to "does a bot hold this name", for the people's
name check too.

Tables (created with the rest of the store's schema)::

    bot_accounts(name TEXT PRIMARY KEY, token_hash TEXT, created REAL,
                 revoked REAL)          -- NULL while the account is live
    bot_ratings(name TEXT PRIMARY KEY, r REAL, rd REAL, sigma REAL,
                games INTEGER, wins INTEGER, updated REAL)
    bot_games(game TEXT PRIMARY KEY,    -- the games row it adds to
              order_bot TEXT, chaos_bot TEXT,   -- a seat's bot name, NULL: a person
              rated INTEGER,            -- 1: rated in the bots' pool
              created REAL,
              settled REAL)             -- when its result went into the ratings (or was
                                        -- found unrated), NULL until the game ends
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from typing import Any

from orderchaos.arena.glicko2 import DEFAULT_DEVIATION, MIN_DEVIATION, Rating, update
from orderchaos.envs.rules import AGENTS

TOKEN_BYTES = 32
"""Random bytes in a bot token (256 bits)."""
NAME_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_-]{1,29}")
"""A bot's name: 2 to 30 letters, digits, ``-`` and ``_``, starting with a letter."""
BOT_PREFIX = "bot:"
"""How a bot's name is marked wherever it shows: ``bot:NAME``."""


@dataclass(frozen=True)
class HouseBot:
    """A shipped player seated on the ladder by ``serve --house-bots``: its name, the agent
    spec the site's workers play it with, and its fixed rating."""

    name: str
    spec: str
    rating: float


HOUSE_BOTS = (
    HouseBot("heuristic", "heuristic", 1300.0),
    HouseBot("pretrained", "pretrained", 1700.0),
    HouseBot("strongest", "pretrained:sims=200,solver=26", 2100.0),
)
"""The house bots. Their ratings are the anchors' set values (docs/bots.md): the easy, medium
and strongest levels of the page placed 400 points apart, not measured."""
HOUSE_DEVIATION = MIN_DEVIATION
"""An anchor's deviation: it is taken as known."""


class BotAccountError(ValueError):
    """A bot name that cannot be used (malformed, taken, unknown, revoked)."""


def bot_label(name: str) -> str:
    """A bot's name as it shows everywhere: ``bot:NAME``."""
    return BOT_PREFIX + name


def label_bot(label: str | None) -> str | None:
    """The bot's name in a seat label written by :func:`bot_label`, else None."""
    if isinstance(label, str) and label.startswith(BOT_PREFIX):
        return label[len(BOT_PREFIX):]
    return None


def token_hash(token: str) -> str:
    """The SHA-256 (hex) of a bot token: all the store keeps of it."""
    return hashlib.sha256(token.encode()).hexdigest()


def check_name(name: str) -> str:
    """``name`` when it can name a bot; BotAccountError naming what is accepted otherwise."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise BotAccountError(f"bad bot name {str(name)[:40]!r}: 2 to 30 letters, digits, '-' or '_', "
                              "starting with a letter")
    return name


def _db(store: Any) -> Any:
    return store.db


def bot_name_taken(store: Any, name: str) -> bool:
    """Whether a bot holds ``name`` (any case; a revoked bot's name stays taken, and so do the
    house bots'): the check the people's name check makes too."""
    folded = name.casefold()
    if any(house.name.casefold() == folded for house in HOUSE_BOTS):
        return True
    row = _db(store).execute("SELECT 1 FROM bot_accounts WHERE LOWER(name)=?", (folded.lower(),)).fetchone()
    return row is not None


def add_account(store: Any, name: str) -> str:
    """Make the bot account ``name`` and return its new token (shown once, never stored); a
    name a bot or a person holds (any case) is refused."""
    check_name(name)
    if bot_name_taken(store, name):
        raise BotAccountError(f"the name {name!r} is taken by a bot; choose another")
    if store.player_id(name) is not None:
        raise BotAccountError(f"the name {name!r} is taken by a person; choose another")
    token = secrets.token_urlsafe(TOKEN_BYTES)
    with _db(store).transaction():
        _db(store).execute("INSERT INTO bot_accounts VALUES (?, ?, ?, NULL)", (name, token_hash(token), store.clock()))
    return token


def revoke_account(store: Any, name: str) -> None:
    """Revoke the bot ``name``'s token: no connection opens with it from now on, and a server
    ends the connections it has open within a moment."""
    with _db(store).transaction():
        cursor = _db(store).execute("UPDATE bot_accounts SET revoked=? WHERE name=? AND revoked IS NULL",
                                    (store.clock(), name))
    if cursor.rowcount == 0:
        known = _db(store).execute("SELECT revoked FROM bot_accounts WHERE name=?", (name,)).fetchone()
        raise BotAccountError(f"no bot named {name!r}" if known is None else f"the bot {name!r} is already revoked")


def list_accounts(store: Any) -> list[dict[str, Any]]:
    """Every bot account, oldest first: name, created, revoked (None: live)."""
    rows = _db(store).execute("SELECT name, created, revoked FROM bot_accounts ORDER BY created, name")
    return [{"name": n, "created": c, "revoked": r} for n, c, r in rows]


def live_hashes(store: Any) -> dict[str, str]:
    """The live accounts: token hash -> name."""
    return {h: n for n, h in _db(store).execute("SELECT name, token_hash FROM bot_accounts WHERE revoked IS NULL")}


def authenticate(store: Any, token: object) -> str | None:
    """The name of the live bot whose token this is, or None; every live hash is compared in
    constant time, so the answer's timing says nothing about the token."""
    if not isinstance(token, str) or not token:
        return None
    digest = token_hash(token)
    found = None
    for stored, name in live_hashes(store).items():
        if hmac.compare_digest(stored, digest):
            found = name
    return found


# -- ratings ----------------------------------------------------------------------------


def house_bot(name: str | None) -> HouseBot | None:
    """The house bot of this name, if it is one."""
    return next((h for h in HOUSE_BOTS if h.name == name), None)


def rating_of(store: Any, name: str) -> Rating:
    """A bot's rating: a house bot's fixed one, else its stored one (1500 before its first
    rated game)."""
    house = house_bot(name)
    if house is not None:
        return Rating(house.rating, HOUSE_DEVIATION)
    row = _db(store).execute("SELECT r, rd, sigma FROM bot_ratings WHERE name=?", (name,)).fetchone()
    return Rating() if row is None else Rating(*row)


def record_game(store: Any, game_id: str, bots: dict[str, str | None], rated: bool) -> None:
    """Note which bots sit in game ``game_id`` (role -> bot name, None for a person) and
    whether it is rated."""
    _db(store).execute("INSERT INTO bot_games VALUES (?, ?, ?, ?, ?, NULL)",
                       (game_id, bots.get("order"), bots.get("chaos"), int(rated), store.clock()))


def game_bots(store: Any, game_id: str) -> tuple[dict[str, str | None], bool] | None:
    """The bots seated in a game and whether it is rated, or None for a game with no bot."""
    row = _db(store).execute("SELECT order_bot, chaos_bot, rated FROM bot_games WHERE game=?", (game_id,)).fetchone()
    return None if row is None else ({"order": row[0], "chaos": row[1]}, bool(row[2]))


def unfinished_games(store: Any, name: str) -> list[tuple[str, str]]:
    """The unfinished games bot ``name`` is seated in: (game id, role), oldest first."""
    rows = _db(store).execute(
        "SELECT b.game, b.order_bot, b.chaos_bot FROM bot_games AS b JOIN games AS g ON g.id=b.game"
        " WHERE g.reason IS NULL AND (b.order_bot=? OR b.chaos_bot=?) ORDER BY b.created", (name, name))
    return [(game, "order" if order == name else "chaos") for game, order, _ in rows]


def settle(store: Any, game_id: str) -> bool:
    """Put a finished game's result into the bots' ratings, once: a rated game between two
    bots that ended with a winner moves each bot's rating (a house bot's never moves); an
    aborted or unrated game only counts as settled. False when there was nothing to do (not
    a bot game, not over, or settled before)."""
    db = _db(store)
    with db.transaction():
        row = db.execute(
            "SELECT b.order_bot, b.chaos_bot, b.rated, g.winner, g.reason FROM bot_games AS b"
            " JOIN games AS g ON g.id=b.game WHERE b.game=? AND b.settled IS NULL AND g.reason IS NOT NULL",
            (game_id,)).fetchone()
        if row is None:
            return False
        bots, rated, winner = {"order": row[0], "chaos": row[1]}, bool(row[2]), row[3]
        db.execute("UPDATE bot_games SET settled=? WHERE game=?", (store.clock(), game_id))
        if not rated or winner is None or None in bots.values():
            return True
        before = {role: rating_of(store, bots[role]) for role in AGENTS}
        for role, opponent in zip(AGENTS, reversed(AGENTS)):
            name = bots[role]
            assert name is not None
            score = 1.0 if winner == role else 0.0
            if house_bot(name) is None:
                after = update(before[role], [(before[opponent], score)])
                if after.rd < MIN_DEVIATION:
                    after = Rating(after.r, MIN_DEVIATION, after.sigma)
            else:
                after = before[role]
            db.execute(
                "INSERT INTO bot_ratings VALUES (?, ?, ?, ?, 1, ?, ?) ON CONFLICT(name) DO UPDATE SET"
                " r=excluded.r, rd=excluded.rd, sigma=excluded.sigma, games=bot_ratings.games+1,"
                " wins=bot_ratings.wins+excluded.wins, updated=excluded.updated",
                (name, after.r, after.rd, after.sigma, int(score), store.clock()))
    return True


def settle_all(store: Any) -> int:
    """Settle every finished bot game not settled yet (games that ended while no server held
    them, a restart); returns how many."""
    pending = [g for (g,) in _db(store).execute(
        "SELECT b.game FROM bot_games AS b JOIN games AS g ON g.id=b.game"
        " WHERE b.settled IS NULL AND g.reason IS NOT NULL")]
    return sum(settle(store, game) for game in pending)


def ladder(store: Any, online: set[str], house: bool) -> list[dict[str, Any]]:
    """The ladder: every live bot (and, with ``house``, the house bots) as ``{"name",
    "online", "rating", "rd", "games", "wins", "house"}``, best rating first, then by name."""
    played = {n: (r, rd, g, w) for n, r, rd, g, w in _db(store).execute(
        "SELECT name, r, rd, games, wins FROM bot_ratings")}
    names = [n for (n,) in _db(store).execute("SELECT name FROM bot_accounts WHERE revoked IS NULL")]
    rows = []
    for name in names:
        r, rd, games, wins = played.get(name, (Rating().r, DEFAULT_DEVIATION, 0, 0))
        rows.append({"name": name, "online": name in online, "rating": round(r, 1), "rd": round(rd, 1),
                     "games": games, "wins": wins, "house": False})
    if house:
        for bot in HOUSE_BOTS:
            _, _, games, wins = played.get(bot.name, (0, 0, 0, 0))
            rows.append({"name": bot.name, "online": True, "rating": bot.rating, "rd": HOUSE_DEVIATION,
                         "games": games, "wins": wins, "house": True})
    return sorted(rows, key=lambda row: (-row["rating"], row["name"]))


def ladder_games(store: Any, limit: int = 50) -> list[dict[str, Any]]:
    """The latest games between bots, newest first: ``{"game", "order", "chaos", "rated",
    "winner", "reason"}`` (a person's seat as None)."""
    rows = _db(store).execute(
        "SELECT b.game, b.order_bot, b.chaos_bot, b.rated, g.winner, g.reason FROM bot_games AS b"
        " JOIN games AS g ON g.id=b.game ORDER BY b.created DESC LIMIT ?", (limit,))
    return [{"game": g, "order": o, "chaos": c, "rated": bool(r), "winner": w, "reason": why}
            for g, o, c, r, w, why in rows]
