"""The page of ``orderchaos serve`` in a real browser: Playwright drives Debian's Chromium
against a uvicorn server on a free loopback port, its games in a SQLite file.

Skipped, with the reason, when Playwright or /usr/bin/chromium is missing (``apt-get install
-y chromium``); under CI (``CI`` set) a missing Chromium fails instead, since .ci/run
installs it. With ``ORDERCHAOS_WEB_SCREENSHOTS=DIR`` the tests also save the screenshots of
docs/ (``web_play.png``, ``web_friend.png``, ``web_phone.png``, ``web_watch.png``,
``web_study.png``) into DIR.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn", reason="the web extra is not installed: pip install -e '.[dev]'")
pytest.importorskip("playwright.sync_api", reason="Playwright is not installed: pip install -e '.[dev]'")

import uvicorn  # noqa: E402
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright  # noqa: E402

from orderchaos.agents.registry import make  # noqa: E402
from orderchaos.arena.game_files import save_games  # noqa: E402
from orderchaos.arena.matches import play_game  # noqa: E402
from orderchaos.learn.puzzles import load_puzzles, parse_move  # noqa: E402
from orderchaos.agents.worker_pool import WorkerPool  # noqa: E402
from orderchaos.web.app import create_app  # noqa: E402
from orderchaos.web.quotas import AddressLimits  # noqa: E402
from orderchaos.web.services import Limits  # noqa: E402
from orderchaos.envs.rules import cell_name, parse_board  # noqa: E402

from helpers import HEURISTIC_VS_RANDOM_GAME, RANDOM_SEED_3_GAME, wait_for  # noqa: E402
from worker_jobs import warm_stalling  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
SCREENSHOTS = os.environ.get("ORDERCHAOS_WEB_SCREENSHOTS")
TIMEOUT_MS = 30_000
LIMITS = Limits(move_time=10, hint_time=0.5, study_time=0.1)
SOLUTIONS = {p.id: p for p in load_puzzles()}
"""The shipped puzzles by id: the test reads a puzzle's solution from the set the server uses."""

if not CHROMIUM.exists():
    reason = f"{CHROMIUM} is missing: install Chromium with `apt-get install -y chromium`"
    if os.environ.get("CI"):
        raise RuntimeError(f"browser tests under CI: {reason} (.ci/run should have)")
    pytest.skip(reason, allow_module_level=True)


class Server:
    """uvicorn serving the app on one loopback port; :meth:`restart` stops it and starts a
    new app on the same port and database, as a restarted ``orderchaos serve`` would."""

    def __init__(self, games: Path, db: Path, quotas: AddressLimits | None = None,
                 workers: WorkerPool | None = None) -> None:
        self.games, self.db, self.quotas, self.workers = games, db, quotas, workers
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.start()

    def start(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", self.port))
        self.uv = uvicorn.Server(uvicorn.Config(create_app(self.games, LIMITS, db=self.db, quotas=self.quotas,
                                                                   workers=self.workers), log_level="warning",
                                                lifespan="off"))
        self.thread = threading.Thread(target=self.uv.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()
        while not self.uv.started:  # no deadline: a slow start is waited for, up to the test's timeout
            if not self.thread.is_alive():
                raise RuntimeError("the test server ended before it started serving")
            time.sleep(0.05)

    def stop(self) -> None:
        self.uv.should_exit = True
        self.uv.force_exit = True  # open WebSockets do not hold it up
        self.thread.join(timeout=10)
        self.sock.close()

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A live server whose games folder holds match.jsonl, its store a SQLite file."""
    games = tmp_path_factory.mktemp("games")
    records = [play_game(make("heuristic", seed=i), make("heuristic", seed=100 + i)) for i in range(3)]
    save_games(games / "match.jsonl", records, "heuristic", "heuristic")
    live = Server(games, tmp_path_factory.mktemp("db") / "games.sqlite3")
    yield live
    live.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's Chromium, headless, through Playwright."""
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


def new_tab(browser: Browser, url: str, width: int = 1180, height: int = 900, locale: str = "en-GB",
            **options: Any) -> tuple[BrowserContext, Page]:
    """A fresh browser profile (its own localStorage) with one tab on ``url``, connected;
    ``options`` go to the profile (``bypass_csp=True`` lets axe-core in)."""
    context = browser.new_context(viewport={"width": width, "height": height}, locale=locale, **options)
    tab = context.new_page()
    tab.set_default_timeout(TIMEOUT_MS)
    tab.goto(url)
    expect(tab.get_by_test_id("status")).not_to_have_text(re.compile("Connecting|reconnecting"))
    return context, tab


@pytest.fixture
def page(browser: Browser, server: Server) -> Iterator[Page]:
    """A fresh tab on the page."""
    context, tab = new_tab(browser, server.url)
    yield tab
    context.close()


def board(page: Page) -> list[str]:
    """The 36 cells' texts, row-major."""
    return page.eval_on_selector_all("[data-cell]", "cells => cells.map(c => c.textContent)")


def wait_for_turn_or_end(page: Page) -> str:
    """Wait until the status says it is this tab's move or the game is over."""
    status = page.get_by_test_id("status")
    expect(status).to_have_text(re.compile(r"Your move|Game over|Error"))
    return status.text_content() or ""


def screenshot(page: Page, name: str, full_page: bool = False) -> None:
    """Save a screenshot of the page when ``ORDERCHAOS_WEB_SCREENSHOTS`` names a folder."""
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOTS) / name), full_page=full_page)


def open_form(tab: Page, name: str) -> None:
    """Open the start page's small form ``name`` ("friend" or "computer") unless it is open."""
    if tab.get_attribute(f"button[data-open={name}]", "aria-expanded") != "true":
        tab.click(f"button[data-open={name}]")


