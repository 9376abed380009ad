"""Play, watch and study games in the browser: a web server with an SVG board, games
against a friend (an invite link) or an agent, kept across restarts in a SQLite file or in a
PostgreSQL database that several servers share.

Opens nothing to the network unless --host says so: the default binds 127.0.0.1. Behind a
reverse proxy, --public-url names the address people use and --trusted-proxy the proxy whose
forwarded headers give the client's address (docs/deploy.md). Games are stored in --db
(a file, sqlite:///PATH or postgresql://USER@HOST:PORT/DB; default: orderchaos/games.sqlite3
under $XDG_DATA_HOME or ~/.local/share); --export-games DIR
writes the finished ones as games files and exits, --backup FILE copies the store (also while
a server runs on it) and exits. Saved games (from `orderchaos eval --save-games F`) can be
opened by name from --games-dir, or uploaded from the page. SIGTERM drains: the tabs are told
the server is restarting. With --bus redis://HOST:PORT/N, any number of servers on one store
behind one proxy are one site (the moves, the lobby, the clocks and the per-address limits
shared through Redis). Needs the `web` extra: pip install 'orderchaos[web]'.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import webbrowser
from typing import TYPE_CHECKING

from orderchaos.cli import options

if TYPE_CHECKING:
    from orderchaos.agents.worker_pool import WorkerPool
    from orderchaos.web.bus import RedisBus
    from orderchaos.web.quotas import AddressLimits

AGENT_BACKENDS = ("processes", "ray", "threads")
"""Where ``--agents`` runs the searches."""


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of ``serve``."""
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    parser.add_argument(
        "--games-dir", metavar="DIR",
        help="folder of saved games files that the page may open by name",
    )
    parser.add_argument(
        "--db", metavar="URL",
        help="the game store: a SQLite file (PATH or sqlite:///PATH; default: orderchaos/games.sqlite3 "
        "under $XDG_DATA_HOME or ~/.local/share; ':memory:' keeps nothing) or a PostgreSQL database "
        "that several servers may share (postgresql://USER@HOST:PORT/DB)",
    )
    parser.add_argument(
        "--bus", metavar="URL",
        help="redis://HOST:PORT/N: share the site with the other servers on the same Redis and game store "
        "(moves, lobby, clock sweep, per-address limits; default: this process alone)",
    )
    parser.add_argument(
        "--export-games", metavar="DIR",
        help="write the store's finished games into DIR as games files, then exit",
    )
    parser.add_argument(
        "--allow-specs", action="store_true",
        help="let the page name any agent spec, training run folders included, even when not on "
        "loopback (default: any registered spec on loopback without --public-url, only the named levels otherwise)",
    )
    parser.add_argument(
        "--max-connections", type=int, default=500, metavar="N",
        help="open WebSockets at once; more are told the server is busy (default 500)",
    )
    parser.add_argument(
        "--workers", "--max-searches", dest="workers", type=int, default=None, metavar="N",
        help="agent moves, hints and analyses computed at once, each on a worker of its own that keeps "
        "its networks and solver tables warm (default and most: the CPU count; 1,024 on a Ray cluster at --ray-address)",
    )
    parser.add_argument(
        "--agents", choices=AGENT_BACKENDS, default="processes",
        help="where the workers run: local worker processes (default), Ray actors (a local Ray instance "
        "on 127.0.0.1, or the cluster at --ray-address), or threads of the server process",
    )
    parser.add_argument(
        "--ray-address", metavar="HOST:PORT",
        help="with --agents ray: the head node of a running Ray cluster (default: start a local instance)",
    )
    parser.add_argument(
        "--public-url", metavar="URL",
        help="the address people use, https://HOST[:PORT], behind a reverse proxy: requests and pages "
        "of that origin are accepted (besides loopback), and the page's links use it",
    )
    parser.add_argument(
        "--trusted-proxy", action="append", default=[], metavar="ADDR",
        help="a proxy (IP address or network) whose X-Forwarded-For/Forwarded headers give the "
        "client's address; repeatable (default: none, the headers are ignored)",
    )
    parser.add_argument(
        "--max-connections-per-address", type=int, default=20, metavar="N",
        help="open WebSockets from one client address, when public-facing (--public-url, or not "
        "bound to loopback; default 20)",
    )
    parser.add_argument(
        "--games-per-minute", type=int, default=20, metavar="N",
        help="new games one client address may ask for in any minute, when public-facing (default 20)",
    )
    parser.add_argument(
        "--searches-per-minute", type=int, default=30, metavar="N",
        help="puzzle and lesson moves (each judged by the solver) one client address may send in any "
        "minute, when public-facing (default 30)",
    )
    parser.add_argument(
        "--backup", metavar="FILE",
        help="copy the game store (--db, SQLite or PostgreSQL) into the new SQLite file FILE, "
        "consistently even while a server runs on it, then exit",
    )
    parser.add_argument("--open", action="store_true", help="open the page in a web browser")
    parser.add_argument(
        "--house-bots", action="store_true",
        help="seat the shipped players (heuristic, pretrained, strongest) on the bots' ladder as fixed "
        "anchors, played by this server's workers",
    )
    parser.add_argument(
        "--move-time", type=options.SECONDS, default=30.0, metavar="S",
        help="seconds an agent may think about one move before the move fails (default 30)",
    )
    parser.add_argument(
        "--hint-time", type=options.SECONDS, default=1.0, metavar="S",
        help="solver time limit for a hint in seconds (default 1)",
    )


