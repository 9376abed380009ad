"""Fixtures and settings for every test. Shared strategies, generators and brute-force
oracles live in tests/helpers.py (imported as ``helpers``)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import helpers


def pytest_configure(config: pytest.Config) -> None:
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        return
    torch.set_num_threads(1)  # the test machine is shared; more threads only contend


@pytest.fixture(scope="session")
def repo() -> Path:
    """The repository root."""
    return helpers.REPO


@pytest.fixture(scope="session")
def smoke_config() -> Path:
    """configs/smoke.yaml: the tiny training config."""
    return helpers.SMOKE


@pytest.fixture
def in_process_ray() -> Iterator[Any]:
    """The ray module, connected to an in-process Ray instance (2 CPUs, on 127.0.0.1) that is
    shut down afterwards, or to the process's connection when there is one already (left
    open). Skips when ray is not installed."""
    ray = pytest.importorskip("ray")
    owns = not ray.is_initialized()
    if owns:
        ray.init(num_cpus=2, include_dashboard=False, object_store_memory=100 * 2**20,
                 _node_ip_address="127.0.0.1", logging_level=logging.WARNING)
    try:
        yield ray
    finally:
        if owns:
            ray.shutdown()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[helpers.RedisServer]:
    """A redis-server of the test run's own on a loopback port (skipped, with the reason,
    when Debian's redis-server is not installed; under CI a missing one fails instead)."""
    import os

    pytest.importorskip("redis", reason="redis-py is not installed: pip install -e '.[dev]'")
    if not Path(helpers.RedisServer.BINARY).exists():
        reason = f"{helpers.RedisServer.BINARY} is missing: install it with `apt-get install -y redis-server`"
        if os.environ.get("CI"):
            raise RuntimeError(f"Redis tests under CI: {reason} (.ci/run should have)")
        pytest.skip(reason)
    server = helpers.RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server: helpers.RedisServer) -> str:
    """The URL of an emptied database of :func:`redis_server`."""
    import redis

    client = redis.Redis.from_url(redis_server.url(0))
    try:
        client.flushdb()
    finally:
        client.close()
    return redis_server.url(0)


@pytest.fixture(params=["memory", "redis"])
def bus(request: pytest.FixtureRequest) -> Callable[[], Any]:
    """Makes the bus of a web site: none (one instance alone, the lobby in memory) or a
    RedisBus on the tests' Redis."""
    if request.param == "memory":
        return lambda: None
    from orderchaos.web.bus import RedisBus

    url = request.getfixturevalue("redis_url")
    return lambda: RedisBus(url)


def running_postgres_cluster() -> Iterator[helpers.PostgresCluster]:
    """A new PostgreSQL cluster (helpers.PostgresCluster), running until the generator
    ends; skips the test when PostgreSQL is not installed."""
    bindir = helpers.postgres_bindir()
    if bindir is None:
        pytest.skip("PostgreSQL's initdb and pg_ctl are not installed (Debian: apt-get install postgresql)")
    cluster = helpers.PostgresCluster(bindir)
    try:
        cluster.create()
        cluster.start()
        yield cluster
    finally:
        cluster.remove()


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[helpers.PostgresCluster]:
    """A PostgreSQL cluster of the tests' own on a loopback port, started once for the whole test run."""
    yield from running_postgres_cluster()


@pytest.fixture
def own_postgres_cluster() -> Iterator[helpers.PostgresCluster]:
    """A PostgreSQL cluster for one test alone (one that stops and restarts it)."""
    yield from running_postgres_cluster()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a test's game store lives, once for each backend: a new SQLite file, and a new
    database of the test run's PostgreSQL cluster."""
    if request.param == "sqlite":
        return str(tmp_path / "games.sqlite3")
    return request.getfixturevalue("postgres_cluster").new_database()
