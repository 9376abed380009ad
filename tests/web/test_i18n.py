"""The page's message catalogues: one per language, each with every key the page uses, the
same placeholders as English, and the rules panel really translated."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

STATIC = Path(__file__).resolve().parents[2] / "web" / "static"
LANGUAGES = ("en", "sv", "nb", "de")
ERROR_CODES_DIR = Path(__file__).resolve().parents[2] / "web"


def catalogue(lang: str) -> dict[str, str]:
    return json.loads((STATIC / "i18n" / f"{lang}.json").read_text())


def server_error_codes() -> set[str]:
    """The codes of the errors the server raises: the second argument of every
    ``WebError(...)``, ``TimedOut(...)`` and ``super().__init__(...)`` call in web."""
    codes = set()
    for path in ERROR_CODES_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or len(node.args) < 2:
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            code = node.args[1]
            if name in ("WebError", "TimedOut", "__init__", "_error") and isinstance(code, ast.Constant) and isinstance(code.value, str):
                codes.add(code.value)
    return codes


def keys_the_page_uses() -> set[str]:
    """Every key named in index.html (data-i18n, data-i18n-attr) and the scripts (t("..."),
    and the keys they build: side., level., study. marks, error. codes the server sends,
    every "learn." literal of learn.js and each lesson step's title, text and task)."""
    from orderchaos.learn.lesson import STEP_IDS

    html = (STATIC / "index.html").read_text()
    script = "\n".join(path.read_text() for path in sorted(STATIC.glob("*.js")))
    keys = set(re.findall(r'data-i18n="([^"]+)"', html))
    for pairs in re.findall(r'data-i18n-attr="([^"]+)"', html):
        keys |= {pair.split(":")[1] for pair in pairs.split(";")}
    keys |= set(re.findall(r'\bt\("([a-z_]+\.[a-z_]+)"', script))
    keys |= {k for pair in re.findall(r'\? "([a-z_]+\.[a-z_]+)" : "([a-z_]+\.[a-z_]+)"', script) for k in pair}
    keys |= {f"side.{s}" for s in ("order", "chaos")} | {f"level.{lv}" for lv in ("easy", "medium", "hard", "strongest")}
    keys |= {f"study.{m}" for m in ("keeps", "throws", "unknown")}
    keys |= {f"error.{code}" for code in server_error_codes()}
    keys |= {f"error.{code}" for code in re.findall(r'code: "([a-z_]+)"', script)}
    keys |= set(re.findall(r'"(learn\.[a-z_]+)"', script))
    keys |= {f"learn.{step}_{part}" for step in STEP_IDS for part in ("title", "text", "task")}
    return keys


def test_the_scan_finds_the_keys_it_should() -> None:
    keys = keys_the_page_uses()
    for expected in ("rules.title", "status.your_move", "status.waiting_friend", "result.won", "error.not_your_turn",
                     "error.busy", "error.occupied", "study.first", "error.offline", "learn.leaves",
                     "learn.try_again", "learn.centre_task", "nav.learn", "error.lesson",
                     "error.address_searches"):
        assert expected in keys


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_catalogue_has_every_key_with_the_same_placeholders(lang: str) -> None:
    english, other = catalogue("en"), catalogue(lang)
    missing = sorted(keys_the_page_uses() - set(other))
    assert not missing, f"{lang}.json lacks {missing}"
    assert set(other) == set(english), f"{lang}.json: keys differ from en.json: {sorted(set(other) ^ set(english))}"
    for key, text in english.items():
        assert text.strip() and other[key].strip(), (lang, key)
        assert set(re.findall(r"\{\w+\}", other[key])) == set(re.findall(r"\{\w+\}", text)), (lang, key)


# Values a native speaker writes just as English does: names, game terms the language
# borrows, and words spelt alike. Every other value equal to English is text left untranslated.
SAME_AS_ENGLISH = {
    "sv": set(),
    "nb": {"watch.start", "watch.pause"},
    "de": {"side.chaos", "play.side_chaos", "play.level"},
}


@pytest.mark.parametrize("lang", ("sv", "nb", "de"))
def test_the_page_and_the_rules_are_translated(lang: str) -> None:
    """Only values made of placeholders, digits and signs (``3×3``, ``{side}: {move}``) or
    named in SAME_AS_ENGLISH may equal English, whatever their case."""
    english, other = catalogue("en"), catalogue(lang)
    same = {k for k in english if english[k] == other[k] and not re.fullmatch(r"(\{\w+\}|[\d×:.,;()…\s–-])+", english[k])}
    assert same <= SAME_AS_ENGLISH[lang], f"{lang}: left in English: {sorted(same - SAME_AS_ENGLISH[lang])}"
    stale = sorted(k for k in SAME_AS_ENGLISH[lang] if english[k] != other[k])
    assert not stale, f"{lang}: SAME_AS_ENGLISH names keys that are translated now: {stale}"


def test_the_language_menu_offers_exactly_the_catalogues() -> None:
    html = (STATIC / "index.html").read_text()
    menu = re.search(r'<select name="language">(.*?)</select>', html, re.S)
    assert menu is not None
    assert tuple(re.findall(r'value="(\w+)"', menu.group(1))) == LANGUAGES
    assert sorted(p.stem for p in (STATIC / "i18n").glob("*.json")) == sorted(LANGUAGES)


def test_the_script_offers_exactly_the_catalogues() -> None:
    """app.js falls back to English for a language missing from its list, silently."""
    script = (STATIC / "app.js").read_text()
    listed = re.search(r"const LANGUAGES = \[([^\]]*)\]", script)
    assert listed is not None
    assert tuple(re.findall(r'"(\w+)"', listed.group(1))) == LANGUAGES


def test_the_page_keeps_no_rules() -> None:
    script = (STATIC / "app.js").read_text()
    assert "WINDOWS" not in script and "boardFacts" not in script and "mine === 5" not in script
