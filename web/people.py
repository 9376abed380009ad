"""What pages and scripts are told about players: names and ratings read from the store, never
a player's id (the id is what makes a browser that player: it stays with its owner).

The JSON answers of ``GET /api/player/NAME`` and ``GET /api/leaderboard?category=C`` are made
here, and the parts of a game's view and of the lobby that name people.
"""

from __future__ import annotations

from typing import Any

from orderchaos.arena.glicko2 import Rating
from orderchaos.web.errors import WebError
from orderchaos.web.players import CATEGORY_NAMES, category_of, provisional
from orderchaos.web.store import GameStore

LEADERBOARD_GAMES = 10
"""Rated games a player needs in a category to be on its leaderboard."""
LEADERBOARD_DAYS = 30
"""Days within which a player's last rated game of the category must lie to be on its leaderboard."""


def rating_view(rating: Rating, games: int) -> dict[str, Any]:
    """A rating as pages show it: rounded, with its deviation, games and whether provisional."""
    return {"rating": round(rating.r), "rd": round(rating.rd), "games": games, "provisional": provisional(rating.rd)}


def checked_category(value: object) -> str:
    """``value`` if it names a rated category, else WebError ``bad_category`` naming them."""
    if value not in CATEGORY_NAMES:
        raise WebError(f"category must be one of: {', '.join(CATEGORY_NAMES)}", "bad_category",
                       accepted=", ".join(CATEGORY_NAMES))
    assert isinstance(value, str)
    return value


def me_view(store: GameStore, player: str) -> dict[str, Any]:
    """The ``me`` message: the tab's own display name and ratings."""
    return {"type": "me", "name": store.ensure_player(player),
            "ratings": {c: rating_view(*held) for c, held in store.ratings(player).items()}}


def seat_people(store: GameStore, game_id: str, over: bool, time_control: str | None = None) -> dict[str, Any]:
    """The part of a game's view that names its people: each seat's name and rating (in the
    rated game's category, else that of its ``time_control``, else blitz's) or None (an agent,
    nobody yet), the rated category (None: not rated) and, once a rated game is over, each
    side's rating change."""
    seats, category = store.game_players(game_id)
    names = store.names(seats.values())
    people: dict[str, Any] = {}
    for role, player in seats.items():
        if player is None or player not in names:
            people[role] = None
            continue
        rating, games = store.rating(player, category or category_of(time_control) or "blitz")
        people[role] = {"name": names[player], **rating_view(rating, games)}
    changes = None
    if over and category is not None:
        held = store.rating_changes(game_id)
        changes = {role: {"before": round(held[p][0]), "after": round(held[p][1]),
                          "change": round(held[p][1]) - round(held[p][0])}
                   for role, p in seats.items() if p in held} or None
    return {"people": people, "rated": category, "rating_changes": changes}


def lobby_names(store: GameStore, challenges: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The lobby's challenges with their creators' names and ratings in place of their ids."""
    names = store.names(c.get("player") for c in challenges)
    shown = []
    for challenge in challenges:
        item = {k: v for k, v in challenge.items() if k != "player"}
        player = challenge.get("player")
        if player in names:
            category = category_of(challenge["time_control"])
            item["name"] = names[player]
            if category is not None:
                item["rating"] = rating_view(*store.rating(player, category))
        shown.append(item)
    return shown


def player_json(store: GameStore, name: str, limit: int = 100) -> dict[str, Any] | None:
    """``GET /api/player/NAME``: the player's name, rating per category and finished games,
    newest first; None for a name nobody has."""
    player = store.player_id(name)
    if player is None:
        return None
    games = store.player_games(player, limit)
    names = store.names(g["opponent"] for g in games)
    listed = []
    for game in games:
        base, increment = game["control"] or (None, None)
        before_after = game["rating"]
        listed.append({
            "id": game["id"], "seat": game["seat"],
            "opponent": names.get(game["opponent"]) if game["opponent"] else None,
            "opponent_agent": game["opponent_agent"] if not game["opponent"] else None,
            "result": "aborted" if game["winner"] is None else "win" if game["winner"] == game["seat"] else "loss",
            "reason": game["reason"],
            "time_control": None if base is None else f"{base / 60:g}+{increment:g}",
            "category": game["category"], "ended": game["ended"],
            "rating_change": None if before_after is None else round(before_after[1]) - round(before_after[0]),
        })
    return {"name": store.player_name(player),
            "ratings": {c: rating_view(*held) for c, held in store.ratings(player).items()},
            "history": {c: [[at, round(r)] for at, r in store.rating_history(player, c)] for c in CATEGORY_NAMES},
            "games": listed}


def leaderboard_json(store: GameStore, category: str, now: float) -> dict[str, Any]:
    """``GET /api/leaderboard?category=C``: the best of a category, at least
    :data:`LEADERBOARD_GAMES` rated games and one within :data:`LEADERBOARD_DAYS` days."""
    rows = store.leaderboard(category, LEADERBOARD_GAMES, now - LEADERBOARD_DAYS * 86400)
    return {"category": category, "min_games": LEADERBOARD_GAMES, "days": LEADERBOARD_DAYS,
            "players": [{"rank": i + 1, "name": name, **rating_view(rating, games)}
                        for i, (_, name, rating, games) in enumerate(rows)]}
