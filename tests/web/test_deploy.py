"""The shipped proxy files and the nginx steps of docs/deploy.md, tried: HSTS from both proxies
(nginx run for real on loopback ports, Caddy's adapted configuration), nginx's TLS versions, and
the certificate obtained before the site that names it is enabled."""

from __future__ import annotations

import http.server
import json
import shutil
import ssl
import subprocess
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import free_loopback_port, wait_for

ROOT = Path(__file__).resolve().parents[2]
NGINX_SITE = ROOT / "deploy" / "nginx-orderchaos.conf"
CADDYFILE = ROOT / "deploy" / "Caddyfile"
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
HSTS = "max-age=31536000"


def nginx_steps() -> list[str]:
    """The command lines of docs/deploy.md's "Or nginx" block."""
    text = (ROOT / "docs" / "deploy.md").read_text()
    block = text[text.index("### Or nginx"):].split("```bash\n", 1)[1].split("```", 1)[0]
    return [line.strip() for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_the_nginx_steps_get_the_certificate_before_enabling_the_site_that_names_it() -> None:
    steps = nginx_steps()
    first = {word: next(i for i, step in enumerate(steps) if word in step)
             for word in ("certbot certonly", "sites-enabled", "nginx -t")}
    assert first["certbot certonly"] < first["sites-enabled"] < first["nginx -t"], steps
    assert "/etc/letsencrypt/live/games.example.org/fullchain.pem" in NGINX_SITE.read_text()


def test_nginx_allows_tls_1_2_and_1_3_only() -> None:
    tls_server = NGINX_SITE.read_text().split("listen 443", 1)[1]
    assert "ssl_protocols TLSv1.2 TLSv1.3;" in tls_server


@pytest.fixture
def backend() -> Iterator[int]:
    """A plain HTTP server on loopback standing for ``orderchaos serve``: 200 ``ok``."""
    class Ok(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the handler's protocol
            self.send_response(200)
            self.send_header("Content-Length", "3")
            self.end_headers()
            self.wfile.write(b"ok\n")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Ok)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.mark.skipif(NGINX is None or shutil.which("openssl") is None, reason="nginx or openssl is not installed")
def test_nginx_sends_hsts_on_the_https_site(tmp_path: Path, backend: int) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=games.example.org", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=120)
    http_port, https_port = free_loopback_port(), free_loopback_port()
    site = (NGINX_SITE.read_text()
            .replace("listen 80;", f"listen 127.0.0.1:{http_port};").replace("listen [::]:80;", "")
            .replace("listen 443 ssl http2;", f"listen 127.0.0.1:{https_port} ssl http2;")
            .replace("listen [::]:443 ssl http2;", "")
            .replace("/etc/letsencrypt/live/games.example.org/fullchain.pem", str(cert))
            .replace("/etc/letsencrypt/live/games.example.org/privkey.pem", str(key))
            .replace("http://127.0.0.1:8000", f"http://127.0.0.1:{backend}"))
    (tmp_path / "site.conf").write_text(site)
    temp = "\n".join(f"    {kind}_temp_path {tmp_path}/{kind};" for kind in ("client_body", "proxy", "fastcgi",
                                                                             "uwsgi", "scgi"))
    (tmp_path / "nginx.conf").write_text(
        f"daemon off;\npid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\nworker_processes 1;\n"
        f"events {{}}\nhttp {{\n    access_log off;\n{temp}\n    include {tmp_path}/site.conf;\n}}\n")
    command = [NGINX, "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf"), "-e", str(tmp_path / "error.log")]
    checked = subprocess.run([*command, "-t"], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stderr
    nginx = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    insecure = ssl.create_default_context()
    insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE
    request = urllib.request.Request(f"https://127.0.0.1:{https_port}/healthz", headers={"Host": "games.example.org"})
    try:
        def nginx_running() -> None:
            assert nginx.poll() is None, nginx.communicate()[1]

        def healthz() -> tuple[bytes, str | None]:
            with urllib.request.urlopen(request, context=insecure, timeout=10) as answer:
                return answer.read(), answer.headers["Strict-Transport-Security"]

        body, hsts = wait_for(healthz, "nginx answers", still_running=nginx_running, not_yet=(OSError,), seconds=60)
        assert body == b"ok\n" and hsts == HSTS
    finally:
        nginx.terminate()
        nginx.wait(timeout=30)


@pytest.mark.skipif(shutil.which("caddy") is None, reason="caddy is not installed")
def test_the_caddyfile_sends_hsts(tmp_path: Path) -> None:
    adapted = subprocess.run(["caddy", "adapt", "--config", str(CADDYFILE), "--adapter", "caddyfile"],
                             capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert adapted.returncode == 0, adapted.stderr
    config = json.loads(adapted.stdout)
    found: list[object] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("handler") == "headers":
                found.append(node.get("response", {}).get("set", {}).get("Strict-Transport-Security"))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(config)
    assert found == [[HSTS]]
