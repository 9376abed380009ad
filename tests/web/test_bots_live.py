"""Bots against a real ``orderchaos serve`` on loopback, through the commands a bot's author
runs: ``orderchaos bots add`` (the token alone on the last line), two ``orderchaos bot``
clients playing a rated game to its end (the challenger exits 0 once its games are over), the
token found in no log, no output and not in ``/metrics``; a client stopped by SIGINT in the
middle of a game resigns it and exits 0; a bad token and a token revoked while connected end
the client with one line and exit 2; the Python snippet of docs/bots.md plays a house bot."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn", reason="the web extra is not installed: pip install -e '.[dev]'")
pytest.importorskip("websockets", reason="the web extra is not installed: pip install -e '.[dev]'")

from helpers import free_loopback_port, wait_for, wait_until_serving  # noqa: E402

from orderchaos.web.bot_protocol import PATH  # noqa: E402

pytestmark = pytest.mark.timeout(300)
READY = "waiting for challenges"
"""What ``orderchaos bot`` prints once it is connected and takes challenges."""


class Process:
    """A command whose output lines are collected as they come (stderr beside stdout)."""

    def __init__(self, *argv: str, cwd: Path) -> None:
        self.popen = subprocess.Popen([sys.executable, "-m", "orderchaos", *argv], cwd=cwd, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
        self.out: list[str] = []
        self.err: list[str] = []
        self.readers = [threading.Thread(target=self._read, args=(stream, lines), daemon=True)
                        for stream, lines in ((self.popen.stdout, self.out), (self.popen.stderr, self.err))]
        for reader in self.readers:
            reader.start()

    @staticmethod
    def _read(stream: Any, lines: list[str]) -> None:
        for line in stream:
            lines.append(line.rstrip("\n"))

    def alive(self) -> None:
        """Raise, with what it said, when the command has ended."""
        assert self.popen.poll() is None, f"it ended with {self.popen.returncode}: {self.out[-5:]} {self.err[-5:]}"

    def said(self, text: str) -> bool:
        return any(text in line for line in self.out)

    def wait(self, seconds: float = 240) -> int:
        code = self.popen.wait(timeout=seconds)
        for reader in self.readers:
            reader.join(timeout=10)
        return code

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait(timeout=30)


def cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "orderchaos", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """``orderchaos serve --house-bots`` on a free loopback port with three bot accounts, whose
    token files lie in its folder; its log is collected."""
    folder = tmp_path_factory.mktemp("bots")
    db = folder / "site.sqlite3"
    tokens = {}
    for name in ("alpha", "beta", "gamma"):
        made = cli("bots", "add", name, "--db", str(db), cwd=folder)
        assert made.returncode == 0, made.stderr
        tokens[name] = made.stdout.splitlines()[-1]
        assert re.fullmatch(r"[A-Za-z0-9_-]{43}", tokens[name])
        (folder / f"{name}.token").write_text(tokens[name] + "\n")
    port = free_loopback_port()
    log = folder / "serve.log"
    server = subprocess.Popen([sys.executable, "-m", "orderchaos", "serve", "--db", str(db), "--port", str(port),
                               "--agents", "threads", "--house-bots"], cwd=folder,
                              stdout=log.open("w"), stderr=subprocess.STDOUT)

    def still_starting() -> None:
        assert server.poll() is None, log.read_text()[-2000:]

    url = f"http://127.0.0.1:{port}"
    wait_until_serving(url, still_starting)
    yield {"url": url, "db": db, "folder": folder, "tokens": tokens, "log": log, "server": server}
    server.send_signal(signal.SIGINT)
    server.wait(timeout=60)


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return answer.read().decode()


def bot(site: dict[str, Any], name: str, *options: str, agent: str = "heuristic") -> Process:
    return Process("bot", "--agent", agent, "--server", site["url"], "--token-file", str(site["folder"] / f"{name}.token"),
                   *options, cwd=site["folder"])


def test_bots_add_list_revoke_and_their_bad_input(tmp_path: Path) -> None:
    db = str(tmp_path / "s.sqlite3")
    made = cli("bots", "add", "delta", "--db", db, cwd=tmp_path)
    assert made.returncode == 0 and re.fullmatch(r"[A-Za-z0-9_-]{43}", made.stdout.splitlines()[-1])
    listed = cli("bots", "list", "--db", db, cwd=tmp_path)
    assert "bot:delta" in listed.stdout and "live" in listed.stdout
    assert cli("bots", "revoke", "delta", "--db", db, cwd=tmp_path).returncode == 0
    assert "revoked" in cli("bots", "list", "--db", db, cwd=tmp_path).stdout
    for argv, said in [(("add", "delta"), "taken by a bot"), (("add", "no way"), "bad bot name"),
                       (("revoke", "delta"), "already revoked"), (("revoke", "nobody"), "no bot named")]:
        done = cli("bots", *argv, "--db", db, cwd=tmp_path)
        assert done.returncode == 2 and done.stdout == "" and len(done.stderr.splitlines()) == 1, done
        assert said in done.stderr
    bad_db = cli("bots", "list", "--db", "mysql://x/y", cwd=tmp_path)
    assert bad_db.returncode == 2 and len(bad_db.stderr.splitlines()) == 1 and "--db" in bad_db.stderr


def test_two_bot_clients_play_a_rated_game_and_no_token_shows_anywhere(site: dict[str, Any]) -> None:
    beta = bot(site, "beta", "--accept", "rated", "--time-controls", "1+0,3+2")
    try:
        wait_for(lambda: beta.said(READY), "beta ready", still_running=beta.alive)
        assert any(row["name"] == "beta" and row["online"] for row in json.loads(get(site["url"] + "/api/bots")))
        alpha = bot(site, "alpha", "--challenge", "beta", "--games", "2", "--time-control", "1+0")
        assert alpha.wait() == 0, alpha.err
        assert sum("against beta" in line for line in alpha.out) == 2
        assert "as Order won" in alpha.out[-1]
    finally:
        beta.popen.send_signal(signal.SIGINT)
        assert beta.wait() == 0, beta.err
    listed = {row["name"]: row for row in json.loads(get(site["url"] + "/api/bots"))}
    assert listed["alpha"]["games"] == listed["beta"]["games"] == 2
    assert listed["alpha"]["rating"] != 1500 or listed["beta"]["rating"] != 1500
    assert not listed["beta"]["online"]
    seen = "\n".join([site["log"].read_text(), get(site["url"] + "/metrics"), *alpha.out, *alpha.err, *beta.out,
                      *beta.err, get(site["url"] + "/bots")])
    assert "/api/bot/ws" in seen  # the log does show the bots' connections ...
    for token in site["tokens"].values():
        assert token not in seen  # ... and never a token
        assert token[:16] not in seen


def test_sigint_resigns_the_game_in_progress_and_exits_0(site: dict[str, Any]) -> None:
    from websockets.sync.client import connect

    gamma = bot(site, "gamma")
    try:
        wait_for(lambda: gamma.said(READY), "gamma ready", still_running=gamma.alive)
        with connect(site["url"].replace("http", "ws") + PATH,
                     additional_headers={"Authorization": f"Bearer {site['tokens']['alpha']}"}) as ws:

            def next_of(kind: str) -> dict[str, Any]:
                while True:
                    message = json.loads(ws.recv(timeout=60))
                    if message["type"] == kind:
                        return message

            next_of("hello")
            ws.send(json.dumps({"type": "challenge", "opponent": "gamma", "time_control": "3+2", "side": "order"}))
            game = next_of("game_start")["game"]  # alpha is Order, and never moves
            next_of("game_state")
            gamma.popen.send_signal(signal.SIGINT)
            assert gamma.wait() == 0, gamma.err
            ended = next_of("game_state")
            assert (ended["game"], ended["reason"], ended["winner"]) == (game, "resign", "order")
    finally:
        gamma.stop()


def test_a_bad_token_and_a_token_revoked_while_connected_end_the_client_with_one_line(
        site: dict[str, Any], tmp_path: Path) -> None:
    (tmp_path / "bad.token").write_text("not-a-token\n")
    refused = cli("bot", "--agent", "heuristic", "--server", site["url"], "--token-file", str(tmp_path / "bad.token"),
                  cwd=tmp_path)
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1 and "token" in refused.stderr
    assert "not-a-token" not in refused.stderr + refused.stdout
    made = cli("bots", "add", "epsilon", "--db", str(site["db"]), cwd=tmp_path)
    (site["folder"] / "epsilon.token").write_text(made.stdout.splitlines()[-1])
    epsilon = bot(site, "epsilon")
    try:
        wait_for(lambda: epsilon.said(READY), "epsilon ready", still_running=epsilon.alive)
        assert cli("bots", "revoke", "epsilon", "--db", str(site["db"]), cwd=tmp_path).returncode == 0
        assert epsilon.wait() == 2
        assert len(epsilon.err) == 1 and "the site revoked this bot's token" in epsilon.err[0]
    finally:
        epsilon.stop()
    for argv, said in [(("--server", "ftp://x"), "--server"), (("--accept", "blitz"), "--accept"),
                       (("--time-controls", "2+1"), "--time-controls"), (("--agent", "nonsense"), "--agent")]:
        options = {"--agent": "heuristic", "--server": site["url"], "--token-file": str(tmp_path / "bad.token")}
        options[argv[0]] = argv[1]
        done = cli("bot", *[part for pair in options.items() for part in pair], cwd=tmp_path)
        assert done.returncode == 2 and len(done.stderr.splitlines()) == 1 and said in done.stderr, done


def test_the_agent_snippet_of_the_docs_plays_a_house_bot(site: dict[str, Any], repo: Path) -> None:
    text = (repo / "docs" / "bots.md").read_text()
    snippet = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    done = subprocess.run([sys.executable, "-c", snippet], capture_output=True, text=True, timeout=240,
                          env={**os.environ, "ORDERCHAOS_SERVER": site["url"],
                               "ORDERCHAOS_BOT_TOKEN": site["tokens"]["gamma"]})
    assert done.returncode == 0, done.stderr
    assert "against heuristic" in done.stdout and "games" in done.stdout.splitlines()[-1]
    assert "failed" not in done.stdout


@contextmanager
def site_in_thread(store: Any, **options: Any) -> Iterator[tuple[str, Any]]:
    """The app (``create_app(db=store, **options)``) served by uvicorn in a thread of this
    process on a free loopback port: its URL and the app."""
    import socket

    import uvicorn

    from orderchaos.web.app import create_app

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    app = create_app(db=store, **options)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()

    def serving() -> None:
        assert thread.is_alive(), "the site stopped before it served"

    wait_for(lambda: server.started, "the site serving", still_running=serving)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", app
    finally:
        server.should_exit = server.force_exit = True
        thread.join(timeout=30)


async def bot_match(url: str, tokens: dict[str, str], said: list[str], beta_agent: Any = "heuristic") -> Any:
    """``alpha`` (heuristic) challenges ``beta`` (``beta_agent``) to one game on 1+0; alpha's
    client once the game is over."""
    import asyncio

    from orderchaos.web.bot_client import BotClient, BotOptions, agent_factory

    ready = asyncio.Event()

    def tell(line: str) -> None:  # what the clients print; beta's readiness line is the signal
        said.append(line)
        if READY in line:
            ready.set()

    beta = BotClient(url, tokens["beta"], agent_factory(beta_agent), BotOptions(), tell)
    alpha = BotClient(url, tokens["alpha"], agent_factory("heuristic"),
                      BotOptions(challenge="beta", games=1, time_control="1+0"), tell)
    waiting = asyncio.create_task(beta.run())
    await asyncio.wait({waiting, asyncio.ensure_future(ready.wait())}, return_when=asyncio.FIRST_COMPLETED)
    assert ready.is_set(), said  # beta ended before it was ready
    await alpha.run()
    beta.stop()
    await waiting
    return alpha


def two_bots(tmp_path: Path) -> tuple[Any, dict[str, str]]:
    from orderchaos.web import bots
    from orderchaos.web.store import GameStore

    store = GameStore(tmp_path / "site.sqlite3")
    return store, {name: bots.add_account(store, name) for name in ("alpha", "beta")}


def test_the_client_keeps_within_the_sites_message_rate(tmp_path: Path) -> None:
    """Two heuristic bots, each move a message, on a site that takes 4 messages a second from a
    bot: the client paces itself, so no move is refused and the game ends on the board."""
    import asyncio

    from orderchaos.web.bot_hub import BotLimits

    store, tokens = two_bots(tmp_path)
    said: list[str] = []
    with site_in_thread(store, bot_limits=BotLimits(rate=4.0, burst=2)) as (url, _):
        alpha = asyncio.run(bot_match(url, tokens, said))
    store.close()
    assert [reason for _, _, _, reason in alpha.figures.results] in (["five"], ["full_board"]), said
    assert not [line for line in said if "too many messages" in line]


def test_the_client_connects_again_after_a_drop_and_plays_on(tmp_path: Path) -> None:
    """The site drops the challenged bot's connection while its agent thinks about its third
    move: the move it then sends is lost with the connection; the client connects again, is told
    its game, moves again and plays the game to its end on the board."""
    import asyncio

    from orderchaos.agents.registry import make

    thinking, release = threading.Event(), threading.Event()

    class Hesitant:
        """The heuristic, holding its third move until the test has dropped the connection."""

        name = "hesitant"

        def __init__(self) -> None:
            self.inner, self.moves = make("heuristic", seed=0), 0

        def act(self, state: Any) -> int:
            self.moves += 1
            if self.moves == 3:
                thinking.set()
                assert release.wait(120), "the test never let the move go"
            return self.inner.act(state)

    store, tokens = two_bots(tmp_path)
    said: list[str] = []
    with site_in_thread(store) as (url, app):
        hub = app.state.bots

        def drop_beta_while_it_thinks() -> None:
            assert thinking.wait(120), "beta never came to its third move"
            connection = hub.connections["beta"][0]
            asyncio.run_coroutine_threadsafe(connection.close(1011, {"type": "error", "code": "internal",
                                                                     "message": "dropped by the test"}),
                                             hub.watcher.get_loop()).result(timeout=30)
            wait_for(lambda: connection not in hub.connections.get("beta", []), "beta's connection gone")
            release.set()

        dropper = threading.Thread(target=drop_beta_while_it_thinks, daemon=True)
        dropper.start()
        alpha = asyncio.run(bot_match(url, tokens, said, Hesitant))
        dropper.join(timeout=30)
    store.close()
    assert any("the connection dropped; connecting again" in line for line in said), said
    assert [reason for _, _, _, reason in alpha.figures.results] in (["five"], ["full_board"]), said


def test_a_move_refused_for_the_rate_is_made_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A client sending at three times a site's rate (as a stalled site would read it) has moves
    refused; it asks for its games again, moves in them, and its game ends on the board."""
    import asyncio

    from orderchaos.web import bot_client
    from orderchaos.web.bot_hub import BotLimits

    monkeypatch.setattr(bot_client, "PACE", 3.0)
    store, tokens = two_bots(tmp_path)
    said: list[str] = []
    with site_in_thread(store, bot_limits=BotLimits(rate=4.0, burst=2)) as (url, _):
        alpha = asyncio.run(bot_match(url, tokens, said))
    store.close()
    assert [line for line in said if "too many messages" in line]
    assert [reason for _, _, _, reason in alpha.figures.results] in (["five"], ["full_board"]), said
