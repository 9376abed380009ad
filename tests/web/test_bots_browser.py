"""A person in Chromium challenges a bot from the lobby and plays it to the end: the bot is a
:class:`~orderchaos.web.bot_client.BotClient` (the heuristic) connected to the live server of
test_browser's harness with its own token; the lobby lists it as ``bot:NAME`` with its rating,
one click challenges it on the chosen clock, and the person's clicks and the bot's replies
fill the board until the game ends. The game is casual: the bot's rating stays 1500."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import browser_harness
from helpers import wait_for
from orderchaos.web import bots
from orderchaos.web.bot_client import BotClient, BotOptions, agent_factory
from orderchaos.web.store import GameStore

harness = browser_harness.load()
Browser, Page, Server, expect = harness.Browser, harness.Page, harness.Server, harness.expect
browser = harness.browser  # the fixture, by name
board, new_tab, wait_for_turn_or_end = harness.board, harness.new_tab, harness.wait_for_turn_or_end

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    """A live server whose store holds the bot account ``robot``; with the bot's token."""
    db = tmp_path_factory.mktemp("db") / "games.sqlite3"
    store = GameStore(db)
    token = bots.add_account(store, "robot")
    store.close()
    live = Server(tmp_path_factory.mktemp("games"), db)
    yield live, token
    live.stop()


class RunningBot:
    """A bot client on its own event loop in a thread, with what it said."""

    def __init__(self, url: str, token: str) -> None:
        self.lines: list[str] = []
        self.client: BotClient | None = None
        self.loop = asyncio.new_event_loop()
        self.failure: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(url, token), daemon=True)
        self.thread.start()

    def _run(self, url: str, token: str) -> None:
        asyncio.set_event_loop(self.loop)

        async def main() -> None:
            self.client = BotClient(url, token, agent_factory("heuristic"), BotOptions(accept=frozenset({"casual"})),
                                    self.lines.append)
            await self.client.run()

        try:
            self.loop.run_until_complete(main())
        except BaseException as exc:  # shown by alive() in the test's thread
            self.failure = exc

    def alive(self) -> None:
        assert self.thread.is_alive(), f"the bot stopped: {self.failure!r} {self.lines[-3:]}"

    def stop(self) -> None:
        if self.client is not None and self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.client.stop)
        self.thread.join(timeout=60)


def test_a_person_challenges_a_bot_in_the_lobby_and_plays_it_to_the_end(
        browser: Browser, site: tuple[Server, str]) -> None:
    server, token = site
    robot = RunningBot(server.url, token)
    try:
        wait_for(lambda: any("waiting for challenges" in line for line in robot.lines), "the bot connected",
                 still_running=robot.alive)
        context, tab = new_tab(browser, server.url)
        listed = tab.get_by_test_id("bots").locator("li", has_text="bot:robot")
        expect(listed).to_contain_text("bot:robot, rating 1,500")
        tab.select_option("select[name=bot_time_control]", "5+3")
        listed.get_by_role("button", name="Challenge").click()
        expect(tab.get_by_test_id("clock-order")).to_be_visible()
        status = wait_for_turn_or_end(tab)
        clicks = 0
        while "Game over" not in status:
            assert "Error" not in status, status
            cells = board(tab)
            before = tab.locator("[data-testid=play-moves] li").count()
            tab.click(f"[data-cell='{cells.index('')}']")
            clicks += 1
            expect(tab.locator("[data-testid=play-moves] li")).not_to_have_count(before)  # the move is in
            status = wait_for_turn_or_end(tab)
            assert clicks <= 18
        expect(tab.get_by_test_id("result")).to_be_visible()
        moves = tab.locator("[data-testid=play-moves] li")
        assert moves.count() >= 2 * clicks - 1
        wait_for(lambda: robot.client is not None and len(robot.client.figures.results) == 1, "the bot saw the end",
                 still_running=robot.alive)
        with urllib.request.urlopen(server.url + "api/bots", timeout=30) as answer:
            listed_bots: list[dict[str, Any]] = json.loads(answer.read())
        assert listed_bots == [{"name": "robot", "online": True, "rating": 1500.0, "rd": 350.0, "games": 0}]
        context.close()
    finally:
        robot.stop()
    assert not Path(server.db).read_bytes().count(token.encode())
