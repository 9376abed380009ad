"""Two ``orderchaos serve --bus`` instances behind Caddy as one site, in Chromium: two browser
profiles, each pinned to its own instance, play a friend game and meet in the lobby.

Caddy runs deploy/Caddyfile-instances' ``reverse_proxy`` block with two changes: the
``cookie`` load-balancing policy instead of ``least_conn``, so that a profile's ``lb`` cookie
(Caddy's HMAC-SHA256 of an upstream's address) chooses its instance, and no health checks (an
instance Caddy counts as down gets its pinned requests sent elsewhere), so that the test, not
chance, decides who reaches which. Each instance's log then shows which game events it served. The
instances share one SQLite store and the tests' redis-server; everything is on loopback. The
harness (the browser) is test_browser's (:mod:`browser_harness`).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

import browser_harness
from helpers import REPO, RedisServer, free_loopback_port, wait_until_serving

harness = browser_harness.load()
Browser, BrowserContext, Page, expect = harness.Browser, harness.BrowserContext, harness.Page, harness.expect
browser = harness.browser  # the fixture, by name
CADDY = Path("/usr/bin/caddy")

if not CADDY.exists():
    reason = f"{CADDY} is missing: install it with `apt-get install -y caddy`"
    if os.environ.get("CI"):
        raise RuntimeError(f"the instances' browser test under CI: {reason} (.ci/run should have)")
    pytest.skip(reason, allow_module_level=True)


def pinning_caddyfile(listen: int, backends: list[int]) -> str:
    """deploy/Caddyfile-instances' ``reverse_proxy`` block on plain HTTP at 127.0.0.1:``listen``
    (no admin API), its upstreams ``backends``, its policy ``cookie``, without health checks."""
    shipped = (REPO / "deploy" / "Caddyfile-instances").read_text()
    block = re.search(r"^\treverse_proxy 127\.0\.0\.1:8001 127\.0\.0\.1:8002 \{\n.*?^\t\}\n", shipped,
                      re.MULTILINE | re.DOTALL)
    assert block is not None and "lb_policy least_conn" in block.group(0), "Caddyfile-instances changed"
    proxy = (block.group(0).replace("127.0.0.1:8001 127.0.0.1:8002", " ".join(f"127.0.0.1:{p}" for p in backends))
             .replace("lb_policy least_conn", "lb_policy cookie"))
    # no health checks: Caddy sends a request whose instance it counts as down (a check missed
    # on a busy machine) to a random other one, and the pinning would hold only by luck
    proxy = "".join(line for line in proxy.splitlines(keepends=True)
                    if not line.strip().startswith(("health_", "fail_duration")))
    return f"{{\n\tadmin off\n\tauto_https off\n}}\nhttp://127.0.0.1:{listen} {{\n\tbind 127.0.0.1\n{proxy}}}\n"


def pin(backend: int) -> str:
    """The ``lb`` cookie that Caddy's cookie policy (no secret) maps to 127.0.0.1:``backend``."""
    return hmac.new(b"", f"127.0.0.1:{backend}".encode(), hashlib.sha256).hexdigest()


class Site:
    """Two ``serve --bus`` instances on one store, Caddy in front; logs in ``folder``."""

    def __init__(self, folder: Path, bus: str, stack: ExitStack) -> None:
        self.folder, self.backends, listen = folder, [free_loopback_port(), free_loopback_port()], free_loopback_port()
        self.url = f"http://127.0.0.1:{listen}/"
        processes: list[tuple[subprocess.Popen, Path]] = []
        stack.callback(self.stop, processes)
        for port in self.backends:
            log = folder / f"serve-{port}.log"
            processes.append((subprocess.Popen(
                [sys.executable, "-m", "orderchaos", "serve", "--db", str(folder / "games.sqlite3"), "--port",
                 str(port), "--bus", bus, "--agents", "threads", "--public-url", self.url.rstrip("/")],
                stdout=subprocess.DEVNULL, stderr=log.open("w")), log))
        (folder / "Caddyfile").write_text(pinning_caddyfile(listen, self.backends))
        env = {**os.environ, "HOME": str(folder), "XDG_DATA_HOME": str(folder / "data"),
               "XDG_CONFIG_HOME": str(folder / "config")}
        processes.append((subprocess.Popen(
            [str(CADDY), "run", "--config", str(folder / "Caddyfile"), "--adapter", "caddyfile"],
            stdout=subprocess.DEVNULL, stderr=(folder / "caddy.log").open("w"), env=env, cwd=folder),
            folder / "caddy.log"))

        def still_starting() -> None:
            for process, log in processes:
                assert process.poll() is None, log.read_text()[-2000:]

        for port in self.backends:
            wait_until_serving(f"http://127.0.0.1:{port}", still_starting)
        wait_until_serving(self.url.rstrip("/"), still_starting)

    def log(self, backend: int) -> str:
        return (self.folder / f"serve-{backend}.log").read_text()

    @staticmethod
    def stop(processes: list[tuple[subprocess.Popen, Path]]) -> None:
        for process, _ in processes:
            process.terminate()
        for process, _ in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    with ExitStack() as stack:
        redis = RedisServer(tmp_path / "redis")
        redis.start()
        stack.callback(redis.stop)
        yield Site(tmp_path, redis.url(0), stack)