def play_the_computer(page: Page, side: str, spec: str | None = None, level: str = "easy",
                      time_control: str = "none") -> None:
    """Open "Play the computer", choose a side, a clock and an opponent (a level, or a spec
    under "Advanced") and start."""
    open_form(page, "computer")
    page.select_option("#new-game-form select[name=side]", side)
    page.select_option("#new-game-form select[name=time_control]", time_control)
    page.select_option("select[name=level]", level)
    if spec is not None:
        page.click("details.advanced summary")
        page.fill("input[name=opponent]", spec)
    page.click("button[data-action=new-game]")


def sides_and_moves(moves: list[str]) -> list[str]:
    """A move list as the page lists it: Order and Chaos in turn."""
    return [f"{('Order', 'Chaos')[ply % 2]}: {move}" for ply, move in enumerate(moves)]


def test_play_the_computer_to_the_end_by_clicking(page: Page) -> None:
    """Clicks on the first empty cell (X, the default symbol) against ``random:seed=3``:
    the game the API test plays, won by Order on b1-f5."""
    play_the_computer(page, "order", spec="random:seed=3")
    status = wait_for_turn_or_end(page)
    clicks = 0
    while "Game over" not in status:
        assert "Error" not in status, status
        cells = board(page)
        page.click(f"[data-cell='{cells.index('')}']")
        clicks += 1
        expect(page.locator("[data-testid=play-moves] li")).not_to_have_count(2 * clicks - 2)
        status = wait_for_turn_or_end(page)
    assert clicks == 16
    result = page.get_by_test_id("result")
    expect(result).to_be_visible()
    expect(result).to_contain_text("You won!")
    expect(result).to_contain_text("Order made five in a row: b1–f5.")
    expect(page.locator("[data-testid=play-moves] li")).to_have_text(sides_and_moves(RANDOM_SEED_3_GAME))
    assert re.match(r"http://127\.0\.0\.1:\d+/g/[A-Za-z0-9_-]{22}$", page.url)
    assert page.get_by_test_id("watch-link").input_value() == page.url
    expect(page.locator(".win-line")).to_have_count(1)


def test_an_illegal_click_shows_an_error_and_keyboard_play_and_a_reload_keep_the_game(page: Page) -> None:
    play_the_computer(page, "chaos", level="easy")
    status = wait_for_turn_or_end(page)
    assert "Your move" in status, status  # Order's (the computer's) first move has come
    expect(page.locator("[data-cell].X, [data-cell].O")).to_have_count(1)
    before = board(page)
    taken = next(c for c, s in enumerate(before) if s)
    page.click("button[data-symbol=O]")
    page.click(f"[data-cell='{taken}']")
    status = page.get_by_test_id("status")
    expect(status).to_contain_text("is taken")
    expect(status).to_contain_text("Error")
    assert board(page) == before
    free = max(c for c, s in enumerate(before) if not s)
    page.keyboard.type(f"{'abcdef'[free % 6]}{free // 6 + 1}")  # keyboard: a cell name places O
    expect(page.locator(f"[data-cell='{free}']")).to_have_text("O")
    wait_for_turn_or_end(page)
    page.click("button[data-action=hint]")
    # easy is heuristic, seeded by the server: d4 X, then c4 X after O on f6. Far from any
    # proof: the hint is the network's three favourites and its value for Chaos.
    assert [(c, s) for c, s in enumerate(board(page)) if s] == [(20, "X"), (21, "X"), (35, "O")]
    expect(page.get_by_test_id("hint")).to_have_text(re.compile(
        r"^No proof within 0\.5 s\. Network: favourite moves ([a-f][1-6] [XO], ){2}[a-f][1-6] [XO]; "
        r"value for Chaos [+-]\d\.\d\d \(−1 lost … \+1 won\)\.$"))
    screenshot(page, "web_play.png")
    page.keyboard.type("a6")  # a move makes the hint stale: it goes
    expect(page.locator("[data-cell='30']")).to_have_text("O")
    expect(page.get_by_test_id("hint")).to_have_text("")
    wait_for_turn_or_end(page)
    moves = board(page)
    page.reload()  # the seat token in localStorage puts the tab back into its game
    expect(page.get_by_test_id("status")).to_contain_text("Your move (Chaos)")
    assert board(page) == moves


