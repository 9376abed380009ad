"""``orderchaos serve`` behind Debian's Caddy with HTTPS, as docs/deploy.md sets it up, all on
loopback: Caddy (``tls internal``, its own local CA in a temporary folder) on one port in front
of ``serve --public-url https://localhost:PORT --trusted-proxy 127.0.0.1`` on another.
Chromium (ignoring the test certificate) plays a friend game through ``https://`` and
``wss://`` with a watcher, and the invite link is the public one. Requests that reach the
server directly, from another loopback address with a forged ``X-Forwarded-For``, are logged
and limited by their own address.

Skipped, with the reason, when Caddy, Playwright or /usr/bin/chromium is missing; under CI
(``CI`` set) a missing Caddy or Chromium fails instead, since .ci/run installs them.
"""

from __future__ import annotations

import json
import os
import re
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("uvicorn", reason="the web extra is not installed: pip install -e '.[dev]'")
pytest.importorskip("playwright.sync_api", reason="Playwright is not installed: pip install -e '.[dev]'")

from playwright.sync_api import Page, expect, sync_playwright  # noqa: E402

from helpers import free_loopback_port, wait_until_serving  # noqa: E402

CADDY = Path("/usr/bin/caddy")
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TIMEOUT_MS = 30_000
GAMES_PER_MINUTE = 3
FORGING_ADDRESS = "127.0.0.3"
"""A loopback address that is not the proxy: requests from it reach the server directly."""
CLIENT_ADDRESS = "127.0.0.4"
"""A loopback address a client of the proxy connects from, which the proxy forwards."""

for tool, package in ((CADDY, "caddy"), (CHROMIUM, "chromium")):
    if not tool.exists():
        reason = f"{tool} is missing: install it with `apt-get install -y {package}`"
        if os.environ.get("CI"):
            raise RuntimeError(f"the Caddy test under CI: {reason} (.ci/run should have)")
        pytest.skip(reason, allow_module_level=True)



def caddyfile(https_port: int, http_port: int, backend: int) -> str:
    """deploy/Caddyfile's site with ``tls internal``, made to stay on loopback: no admin API,
    no certificate from the internet, no redirect listener, no trust store changes."""
    return f"""{{
	admin off
	local_certs
	skip_install_trust
	auto_https disable_redirects
	http_port {http_port}
	https_port {https_port}
}}
https://localhost:{https_port} {{
	bind 127.0.0.1
	tls internal
	reverse_proxy 127.0.0.1:{backend}
}}
"""


