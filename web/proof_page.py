"""The proof page, ``/proof/<lang>``: why Order wins and the certificate's figures, in the
page's language; and the page for an address with nothing at it (:func:`render_not_found`).

Its words are the ``proof.*`` keys of the page's catalogues (``static/i18n/<lang>.json``), so
the catalogue tests hold them to the same standard as the rest of the page; the rules panel
links here through its ``rules.proof_href`` key, so the link follows the chosen language. The
figures are the ones docs/proof.md reports, written as the language writes numbers. An
unknown language gets the reader's language (their browser's ``Accept-Language``), else
English. The page has no script.
"""

from __future__ import annotations

import html
import json
from collections.abc import Awaitable, Callable
from functools import lru_cache
from pathlib import Path

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

STATIC_DIR = Path(__file__).parent / "static"
GROUP_SEPARATORS = {"en": ",", "sv": "\u00a0", "nb": "\u00a0", "de": "."}
"""How each language groups thousands: 43,046,721 / 43 046 721 / 43.046.721."""
FIGURES = (
    ("proof.fig_boards", 3**16),
    ("proof.fig_chaos_boards", 10_163_530),
    ("proof.fig_moves", 94_334),
    ("proof.fig_lemma", 140),
    ("proof.fig_replay", 385_340),
    ("proof.fig_replay_border", 10_184_876),
)
"""The certificate's figures (docs/proof.md): the centre game's boards and its Chaos wins, the
centre moves after c3 X, the lemma's cases, and the Order-to-move positions the checker
replays with Chaos kept in the centre and with one Chaos border move."""
CENTRE_PLIES = 13
"""Plies to a line of four from the empty 4x4 with best play (docs/proof.md)."""
SECTIONS = ("pairs", "border", "lemma", "centre", "first_moves")
"""The argument's sections, each a ``proof.<name>_title`` and a ``proof.<name>`` key."""
CHECK_COMMANDS = ("orderchaos prove --certificate cert.json", "orderchaos prove --check cert.json")


def number(value: int, lang: str) -> str:
    """``value`` with its thousands grouped as ``lang`` writes them."""
    return f"{value:,}".replace(",", GROUP_SEPARATORS.get(lang, ","))


@lru_cache(maxsize=None)
def _catalogues() -> dict[str, dict[str, str]]:
    """Every catalogue of the page, by language code."""
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted((STATIC_DIR / "i18n").glob("*.json"))}


def phrases(lang: str) -> Callable[..., str]:
    """``say(key, **values)``: the catalogue's text for ``key`` in ``lang`` (English for a
    language the page does not have), ``{name}`` filled from ``values``, escaped for HTML."""
    words = _catalogues().get(lang) or _catalogues()["en"]

    def say(key: str, **values: str) -> str:
        text = words[key]
        for name, value in values.items():
            text = text.replace("{" + name + "}", value)
        return html.escape(text)

    return say


def html_page(lang: str, title: str, body: str, back: str | None = None) -> str:
    """A page of plain reading (``proof.css``, no script): ``title`` and ``body`` already
    HTML, ``back`` the text of a link to the game above the main text (None: none)."""
    header = f'<header><a href="/">{back}</a></header>\n' if back is not None else ""
    return f"""<!doctype html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="stylesheet" href="/static/proof.css">
</head>
<body>
{header}<main>
<h1>{title}</h1>
{body}
</main>
</body>
</html>
"""


def render(lang: str) -> str:
    """The proof page as HTML in ``lang`` (English for a language the page does not have)."""
    if lang not in _catalogues():
        lang = "en"
    say = phrases(lang)
    sections = "\n".join(
        f"<h2>{say(f'proof.{name}_title')}</h2>\n<p>{say(f'proof.{name}', boards=number(3**16, lang), plies=str(CENTRE_PLIES))}</p>"
        for name in SECTIONS
    )
    rows = "\n".join(f'<tr><th scope="row">{say(key)}</th><td>{number(value, lang)}</td></tr>'
                     for key, value in FIGURES)
    commands = "\n".join(f"<li><code>{html.escape(c)}</code></li>" for c in CHECK_COMMANDS)
    return html_page(lang, say("proof.title"), f"""<p>{say("proof.intro")}</p>
{sections}
<h2>{say("proof.figures_title")}</h2>
<table>
<caption>{say("proof.figures_caption")}</caption>
<thead><tr><th scope="col">{say("proof.figure")}</th><th scope="col">{say("proof.count")}</th></tr></thead>
<tbody>
{rows}
</tbody>
</table>
<p>{say("proof.check")}</p>
<ul>
{commands}
</ul>
<p><a href="/docs/proof.md">{say("proof.full")}</a></p>""", say("proof.back"))


def render_not_found(lang: str) -> str:
    """The page for an address with nothing at it, in ``lang`` (a language of the catalogues)."""
    say = phrases(lang)
    return html_page(lang, say("notfound.title"), f"""<p>{say("notfound.text")}</p>
<p><a href="/">{say("proof.back")}</a></p>""")


def proof_page(reader_language: Callable[[Request], str]) -> Callable[[Request], Awaitable[Response]]:
    """``GET /proof/{lang}``: :func:`render` for the language in the path, or for
    ``reader_language(request)`` when the path names none of the catalogues'."""

    async def page(request: Request) -> Response:
        lang = request.path_params["lang"]
        return HTMLResponse(render(lang if lang in _catalogues() else reader_language(request)),
                            headers={"Cache-Control": "no-store"})

    return page