def test_a_friend_game_through_the_invite_link_with_a_watcher_a_reload_and_a_server_restart(
    browser: Browser, server: Server
) -> None:
    order_ctx, order = new_tab(browser, server.url)
    open_form(order, "friend")
    order.select_option("select[name=side]", "order")
    order.click("button[data-action=play-friend]")
    invite = order.get_by_test_id("invite-link")
    expect(invite).to_have_value(re.compile(r"/g/[A-Za-z0-9_-]{22}#invite=[A-Za-z0-9_-]{22}$"))
    invite_url = invite.input_value()
    watch_url = order.get_by_test_id("watch-link").input_value()
    assert invite_url.startswith(watch_url + "#invite=")
    expect(order.get_by_test_id("status")).to_contain_text("Waiting for your friend")
    screenshot(order, "web_friend.png")
    chaos_ctx, chaos = new_tab(browser, invite_url)
    watch_ctx, watcher = new_tab(browser, watch_url)
    expect(order.get_by_test_id("status")).to_contain_text("Your move (Order)")
    expect(chaos.get_by_test_id("status")).to_contain_text("Your friend's move (Order)")
    expect(watcher.get_by_test_id("status")).to_contain_text("You are watching")
    assert "#invite" not in chaos.url  # the invite is spent, and not left in the address bar
    late_ctx, late = new_tab(browser, invite_url)  # a second guest with the spent invite watches, and is told
    expect(late.get_by_test_id("status")).to_contain_text("This seat is taken: you are watching.")
    late_ctx.close()

    def move(tab: Page, cell: int, symbol: str, ply: int) -> None:
        tab.click(f"button[data-symbol={symbol}]")
        tab.click(f"[data-cell='{cell}']")
        for other in (order, chaos, watcher):
            expect(other.locator("[data-testid=play-moves] li")).to_have_count(ply)

    # Order writes X on a1, b1, c1, d1, e1; Chaos writes O on a3, b3, c3, d3
    move(order, 0, "X", 1)
    move(chaos, 12, "O", 2)
    move(order, 1, "X", 3)
    chaos.reload()  # a reload keeps the seat
    expect(chaos.get_by_test_id("status")).to_contain_text("Your move (Chaos)")
    move(chaos, 13, "O", 4)
    move(order, 2, "X", 5)
    server.restart()  # every tab reconnects by itself and redraws from the stored game
    for tab in (order, chaos, watcher):
        expect(tab.get_by_test_id("status")).to_contain_text(re.compile("Your move|Your friend|watching"), timeout=40_000)
    expect(chaos.get_by_test_id("status")).to_contain_text("Your move (Chaos)")
    assert board(watcher)[:3] == ["X", "X", "X"] and board(watcher)[12:14] == ["O", "O"]
    move(chaos, 14, "O", 6)
    move(order, 3, "X", 7)
    watcher.click("button[data-symbol=O]")
    watcher.click("[data-cell='20']")  # a watcher cannot move
    expect(watcher.get_by_test_id("status")).to_contain_text("only its two players can move")
    move(chaos, 15, "O", 8)
    move(order, 4, "X", 9)
    expect(order.get_by_test_id("result")).to_contain_text("You won!")
    expect(chaos.get_by_test_id("result")).to_contain_text("You lost.")
    expect(watcher.get_by_test_id("result")).to_contain_text("Order won.")
    expect(watcher.get_by_test_id("result")).to_contain_text("a1–e1")
    expect(watcher.locator(".win-line")).to_have_count(1)
    expect(watcher.locator("button[data-action=rematch]")).to_be_hidden()
    expect(order.locator("[data-testid=play-moves] li").nth(8)).to_have_text("Order: e1 X")
    order.click("button[data-action=rematch]")  # sides swapped: the friend now plays Order
    expect(chaos.get_by_test_id("status")).to_contain_text("Your move (Order)")
    expect(order.get_by_test_id("status")).to_contain_text("Your friend's move (Order)")
    chaos_ctx.close()  # the friend closes the tab: the other player and the watcher's page say so
    expect(order.get_by_test_id("status")).to_contain_text("The other player has left the game.")
    for context in (order_ctx, watch_ctx):
        context.close()


def test_swedish_rules_and_the_language_is_remembered(browser: Browser, server: Server) -> None:
    context, tab = new_tab(browser, server.url, locale="de-DE")  # Accept-Language picks German
    rules = tab.get_by_test_id("rules")
    expect(rules).to_contain_text("Was die Seiten wollen")
    tab.select_option("select[name=language]", "sv")
    expect(rules).to_contain_text("Vad sidorna vill")
    expect(rules).to_contain_text("Stephen Sniderman")
    expect(rules.locator("caption")).to_have_text("Hur Ordning och kaos skiljer sig från tre i rad")
    expect(tab.locator("output[name=speed-shown]")).to_have_text("0,5 s")  # Intl's decimal comma
    expect(tab.locator("[data-cell='14']")).to_have_attribute("aria-label", "c3, tom")
    expect(tab.locator("button[data-open=friend]")).to_have_text("Spela mot en vän")
    tab.reload()
    expect(rules).to_contain_text("Vad sidorna vill")
    assert tab.locator("html").get_attribute("lang") == "sv"
    expect(tab.locator("footer .build")).to_have_text(re.compile(r"^v\d+\.\d+\.\d+ · \S+$"))
    context.close()


def in_view(tab: Page, selector: str) -> bool:
    """Whether the element's whole box lies inside the viewport (to the pixel: scrolling to an
    element leaves its box a fraction of a pixel off)."""
    return tab.evaluate("""(selector) => {
        const box = document.querySelector(selector).getBoundingClientRect();
        return box.top > -1 && box.left > -1 && box.bottom < innerHeight + 1 && box.right < innerWidth + 1;
    }""", selector)


@pytest.mark.parametrize("width,height", [(390, 844), (360, 740)])
def test_a_phone_keeps_the_picker_by_the_board_and_never_scrolls_sideways(
    browser: Browser, server: Server, width: int, height: int
) -> None:
    """In a friend game and against the computer, with the board in view: the X/O picker, the
    status (the side to move) and the last move are on screen too, and nothing is wider than
    the screen; each move is one line."""
    context, tab = new_tab(browser, server.url, width=width, height=height)

    def check() -> None:
        tab.evaluate("document.querySelector('#board').scrollIntoView({ block: 'start' })")
        assert tab.evaluate("[document.documentElement.scrollWidth, innerWidth]") == [width, width]
        for selector in ("#board", "button[data-symbol=X]", "button[data-symbol=O]", "[data-testid=status]",
                         "[data-testid=announce]"):
            assert in_view(tab, selector), (width, selector)

    open_form(tab, "friend")
    tab.click("button[data-action=play-friend]")
    expect(tab.get_by_test_id("invite-link")).to_have_value(re.compile("invite="))
    check()
    if width == 390:
        screenshot(tab, "web_phone.png", full_page=True)
    play_the_computer(tab, "order", spec="random:seed=3")
    expect(tab.get_by_test_id("status")).to_contain_text("Your move")
    for turn, move in enumerate(RANDOM_SEED_3_GAME[:6:2], start=1):
        tab.click(f"[data-cell='{'abcdef'.index(move[0]) + 6 * (int(move[1]) - 1)}']")
        # the reply itself, not the last turn's words still on screen
        expect(tab.locator("[data-testid=play-moves] li")).to_have_count(2 * turn)
        expect(tab.get_by_test_id("announce")).to_contain_text("Chaos: ")
        expect(tab.get_by_test_id("status")).to_contain_text("Your move")
    check()
    heights = tab.eval_on_selector_all("[data-testid=play-moves] li", "items => items.map(i => i.getBoundingClientRect().height)")
    assert len(heights) == 6 and max(heights) < 1.5 * min(heights)  # no move wraps onto a second line
    tops = tab.eval_on_selector_all("[data-testid=play-moves] li", "items => items.map(i => i.getBoundingClientRect().top)")
    assert tops[0] == tops[1] and tops[2] == tops[3] and tops[1] < tops[2]  # Order's and Chaos's moves pair up
    tab.click("[data-cell='35']")  # the f column is on screen and takes clicks
    expect(tab.locator("[data-cell='35']")).to_have_text("X")
    context.close()


