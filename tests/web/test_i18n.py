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
    "sv": {"start.bullet"},
    "nb": {"watch.start", "watch.pause", "start.bullet"},
    "de": {"side.chaos", "play.side_chaos", "play.level", "start.bullet", "start.blitz"},
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


# -- the words, as a native speaker reads them ----------------------------------------------

GERMAN_FORMAL_ADDRESS = re.compile(r"\b(Sie|Ihr|Ihre|Ihren|Ihrem|Ihrer|Ihres|Ihnen)\b")


def test_german_says_du_throughout() -> None:
    """Game sites say *du*; a page that says *Sie* in one place and *du* in the next reads as
    two authors."""
    formal = {k: v for k, v in catalogue("de").items() if GERMAN_FORMAL_ADDRESS.search(v)}
    assert not formal, f"de.json addresses the reader as Sie: {sorted(formal)}"


@pytest.mark.parametrize("lang,word,other", [
    ("de", r"\bZeile", "Reihe"),  # a row of the board is a Reihe, as in "fünf in einer Reihe"
    ("de", r"\bVierer", "Vier"),  # a four is a Vier, as in "die offene Vier"
    ("nb", r"\btegn", "symbol"),  # X and O are symboler, in the rules and the game alike
    ("sv", r"\bsymbol", "tecken"),
])
def test_one_word_for_one_thing(lang: str, word: str, other: str) -> None:
    mixed = sorted(k for k, v in catalogue(lang).items() if re.search(word, re.sub(r"\{\w+\}", "", v)))
    assert not mixed, f"{lang}.json says {word!r} where the rest says {other!r}: {mixed}"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_proof_title_spells_the_game_as_the_page_does(lang: str) -> None:
    words = catalogue(lang)
    assert words["proof.title"].startswith(words["page.title"]), (words["proof.title"], words["page.title"])


HALF_MOVES = re.compile(r"\b(ply|plies|halbzug\w*|halvdrag\w*|halvtrekk\w*)\b", re.I)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_each_placement_is_one_move_not_a_half_move(lang: str) -> None:
    """Every placement is a move of its own; the page counts moves, never plies."""
    found = {k: v for k, v in catalogue(lang).items() if HALF_MOVES.search(re.sub(r"\{\w+\}", "", v))}
    assert not found, f"{lang}.json speaks of half moves: {sorted(found)}"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_challenge_button_does_not_read_as_the_list_heading(lang: str) -> None:
    """"Open a challenge" beside "Open challenges" reads as a link to the list: the button
    creates one."""
    words = catalogue(lang)
    button, heading = words["lobby.challenge"].split()[0].lower(), words["lobby.title"].split()[0].lower()
    assert button != heading, (words["lobby.challenge"], words["lobby.title"])


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_side_is_the_subject_when_the_computer_thinks(lang: str) -> None:
    """"Easy (Chaos) is thinking" makes the level the one who thinks: the side comes first."""
    words = catalogue(lang)
    for key in ("status.thinking", "status.agent_turn", "watch.turn", "watch.over"):
        assert words[key].split(":")[-1].strip().startswith("{side} ({player})"), (lang, key, words[key])


MISREAD = {
    "en": ["six count as well", "Open a challenge"],
    "sv": ["Skriv ut certifikatet", "Öppna en utmaning"],
    "nb": ["Skriv ut sertifikatet", "Ingen første trekk"],
    "de": [],
}
"""Phrases that say something else than meant: "Skriv ut" is "print"; "Ingen første trekk"
is ungrammatical (trekk is neuter)."""


@pytest.mark.parametrize("lang", LANGUAGES)
def test_no_phrase_that_says_something_else(lang: str) -> None:
    found = [(k, p) for k, v in catalogue(lang).items() for p in MISREAD[lang] if p in v]
    assert not found, found


def test_the_lobby_never_puts_a_label_mid_sentence() -> None:
    """A challenge without a clock has its own sentence: the select's capitalised "No clock"
    does not read mid-sentence ("Plays Order, No clock")."""
    script = (STATIC / "app.js").read_text()
    lobby = script[script.index("function renderLobby"):]
    lobby = lobby[:lobby.index("\n}\n")]
    assert "play.no_clock" not in lobby
    for lang in LANGUAGES:
        assert "{time}" not in catalogue(lang)["lobby.item_untimed"]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_last_lesson_step_says_what_its_chaos_does(lang: str) -> None:
    """Chaos in "now win as Order" tests the border rule with a border move about one move in
    three (:data:`orderchaos.learn.lesson.BORDER_MOVE_SHARE`): the text says so, and does
    not promise its strongest defence."""
    from orderchaos.learn.lesson import BORDER_MOVE_SHARE

    assert BORDER_MOVE_SHARE == 1 / 3
    text = catalogue(lang)["learn.win_text"]
    three = {"en": "one move in three", "sv": "vart tredje drag", "nb": "hvert tredje trekk", "de": "jeden dritten Zug"}[lang]
    strongest = {"en": "strongest", "sv": "starkaste", "nb": "sterkeste", "de": "stärkste"}[lang]
    assert three in text and strongest not in text, text


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_border_rule_says_a_five_comes_first(lang: str) -> None:
    """The strategy completes a five before it answers on the border (as the proof page says)."""
    text = catalogue(lang)["learn.border_text"]
    first = {"en": "five", "sv": "fem", "nb": "fem", "de": "fünf"}[lang]
    assert first in text, text



@pytest.mark.parametrize("lang", ("en", "sv", "nb"))
def test_errors_read_on_after_the_error_prefix(lang: str) -> None:
    """Every error is shown after "Error: " ("Fel: ", "Feil: "), as the rest of that sentence:
    it starts in lower case, as most of them always did. (German is left out: its nouns are
    capitalised wherever they stand.)"""
    capital = sorted(k for k, v in catalogue(lang).items() if k.startswith("error.") and v[:1].isupper())
    assert not capital, f"{lang}.json: errors that start a new sentence after the prefix: {capital}"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_game_in_the_study_list_says_moves_after_its_length(lang: str) -> None:
    """"won in 23" said nothing of what the 23 counts."""
    item = catalogue(lang)["study.game_item"]
    assert item.endswith("{length} " + {"en": "moves", "sv": "drag", "nb": "trekk", "de": "Zügen"}[lang]), item