def run(args: argparse.Namespace) -> int:
    """Check the arguments and serve until interrupted (or export the stored games)."""
    from pathlib import Path

    if not 0 < args.port < 65536:
        print(f"orderchaos serve: --port must be 1..65535, got {args.port}", file=sys.stderr)
        return 2
    for name in ("max_connections", "workers", "max_connections_per_address", "games_per_minute",
                 "searches_per_minute"):
        value = getattr(args, name)
        if value is not None and value < 1:
            print(f"orderchaos serve: --{name.replace('_', '-')} must be at least 1, got {value}", file=sys.stderr)
            return 2
    if args.ray_address is not None and args.agents != "ray":
        print("orderchaos serve: --ray-address goes with --agents ray", file=sys.stderr)
        return 2
    if args.workers is not None:
        from orderchaos.agents.worker_pool import most_workers

        most = most_workers(args.agents, args.ray_address)
        if args.workers > most:
            bound = "one per CPU core here" if args.ray_address is None else "the most one server starts"
            print(f"orderchaos serve: --workers must be from 1 to {most} ({bound}), got {args.workers}",
                  file=sys.stderr)
            return 2
    if args.backup is not None and args.export_games is not None:
        print("orderchaos serve: --backup and --export-games each run alone; give one, then the other",
              file=sys.stderr)
        return 2
    if args.games_dir is not None and not Path(args.games_dir).is_dir():
        print(f"orderchaos serve: --games-dir {args.games_dir}: no such folder", file=sys.stderr)
        return 2
    from orderchaos.web.proxy import is_loopback, parse_public_url, parse_trusted_proxy, public_facing

    try:
        public = parse_public_url(args.public_url) if args.public_url is not None else None
    except ValueError as exc:
        print(f"orderchaos serve: --public-url {exc}", file=sys.stderr)
        return 2
    try:
        trusted = [parse_trusted_proxy(addr) for addr in args.trusted_proxy]
    except ValueError as exc:
        print(f"orderchaos serve: --trusted-proxy {exc}", file=sys.stderr)
        return 2
    if args.bus is not None:
        from orderchaos.web.bus import parse_bus_url

        try:
            parse_bus_url(args.bus)
        except ValueError as exc:
            print(f"orderchaos serve: --bus {exc}", file=sys.stderr)
            return 2
    from orderchaos.web.store import (
        StoreError, default_db_path, export_games, parse_store_url,
    )
    from orderchaos.files import OutputPathError, check_output_dir

    db = args.db or str(default_db_path())
    try:
        kind, location = parse_store_url(db)
    except StoreError as exc:
        print(f"orderchaos serve: --db {exc}", file=sys.stderr)
        return 2
    if args.backup is not None:
        return backup(db, args.backup)
    if args.export_games is not None and db == ":memory:":
        print("orderchaos serve: --export-games needs a --db file to read", file=sys.stderr)
        return 2
    if args.export_games is not None and kind == "sqlite" and not Path(location).is_file():
        print(f"orderchaos serve: --db {db}: no such file to export from", file=sys.stderr)
        return 2
    if args.export_games is not None:
        try:
            check_output_dir(args.export_games, "--export-games folder")
        except OutputPathError as exc:
            print(f"orderchaos serve: {exc}", file=sys.stderr)
            return 2
    store = options.open_store("serve", db)
    if isinstance(store, int):
        return store
    if args.export_games is None:
        try:
            store.check_writable()
        except StoreError as exc:
            print(f"orderchaos serve: --db {db}: {exc}", file=sys.stderr)
            store.close()
            return 2
    if args.export_games is not None:
        try:
            written = export_games(store, args.export_games)
        except OSError as exc:
            print(f"orderchaos serve: cannot write the games into {args.export_games}: "
                  f"{exc.strerror or exc}", file=sys.stderr)
            return 1
        games = sum(len(p.read_text().splitlines()) for p in written)
        print(f"orderchaos serve: wrote {games} finished games into {len(written)} files in {args.export_games}")
        return 0
    try:
        from orderchaos.web.app import create_app
        from orderchaos.web.proxy import allowed_hosts
        from orderchaos.web.server import check_listen, serve
        from orderchaos.web.services import Limits

        if args.bus is not None:
            import limits  # noqa: F401 - the per-address limits shared through --bus
            import redis  # noqa: F401 - the client of --bus
    except ImportError as exc:
        print(
            f"orderchaos serve: the web extra is not installed ({exc}); "
            f"install it with: pip install 'orderchaos[web]'",
            file=sys.stderr,
        )
        store.close()
        return 2
    try:
        check_listen(args.host, args.port)
    except ValueError as exc:
        print(f"orderchaos serve: {exc}", file=sys.stderr)
        store.close()
        return 2
    bus = None
    if args.bus is not None:
        from orderchaos.web.bus import RedisBus, bus_unreachable

        problem = bus_unreachable(args.bus)
        if problem is not None:
            print(f"orderchaos serve: --bus {args.bus}: cannot reach Redis ({problem})", file=sys.stderr)
            store.close()
            return 1
        bus = RedisBus(args.bus)
    if not is_loopback(args.host):
        print(exposure(args), file=sys.stderr)
    facing = public_facing(args.host, public)
    extra = {} if args.workers is None else {"max_searches": args.workers}
    limits = Limits(
        move_time=args.move_time, hint_time=args.hint_time, max_connections=args.max_connections,
        free_specs=not facing or args.allow_specs, spec_dirs=args.allow_specs, **extra,
    )
    try:
        workers = agent_workers(args.agents, limits.max_searches, args.ray_address)
    except ValueError as exc:  # RayBackendError: no ray, a bad or unreachable address
        print(f"orderchaos serve: {exc}", file=sys.stderr)
        store.close()
        return 2
    app = create_app(
        args.games_dir, limits, warm_up=True, db=store, allowed_hosts=allowed_hosts(public, args.host),
        public=public, trusted_proxies=trusted,
        quotas=address_limits(args, bus) if facing else None,
        workers=workers, bus=bus, house_bots=args.house_bots,
    )
    shown_host = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{shown_host}:{args.port}/"
    shown = f"{url}, public address {public.origin}/" if public is not None else url
    print(f"orderchaos serve: open {shown} (games stored in {store.path}; Ctrl-C stops)", flush=True)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.open:
        threading.Timer(1.0, webbrowser.open, [url]).start()
    try:
        serve(app, args.host, args.port)
    finally:  # Ctrl-C ends in KeyboardInterrupt (exit 130); every write is committed already
        if workers is not None:
            workers.close()
        store.close()
    print("orderchaos serve: stopped; the game store is closed", flush=True)
    return 0