class Site:
    """Caddy in front of ``orderchaos serve``, both on loopback ports, logs in files."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.backend, self.https = free_loopback_port(), free_loopback_port()
        self.public = f"https://localhost:{self.https}"
        env = {**os.environ, "HOME": str(folder), "XDG_DATA_HOME": str(folder / "data"),
               "XDG_CONFIG_HOME": str(folder / "config")}
        (folder / "Caddyfile").write_text(caddyfile(self.https, free_loopback_port(), self.backend))
        self.server_log = folder / "serve.log"
        self.server = subprocess.Popen(
            [sys.executable, "-m", "orderchaos", "serve", "--db", str(folder / "games.sqlite3"),
             "--port", str(self.backend), "--public-url", self.public, "--trusted-proxy", "127.0.0.1",
             "--games-per-minute", str(GAMES_PER_MINUTE), "--workers", "1"],
            stdout=subprocess.DEVNULL, stderr=self.server_log.open("w"), env=env)
        self.caddy = subprocess.Popen(
            [str(CADDY), "run", "--config", str(folder / "Caddyfile"), "--adapter", "caddyfile"],
            stdout=subprocess.DEVNULL, stderr=(folder / "caddy.log").open("w"), env=env, cwd=folder)
        insecure = ssl.create_default_context()
        insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE

        def still_starting() -> None:
            for process, name in ((self.server, "serve.log"), (self.caddy, "caddy.log")):
                if process.poll() is not None:
                    raise RuntimeError(f"{name} ended: {(folder / name).read_text()[-2000:]}")

        wait_until_serving(f"http://127.0.0.1:{self.backend}", still_starting, workers=1)
        wait_until_serving(self.public, still_starting, context=insecure)  # through Caddy too

    def log(self) -> str:
        return self.server_log.read_text()

    def stop(self) -> None:
        for process in (self.caddy, self.server):
            process.terminate()
        for process in (self.caddy, self.server):
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    live = Site(tmp_path_factory.mktemp("site"))
    yield live
    live.stop()


def raw_request(source: str, port: int, path: str, headers: dict[str, str], tls: bool = False) -> str:
    """An HTTP/1.1 GET from the loopback address ``source`` to 127.0.0.1:``port``; the status line."""
    with socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0)) as plain:
        conn: socket.socket = plain
        if tls:
            context = ssl.create_default_context()
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
            conn = context.wrap_socket(plain, server_hostname="localhost")
        lines = [f"GET {path} HTTP/1.1", f"Host: localhost:{port}", "Connection: close"]
        conn.sendall(("\r\n".join(lines + [f"{k}: {v}" for k, v in headers.items()]) + "\r\n\r\n").encode())
        return conn.recv(4096).decode("latin-1").split("\r\n")[0]


def test_a_forged_forwarded_header_changes_nothing_and_the_proxys_does(site: Site) -> None:
    forged = {"X-Forwarded-For": "127.0.0.66"}
    # straight to the server, around the proxy: its own address counts
    assert raw_request(FORGING_ADDRESS, site.backend, "/healthz?direct", forged).endswith("200 OK")
    # through Caddy, which replaces the forged header with the peer it saw
    assert raw_request(CLIENT_ADDRESS, site.https, "/healthz?proxied", forged, tls=True).endswith("200 OK")
    log = site.log()
    assert f"client={FORGING_ADDRESS} GET /healthz 200" in log
    assert f"client={CLIENT_ADDRESS} GET /healthz 200" in log
    assert "127.0.0.66" not in log


def test_new_games_are_limited_by_the_real_address_whatever_header_is_forged(site: Site) -> None:
    from websockets.sync.client import connect

    answers = []
    for attempt in range(GAMES_PER_MINUTE + 1):
        direct = socket.create_connection(("127.0.0.1", site.backend), timeout=10, source_address=(FORGING_ADDRESS, 0))
        # a new made-up client address each time: were it believed, no limit would ever apply
        with connect(f"ws://localhost:{site.backend}/ws", sock=direct,
                     additional_headers={"X-Forwarded-For": f"127.0.0.{100 + attempt}"}) as ws:
            assert json.loads(ws.recv(timeout=30))["type"] == "hello"
            ws.send(json.dumps({"type": "play_friend", "side": "order"}))
            answers.append(json.loads(ws.recv(timeout=30)))
    assert [a["type"] for a in answers] == ["joined"] * GAMES_PER_MINUTE + ["error"]
    assert answers[-1]["code"] == "address_games"
    assert f"client={FORGING_ADDRESS} play_friend refused: address_games" in site.log()


def status_of(tab: Page) -> str:
    return tab.get_by_test_id("status").text_content() or ""


def test_a_friend_game_with_a_watcher_through_https_and_wss(site: Site) -> None:
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            tabs = []

            def open_tab(url: str) -> Page:
                context = browser.new_context(ignore_https_errors=True, locale="en-GB")
                tab = context.new_page()
                tab.set_default_timeout(TIMEOUT_MS)
                tab.goto(url)
                expect(tab.get_by_test_id("status")).not_to_have_text(re.compile("Connecting|reconnecting"))
                tabs.append(tab)
                return tab

            order = open_tab(site.public + "/")
            order.click("button[data-open=friend]")  # the start page's form for a friend game
            order.select_option("select[name=side]", "order")
            order.click("button[data-action=play-friend]")
            invite = order.get_by_test_id("invite-link")
            public_link = re.escape(site.public) + r"/g/[A-Za-z0-9_-]{22}#invite=[A-Za-z0-9_-]{22}$"
            expect(invite).to_have_value(re.compile(public_link))
            watch_url = order.get_by_test_id("watch-link").input_value()
            assert watch_url.startswith(site.public + "/g/")
            chaos = open_tab(invite.input_value())
            watcher = open_tab(watch_url)
            expect(chaos.get_by_test_id("status")).to_contain_text("Your friend's move (Order)")
            expect(watcher.get_by_test_id("status")).to_contain_text("You are watching")
            # Order fills a1..e1 with X; Chaos plays O on the far row
            moves = [(order, 0, "X"), (chaos, 30, "O"), (order, 1, "X"), (chaos, 31, "O"), (order, 2, "X"),
                     (chaos, 32, "O"), (order, 3, "X"), (chaos, 33, "O"), (order, 4, "X")]
            for ply, (tab, cell, symbol) in enumerate(moves, start=1):
                expect(tab.get_by_test_id("status")).to_contain_text("Your move")
                tab.click(f"button[data-symbol={symbol}]")
                tab.click(f"[data-cell='{cell}']")
                for seen_by in (order, chaos, watcher):
                    expect(seen_by.locator("[data-testid=play-moves] li")).to_have_count(ply)
            expect(order.get_by_test_id("result")).to_contain_text("You won!")
            expect(chaos.get_by_test_id("result")).to_contain_text("You lost.")
            expect(watcher.get_by_test_id("result")).to_contain_text("Order won.")
            # a tab on the server's own loopback address still shows the public links
            local = open_tab(watch_url.replace(site.public, f"http://127.0.0.1:{site.backend}"))
            expect(local.get_by_test_id("watch-link")).to_have_value(watch_url)
        finally:
            browser.close()
    # the browser reached the server only through the proxy, as the client Caddy saw
    assert re.search(r"client=127\.0\.0\.1 game=[A-Za-z0-9_-]{22} move", site.log())
