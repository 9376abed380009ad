"""``orderchaos serve`` behind a reverse proxy: the public URL's host and origin are accepted
(and nothing else but loopback), forwarded headers are read only from trusted proxies, the
page's links use the public URL, and the limits per client address."""

from __future__ import annotations

import logging
from typing import Any

import pytest

pytest.importorskip("starlette.testclient", reason="the web extra is not installed: pip install -e '.[dev]'")

from starlette.testclient import TestClient  # noqa: E402
from starlette.websockets import WebSocketDisconnect  # noqa: E402

from orderchaos.cli.main import main  # noqa: E402
from orderchaos.web.app import create_app  # noqa: E402
from orderchaos.web.proxy import (  # noqa: E402
    PublicURL, allowed_hosts, client_address, origin_allowed, parse_public_url, parse_trusted_proxy, public_facing,
)
from orderchaos.web.quotas import AddressLimits  # noqa: E402
from orderchaos.web.services import Limits  # noqa: E402

from helpers import next_message, receive_json  # noqa: E402

FAST = Limits(move_time=5.0, hint_time=0.3, rate=1000, burst=1000)
PUBLIC = parse_public_url("https://games.example.org")
PROXY = [parse_trusted_proxy("127.0.0.2")]


def proxied_app(quotas: AddressLimits | None = None) -> Any:
    """The app as ``serve --public-url https://games.example.org --trusted-proxy 127.0.0.2`` builds it."""
    return create_app(None, FAST, allowed_hosts=allowed_hosts(PUBLIC, "127.0.0.1"), public=PUBLIC,
                      trusted_proxies=PROXY, quotas=quotas)


def hello(ws: Any) -> dict:
    msg = receive_json(ws)
    assert msg["type"] == "hello"
    return msg



def test_public_url_parsing() -> None:
    assert parse_public_url("https://Games.Example.org/") == PublicURL("https", "games.example.org", None)
    assert parse_public_url("https://games.example.org:443").origin == "https://games.example.org"
    assert parse_public_url("https://localhost:8443").origin == "https://localhost:8443"
    assert parse_public_url("http://[::1]:8080").origin == "http://[::1]:8080"
    for bad in ("games.example.org", "ftp://games.example.org", "https://", "https://games.example.org/play",
                "https://games.example.org/?a=1", "https://user@games.example.org", "https://h:99999"):
        with pytest.raises(ValueError, match="accepted: https://HOST"):
            parse_public_url(bad)


def test_a_server_behind_a_public_url_counts_as_public_facing() -> None:
    # what decides that the page offers only the named levels (no free agent specs)
    assert not public_facing("127.0.0.1", None) and not public_facing("::1", None)
    assert public_facing("127.0.0.1", PUBLIC) and public_facing("0.0.0.0", None)
    assert allowed_hosts(None, "0.0.0.0") is None and "games.example.org" in allowed_hosts(PUBLIC, "0.0.0.0")


def test_the_public_host_and_loopback_are_accepted_and_other_hosts_refused() -> None:
    with TestClient(proxied_app()) as client:
        assert client.get("/", headers={"host": "games.example.org"}).status_code == 200
        assert client.get("/", headers={"host": "127.0.0.1:8000"}).status_code == 200
        assert client.get("/", headers={"host": "localhost"}).status_code == 200
        for other in ("rebound.example", "games.example.org.evil.example", "example.org"):
            assert client.get("/", headers={"host": other}).status_code == 400, other


def test_websockets_from_the_public_origin_are_accepted_and_others_refused() -> None:
    assert origin_allowed("https://games.example.org", "games.example.org", PUBLIC)
    assert origin_allowed(None, "games.example.org", PUBLIC)  # not a browser page
    assert origin_allowed("http://127.0.0.1:8000", "127.0.0.1:8000", PUBLIC)  # local use
    assert not origin_allowed("http://games.example.org", "games.example.org", PUBLIC)  # another scheme
    assert not origin_allowed("https://games.example.org:8443", "games.example.org:8443", PUBLIC)
    assert not origin_allowed("https://evil.example", "evil.example", PUBLIC)
    assert origin_allowed("http://127.0.0.1:8000", "127.0.0.1:8000", None)
    assert not origin_allowed("http://evil.example", "127.0.0.1:8000", None)
    with TestClient(proxied_app()) as client:
        with client.websocket_connect("/ws", headers={"host": "games.example.org",
                                                      "origin": "https://games.example.org"}) as ws:
            assert hello(ws)["public_url"] == "https://games.example.org"
        with pytest.raises(WebSocketDisconnect):
            with client.websocket_connect("/ws", headers={"host": "games.example.org",
                                                          "origin": "https://evil.example"}) as ws:
                receive_json(ws)


