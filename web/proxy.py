"""The server behind a reverse proxy: the public address people use, which host names and page
origins are accepted, and whose address a request comes from.

``--public-url https://games.example.org`` names the one origin, besides loopback, that
requests may be addressed to (``Host``) and WebSockets opened from (``Origin``): the guard
against DNS rebinding stays on behind a proxy. ``--trusted-proxy ADDR`` names the proxies whose
``X-Forwarded-For`` (or, when a request has none, ``Forwarded``) says who the client is; from
any other peer those headers are ignored, so nobody who reaches the server directly can choose
the address it logs and limits by. :class:`ClientAddress` writes the resolved address into the
ASGI scope's ``client``, where everything after it reads it.

uvicorn's own proxy-headers support (``--forwarded-allow-ips``, ``ProxyHeadersMiddleware``)
was tried against tests/web/test_proxy.py in this middleware's place: it passes everything
about ``X-Forwarded-For`` (trusted addresses and networks, chains of trusted proxies, forged
hops), but it ignores ``Forwarded`` (RFC 7239) and takes a hop that is not an address
(``unknown``, an obfuscated name) as the client's address, so every client behind such a
proxy would share one address and one set of limits. This stays hand-written for those two.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
LOOPBACK_NAMES = ["localhost", "127.0.0.1", "::1", "[::1]"]
"""Host names a request may always be addressed to (local use)."""
DEFAULT_PORTS = {"http": 80, "https": 443}


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class PublicURL:
    """The address people use to reach the site, such as ``https://games.example.org``."""

    scheme: str
    host: str
    port: int | None
    """None: the scheme's default port."""

    @property
    def origin(self) -> str:
        """``scheme://host[:port]``, the form browsers send in ``Origin``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}" + ("" if self.port is None else f":{self.port}")


def parse_public_url(text: str) -> PublicURL:
    """Read ``--public-url``: ``http(s)://HOST[:PORT]`` with nothing after it but an optional
    ``/``. Raises ValueError saying what is accepted."""
    accepted = "accepted: https://HOST or https://HOST:PORT (http:// for a plain test site), no path"
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError:
        raise ValueError(f"{text!r} is not a URL; {accepted}") from None
    if parts.scheme not in DEFAULT_PORTS:
        raise ValueError(f"{text!r} does not start with https:// or http://; {accepted}")
    if not parts.hostname or parts.username or parts.password:
        raise ValueError(f"{text!r} names no host (or carries a user name); {accepted}")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError(f"{text!r} has a path, query or fragment; {accepted}")
    if port == 0:
        raise ValueError(f"{text!r} names port 0, which nobody can reach; {accepted}, PORT from 1 to 65535")
    if port == DEFAULT_PORTS[parts.scheme]:
        port = None
    return PublicURL(parts.scheme, parts.hostname.lower(), port)


def parse_trusted_proxy(text: str) -> IPNetwork:
    """Read one ``--trusted-proxy``: an IP address or network (``127.0.0.2``, ``127.0.0.0/24``,
    ``::1``). Raises ValueError saying what is accepted."""
    try:
        return ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        raise ValueError(f"{text!r} is not an IP address or network (such as 127.0.0.1, ::1 or 127.0.0.0/24)") from None


def public_facing(bind_host: str, public: PublicURL | None) -> bool:
    """Whether people other than this machine's users reach the server: it binds beyond
    loopback, or a proxy brings the public to it (a public URL)."""
    return public is not None or not is_loopback(bind_host)


def allowed_hosts(public: PublicURL | None, bind_host: str) -> list[str] | None:
    """The host names requests may be addressed to: loopback, the bound address and the public
    host; None (any) for a server bound beyond loopback without a public URL."""
    if public is None and not is_loopback(bind_host):
        return None
    hosts = LOOPBACK_NAMES + [bind_host]
    return hosts + [public.host] if public is not None else hosts


def origin_allowed(origin: str | None, host_header: str, public: PublicURL | None) -> bool:
    """Whether a WebSocket opened from a page at ``origin`` may talk to this server: no Origin
    (not a browser page), exactly the public origin, or a page of the host it was addressed to
    (with a public URL, only a loopback one)."""
    if origin is None:
        return True
    if public is not None and origin.lower().rstrip("/") == public.origin:
        return True
    try:
        netloc, name = urlsplit(origin).netloc.lower(), urlsplit(origin).hostname or ""
    except ValueError:
        return False
    if netloc != host_header.lower():
        return False
    return public is None or is_loopback(name)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """One hop's address as headers write it (``1.2.3.4``, ``1.2.3.4:80``, ``[::1]:80``,
    ``"[::1]"``), or None when it is not an address (``unknown``, an obfuscated name)."""
    text = text.strip().strip('"')
    if text.startswith("["):
        text = text[1:text.find("]")] if "]" in text else text
    elif text.count(":") == 1:
        text = text.split(":")[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def forwarded_chain(headers: Iterable[tuple[bytes, bytes]]) -> list[str]:
    """The hops a request names, client first: ``X-Forwarded-For``, or ``Forwarded``'s ``for=``
    values when it has no ``X-Forwarded-For`` (every header line of the kind, in order)."""
    xff: list[str] = []
    forwarded: list[str] = []
    for name, value in headers:
        key = name.lower()
        if key == b"x-forwarded-for":
            xff += [part.strip() for part in value.decode("latin-1").split(",")]
        elif key == b"forwarded":
            for element in value.decode("latin-1").split(","):
                for pair in element.split(";"):
                    field, _, hop = pair.strip().partition("=")
                    if field.strip().lower() == "for":
                        forwarded.append(hop.strip())
    return xff if xff else forwarded


def client_address(peer: str, headers: Iterable[tuple[bytes, bytes]], trusted: Sequence[IPNetwork]) -> str:
    """The client's address: the TCP peer, unless the peer is a trusted proxy; then the
    right-most hop of the forwarded chain that is not a trusted proxy (hops are read from the
    proxy nearest the server outwards, and a hop that is not an address stops the walk at the
    proxy that wrote it)."""
    def trusted_hop(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        return any(address.version == net.version and address in net for net in trusted)

    current = _address(peer)
    if current is None or not trusted_hop(current):
        return peer
    for hop in reversed(forwarded_chain(headers)):
        address = _address(hop)
        if address is None:
            break
        current = address
        if not trusted_hop(address):
            break
    return str(current)


class ClientAddress:
    """ASGI middleware: ``scope["client"]`` becomes the client's address as
    :func:`client_address` resolves it (the peer's own when no proxy is trusted)."""

    def __init__(self, app: Any, trusted: Sequence[IPNetwork] = ()) -> None:
        self.app = app
        self.trusted = list(trusted)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket") and self.trusted and scope.get("client"):
            peer, port = scope["client"]
            resolved = client_address(peer, scope.get("headers", []), self.trusted)
            if resolved != peer:
                scope = {**scope, "client": (resolved, 0)}
        await self.app(scope, receive, send)


def request_client(scope: dict) -> str:
    """The client address of a request (after :class:`ClientAddress`), ``-`` when unknown."""
    client = scope.get("client")
    return client[0] if client else "-"
