"""The player page ``/player/NAME``, the leaderboard ``/leaderboard?category=C`` and their JSON
for scripts, ``GET /api/player/NAME`` and ``GET /api/leaderboard?category=C``.

The pages are made on the server, without script, in the language that ``?lang=`` names (one
of the page's catalogues), else the reader's browser's: their words are the ``player.*`` keys
of ``static/i18n/<lang>.json``. The player page shows the rating of each category with its
history as a small inline SVG line, and the player's finished games (result, opponent, time
control, how it ended, when), each linking to the game, where the page studies it. An unknown
name is a 404 (a page, or JSON with the code ``unknown_player``); an unknown category a 400
naming the accepted ones (``bad_category``).
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from orderchaos.web.errors import WebError
from orderchaos.web.people import checked_category, leaderboard_json, player_json
from orderchaos.web.players import CATEGORY_NAMES, NAME_MAX
from orderchaos.web.proof_page import _catalogues
from orderchaos.web.store import GameStore

GRAPH_WIDTH, GRAPH_HEIGHT = 160, 40
"""The size of a rating history's graph, in CSS pixels."""


def unknown_player(name: str) -> WebError:
    """The error of a name nobody has."""
    return WebError(f"no player is called {name[:NAME_MAX + 20]}", "unknown_player", name=name[:NAME_MAX + 20])


def history_graph(points: list[list[float]], label: str) -> str:
    """A rating history (``[when, rating]``, oldest first) as a small inline SVG polyline,
    the first point the rating before any game (1500); empty before the first game."""
    if not points:
        return ""
    ratings = [1500.0] + [r for _, r in points]
    low, high = min(ratings), max(ratings)
    span = max(high - low, 1.0)
    step = GRAPH_WIDTH / max(len(ratings) - 1, 1)
    coordinates = " ".join(f"{i * step:.1f},{GRAPH_HEIGHT - 2 - (r - low) / span * (GRAPH_HEIGHT - 4):.1f}"
                           for i, r in enumerate(ratings))
    return (f'<svg class="history" width="{GRAPH_WIDTH}" height="{GRAPH_HEIGHT}" viewBox="0 0 {GRAPH_WIDTH} '
            f'{GRAPH_HEIGHT}" role="img" aria-label="{html.escape(label)}"><polyline points="{coordinates}" '
            f'fill="none" stroke="#0a4fa8" stroke-width="2"/></svg>')


class Words:
    """The ``player.*`` words of one language, HTML-escaped, placeholders filled."""

    def __init__(self, lang: str) -> None:
        self.lang = lang
        self.words = _catalogues()[lang]

    def __call__(self, key: str, **values: Any) -> str:
        text = self.words[key]
        for name, value in values.items():
            text = text.replace("{" + name + "}", str(value))
        return html.escape(text)


def page(words: Words, title: str, body: str, path: str) -> str:
    """A whole page around ``body``, with links to the same page in the other languages."""
    others = " · ".join(f'<a href="{html.escape(path)}?lang={code}" lang="{code}" hreflang="{code}">'
                        f'{html.escape(_catalogues()[code]["player.language_name"])}</a>'
                        for code in sorted(_catalogues()) if code != words.lang)
    return f"""<!doctype html>
<html lang="{words.lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="stylesheet" href="/static/proof.css">
<link rel="stylesheet" href="/static/players.css">
</head>
<body>
<header><nav aria-label="{words("player.nav")}"><a href="/">{words("proof.back")}</a> ·
<a href="/leaderboard?category=blitz&amp;lang={words.lang}">{words("player.leaderboard")}</a> · {others}</nav></header>
<main>
{body}
</main>
</body>
</html>
"""


def shown(rating: dict[str, Any]) -> str:
    """A rating as the pages show it: "?" after a provisional one."""
    return f"{rating['rating']}{'?' if rating['provisional'] else ''}"


def render_player(data: dict[str, Any], words: Words, path: str) -> str:
    """The player page of ``data`` (:func:`.people.player_json`)."""
    name = html.escape(data["name"])
    rows = []
    for category in CATEGORY_NAMES:
        rating = data["ratings"][category]
        graph = history_graph(data["history"][category], words("player.graph_label", category=words(f"player.{category}")))
        rows.append(f'<tr data-category="{category}"><th scope="row">{words(f"player.{category}")}</th>'
                    f'<td data-testid="rating-{category}">{shown(rating)}</td><td>{rating["games"]}</td>'
                    f'<td class="graph">{graph}</td></tr>')
    games = []
    for game in data["games"]:
        opponent = (f'<a href="/player/{quote(game["opponent"])}?lang={words.lang}">{html.escape(game["opponent"])}</a>'
                    if game["opponent"] else html.escape(words("player.computer") if game["opponent_agent"]
                                                          else words("player.nobody")))
        when = datetime.fromtimestamp(game["ended"], timezone.utc).strftime("%Y-%m-%d")
        change = game["rating_change"]
        change_text = "" if change is None else f"{change:+d}".replace("-", "−")
        control = game["time_control"] or words("player.no_clock")
        rated = words(f"player.{game['category']}") if game["category"] else words("player.casual")
        games.append(f'<tr data-game="{html.escape(game["id"])}"><td>{when}</td><td>{words("side." + game["seat"])}</td>'
                     f'<td>{opponent}</td><td>{words("player.result_" + game["result"])}</td>'
                     f'<td>{words("player.reason_" + game["reason"])}</td><td>{html.escape(control)} ({rated})</td>'
                     f'<td>{change_text}</td><td><a href="/g/{html.escape(game["id"])}">{words("player.study")}</a></td></tr>')
    game_table = (f"""<table class="games">
<caption>{words("player.games_caption", name=data["name"])}</caption>
<thead><tr><th scope="col">{words("player.date")}</th><th scope="col">{words("player.side")}</th>
<th scope="col">{words("player.opponent")}</th><th scope="col">{words("player.result")}</th>
<th scope="col">{words("player.reason")}</th><th scope="col">{words("player.time_control")}</th>
<th scope="col">{words("player.change")}</th><th scope="col"><span class="visually-hidden">{words("player.study")}</span></th></tr></thead>
<tbody>
{chr(10).join(games)}
</tbody>
</table>""" if games else f"<p>{words('player.no_games')}</p>")
    body = f"""<h1 data-testid="player-name">{name}</h1>
<h2>{words("player.ratings")}</h2>
<p>{words("player.provisional_note")}</p>
<div class="scroll"><table class="ratings">
<caption>{words("player.ratings_caption", name=data["name"])}</caption>
<thead><tr><th scope="col">{words("player.category")}</th><th scope="col">{words("player.rating")}</th>
<th scope="col">{words("player.games_count")}</th><th scope="col">{words("player.history")}</th></tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody>
</table></div>
<h2>{words("player.games")}</h2>
<div class="scroll">{game_table}</div>"""
    return page(words, words("player.title", name=data["name"]), body, path)