def test_forwarded_headers_are_read_only_from_a_trusted_proxy() -> None:
    xff = [(b"x-forwarded-for", b"127.0.0.9")]
    assert client_address("127.0.0.2", xff, PROXY) == "127.0.0.9"
    assert client_address("127.0.0.7", xff, PROXY) == "127.0.0.7"  # a forged header, ignored
    assert client_address("127.0.0.2", xff, []) == "127.0.0.2"  # no proxy trusted
    # a client forging a chain through the proxy: the proxy appends the real peer, which counts
    forged = [(b"x-forwarded-for", b"127.0.0.4, 127.0.0.9")]
    assert client_address("127.0.0.2", forged, PROXY) == "127.0.0.9"
    # two trusted proxies in a row, each appending its peer
    two = [parse_trusted_proxy("127.0.0.2"), parse_trusted_proxy("127.0.0.3")]
    assert client_address("127.0.0.2", [(b"x-forwarded-for", b"127.0.0.9, 127.0.0.3")], two) == "127.0.0.9"
    # Forwarded, only when there is no X-Forwarded-For
    forwarded = [(b"forwarded", b'for="[::1]:4711";proto=https, for=127.0.0.5')]
    assert client_address("127.0.0.2", forwarded, PROXY) == "127.0.0.5"
    assert client_address("127.0.0.2", forwarded[:0] + [(b"forwarded", b'for="[::1]:4711"')],
                          PROXY) == "::1"
    assert client_address("127.0.0.2", forwarded + xff, PROXY) == "127.0.0.9"
    # a hop that is not an address: the proxy that wrote it is as far as we know
    assert client_address("127.0.0.2", [(b"x-forwarded-for", b"unknown")], PROXY) == "127.0.0.2"
    with pytest.raises(ValueError, match="not an IP address or network"):
        parse_trusted_proxy("proxy.example")


def test_the_logged_client_address_follows_trusted_proxies_only(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="orderchaos.web")
    forged = {"host": "games.example.org", "x-forwarded-for": "127.0.0.9"}
    with TestClient(proxied_app(), client=("127.0.0.7", 5000)) as direct:
        direct.get("/healthz", headers=forged)
    with TestClient(proxied_app(), client=("127.0.0.2", 5000)) as proxied:
        proxied.get("/healthz", headers=forged)
    lines = [r.getMessage() for r in caplog.records if "/healthz" in r.getMessage()]
    assert len(lines) == 2
    assert lines[0].startswith("client=127.0.0.7 GET /healthz 200")
    assert lines[1].startswith("client=127.0.0.9 GET /healthz 200")


