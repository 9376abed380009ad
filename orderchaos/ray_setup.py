"""Starting or joining Ray, shared by every room that runs work on it (training's
``run.backend: ray``, the prover's ``--backend ray``).

This module stays light: it imports ray only inside :func:`import_ray` and
:func:`connect_ray`, so importing it (and the modules that use it) loads no ray.

* No address: a local Ray instance sized to this machine, listening on 127.0.0.1 only, with
  an object store of ``object_store_mb`` MiB and no dashboard process. A
  watchdog process ends every process of that instance when this one ends, however it ends
  (SIGKILL included), and SIGTERM keeps the handler it had before Ray was started (Python's
  default: exit status 143, as with the local backend).
* ``auto``: the cluster already running on this machine; ``HOST:PORT``: that head node,
  which must answer within :data:`CONNECT_TIMEOUT_S` seconds.
* A process that is connected already (a notebook, a test) keeps its connection.

Every failure (no ray installed, a malformed or unreachable address, ``ray.init`` refusing)
is a :class:`RayBackendError` with a one-line message naming the setting at fault.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
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
    setting: str = "the Ray address",
    purpose: str = "the Ray backend",
) -> bool:
    """Make sure this process is connected to Ray: a local instance (``address`` None; its
    object store capped at ``object_store_mb`` MiB, no dashboard), the cluster on this
    machine (``auto``) or the head node at ``HOST:PORT``. True when this call started or
    joined Ray (the caller shuts it down at the end); False when
    the process was connected already, in which case the connection is used as it is and
    left open. ``setting`` names the address's option in messages, ``purpose`` what needs
    ray. Raises :class:`RayBackendError` with one line on failure, after at most
    :data:`CONNECT_TIMEOUT_S` seconds for an address that does not answer."""
    check_address(address, setting)
    ray = import_ray(purpose)
    if address not in (None, "auto"):
        host, port = address.rsplit(":", 1)
        try:
            answers = _answers_http2(host, int(port), CONNECT_TIMEOUT_S)
        except OSError as exc:
            raise RayBackendError(
                f"cannot reach a Ray cluster at {address} ({setting}) within "
                f"{CONNECT_TIMEOUT_S:.0f} s: {exc.strerror or exc}"
            ) from None
        if not answers:  # ray.init would retry for minutes, printing warnings
            raise RayBackendError(
                f"no Ray cluster at {address} ({setting}): something listens there but does "
                f"not answer as a Ray head node (gRPC) within {CONNECT_TIMEOUT_S:.0f} s"
            )
    if ray.is_initialized():
        return False
    quiet = {"logging_level": logging.WARNING, "log_to_driver": True}
    try:
        if address is None:
            with _local_instance_settings(ray):
                ray.init(
                    object_store_memory=object_store_mb * 2**20,
                    include_dashboard=False,
                    _node_ip_address="127.0.0.1",
                    **quiet,
                )
        else:
            ray.init(address=address, **quiet)
    except Exception as exc:  # noqa: BLE001 -- ray.init raises a bare Exception when its node times out starting
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        where = "a local Ray instance" if address is None else f"the Ray cluster at {address}"
        raise RayBackendError(f"cannot connect to {where} ({setting}): {first}{_auth_hint(address)}") from None
    return True


_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def _answers_http2(host: str, port: int, timeout: float) -> bool:
    """True when the server at ``host:port`` answers an HTTP/2 connection preface with a
    SETTINGS frame, as every gRPC server (a Ray head's GCS) does at once; OSError when
    nothing accepts the connection."""
    with socket.create_connection((host, port), timeout=timeout) as conn:
        try:
            conn.sendall(_HTTP2_PREFACE)
            header = b""
            while len(header) < 9:
                chunk = conn.recv(9 - len(header))
                if not chunk:
                    return False
                header += chunk
        except (TimeoutError, ConnectionError):
            return False
    return header[3] == 4  # frame type 4: SETTINGS


OWNER_VARIABLE = "ORDERCHAOS_RAY_OWNER"
"""Set in the environment of every process of a local instance started here (they inherit
it), so that the watchdog can find them all once this process is gone."""
_LOOPBACK_VARIABLE = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
_watchdogs: list[subprocess.Popen] = []

_WATCHDOG = r"""
import os, select, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C reaches the whole process group;
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # this one ends when its owner has ended
owner, mark = int(sys.argv[1]), ("%s=%s" % (sys.argv[2], sys.argv[3])).encode()

def table():
    procs = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                with open("/proc/%s/stat" % pid) as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
                procs[int(pid)] = (int(fields[1]), fields[19], fields[0])  # ppid, start, state
            except (OSError, IndexError):
                pass
    return procs

def below(procs, roots):
    found, todo = set(), list(roots)
    while todo:
        parent = todo.pop()
        for pid, (ppid, _, _) in procs.items():
            if ppid == parent and pid not in found:
                found.add(pid)
                todo.append(pid)
    return found

seen = {}  # pid -> start time: every process the owner started, directly or not
while True:
    ready, _, _ = select.select([sys.stdin.buffer], [], [], 1.0)
    if ready and not os.read(sys.stdin.buffer.fileno(), 4096):
        break  # EOF: the owner exited or was killed
    procs = table()
    seen.update((pid, procs[pid][1]) for pid in below(procs, [owner]))
quiet = 0
while quiet < 3:  # until three sweeps in a row find nothing: a dying raylet may start more
    procs = table()
    ours = {pid for pid, start in seen.items() if pid in procs and procs[pid][1] == start}
    ours |= below(procs, ours)
    for pid in procs:
        try:
            with open("/proc/%d/environ" % pid, "rb") as fh:
                if mark in fh.read().split(b"\0"):
                    ours.add(pid)
        except OSError:
            pass
    ours = {pid for pid in ours if procs[pid][2] != "Z"}
    for pid in ours:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    quiet = 0 if ours else quiet + 1
    time.sleep(0.5)
"""


def _start_watchdog(owner: str) -> None:
    """Start the process that kills every process of the local instance once this process
    ends (it reads its stdin, a pipe from here, until EOF): those it saw descend from this
    one (it looks every second, keeping their start times so that a reused process id is
    spared), whatever descends from those, and those whose environment holds ``owner``
    (Ray's workers rewrite their title over it, hence the first two). Linux only (/proc)."""
    if not os.path.isdir("/proc"):
        return
    env = {k: v for k, v in os.environ.items() if k != OWNER_VARIABLE}
    _watchdogs.append(subprocess.Popen(
        [sys.executable, "-c", _WATCHDOG, str(os.getpid()), OWNER_VARIABLE, owner],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env=env, close_fds=True, start_new_session=True,
    ))


@contextlib.contextmanager
def _local_instance_settings(ray: Any) -> Iterator[None]:
    """While a local instance starts: every Ray server on loopback only, no dashboard
    process, the owner mark in the environment its processes inherit, and
    the SIGTERM handler this process had before restored afterwards.

    Ray resolves ``127.0.0.1`` to the machine's address unless it thinks clusters are off
    (its Windows/macOS switch), and its servers bind every interface unless their address
    is 127.0.0.1; it starts its API server (the dashboard process, without the web UI) even
    with ``include_dashboard=False``. Both are Ray internals, patched only for this call."""
    from ray._private import node, ray_constants

    owner = f"{os.getpid()}-{secrets.token_hex(8)}"
    _start_watchdog(owner)
    saved_env = {k: os.environ.get(k) for k in (OWNER_VARIABLE, _LOOPBACK_VARIABLE)}
    saved_cluster = getattr(ray_constants, "ENABLE_RAY_CLUSTER", None)
    saved_api = getattr(node.Node, "start_api_server", None)
    main_thread = threading.current_thread() is threading.main_thread()
    saved_sigterm = signal.getsignal(signal.SIGTERM) if main_thread else None
    os.environ[OWNER_VARIABLE] = owner
    os.environ[_LOOPBACK_VARIABLE] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False
    if saved_api is not None:
        node.Node.start_api_server = _no_api_server
    try:
        yield
    finally:
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        ray_constants.ENABLE_RAY_CLUSTER = saved_cluster
        if saved_api is not None:
            node.Node.start_api_server = saved_api
        if main_thread and saved_sigterm is not None:
            signal.signal(signal.SIGTERM, saved_sigterm)  # ray.init installs one that exits 1


def shutdown_ray() -> None:
    """Shut Ray down, then let the watchdog of a local instance started here end whatever
    of it is still running (Ray's agents can outlive ``ray.shutdown`` by a while)."""
    import ray

    ray.shutdown()
    while _watchdogs:
        watchdog = _watchdogs.pop()
        try:
            watchdog.stdin.close()  # EOF: it kills the instance's processes and exits
            watchdog.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            pass


def _no_api_server(self: Any, **_: Any) -> None:
    """Stands in for Ray's ``Node.start_api_server``: no dashboard process."""
    self._webui_url = None


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
