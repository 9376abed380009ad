"""deploy/compose.yaml, read as podman-compose reads it: every file it names exists (the
Containerfile it builds, the Caddyfile it mounts, the PostgreSQL script the image runs), the
Containerfile's base is the image deploy/make-base-image.sh makes, the services find each
other by name on their own network and only Caddy is published (on loopback), its Caddy
proxies the way deploy/Caddyfile-instances does, and Caddy accepts its Caddyfile. docs/deploy.md says how it was run for real."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml")

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
COMPOSE = DEPLOY / "compose.yaml"
IN_IMAGE = "/opt/orderchaos/src/"
"""Where deploy/Containerfile copies the repository."""
CADDY = Path("/usr/bin/caddy")


def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())


def option(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def test_every_file_the_compose_file_names_exists() -> None:
    services = compose()["services"]
    built = [s["build"] for s in services.values() if "build" in s]
    assert len(built) == 1, "one service builds the image the others run"
    context = (COMPOSE.parent / built[0]["context"]).resolve()
    containerfile = context / built[0]["dockerfile"]
    assert containerfile.is_file(), containerfile
    assert all(s["image"] == "localhost/orderchaos:latest" for s in services.values())
    for name, service in services.items():
        mounted: dict[str, str] = {}
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):  # a file of the repository, not a named volume
                assert (COMPOSE.parent / source).is_file(), f"{name} mounts {source}, which is missing"
                mounted[volume.split(":")[1]] = source
            else:
                assert source in compose()["volumes"], f"{name}: volume {source} is not declared"
        for word in service["command"]:
            for path in re.findall(rf"{IN_IMAGE}(\S+)", str(word)):
                assert (context / path).is_file(), f"{name} runs {path}, which the image would not have"
            if str(word).startswith("/") and str(word).endswith(".sh"):
                assert str(word) in mounted, f"{name} runs {word}, which nothing mounts"
    # the Containerfile's base is the image the script makes
    base = re.search(r"^FROM (\S+)", containerfile.read_text(), re.M).group(1)
    assert f"podman import --change 'CMD [\"/bin/bash\"]' - {base}" in (DEPLOY / "make-base-image.sh").read_text()
    ignored = (context / ".containerignore").read_text().split()
    assert ".venv" in ignored and ".git" in ignored


def test_the_services_find_each_other_and_only_caddy_is_published_on_loopback() -> None:
    spec = compose()
    services = spec["services"]
    assert all("network_mode" not in s for s in services.values())
    published = {name: s["ports"] for name, s in services.items() if "ports" in s}
    assert list(published) == ["caddy"] and all(p.startswith("127.0.0.1:") for p in published["caddy"])
    subnet = re.search(r'--subnet "\$SUBNET" (\S+)', COMPOSE.read_text())  # the operator's subnet, one name
    assert subnet is not None and spec["networks"]["default"] == {"external": True, "name": subnet.group(1)}
    assert services["postgres"]["environment"] == {"SUBNET": "${SUBNET}"}
    script = (DEPLOY / "compose-postgres.sh").read_text()
    assert "host all orderchaos ${SUBNET:?" in script and "-p 5432" in script
    redis = services["redis"]["command"]
    instances = {name: s for name, s in services.items() if name.startswith("instance")}
    assert len(instances) == 2
    for name, instance in instances.items():
        command = instance["command"]
        assert option(command, "--host") == name  # Caddy's health checks address it by this name
        assert option(command, "--db") == "postgresql://orderchaos@postgres:5432/postgres"
        assert option(command, "--bus") == f"redis://redis:{option(redis, '--port')}/0"
        assert option(command, "--trusted-proxy") == "${SUBNET}"
        assert set(instance["depends_on"]) == {"postgres", "redis"}
    caddyfile = (DEPLOY / "Caddyfile-compose").read_text()
    upstreams = " ".join(f"{name}:{option(i['command'], '--port')}" for name, i in instances.items())
    assert f"reverse_proxy {upstreams} {{" in caddyfile
    listen = re.search(r"^http://:(\d+) \{", caddyfile, re.M)
    assert listen is not None and published["caddy"] == [f"127.0.0.1:8080:{listen.group(1)}"]
    assert all(option(i["command"], "--public-url") == "http://127.0.0.1:8080" for i in instances.values())


def proxy_settings(text: str) -> list[str]:
    block = re.search(r"^\treverse_proxy [^\n]*\{\n(.*?)^\t\}", text, re.M | re.S)
    assert block is not None
    return [line.strip() for line in block.group(1).splitlines()]


def test_the_compose_caddy_balances_as_the_shipped_instances_caddyfile() -> None:
    assert proxy_settings((DEPLOY / "Caddyfile-compose").read_text()) == proxy_settings(
        (DEPLOY / "Caddyfile-instances").read_text())


def test_caddy_accepts_the_compose_caddyfile(tmp_path: Path) -> None:
    if not CADDY.exists():
        pytest.skip(f"{CADDY} is missing: install it with `apt-get install -y caddy`")
    done = subprocess.run([str(CADDY), "adapt", "--config", str(DEPLOY / "Caddyfile-compose"), "--adapter",
                           "caddyfile"], capture_output=True, text=True, timeout=60,
                          env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert '"upstreams"' in done.stdout, shlex.quote(done.stdout[:200])
