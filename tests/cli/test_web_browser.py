"""The page of ``orderchaos serve`` in a real browser: Playwright drives Debian's Chromium
against a uvicorn server on a free loopback port.

Skipped, with the reason, when Playwright or /usr/bin/chromium is missing (``apt-get install
-y chromium``); under CI (``CI`` set) a missing Chromium fails instead, since .ci/run
installs it. With ``ORDERCHAOS_WEB_SCREENSHOTS=DIR`` the tests also save
``web_play.png``, ``web_watch.png`` and ``web_study.png`` (the ones in docs/) into DIR.
"""

from __future__ import annotations

import os
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("uvicorn", reason="the web extra is not installed: pip install -e '.[dev]'")
pytest.importorskip("playwright.sync_api", reason="Playwright is not installed: pip install -e '.[dev]'")

import uvicorn  # noqa: E402
from playwright.sync_api import Browser, Page, expect, sync_playwright  # noqa: E402

from orderchaos.agents.registry import make  # noqa: E402
from orderchaos.arena.game_files import save_games  # noqa: E402
from orderchaos.arena.matches import play_game  # noqa: E402
from orderchaos.cli.web.app import create_app  # noqa: E402
from orderchaos.cli.web.sessions import Limits  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
SCREENSHOTS = os.environ.get("ORDERCHAOS_WEB_SCREENSHOTS")
TIMEOUT_MS = 30_000

if not CHROMIUM.exists():
    reason = f"{CHROMIUM} is missing: install Chromium with `apt-get install -y chromium`"
    if os.environ.get("CI"):
        raise RuntimeError(f"browser tests under CI: {reason} (.ci/run should have)")
    pytest.skip(reason, allow_module_level=True)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A live server on 127.0.0.1 and a free port, its games folder holding match.jsonl;
    yields the page's URL."""
    games = tmp_path_factory.mktemp("games")
    records = [play_game(make("heuristic", seed=i), make("heuristic", seed=100 + i)) for i in range(3)]
    save_games(games / "match.jsonl", records, "heuristic", "heuristic")
    app = create_app(games, Limits(move_time=10, hint_time=0.5, study_time=0.1))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    uv = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=uv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not uv.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/"
    uv.should_exit = True
    thread.join(timeout=10)
    sock.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's Chromium, headless, through Playwright."""
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Browser, server: str) -> Iterator[Page]:
    """A fresh tab on the page (its own WebSocket and games), connected."""
    context = browser.new_context(viewport={"width": 1180, "height": 760})
    tab = context.new_page()
    tab.set_default_timeout(TIMEOUT_MS)
    tab.goto(server)
    expect(tab.get_by_test_id("status")).to_contain_text("new game")
    yield tab
    context.close()


def board(page: Page) -> list[str]:
    """The 36 cells' texts, row-major."""
    return [page.locator(f"[data-cell='{c}']").text_content() or "" for c in range(36)]


def wait_for_turn_or_end(page: Page) -> str:
    """Wait until the status says it is the human's move or the game is over."""
    status = page.get_by_test_id("status")
    expect(status).to_have_text(re.compile(r"Your move|Game over|Error"))
    return status.text_content() or ""


def screenshot(page: Page, name: str) -> None:
    """Save a screenshot of the page when ``ORDERCHAOS_WEB_SCREENSHOTS`` names a folder."""
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOTS) / name))


def start_game(page: Page, side: str, opponent: str) -> None:
    """Choose a side and an opponent and start a new game."""
    page.select_option("select[name=side]", side)
    page.fill("input[name=opponent]", opponent)
    page.click("button[data-action=new-game]")


def test_play_a_game_to_its_end_by_clicking(page: Page) -> None:
    start_game(page, "order", "random")
    page.click("button[data-symbol=X]")
    status = wait_for_turn_or_end(page)
    clicks = 0
    while "Game over" not in status:
        assert "Error" not in status, status
        cells = board(page)
        stones = sum(1 for s in cells if s)
        page.click(f"[data-cell='{cells.index('')}']")
        clicks += 1
        expect(page.locator("[data-cell] >> text=/[XO]/")).not_to_have_count(stones)
        status = wait_for_turn_or_end(page)
    assert clicks >= 5 and ("you win!" in status or "random wins" in status)
    cells = board(page)
    assert set(cells) <= {"X", "O", ""} and cells.count("X") >= clicks


def test_an_illegal_click_shows_an_error_and_changes_nothing(page: Page) -> None:
    start_game(page, "chaos", "heuristic")
    wait_for_turn_or_end(page)
    before = board(page)
    taken = next(c for c, s in enumerate(before) if s)
    page.click("button[data-symbol=O]")
    page.click(f"[data-cell='{taken}']")
    status = page.get_by_test_id("status")
    expect(status).to_contain_text("already holds")
    expect(status).to_contain_text("Error")
    assert board(page) == before
    free = max(c for c, s in enumerate(before) if not s)
    page.keyboard.type(f"{'abcdef'[free % 6]}{free // 6 + 1}")  # keyboard: a cell name places O
    expect(page.locator(f"[data-cell='{free}']")).to_have_text("O")
    wait_for_turn_or_end(page)
    page.click("button[data-action=hint]")
    expect(page.get_by_test_id("hint")).to_contain_text(re.compile("Solver|Network"))
    screenshot(page, "web_play.png")


def test_watch_mode_advances(page: Page) -> None:
    page.click("[data-mode=watch]")
    page.fill("input[name=watch-order]", "heuristic")
    page.fill("input[name=watch-chaos]", "random")
    page.fill("input[name=speed]", "200")
    page.click("button[data-action=watch-start]")
    stones = page.locator("[data-cell] >> text=/[XO]/")
    page.wait_for_function("document.querySelectorAll('[data-testid=watch-moves] li').length >= 6")
    page.click("button[data-action=watch-pause]")
    expect(page.get_by_test_id("status")).to_contain_text(re.compile("paused|Game over"))
    paused = stones.count()
    if "paused" in (page.get_by_test_id("status").text_content() or ""):
        page.click("button[data-action=watch-step]")
        expect(stones).to_have_count(paused + 1)
        screenshot(page, "web_watch.png")
        page.click("button[data-action=watch-pause]")  # resume to the end
    expect(page.get_by_test_id("status")).to_contain_text("Game over", timeout=60_000)


def test_study_mode_loads_a_saved_file(page: Page) -> None:
    page.click("[data-mode=study]")
    expect(page.locator("select[name=games-file] option")).to_have_text(["match.jsonl"])
    page.click("button[data-action=open-file]")
    status = page.get_by_test_id("status")
    expect(status).to_contain_text("match.jsonl, game #0")
    assert board(page) == [""] * 36
    page.click("button[data-action=next]")
    expect(page.locator("[data-cell] >> text=/[XO]/")).to_have_count(1)
    expect(page.get_by_test_id("analysis")).to_contain_text("Solver proved", timeout=60_000)
    expect(page.locator("[data-testid=value-curve] polyline")).to_have_count(1)
    page.select_option("select[name=game]", "1")
    expect(status).to_contain_text("game #1")
    expect(page.get_by_test_id("analysis")).to_contain_text("Solver proved", timeout=60_000)
    page.keyboard.press("End")
    expect(status).to_contain_text("won")
    length = page.locator("[data-testid=study-moves] li").count()
    page.click(f"[data-testid=study-moves] li:nth-child({max(1, length - 4)})")
    expect(page.locator("[data-testid=study-moves] li.current")).to_have_count(1)
    screenshot(page, "web_study.png")