def render_leaderboard(data: dict[str, Any], words: Words) -> str:
    """The leaderboard page of ``data`` (:func:`.people.leaderboard_json`)."""
    category = data["category"]
    current = ' aria-current="page"'
    tabs = " · ".join(f'<a href="/leaderboard?category={c}&amp;lang={words.lang}"'
                      f'{current if c == category else ""}>{words(f"player.{c}")}</a>'
                      for c in CATEGORY_NAMES)
    rows = "\n".join(f'<tr><td>{p["rank"]}</td><th scope="row"><a href="/player/{quote(p["name"])}?lang={words.lang}">'
                     f'{html.escape(p["name"])}</a></th><td>{shown(p)}</td><td>{p["games"]}</td></tr>'
                     for p in data["players"])
    table = (f"""<table>
<caption>{words("player.leaderboard_caption", category=words(f"player.{category}"))}</caption>
<thead><tr><th scope="col">{words("player.rank")}</th><th scope="col">{words("player.name")}</th>
<th scope="col">{words("player.rating")}</th><th scope="col">{words("player.games_count")}</th></tr></thead>
<tbody>
{rows}
</tbody>
</table>""" if data["players"] else f"<p>{words('player.leaderboard_empty')}</p>")
    body = f"""<h1>{words("player.leaderboard_title", category=words(f"player.{category}"))}</h1>
<nav aria-label="{words("player.categories")}">{tabs}</nav>
<p>{words("player.leaderboard_rule", games=data["min_games"], days=data["days"])}</p>
{table}"""
    return page(words, words("player.leaderboard_title", category=words(f"player.{category}")), body, "/leaderboard")


def _json_error(error: WebError, status: int) -> JSONResponse:
    return JSONResponse(error.payload(), status_code=status, headers={"Cache-Control": "no-store"})


def player_routes(store: GameStore, reader_language: Callable[[Request], str],
                  clock: Callable[[], float] = time.time) -> list[Route]:
    """The routes of the player pages and their JSON (see the module docstring)."""

    def language(request: Request) -> str:
        asked = request.query_params.get("lang", "")
        return asked if asked in _catalogues() else reader_language(request)

    async def api_player(request: Request) -> Response:
        name = request.path_params["name"]
        data = player_json(store, name)
        if data is None:
            return _json_error(unknown_player(name), 404)
        return JSONResponse(data, headers={"Cache-Control": "no-store"})

    async def api_leaderboard(request: Request) -> Response:
        try:
            category = checked_category(request.query_params.get("category", ""))
        except WebError as exc:
            return _json_error(exc, 400)
        return JSONResponse(leaderboard_json(store, category, clock()), headers={"Cache-Control": "no-store"})

    async def player_page(request: Request) -> Response:
        name = request.path_params["name"]
        words = Words(language(request))
        data = player_json(store, name)
        if data is None:
            body = f"<h1>{words('player.unknown_title')}</h1>\n<p>{words('player.unknown', name=name[:NAME_MAX + 20])}</p>"
            return HTMLResponse(page(words, words("player.unknown_title"), body, request.url.path), status_code=404)
        return HTMLResponse(render_player(data, words, request.url.path), headers={"Cache-Control": "no-store"})

    async def leaderboard_page(request: Request) -> Response:
        words = Words(language(request))
        try:
            category = checked_category(request.query_params.get("category", "blitz"))
        except WebError:
            body = f"<h1>{words('player.bad_category_title')}</h1>\n<p>{words('player.bad_category')}</p>"
            return HTMLResponse(page(words, words("player.bad_category_title"), body, "/leaderboard"), status_code=400)
        return HTMLResponse(render_leaderboard(leaderboard_json(store, category, clock()), words),
                            headers={"Cache-Control": "no-store"})

    return [
        Route("/api/player/{name}", api_player),
        Route("/api/leaderboard", api_leaderboard),
        Route("/player/{name}", player_page),
        Route("/leaderboard", leaderboard_page),
    ]

