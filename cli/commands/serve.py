"""Play, watch and study games in the browser: a local web server with an SVG board.

Opens nothing to the network unless --host says so: the default binds 127.0.0.1. Saved
games (from `orderchaos eval --save-games F`) can be opened by name from --games-dir, or
uploaded from the page. Needs the `web` extra: pip install 'orderchaos[web]'.
"""

from __future__ import annotations

import argparse
import ipaddress
import sys
import threading
import webbrowser


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of ``serve``."""
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    parser.add_argument(
        "--games-dir", metavar="DIR",
        help="folder of saved games files that the page may open by name",
    )
    parser.add_argument("--open", action="store_true", help="open the page in a web browser")
    parser.add_argument(
        "--move-time", type=float, default=30.0, metavar="S",
        help="seconds an agent may think about one move before the move fails (default 30)",
    )
    parser.add_argument(
        "--hint-time", type=float, default=1.0, metavar="S",
        help="solver time limit for a hint in seconds (default 1)",
    )


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def run(args: argparse.Namespace) -> int:
    """Check the arguments and serve until interrupted."""
    from pathlib import Path

    for name in ("move_time", "hint_time"):
        if getattr(args, name) <= 0:
            print(f"orderchaos serve: --{name.replace('_', '-')} must be positive seconds", file=sys.stderr)
            return 2
    if not 0 < args.port < 65536:
        print(f"orderchaos serve: --port must be 1..65535, got {args.port}", file=sys.stderr)
        return 2
    if args.games_dir is not None and not Path(args.games_dir).is_dir():
        print(f"orderchaos serve: --games-dir {args.games_dir}: no such folder", file=sys.stderr)
        return 2
    try:
        import uvicorn

        from orderchaos.cli.web.app import create_app
        from orderchaos.cli.web.sessions import Limits
    except ImportError as exc:
        print(
            f"orderchaos serve: the web extra is not installed ({exc}); "
            f"install it with: pip install 'orderchaos[web]'",
            file=sys.stderr,
        )
        return 2
    if not is_loopback(args.host):
        print(
            f"warning: binding {args.host}, not loopback: anyone who can reach this machine on "
            f"port {args.port} can use the server (run agents, read --games-dir)",
            file=sys.stderr,
        )
    limits = Limits(move_time=args.move_time, hint_time=args.hint_time)
    loopback_names = ["localhost", "127.0.0.1", "[::1]", "::1", args.host]
    app = create_app(
        args.games_dir, limits, warm_up=True,
        allowed_hosts=loopback_names if is_loopback(args.host) else None,
    )
    shown_host = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{shown_host}:{args.port}/"
    print(f"orderchaos serve: open {url} (Ctrl-C stops)", flush=True)
    if args.open:
        threading.Timer(1.0, webbrowser.open, [url]).start()
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