def test_serve_refuses_bad_proxy_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--db", ":memory:", "--public-url", "games.example.org"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--public-url" in err and "accepted: https://HOST" in err
    assert main(["serve", "--db", ":memory:", "--trusted-proxy", "127.0.0.2", "--trusted-proxy", "nginx"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--trusted-proxy 'nginx' is not an IP address" in err
    assert main(["serve", "--db", ":memory:", "--games-per-minute", "0"]) == 2
    assert "--games-per-minute must be at least 1" in capsys.readouterr().err
    assert main(["serve", "--db", ":memory:", "--searches-per-minute", "-1"]) == 2
    assert "--searches-per-minute must be at least 1, got -1" in capsys.readouterr().err


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_games_per_minute_per_address_with_a_clock_moved_by_hand() -> None:
    clock = Clock()
    quotas = AddressLimits(connections=5, games_per_minute=3, clock=clock)
    for _ in range(3):
        quotas.create_game("127.0.0.9")
        clock.now += 10
    with pytest.raises(Exception) as refused:
        quotas.create_game("127.0.0.9")
    assert refused.value.code == "address_games" and refused.value.args_ == {"limit": 3, "seconds": 30}
    quotas.create_game("127.0.0.7")  # another address has its own count
    clock.now = 1000.0 + 60  # the first request left the window: one more fits, not two
    quotas.create_game("127.0.0.9")
    with pytest.raises(Exception, match="too many new games"):
        quotas.create_game("127.0.0.9")


def test_connections_per_address_are_limited_after_proxy_resolution() -> None:
    quotas = AddressLimits(connections=2, games_per_minute=100, clock=Clock())
    headers = {"host": "games.example.org", "origin": "https://games.example.org"}
    with TestClient(proxied_app(quotas), client=("127.0.0.2", 5000)) as client:
        first = {**headers, "x-forwarded-for": "127.0.0.9"}
        with client.websocket_connect("/ws", headers=first) as a, client.websocket_connect("/ws", headers=first) as b:
            hello(a), hello(b)
            with client.websocket_connect("/ws", headers=first) as third:
                refused = receive_json(third)
                assert refused["type"] == "error" and refused["code"] == "address_connections"
                assert refused["args"] == {"limit": 2}
            # another client behind the same proxy is not counted with the first
            with client.websocket_connect("/ws", headers={**headers, "x-forwarded-for": "127.0.0.7"}) as other:
                hello(other)
        assert quotas.open_connections("127.0.0.9") == 0  # closed sockets are given back
        with client.websocket_connect("/ws", headers=first) as again:
            hello(again)


def test_games_per_minute_are_refused_on_the_socket_with_a_coded_error() -> None:
    clock = Clock()
    quotas = AddressLimits(connections=5, games_per_minute=2, clock=clock)
    with TestClient(create_app(None, FAST, quotas=quotas), client=("127.0.0.9", 5000)) as client:
        with client.websocket_connect("/ws") as ws:
            hello(ws)
            for _ in range(2):
                ws.send_json({"type": "play_friend", "side": "order"})
                next_message(ws, "joined")
            ws.send_json({"type": "play_friend", "side": "order"})
            refused = next_message(ws, "error")
            assert refused["code"] == "address_games" and refused["args"]["limit"] == 2
            clock.now += 60
            ws.send_json({"type": "play_friend", "side": "order"})
            next_message(ws, "joined")


@pytest.mark.parametrize("kind", ["challenge", "play_anyone"])
def test_the_lobby_counts_towards_the_games_per_minute(kind: str) -> None:
    quotas = AddressLimits(connections=5, games_per_minute=1, clock=Clock())
    with TestClient(create_app(None, FAST, quotas=quotas), client=("127.0.0.9", 5000)) as client:
        with client.websocket_connect("/ws") as ws:
            hello(ws)
            ws.send_json({"type": "play_friend", "side": "order"})
            next_message(ws, "joined")
            asked = {"type": kind, "time_control": "none"} | ({"side": "order"} if kind == "challenge" else {})
            ws.send_json(asked)
            answer = receive_json(ws)
            while answer["type"] not in ("error", "lobby"):  # the friend game's own updates
                answer = receive_json(ws)
            assert answer["type"] == "error", answer  # not a challenge listed or a wait begun
            assert answer["code"] == "address_games" and answer["args"]["limit"] == 1


LOCAL = {"host": "127.0.0.1"}
"""A request addressed to loopback, which the proxied app accepts besides its public host."""
NOT_A_PLAYER = {"player": "?", "puzzle": "x", "moves": [0]}
"""A puzzle move the route refuses at once (400 ``bad_player``): it reaches the route, and
costs no search."""


def search_request(client: TestClient, forwarded_for: str | None = None, route: str = "/puzzles/move") -> Any:
    """One POST to a route that sets the solver to work (refused at once when it gets there)."""
    headers = LOCAL if forwarded_for is None else {**LOCAL, "x-forwarded-for": forwarded_for}
    return client.post(route, json=NOT_A_PLAYER if route == "/puzzles/move" else [], headers=headers)


def assert_limited(answer: Any, limit: int, seconds: int) -> None:
    assert answer.status_code == 429, answer.text
    assert answer.json()["code"] == "address_searches" and answer.json()["args"] == {"limit": limit, "seconds": seconds}
    assert answer.headers["retry-after"] == str(seconds) and answer.headers["cache-control"] == "no-store"


def test_puzzle_and_lesson_moves_are_limited_per_forwarded_address() -> None:
    clock = Clock()
    quotas = AddressLimits(searches_per_minute=3, clock=clock)
    with TestClient(proxied_app(quotas), client=("127.0.0.2", 5000)) as proxy:
        assert search_request(proxy, "127.0.0.9").status_code == 400  # reached the route
        clock.now += 20
        assert search_request(proxy, "127.0.0.9", "/api/learn/move").status_code == 400  # one budget for both
        assert search_request(proxy, "127.0.0.9").status_code == 400
        clock.now += 10
        assert_limited(search_request(proxy, "127.0.0.9"), 3, 30)  # the first leaves the window in 30 s
        assert_limited(search_request(proxy, "127.0.0.9", "/api/learn/move"), 3, 30)
        for other in ("127.0.0.7", "127.0.0.8"):  # other clients behind the proxy, the proxy's own address
            assert search_request(proxy, other).status_code == 400, other
        assert search_request(proxy).status_code == 400  # a request of the proxy itself
        assert proxy.get("/puzzles/daily?player=" + "p" * 22, headers=LOCAL).status_code == 200  # no search
        clock.now += 30
        assert search_request(proxy, "127.0.0.9").status_code == 400  # one left the window: one fits
        assert_limited(search_request(proxy, "127.0.0.9"), 3, 20)
        metrics = proxy.get("/metrics", headers=LOCAL).text
        assert 'orderchaos_address_refused_total{kind="address_searches"} 3.0' in metrics


def test_a_forged_forwarded_for_does_not_escape_the_search_limit() -> None:
    quotas = AddressLimits(searches_per_minute=2, clock=Clock())
    with TestClient(proxied_app(quotas), client=("127.0.0.7", 5000)) as direct:  # not the proxy
        for forged in ("127.0.0.20", "127.0.0.21"):
            assert search_request(direct, forged).status_code == 400
        assert_limited(search_request(direct, "127.0.0.22"), 2, 60)  # each counted as 127.0.0.7