def pinned_tab(browser: Browser, site: Site, backend: int, url: str) -> tuple[BrowserContext, Page]:
    """A fresh profile whose requests Caddy sends to ``backend``, with one tab on ``url``."""
    context = browser.new_context(viewport={"width": 1180, "height": 900}, locale="en-GB")
    context.add_cookies([{"name": "lb", "value": pin(backend), "url": site.url}])
    tab = context.new_page()
    tab.set_default_timeout(harness.TIMEOUT_MS)
    tab.goto(url)
    expect(tab.get_by_test_id("status")).not_to_have_text(re.compile("Connecting|reconnecting"))
    return context, tab


def test_two_browsers_on_two_instances_play_a_friend_game_and_meet_in_the_lobby(browser: Browser, site: Site) -> None:
    first_backend, second_backend = site.backends
    first_ctx, first = pinned_tab(browser, site, first_backend, site.url)
    harness.open_form(first, "friend")
    first.select_option("#friend-form select[name=side]", "order")
    first.click("button[data-action=play-friend]")
    invite = first.get_by_test_id("invite-link")
    expect(invite).to_have_value(re.compile(r"/g/[A-Za-z0-9_-]{22}#invite=[A-Za-z0-9_-]{22}$"))
    game = re.search(r"/g/([A-Za-z0-9_-]{22})#", invite.input_value()).group(1)
    second_ctx, second = pinned_tab(browser, site, second_backend, invite.input_value())
    expect(first.get_by_test_id("status")).to_contain_text("Your move (Order)")

    def move(tab: Page, cell: int, symbol: str, ply: int) -> None:
        tab.click(f"button[data-symbol={symbol}]")
        tab.click(f"[data-cell='{cell}']")
        for either in (first, second):  # each move crosses the bus to the other instance's tab
            expect(either.locator("[data-testid=play-moves] li")).to_have_count(ply)

    # Order writes X on a1..e1, Chaos O on a3..d3: Order's five on the ninth move
    for ply, (cell, symbol) in enumerate([(0, "X"), (12, "O"), (1, "X"), (13, "O"), (2, "X"), (14, "O"),
                                          (3, "X"), (15, "O"), (4, "X")], start=1):
        move(first if ply % 2 else second, cell, symbol, ply)
    expect(first.get_by_test_id("result")).to_contain_text("You won!")
    expect(second.get_by_test_id("result")).to_contain_text("You lost.")
    # the cookies decided: the game was made and Order moved on one instance, Chaos joined and moved on the other
    assert re.search(rf"game={game} play_friend", site.log(first_backend))
    assert re.search(rf"game={game} open", site.log(second_backend))
    assert re.search(rf"game={game} move", site.log(first_backend))
    assert re.search(rf"game={game} move", site.log(second_backend))
    assert not re.search(rf"game={game} (open|move)", site.log(first_backend).replace(f"game={game} move", ""))

    # the lobby is one for both: a challenge made on the first instance is taken on the second
    for tab in (first, second):
        tab.goto(site.url)
        expect(tab.get_by_test_id("status")).not_to_have_text(re.compile("Connecting|reconnecting"))
    harness.open_form(first, "friend")
    first.select_option("#friend-form select[name=side]", "chaos")
    first.select_option("#friend-form select[name=time_control]", "5+3")
    first.click("button[data-action=challenge]")
    offer = second.get_by_test_id("lobby").locator("li", has_text="5+3")
    expect(offer).to_contain_text("Plays Chaos")
    offer.get_by_role("button", name="Accept").click()
    expect(second.get_by_test_id("status")).to_contain_text("Your move (Order)")
    expect(first.get_by_test_id("status")).to_contain_text("Your friend's move (Order)")
    second.click("button[data-symbol=X]")
    second.click("[data-cell='0']")
    expect(first.locator("[data-testid=play-moves] li")).to_have_count(1)
    expect(second.get_by_test_id("lobby").locator("li")).to_have_count(0)  # taken: gone from both
    expect(first.get_by_test_id("lobby").locator("li")).to_have_count(0)
    assert "challenge" in site.log(first_backend) and "accept" in site.log(second_backend)
    first_ctx.close()
    second_ctx.close()