def test_watch_mode_advances(page: Page) -> None:
    """Heuristic against random (the server seeds both), two seconds between moves: paused
    after the first move, so far from the ninth and last that the pause always comes
    first; a step plays one move; at no delay, resumed, it plays out the known game."""
    page.click("[data-mode=watch]")
    page.fill("input[name=watch-order]", "heuristic")
    page.fill("input[name=watch-chaos]", "random")
    page.fill("input[name=speed]", "2000")
    page.click("button[data-action=watch-start]")
    stones = page.locator("[data-cell] >> text=/[XO]/")
    moves = page.locator("[data-testid=watch-moves] li")
    expect(moves.first).to_be_attached()
    page.click("button[data-action=watch-pause]")
    expect(page.get_by_test_id("status")).to_contain_text("paused")
    paused = stones.count()
    assert 1 <= paused < len(HEURISTIC_VS_RANDOM_GAME)
    page.click("button[data-action=watch-step]")
    expect(stones).to_have_count(paused + 1)
    expect(page.get_by_test_id("status")).to_contain_text("paused")
    screenshot(page, "web_watch.png")
    page.fill("input[name=speed]", "0")
    page.click("button[data-action=watch-pause]")  # resume to the end
    expect(page.get_by_test_id("status")).to_contain_text("Game over", timeout=60_000)
    expect(moves).to_have_text(sides_and_moves(HEURISTIC_VS_RANDOM_GAME))


def test_study_mode_loads_a_saved_file(page: Page) -> None:
    page.click("[data-mode=study]")
    expect(page.locator("select[name=games-file] option")).to_have_text(["match.jsonl"])
    page.click("button[data-action=open-file]")
    status = page.get_by_test_id("status")
    expect(status).to_contain_text("match.jsonl, game #0")
    assert board(page) == [""] * 36
    page.click("button[data-action=next]")
    expect(page.locator("[data-cell] >> text=/[XO]/")).to_have_count(1)
    expect(page.get_by_test_id("analysis")).to_contain_text("The solver proved", timeout=60_000)
    expect(page.locator("[data-testid=value-curve] polyline")).to_have_count(1)
    page.select_option("select[name=game]", "1")
    expect(status).to_contain_text("game #1")
    expect(page.get_by_test_id("analysis")).to_contain_text("The solver proved", timeout=60_000)
    page.keyboard.press("End")
    expect(status).to_contain_text("won")
    length = page.locator("[data-testid=study-moves] li").count()
    page.click(f"[data-testid=study-moves] li:nth-child({max(1, length - 4)})")
    expect(page.locator("[data-testid=study-moves] li.current")).to_have_count(1)
    screenshot(page, "web_study.png")


def friend_game_after_one_move(
    browser: Browser, server: Server, time_control: str = "none"
) -> tuple[BrowserContext, Page, BrowserContext, Page]:
    """Order's tab starts a friend game with ``time_control``, Chaos's tab opens the invite,
    Order plays X on a1: both contexts and tabs."""
    order_ctx, order = new_tab(browser, server.url)
    open_form(order, "friend")
    order.select_option("select[name=side]", "order")
    order.select_option("select[name=time_control]", time_control)
    order.click("button[data-action=play-friend]")
    invite = order.get_by_test_id("invite-link")
    expect(invite).to_have_value(re.compile("invite="))
    chaos_ctx, chaos = new_tab(browser, invite.input_value())
    expect(order.get_by_test_id("status")).to_contain_text("Your move (Order)")
    order.click("button[data-symbol=X]")
    order.click("[data-cell='0']")
    return order_ctx, order, chaos_ctx, chaos


def test_resign_asks_first_and_both_tabs_show_who_resigned(browser: Browser, server: Server) -> None:
    order_ctx, order, chaos_ctx, chaos = friend_game_after_one_move(browser, server)
    expect(chaos.locator("[data-testid=play-moves] li")).to_have_count(1)
    chaos.once("dialog", lambda dialog: dialog.dismiss())  # a second thought: nothing happens
    chaos.click("button[data-action=resign]")
    expect(chaos.locator("button[data-action=resign]")).to_be_enabled()
    chaos.once("dialog", lambda dialog: dialog.accept())
    chaos.click("button[data-action=resign]")
    for tab in (order, chaos):
        expect(tab.get_by_test_id("result")).to_contain_text("Chaos resigned.")
        expect(tab.locator("button[data-action=resign]")).to_be_disabled()
    expect(order.get_by_test_id("result")).to_contain_text("You won")
    order_ctx.close()
    chaos_ctx.close()


def test_a_clocked_friend_game_shows_both_clocks_in_both_tabs(browser: Browser, server: Server) -> None:
    order_ctx, order, chaos_ctx, chaos = friend_game_after_one_move(browser, server, "3+2")
    for tab in (order, chaos):  # the first move is not charged; Chaos's clock runs from it
        expect(tab.get_by_test_id("clock-order")).to_have_text("Order: 3:00 left")
        expect(tab.get_by_test_id("clock-chaos")).to_have_class(re.compile("running"))
        expect(tab.get_by_test_id("clock-chaos")).to_have_text(re.compile(r"^Chaos: [23]:\d\d left$"))
    order_ctx.close()
    chaos_ctx.close()


