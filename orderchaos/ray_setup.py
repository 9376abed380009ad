"""Starting or joining Ray, shared by every room that runs work on it (training's
``run.backend: ray``, the prover's ``--backend ray``).

This module stays light: it imports ray only inside :func:`import_ray` and
:func:`connect_ray`, so importing it (and the modules that use it) loads no ray.

* No address: a local Ray instance sized to this machine, listening on 127.0.0.1 only, with
  an object store of ``object_store_mb`` MiB and the dashboard off unless asked for.
* ``auto``: the cluster already running on this machine; ``HOST:PORT``: that head node,
  which must answer within :data:`CONNECT_TIMEOUT_S` seconds.
* A process that is connected already (a notebook, a test) keeps its connection.

Every failure (no ray installed, a malformed or unreachable address, ``ray.init`` refusing)
is a :class:`RayBackendError` with a one-line message naming the setting at fault.
"""

from __future__ import annotations

import logging
import os
import re
import socket
from typing import Any

CONNECT_TIMEOUT_S = 10.0
"""Seconds a Ray address may take to answer before giving up with an error."""

ADDRESS_PATTERN = r"auto|[^\s:]+:[0-9]{1,5}"
"""The addresses accepted: ``auto`` or ``HOST:PORT``."""


class RayBackendError(ValueError):
    """Ray cannot be used (not installed, no cluster at the address); one-line message."""


def import_ray(purpose: str) -> Any:
    """The ``ray`` module; :class:`RayBackendError` saying how to install it when it is
    missing (``purpose`` names what needs it, e.g. ``--backend ray``)."""
    try:
        import ray
    except ImportError as exc:
        raise RayBackendError(f"{purpose} needs ray ({exc}); install it with pip install 'orderchaos[ray]'") from None
    return ray


def check_address(address: str | None, setting: str) -> None:
    """Refuse a malformed Ray address (None, ``auto`` and ``HOST:PORT`` pass); ``setting``
    names where it came from (``run.ray_address``, ``--ray-address``)."""
    if address is None:
        return
    if not re.fullmatch(ADDRESS_PATTERN, address) or (address != "auto" and int(address.rsplit(":", 1)[1]) > 65535):
        raise RayBackendError(f"bad {setting} {address!r}: expected auto or HOST:PORT")


def connect_ray(
    address: str | None,
    *,
    object_store_mb: int,
    dashboard: bool = False,
    setting: str = "the Ray address",
    purpose: str = "the Ray backend",
) -> bool:
    """Make sure this process is connected to Ray: a local instance (``address`` None; its
    object store capped at ``object_store_mb`` MiB, the dashboard on loopback when asked
    for), the cluster on this machine (``auto``) or the head node at ``HOST:PORT``. True
    when this call started or joined Ray (the caller shuts it down at the end); False when
    the process was connected already, in which case the connection is used as it is and
    left open. ``setting`` names the address's option in messages, ``purpose`` what needs
    ray. Raises :class:`RayBackendError` with one line on failure, after at most
    :data:`CONNECT_TIMEOUT_S` seconds for an address that does not answer."""
    check_address(address, setting)
    ray = import_ray(purpose)
    if address not in (None, "auto"):
        host, port = address.rsplit(":", 1)
        try:
            socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
        except OSError as exc:
            raise RayBackendError(
                f"cannot reach a Ray cluster at {address} ({setting}) within "
                f"{CONNECT_TIMEOUT_S:.0f} s: {exc.strerror or exc}"
            ) from None
    if ray.is_initialized():
        return False
    quiet = {"logging_level": logging.WARNING, "log_to_driver": True}
    try:
        if address is None:
            ray.init(
                object_store_memory=object_store_mb * 2**20,
                include_dashboard=dashboard,
                _node_ip_address="127.0.0.1",  # a local instance listens on loopback only
                **quiet,
            )
        else:
            ray.init(address=address, **quiet)
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        where = "a local Ray instance" if address is None else f"the Ray cluster at {address}"
        raise RayBackendError(f"cannot connect to {where} ({setting}): {first}{_auth_hint(address)}") from None
    return True


def _auth_hint(address: str | None) -> str:
    """A hint for joining a head node with token authentication, which Ray (2.52 and later)
    turns on by itself for ``ray start --head`` when a token file exists, but never for a
    process that joins by an explicit address unless ``RAY_AUTH_MODE`` says so."""
    if address in (None, "auto") or os.environ.get("RAY_AUTH_MODE"):
        return ""
    return (
        "; if the head node uses token authentication, set RAY_AUTH_MODE=token here, with "
        "its token in RAY_AUTH_TOKEN or ~/.ray/auth_token"
    )
