"""A restart of ``orderchaos serve`` as a reader sees it: on SIGTERM the page says the server is
restarting, in the reader's language; the process exits 0; when a server is back on the same
port and store, the page reconnects by itself and the player is back in their game.

Skipped, with the reason, when Playwright or /usr/bin/chromium is missing (under CI a missing
Chromium fails instead, since .ci/run installs it).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("uvicorn", reason="the web extra is not installed: pip install -e '.[dev]'")
pytest.importorskip("playwright.sync_api", reason="Playwright is not installed: pip install -e '.[dev]'")

from playwright.sync_api import expect, sync_playwright  # noqa: E402

from helpers import SOCKET_DEADLINE, free_loopback_port, wait_until_serving  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
TIMEOUT_MS = 30_000
# the status lines a reader with a Swedish browser sees
CONNECTING = "Ansluter…"
WAITING_FRIEND = "Väntar på din vän: skicka inbjudningslänken."
RESTARTING = "Servern startas om: ansluter igen…"

if not CHROMIUM.exists():
    reason = f"{CHROMIUM} is missing: install Chromium with `apt-get install -y chromium`"
    if os.environ.get("CI"):
        raise RuntimeError(f"browser tests under CI: {reason} (.ci/run should have)")
    pytest.skip(reason, allow_module_level=True)


def start_server(db: Path, port: int, log: Path) -> subprocess.Popen:
    """``orderchaos serve`` (one search worker) on 127.0.0.1:``port``, once it is ready."""
    server = subprocess.Popen([sys.executable, "-m", "orderchaos", "serve", "--db", str(db), "--port", str(port),
                               "--workers", "1"],
                              stdout=subprocess.DEVNULL, stderr=log.open("a"))

    def still_starting() -> None:
        assert server.poll() is None, log.read_text()[-2000:]

    wait_until_serving(f"http://127.0.0.1:{port}", still_starting, workers=1)
    return server


def test_sigterm_tells_the_page_in_its_language_and_the_page_comes_back(tmp_path: Path) -> None:
    db, port, log = tmp_path / "games.sqlite3", free_loopback_port(), tmp_path / "serve.log"
    server = start_server(db, port, log)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                         args=["--headless", "--no-sandbox", "--disable-gpu"])
            try:
                tab = browser.new_context(locale="sv-SE").new_page()
                tab.set_default_timeout(TIMEOUT_MS)
                tab.goto(f"http://127.0.0.1:{port}/")
                status = tab.get_by_test_id("status")
                expect(status).not_to_have_text(CONNECTING)
                tab.click("button[data-open=friend]")  # the start page's form for a friend game
                tab.select_option("select[name=side]", "order")
                tab.click("button[data-action=play-friend]")
                expect(status).to_have_text(WAITING_FRIEND)
                game_url = tab.url
                server.send_signal(signal.SIGTERM)
                expect(status).to_have_text(RESTARTING)
                assert server.wait(timeout=SOCKET_DEADLINE) == 0
                server = start_server(db, port, log)
                # reconnected by itself, back in the seat of the same game; the page backs off
                # up to 5 s between tries while the server is down, past expect's 5 s default
                expect(status).to_have_text(WAITING_FRIEND, timeout=TIMEOUT_MS)
                assert tab.url == game_url
            finally:
                browser.close()
    finally:
        if server.poll() is None:
            server.terminate()
            server.wait(timeout=15)
