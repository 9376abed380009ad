"""The proof page, ``/proof/<lang>``: the argument and the certificate's figures in each of the
page's four languages, its link following the chosen language, served under the page's CSP.
(axe-core checks it in tests/web/test_browser.py's accessibility test.)"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the web extra is not installed: pip install -e '.[dev]'")
pytest.importorskip("starlette.testclient", reason="Starlette's TestClient needs httpx: pip install -e '.[dev]'")

from starlette.testclient import TestClient  # noqa: E402

from orderchaos.web.app import LANGUAGES, create_app  # noqa: E402
from orderchaos.web.proof_page import FIGURES, number  # noqa: E402

STATIC = Path(__file__).resolve().parents[2] / "web" / "static"
TITLES = {"en": "Order and Chaos is solved: Order wins", "sv": "Ordning och kaos är löst: Ordning vinner",
          "nb": "Orden og kaos er løst: Orden vinner", "de": "Ordnung und Chaos ist gelöst: Ordnung gewinnt"}


def catalogue(lang: str) -> dict[str, str]:
    return json.loads((STATIC / "i18n" / f"{lang}.json").read_text())


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(create_app()) as test_client:
        yield test_client


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_page_is_written_in_the_language_it_names(client: TestClient, lang: str) -> None:
    answer = client.get(f"/proof/{lang}")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/html")
    text = answer.text
    assert f'<html lang="{lang}">' in text and f"<h1>{TITLES[lang]}</h1>" in text
    words = catalogue(lang)
    proof_keys = [k for k in words if k.startswith("proof.")]
    assert len(proof_keys) == 25
    for key in proof_keys:  # every sentence of the page, in this language, placeholders filled
        shown = html.escape(words[key]).replace("{boards}", number(3**16, lang)).replace("{plies}", "13")
        assert shown in text, (lang, key)
    assert "{" not in text and "<script" not in text
    assert "default-src 'self'" in answer.headers["content-security-policy"]


def test_figures_are_written_as_each_language_writes_numbers(client: TestClient) -> None:
    expected = {"en": "43,046,721", "sv": "43\u00a0046\u00a0721", "nb": "43\u00a0046\u00a0721", "de": "43.046.721"}
    for lang, boards in expected.items():
        text = client.get(f"/proof/{lang}").text
        assert f"<td>{boards}</td>" in text
        cells = re.findall(r"<td>([^<]+)</td>", text)
        assert cells == [number(value, lang) for _, value in FIGURES]
    assert number(10_184_876, "de") == "10.184.876" and number(140, "sv") == "140"


def test_an_unknown_language_gets_the_english_page(client: TestClient) -> None:
    answer = client.get("/proof/xx")
    assert answer.status_code == 200 and '<html lang="en">' in answer.text and TITLES["en"] in answer.text


def test_an_unknown_language_gets_the_readers_language_when_the_browser_names_one(client: TestClient) -> None:
    answer = client.get("/proof/xx", headers={"Accept-Language": "nb-NO,nb;q=0.9,en;q=0.5"})
    assert answer.status_code == 200 and '<html lang="nb">' in answer.text and TITLES["nb"] in answer.text


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_missing_page_says_so_in_the_readers_language(client: TestClient, lang: str) -> None:
    answer = client.get("/no/such/page", headers={"Accept-Language": f"{lang};q=1"})
    words = catalogue(lang)
    assert answer.status_code == 404 and answer.headers["content-type"].startswith("text/html")
    assert f'<html lang="{lang}">' in answer.text
    for key in ("notfound.title", "notfound.text", "proof.back"):
        assert html.escape(words[key]) in answer.text, (lang, key)
    assert "<script" not in answer.text


def test_the_rules_panel_links_to_the_page_in_the_chosen_language() -> None:
    page = (STATIC / "index.html").read_text()
    assert 'data-i18n-attr="href:rules.proof_href"' in page  # the language switch rewrites the href
    for lang in LANGUAGES:
        assert catalogue(lang)["rules.proof_href"] == f"/proof/{lang}"