def test_two_browsers_meet_through_the_lobby_and_play(browser: Browser, server: Server) -> None:
    maker_ctx, maker = new_tab(browser, server.url)
    taker_ctx, taker = new_tab(browser, server.url)
    open_form(maker, "friend")
    maker.select_option("select[name=side]", "chaos")
    maker.select_option("select[name=time_control]", "5+3")
    maker.click("button[data-action=challenge]")
    offer = taker.get_by_test_id("lobby").locator("li", has_text="5+3")
    expect(offer).to_contain_text("Plays Chaos")
    offer.get_by_role("button", name="Accept").click()
    expect(taker.get_by_test_id("status")).to_contain_text("Your move (Order)")
    taker.click("button[data-symbol=X]")
    taker.click("[data-cell='0']")
    expect(maker.locator("[data-testid=play-moves] li")).to_have_count(1)
    expect(maker.get_by_test_id("clock-chaos")).to_have_class(re.compile("running"))
    expect(taker.get_by_test_id("lobby").locator("li")).to_have_count(0)  # taken: gone
    maker_ctx.close()
    taker_ctx.close()


def ask_to_play_anyone(tab: Page, time_control: str) -> None:
    """Press the quick-pairing button of ``time_control`` ("Play anyone" at that clock)."""
    tab.click(f"button[data-seek='{time_control}']")


def test_play_anyone_pairs_two_browsers_on_the_same_time_control(browser: Browser, server: Server) -> None:
    """Two tabs asking for 3+2 land in one game on opposite sides and see each other's move; a
    tab that asked for 5+3 in between is left waiting, and is paired with the next 5+3."""
    tabs = [new_tab(browser, server.url) for _ in range(4)]
    first, other_clock, second, other_clock_too = (tab for _, tab in tabs)
    # each waits on the server's answer before the next asks, so the server sees them in this order
    for tab, time_control in ((first, "3+2"), (other_clock, "5+3")):
        ask_to_play_anyone(tab, time_control)
        expect(tab.get_by_test_id("lobby-seeking")).to_be_visible()
    ask_to_play_anyone(second, "3+2")
    seated = re.compile(r"^(Your move|Your friend's move) \(Order\)")
    for tab in (first, second):
        expect(tab.get_by_test_id("status")).to_have_text(seated)
        expect(tab).to_have_url(re.compile(r"/g/[A-Za-z0-9_-]{16,64}$"))
        expect(tab.get_by_test_id("clock-order")).to_have_text("Order: 3:00 left")
        expect(tab.get_by_test_id("lobby-seeking")).to_be_hidden()
    assert first.url == second.url  # one game
    statuses = {tab: tab.get_by_test_id("status").text_content() or "" for tab in (first, second)}
    movers = [tab for tab, text in statuses.items() if text.startswith("Your move (Order)")]
    assert len(movers) == 1, statuses  # opposite sides: exactly one of them plays Order
    order = movers[0]
    chaos = second if order is first else first
    order.click("button[data-symbol=O]")
    order.click("[data-cell='14']")
    expect(chaos.locator("[data-testid=play-moves] li")).to_have_count(1)
    expect(chaos.get_by_test_id("status")).to_have_text(re.compile(r"^Your move \(Chaos\)"))
    expect(chaos.locator("[data-cell='14']")).to_have_text("O")
    # the 5+3 tab was not paired with either: it still waits, and the next 5+3 meets it
    expect(other_clock.get_by_test_id("lobby-seeking")).to_be_visible()
    ask_to_play_anyone(other_clock_too, "5+3")
    for tab in (other_clock, other_clock_too):
        expect(tab.get_by_test_id("clock-order")).to_have_text("Order: 5:00 left")
        expect(tab).to_have_url(re.compile(r"/g/[A-Za-z0-9_-]{16,64}$"))
    assert other_clock.url == other_clock_too.url != first.url
    for context, _ in tabs:
        context.close()


@pytest.mark.parametrize("lang", ["en", "sv", "nb", "de"])
def test_no_tab_scrolls_sideways_on_a_narrow_phone_in_any_language(browser: Browser, server: Server, lang: str) -> None:
    """At 360 px, in each language and each mode, nothing is wider than the screen (long
    words in the rules table and the lesson included)."""
    context, tab = new_tab(browser, server.url, width=360, height=740)
    tab.select_option("select[name=language]", lang)
    expect(tab.locator("html")).to_have_attribute("lang", lang)
    widths = {}
    for mode in ("play", "watch", "study", "learn", "puzzles"):
        tab.click(f"[data-mode={mode}]")
        widths[mode] = tab.evaluate("document.documentElement.scrollWidth")
    context.close()
    assert widths == dict.fromkeys(widths, 360), widths


def test_accepting_a_challenge_asks_before_leaving_a_game_in_progress(browser: Browser, server: Server) -> None:
    maker_ctx, maker = new_tab(browser, server.url)
    taker_ctx, taker = new_tab(browser, server.url)
    play_the_computer(taker, "order", spec="random:seed=3")
    wait_for_turn_or_end(taker)
    taker.click("[data-cell='0']")
    expect(taker.locator("[data-testid=play-moves] li")).to_have_count(2)
    open_form(maker, "friend")
    maker.select_option("select[name=side]", "chaos")
    maker.click("button[data-action=challenge]")
    offer = taker.get_by_test_id("lobby").locator("li")
    asked: list[str] = []
    taker.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    offer.get_by_role("button", name="Accept").click()
    expect(offer).to_have_count(1)  # a second thought: the challenge stays open, the game goes on
    assert asked == ["Leave the game in progress and start a new one?"]
    expect(taker.locator("[data-testid=play-moves] li")).to_have_count(2)
    taker.once("dialog", lambda dialog: dialog.accept())
    offer.get_by_role("button", name="Accept").click()
    expect(taker.get_by_test_id("status")).to_contain_text("Your move (Order)")
    expect(taker.locator("[data-testid=play-moves] li")).to_have_count(0)
    maker_ctx.close()
    taker_ctx.close()