def address_limits(args: argparse.Namespace, bus: RedisBus | None) -> AddressLimits:
    """The per-address limits of ``serve``: counted in Redis for all the instances with a bus,
    in this process without."""
    from orderchaos.web.quotas import AddressLimits, SharedAddressLimits

    counts = (args.max_connections_per_address, args.games_per_minute, args.searches_per_minute)
    return SharedAddressLimits(bus, *counts) if bus is not None else AddressLimits(*counts)


def agent_workers(kind: str, count: int, ray_address: str | None) -> WorkerPool | None:
    """The pool for ``--agents kind`` (None for threads): ``count`` workers, each warming up
    the opponent levels' agents when it starts. Raises RayBackendError (a ValueError) when
    Ray cannot be used."""
    if kind == "threads":
        return None
    from orderchaos.agents.worker_pool import WorkerPool
    from orderchaos.arena.agent_work import warm_bench
    from orderchaos.web.services import LEVELS

    return WorkerPool(kind, count, warm=warm_bench, warm_args=(tuple(LEVELS.values()),),
                      ray_address=ray_address, ray_setting="--ray-address")


def backup(db: str, target: str) -> int:
    """``--backup``: check the target, copy the store into it, print what was written."""
    from pathlib import Path

    from orderchaos.files import OutputPathError, check_output_file, os_error_reason
    from orderchaos.web.store import StoreError, StoreUnavailable, backup_store, parse_store_url, shown_location

    out = Path(target)
    kind, location = parse_store_url(db)
    if kind == "sqlite" and (db == ":memory:" or not Path(location).is_file()):
        print(f"orderchaos serve: --db {db}: no such file to back up", file=sys.stderr)
        return 2
    if out.exists():
        print(f"orderchaos serve: --backup {target}: already exists; name a new file", file=sys.stderr)
        return 2
    if not out.parent.is_dir() or not os.access(out.parent, os.W_OK):
        print(f"orderchaos serve: --backup {target}: {out.parent} is not a writable folder", file=sys.stderr)
        return 2
    try:
        check_output_file(out, "--backup copy")  # a folder that refuses new files (/proc) says so only when tried
    except OutputPathError as exc:
        print(f"orderchaos serve: {exc}", file=sys.stderr)
        return 2
    try:
        games = backup_store(db, out)
    except StoreUnavailable as exc:
        print(f"orderchaos serve: --backup: {exc}", file=sys.stderr)
        return 1
    except StoreError as exc:
        print(f"orderchaos serve: --backup: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a full disk: no copy is left, whole or partial
        print(f"orderchaos serve: --backup {target}: {os_error_reason(exc)}; no copy was made", file=sys.stderr)
        return 1
    shown = location if kind == "sqlite" else shown_location(location)
    print(f"orderchaos serve: copied {games} games from {shown} into {target}")
    return 0


def exposure(args: argparse.Namespace) -> str:
    """What a server bound beyond loopback exposes, in a few lines for stderr."""
    specs = ("any agent spec, including training run folders on this machine (--allow-specs)"
             if args.allow_specs else "the four named opponent levels only (no free agent specs)")
    folder = (f"open and read the games files in {args.games_dir}" if args.games_dir
              else "read no files of this machine (no --games-dir)")
    return (
        f"warning: binding {args.host}, not loopback: anyone who can reach this machine on port "
        f"{args.port} can\n"
        f"  - play and watch games, and read any game whose link they have;\n"
        f"  - start searches: {specs}, at most {args.workers or 'one per CPU'} at once;\n"
        f"  - {folder}.\n"
        f"  There is no login and no TLS: put it behind a reverse proxy with HTTPS for use beyond a trusted network."
    )