def focused_cell(page: Page) -> int:
    """The board cell that has the keyboard focus."""
    return int(page.evaluate("document.activeElement.dataset.cell"))


def test_a_game_played_to_the_end_with_the_keyboard_alone(page: Page) -> None:
    """Tab to "Play the computer", Enter opens its form; Tab to its start button (Order against
    easy), Enter; then, on the board, arrow keys to the first empty cell and x writes X there,
    until the game ends. The cells are buttons named "c3, empty" / "c3, X"; the last move and
    the result are said in the live region."""
    for target in ("[data-open=computer]", "[data-action=new-game]"):
        for _ in range(40):
            if page.evaluate("(target) => document.activeElement.matches(target)", target):
                break
            page.keyboard.press("Tab")
        else:
            pytest.fail(f"Tab never reached {target}")
        page.keyboard.press("Enter")
    status = wait_for_turn_or_end(page)
    for _ in range(30):  # past the game's form, the start page's buttons and the board's tools
        if page.evaluate("document.activeElement.dataset.cell !== undefined"):
            break
        page.keyboard.press("Shift+Tab")  # the board's one tab stop comes before the game's form
    else:
        pytest.fail("Tab never reached the board")
    assert page.locator("[data-cell][tabindex='0']").count() == 1
    expect(page.get_by_role("button", name="a1, empty", exact=True)).to_be_visible()
    moves = 0
    while "Game over" not in status:
        assert "Error" not in status, status
        target = board(page).index("")
        here = focused_cell(page)
        for _ in range(abs(target // 6 - here // 6)):
            page.keyboard.press("ArrowDown" if target // 6 > here // 6 else "ArrowUp")
        for _ in range(abs(target % 6 - here % 6)):
            page.keyboard.press("ArrowRight" if target % 6 > here % 6 else "ArrowLeft")
        assert focused_cell(page) == target
        page.keyboard.press("x")
        moves += 1
        name = f"{'abcdef'[target % 6]}{target // 6 + 1}"
        expect(page.locator(f"[data-cell='{target}']")).to_have_attribute("aria-label", re.compile(f"^{name}, X"))
        status = wait_for_turn_or_end(page)
    assert moves >= 5
    expect(page.get_by_test_id("result")).to_be_visible()
    title = page.locator("[data-testid=result] .result-title").text_content() or ""
    expect(page.get_by_test_id("announce")).to_contain_text(title)
    last = page.locator("[data-testid=play-moves] li").last.text_content() or ""
    expect(page.get_by_test_id("announce")).to_contain_text(last)
    expect(page.locator("[data-cell].last")).to_have_attribute("aria-label", re.compile(", last move$"))


def test_the_cells_are_named_in_the_readers_language(browser: Browser, server: Server) -> None:
    context, tab = new_tab(browser, server.url, locale="de-DE")
    expect(tab.get_by_role("button", name="c3, leer", exact=True)).to_have_count(1)
    tab.select_option("select[name=language]", "sv")
    expect(tab.get_by_role("button", name="c3, tom", exact=True)).to_have_count(1)
    expect(tab.get_by_role("group", name="Brädet, 6 gånger 6 rutor")).to_be_visible()
    context.close()


AXE = Path(__file__).parent / "vendor" / "axe.min.js"  # axe-core 4.14.1 from npm, its licence header kept


def serious_axe_violations(page: Page) -> list[str]:
    """axe-core's violations of impact serious or critical on the page as it is now, one line
    each: the rule, its impact and the first nodes it names."""
    if not page.evaluate("typeof axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    violations = page.evaluate("axe.run(document, { resultTypes: ['violations'] }).then(r => r.violations)")
    return [f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes'][:3]]}"
            for v in violations if v["impact"] in ("serious", "critical")]


@pytest.mark.parametrize("lang", ["en", "sv", "nb", "de"])
def test_axe_finds_nothing_serious_in_any_state_of_the_page(browser: Browser, server: Server, lang: str) -> None:
    """The start page, a game in progress, a finished game, watch, study, a puzzle before and
    after an attempt and the proof page, in each language:
    axe-core (vendored from npm, injected past the page's CSP) reports no violation of impact
    serious or critical."""
    context = browser.new_context(viewport={"width": 1180, "height": 900}, bypass_csp=True)
    tab = context.new_page()
    tab.set_default_timeout(TIMEOUT_MS)
    tab.goto(server.url)
    tab.select_option("select[name=language]", lang)
    expect(tab.locator("html")).to_have_attribute("lang", lang)
    expect(tab.get_by_test_id("status")).not_to_have_text(re.compile("…"))
    found = {"start": serious_axe_violations(tab)}
    play_the_computer(tab, "order", spec="random:seed=3", time_control="10+5")  # the clocks are checked too
    expect(tab.get_by_test_id("clocks")).to_be_visible()
    moves = tab.locator("[data-testid=play-moves] li")
    expect(moves).to_have_count(0)
    for ply, move in enumerate(RANDOM_SEED_3_GAME[::2]):
        cell = "abcdef".index(move[0]) + 6 * (int(move[1]) - 1)
        tab.click(f"button[data-symbol={move[-1]}]")
        tab.click(f"[data-cell='{cell}']")
        expect(moves).to_have_count(min(2 * ply + 2, len(RANDOM_SEED_3_GAME)))
        if ply == 2:
            found["game in progress"] = serious_axe_violations(tab)
    expect(tab.get_by_test_id("result")).to_be_visible()
    found["finished game"] = serious_axe_violations(tab)
    tab.click("[data-mode=watch]")
    tab.click("button[data-action=watch-start]")
    expect(tab.locator("[data-testid=watch-moves] li").first).to_be_attached()
    found["watch"] = serious_axe_violations(tab)
    tab.click("[data-mode=study]")
    tab.click("button[data-action=open-file]")
    expect(tab.locator("[data-testid=study-moves] li").first).to_be_attached()
    tab.click("button[data-action=next]")
    found["study"] = serious_axe_violations(tab)
    tab.click("[data-mode=puzzles]")
    expect(tab.get_by_test_id("puzzle-prompt")).to_have_attribute("data-puzzle", re.compile("^p"))
    found["puzzle"] = serious_axe_violations(tab)
    shown = SOLUTIONS[tab.get_by_test_id("puzzle-prompt").get_attribute("data-puzzle")]
    wrong = next(a for a in parse_board(shown.board).legal_actions() if a != parse_move(shown.solution[0]))
    tab.click(f".tools button[data-symbol={'XO'[wrong & 1]}]")
    tab.click(f"[data-cell='{wrong >> 1}']")
    expect(tab.get_by_test_id("puzzle-result")).to_be_visible(timeout=TIMEOUT_MS)
    found["puzzle answered"] = serious_axe_violations(tab)
    href = tab.locator("a[data-i18n='rules.proof_link']").get_attribute("href")
    assert href == f"/proof/{lang}"  # the rules panel's proof link follows the language
    tab.goto(server.url.rstrip("/") + href)
    expect(tab.locator("html")).to_have_attribute("lang", lang)
    found["proof page"] = serious_axe_violations(tab)
    context.close()
    assert not any(found.values()), {state: lines for state, lines in found.items() if lines}


def test_a_new_game_asks_before_leaving_one_in_progress(page: Page) -> None:
    """The n key (or Enter on the still-focused "Play the computer") during a game asks
    first: no, and the game stays; yes, and a new one starts."""
    play_the_computer(page, "order", spec="random:seed=3")
    wait_for_turn_or_end(page)
    page.click("[data-cell='0']")
    expect(page.locator("[data-testid=play-moves] li")).to_have_count(2)
    address = page.url
    asked: list[str] = []

    def answer(accept: bool):
        def handle(dialog) -> None:
            asked.append(dialog.message)
            dialog.accept() if accept else dialog.dismiss()
        return handle

    page.once("dialog", answer(False))
    page.keyboard.press("n")
    page.focus("button[data-action=new-game]")
    page.once("dialog", answer(False))
    page.keyboard.press("Enter")
    assert asked == ["Leave the game in progress and start a new one?"] * 2
    expect(page.locator("[data-testid=play-moves] li")).to_have_count(2)
    assert page.url == address
    page.once("dialog", answer(True))
    page.keyboard.press("Enter")
    expect(page.locator("[data-testid=play-moves] li")).to_have_count(0)
    expect(page).not_to_have_url(address)


def test_without_a_games_folder_the_study_list_says_so(browser: Browser, tmp_path: Path) -> None:
    bare = Server(None, tmp_path / "games.sqlite3")  # type: ignore[arg-type]
    try:
        context, tab = new_tab(browser, bare.url)
        tab.click("[data-mode=study]")
        expect(tab.locator("select[name=games-file] option")).to_have_text(["(no games folder)"])
        tab.select_option("select[name=language]", "nb")
        expect(tab.locator("select[name=games-file] option")).to_have_text(["(ingen partimappe)"])
        context.close()
    finally:
        bare.stop()


# -- the Puzzles tab -----------------------------------------------------------------------------


def shown_puzzle(tab: Page, previous: str | None = None):
    """The puzzle the tab shows (after ``previous``, when given)."""
    prompt = tab.get_by_test_id("puzzle-prompt")
    expect(prompt).to_have_text(re.compile("to play and (win|survive)"))
    if previous is not None:
        expect(prompt).not_to_have_attribute("data-puzzle", previous)
    return SOLUTIONS[prompt.get_attribute("data-puzzle")]


def rating(tab: Page) -> int:
    text = tab.get_by_test_id("puzzle-rating").inner_text()
    return int(re.search(r"(\d+)$", text).group(1))


def test_a_puzzle_move_past_the_address_limit_is_refused_in_the_readers_language(
    browser: Browser, tmp_path: Path
) -> None:
    now = {"t": 1000.0}
    limited = Server(None, tmp_path / "games.sqlite3",  # type: ignore[arg-type]
                     AddressLimits(searches_per_minute=1, clock=lambda: now["t"]))
    try:
        spend = urllib.request.Request(limited.url + "puzzles/move", data=b'{"player": "?"}',
                                       headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError, match="400"):  # the minute's one request, from 127.0.0.1
            urllib.request.urlopen(spend, timeout=30)
        context, tab = new_tab(browser, limited.url, locale="sv-SE")
        tab.click("button[data-mode=puzzles]")
        prompt = tab.get_by_test_id("puzzle-prompt")
        expect(prompt).to_have_attribute("data-puzzle", re.compile("^p"))
        shown = SOLUTIONS[prompt.get_attribute("data-puzzle")]
        wrong = next(a for a in parse_board(shown.board).legal_actions() if a != parse_move(shown.solution[0]))
        tab.click(f".tools button[data-symbol={'XO'[wrong & 1]}]")
        tab.click(f"[data-cell='{wrong >> 1}']")
        expect(tab.get_by_test_id("status")).to_have_text(
            "Fel: för många drag i problem och lektioner från din adress (högst 1 i minuten): försök igen om 60 s")
        now["t"] += 60  # the minute is over: the same move is judged
        tab.click(f"[data-cell='{wrong >> 1}']")
        expect(tab.get_by_test_id("puzzle-result")).to_be_visible(timeout=TIMEOUT_MS)
        context.close()
    finally:
        limited.stop()


def test_solve_one_fail_one_and_the_rating_survives_a_reload(browser: Browser, server: Server) -> None:
    context, tab = new_tab(browser, server.url)
    tab.click("button[data-mode=puzzles]")
    expect(tab.get_by_test_id("puzzle-rating")).to_have_text("Your puzzle rating: 1500")
    first = shown_puzzle(tab)
    expect(tab.get_by_test_id("puzzle-prompt")).to_have_text(
        "Order to play and win" if first.kind == "order_wins" else "Chaos to play and survive")
    line = [parse_move(m) for m in first.solution]
    for i in range(0, len(line), 2):
        action = line[i]
        tab.click(f".tools button[data-symbol={'XO'[action & 1]}]")
        tab.click(f"[data-cell='{action >> 1}']")
        expect(tab.locator(f"[data-cell='{action >> 1}']")).to_have_text("XO"[action & 1], timeout=TIMEOUT_MS)
        if tab.get_by_test_id("puzzle-result").is_visible():
            break
        if i + 1 < len(line):  # the server answers with the solution's defence
            reply = line[i + 1]
            expect(tab.locator(f"[data-cell='{reply >> 1}']")).to_have_text("XO"[reply & 1], timeout=TIMEOUT_MS)
    result = tab.get_by_test_id("puzzle-result")
    expect(result).to_contain_text("Correct!", timeout=TIMEOUT_MS)
    expect(result).to_contain_text(re.compile(r"Rating 1500 → \d+ \(\+\d+\)"))
    up = rating(tab)
    assert up > 1500

    tab.click("button[data-action=next-puzzle]")
    second = shown_puzzle(tab, first.id)
    expect(result).to_be_hidden()
    key = parse_move(second.solution[0])
    wrong = next(a for a in parse_board(second.board).legal_actions() if a != key)
    tab.locator("body").click(position={"x": 5, "y": 5})  # keys go to the page, not a button
    for press in ("xo"[wrong & 1], *cell_name(wrong >> 1)):
        tab.keyboard.press(press)
    kind_of_move = "winning" if second.kind == "order_wins" else "saving"
    expect(result).to_contain_text(f"Not quite: the {kind_of_move} move was {second.solution[0]}.", timeout=TIMEOUT_MS)
    expect(result).to_contain_text("The line: " + second.solution[0])
    expect(result).to_contain_text(re.compile(rf"Rating {up} → \d+ \(−\d+\)"))
    down = rating(tab)
    assert down < up

    tab.reload()
    tab.click("button[data-mode=puzzles]")
    expect(tab.get_by_test_id("puzzle-rating")).to_have_text(f"Your puzzle rating: {down}")
    context.close()


def test_the_puzzles_tab_fits_a_phone(browser: Browser, server: Server) -> None:
    context, tab = new_tab(browser, server.url, width=390, height=844)
    tab.click("button[data-mode=puzzles]")
    shown_puzzle(tab)
    tab.click("button[data-action=daily-puzzle]")
    expect(tab.get_by_test_id("puzzle-prompt")).to_contain_text("Puzzle of the day: ")
    assert tab.evaluate("[document.documentElement.scrollWidth, innerWidth]") == [390, 390]
    context.close()


def test_a_refused_tab_says_why_until_taken_and_the_clocks_stop_while_disconnected(
        browser: Browser, tmp_path: Path) -> None:
    live = Server(tmp_path, tmp_path / "games.sqlite3", AddressLimits(connections=1))
    try:
        first_ctx, first = new_tab(browser, live.url)
        second_ctx = browser.new_context(locale="en-GB")
        second = second_ctx.new_page()
        second.set_default_timeout(TIMEOUT_MS)
        second.goto(live.url)  # one page per address: this one is refused
        status = second.get_by_test_id("status")
        expect(status).to_have_text(re.compile(r"^Not connected: too many open pages from your address \(at most 1\)"))
        expect(status).not_to_contain_text("Connection lost")
        first_ctx.close()  # a place frees: the refused tab is taken at its next try
        expect(status).to_have_text(re.compile("Pick a time control"), timeout=60_000)
        play_the_computer(second, "order", time_control="3+2")
        second.click("button[data-symbol=X]")
        second.click("[data-cell='0']")  # not charged; the computer's reply starts Order's clock
        clock = second.get_by_test_id("clock-order")
        expect(clock).to_have_class(re.compile("running"))
        live.stop()
        expect(status).to_contain_text("Connection lost")
        expect(clock).not_to_have_class(re.compile("running"))  # no ticking the server cannot hear
        live.start()
        expect(clock).to_have_class(re.compile("running"), timeout=60_000)
        second_ctx.close()
    finally:
        live.stop()


def test_after_the_workers_died_at_every_try_the_page_asks_the_computer_again(browser: Browser, tmp_path: Path) -> None:
    started, release = tmp_path / "started", tmp_path / "release"
    pool = WorkerPool("processes", 1, warm=warm_stalling, warm_args=(str(started), str(release)))
    live = Server(tmp_path, tmp_path / "games.sqlite3", workers=pool)
    try:
        context, tab = new_tab(browser, live.url)
        play_the_computer(tab, "chaos")  # the computer plays Order: its move starts at once
        killed: set[int] = set()

        def kill_the_tries_begun() -> bool:
            """Every try's worker is killed once its search began; true after the third."""
            for pid in [pid for pid in pool.pids() if pid not in killed and Path(f"{started}-{pid}").exists()]:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            return len(killed) >= 3

        wait_for(kill_the_tries_begun, "three tries began", seconds=120)
        status, retry = tab.get_by_test_id("status"), tab.locator("button[data-action=retry]")
        expect(status).to_contain_text("the computer's process stopped 3 times while working on this",
                                       timeout=60_000)
        expect(retry).to_be_visible()
        expect(retry).to_have_text("Ask the computer again")
        release.touch()
        retry.click()
        expect(tab.locator("[data-testid=play-moves] li")).to_have_count(1, timeout=60_000)
        expect(retry).to_be_hidden()
        context.close()
    finally:
        live.stop()
        pool.close()
