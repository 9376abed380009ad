"""The load test against a site of several ``orderchaos serve`` instances
(``python -m orderchaos.web.load --instances N``): one PostgreSQL store, one Redis bus and
Caddy in front, all started here on loopback ports in a temporary folder and stopped
afterwards, however the run ends.

It starts, in order: a PostgreSQL cluster of its own (``initdb``, ``pg_ctl``; fsync and
``synchronous_commit`` as chosen, on by default as a site would run), a ``redis-server`` that
saves nothing, ``instances`` ``serve`` processes on that database and bus, and Caddy with one
upstream per instance (``deploy/Caddyfile-instances``' policy: least connections, active
health checks on ``/healthz``, a refused connection tried on the next instance). The scripted
players of :mod:`orderchaos.web.load` connect only to Caddy. Afterwards the games in
PostgreSQL are checked against the moves the players saw, as in the single-instance test.
Only loopback addresses are ever contacted.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from orderchaos.web.load import (HOST, Hold, Resumes, _free_port, _run_clients, check_store, child_pids, cpu_seconds,
                                 moves_lost, rates, spawn_server, stop_server)

CADDY = "/usr/bin/caddy"
REDIS_SERVER = "/usr/bin/redis-server"
PG_USER = "orderchaos"
READY_DEADLINE_S = 600.0
"""How long the tool waits for a process it started to answer (a busy machine starts slowly)."""
STALL_S = 60.0
"""A player who hears nothing for this long gives up its game and counts an error: far more
than any answer takes on a busy machine, so only a message that never comes reaches it."""


DISRUPTIONS = ("rolling-restart", "kill-one")
"""What :func:`site_load_test` can do to the instances while the players play: SIGTERM each
in turn, starting it again and waiting until it is ready before the next; or ``kill -9`` of the
first instance (its whole process group, workers too), then start it again."""
SIGTERM_GRACE_S = 30.0
"""How long a SIGTERMed instance gets to exit before the disruption counts it as hung and kills it."""


class StartFailed(RuntimeError):
    """A process the site needs did not start; the message says which and ends with its log."""


def postgres_bindir() -> Path | None:
    """The folder of PostgreSQL's server programs (initdb, pg_ctl): on PATH, or Debian's
    /usr/lib/postgresql/VERSION/bin (the newest); None when not installed."""
    found = shutil.which("initdb")
    if found is not None and (Path(found).resolve().parent / "pg_ctl").exists():
        return Path(found).resolve().parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                      key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0)
    return versions[-1].parent if versions else None


def _as_owner(line: list[str]) -> list[str]:
    # PostgreSQL refuses to run as root: as root, run it as the user Debian's package creates
    return ["runuser", "-u", "postgres", "--", *line] if os.geteuid() == 0 else line


def _run(line: list[str], cwd: Path) -> None:
    done = subprocess.run(line, capture_output=True, text=True, timeout=READY_DEADLINE_S, cwd=cwd)
    if done.returncode != 0:
        raise StartFailed(f"{line[0] if line[0] != 'runuser' else line[4]} failed ({done.returncode}): "
                          f"{(done.stdout + done.stderr)[-2000:]}")


@contextmanager
def postgres(folder: Path, synchronous_commit: bool) -> Iterator[str]:
    """A new PostgreSQL cluster in ``folder`` on a free loopback port (trust authentication
    for user ``orderchaos``, fsync and ``synchronous_commit`` on or both off): the URL of its
    database ``orderchaos``; stopped (immediate) on leaving."""
    bindir = postgres_bindir()
    if bindir is None:
        raise StartFailed("PostgreSQL's initdb and pg_ctl are not installed (Debian: apt-get install postgresql)")
    folder.mkdir()
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    data, port = folder / "data", _free_port()
    _run(_as_owner([str(bindir / "initdb"), "-D", str(data), "-U", PG_USER, "-A", "trust", "--no-sync",
                    "-E", "UTF8", "--locale=C"]), folder)
    durability = "on" if synchronous_commit else "off"
    try:
        _run(_as_owner([str(bindir / "pg_ctl"), "-D", str(data), "-l", str(folder / "server.log"), "-w",
                        "-t", str(int(READY_DEADLINE_S)), "-o",
                        f"-c listen_addresses={HOST} -p {port} -k {folder} -c max_connections=200"
                        f" -c fsync={durability} -c synchronous_commit={durability}", "start"]), folder)
        _run(_as_owner([str(bindir / "psql"), "-h", HOST, "-p", str(port), "-U", PG_USER, "-d", "postgres",
                        "-c", "CREATE DATABASE orderchaos"]), folder)
        yield f"postgresql://{PG_USER}@{HOST}:{port}/orderchaos"
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run(_as_owner([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]),
                           capture_output=True, timeout=120, cwd=folder)


def postmaster_pid(url_folder: Path) -> int | None:
    """The PostgreSQL server's process id, from its data folder's postmaster.pid."""
    try:
        return int((url_folder / "data" / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


@contextmanager
def redis_server(folder: Path) -> Iterator[tuple[str, subprocess.Popen]]:
    """A ``redis-server`` on a free loopback port that saves nothing, with its files in
    ``folder``: its URL (database 0) and process, once it answers PING; ended on leaving."""
    import redis

    if not Path(REDIS_SERVER).exists():
        raise StartFailed(f"{REDIS_SERVER} is missing (Debian: apt-get install redis-server)")
    folder.mkdir()
    port = _free_port()
    with (folder / "redis.log").open("wb") as log:
        process = subprocess.Popen([REDIS_SERVER, "--bind", HOST, "--port", str(port), "--dir", str(folder),
                                    "--save", "", "--appendonly", "no", "--protected-mode", "yes"],
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        client = redis.Redis(host=HOST, port=port, socket_connect_timeout=1, socket_timeout=1)
        try:
            _wait(lambda: _pings(client), process, folder / "redis.log", "redis-server")
        finally:
            client.close()
        yield f"redis://{HOST}:{port}/0", process
    finally:
        stop_server(process)


def _pings(client: Any) -> bool:
    import redis

    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False


def _wait(ready: Any, process: subprocess.Popen, log: Path, name: str) -> None:
    """Poll ``ready()`` until true; :class:`StartFailed` with the log when ``process`` exits
    or :data:`READY_DEADLINE_S` passes."""
    deadline = time.monotonic() + READY_DEADLINE_S
    while not ready():
        if process.poll() is not None or time.monotonic() > deadline:
            state = f"exited with status {process.returncode}" if process.poll() is not None else "never got ready"
            raise StartFailed(f"{name} {state}: {log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.1)  # poll interval while it starts


def _healthy(base: str, workers: int = 0) -> bool:
    """Whether ``base`` answers ``/healthz`` with 200 and has ``workers`` warm workers."""
    try:
        with urllib.request.urlopen(base + "/healthz", timeout=5) as answer:
            if answer.status != 200:
                return False
        if not workers:
            return True
        with urllib.request.urlopen(base + "/metrics", timeout=5) as answer:
            text = answer.read().decode()
    except OSError:  # not listening yet, not ready (503), or slow to answer
        return False
    found = [line.split()[1] for line in text.splitlines() if line.startswith("orderchaos_workers_ready ")]
    return bool(found) and float(found[0]) >= workers


def caddyfile(port: int, backends: list[int]) -> str:
    """deploy/Caddyfile-instances' proxy on plain HTTP at 127.0.0.1:``port``, without the admin
    API or certificates: what the load test needs and nothing that leaves the machine."""
    upstreams = " ".join(f"{HOST}:{backend}" for backend in backends)
    return f"""{{
	admin off
	auto_https off
}}
http://{HOST}:{port} {{
	bind {HOST}
	reverse_proxy {upstreams} {{
		lb_policy least_conn
		lb_try_duration 5s
		lb_try_interval 250ms
		health_uri /healthz
		health_interval 2s
		health_timeout 2s
		health_status 200
		fail_duration 10s
	}}
}}
"""


@contextmanager
def caddy(folder: Path, backends: list[int]) -> Iterator[tuple[int, subprocess.Popen]]:
    """Caddy on a free loopback port in front of ``backends``: its port and process, once
    ``/healthz`` through it answers 200; stopped on leaving."""
    if not Path(CADDY).exists():
        raise StartFailed(f"{CADDY} is missing (Debian: apt-get install caddy)")
    folder.mkdir()
    port = _free_port()
    (folder / "Caddyfile").write_text(caddyfile(port, backends))
    env = {**os.environ, "HOME": str(folder), "XDG_DATA_HOME": str(folder / "data"),
           "XDG_CONFIG_HOME": str(folder / "config")}
    with (folder / "caddy.log").open("wb") as log:
        process = subprocess.Popen([CADDY, "run", "--config", str(folder / "Caddyfile"), "--adapter", "caddyfile"],
                                   stdout=subprocess.DEVNULL, stderr=log, env=env, cwd=folder, start_new_session=True)
    try:
        _wait(lambda: _healthy(f"http://{HOST}:{port}"), process, folder / "caddy.log", "caddy")
        yield port, process
    finally:
        stop_server(process)


def instance_command(port: int, db_url: str, bus_url: str, max_connections: int, agents: str,
                     workers: int) -> list[str]:
    """The ``orderchaos serve`` command line of one instance of the site."""
    import sys

    return [sys.executable, "-m", "orderchaos", "serve", "--host", HOST, "--port", str(port), "--db", db_url,
            "--bus", bus_url, "--max-connections", str(max_connections), "--agents", agents,
            "--workers", str(workers)]


class Instance:
    """One ``serve`` of the site on a fixed port, which can be stopped and started again."""

    def __init__(self, number: int, command: list[str], folder: Path, port: int, workers: int) -> None:
        self.number, self.command, self.folder, self.port, self.workers = number, command, folder, port, workers
        self.process = spawn_server(command, folder)
        self.cpu_s_before = 0.0
        """CPU seconds of its processes before the last restart (read as each was stopped: a floor)."""

    @property
    def log(self) -> Path:
        """Its log, kept across restarts."""
        return self.folder / "serve.log"

    def wait_ready(self) -> None:
        """Wait until it answers ``/healthz`` 200 with its workers warm (:class:`StartFailed`
        when it exits or never does)."""
        _wait(lambda: _healthy(f"http://{HOST}:{self.port}", self.workers), self.process, self.log,
              f"instance {self.number}")

    def restart(self, kill: bool) -> dict[str, float]:
        """SIGTERM it (or with ``kill``, SIGKILL its process group), start it again on the same
        port, and wait until it is ready: seconds until it exited and until it was ready."""
        began = time.perf_counter()
        self.cpu_s_before += _process_tree_cpu([self.process.pid])
        if kill:
            os.killpg(self.process.pid, signal.SIGKILL)
        else:
            self.process.terminate()
        try:
            self.process.wait(timeout=SIGTERM_GRACE_S)
        except subprocess.TimeoutExpired:
            pass  # counted as the exit time; stop() kills it
        exited = time.perf_counter() - began
        self.stop()
        self.process = spawn_server(self.command, self.folder, append=True)
        self.wait_ready()
        return {"instance": self.number, "exited_s": exited, "ready_s": time.perf_counter() - began}

    def stop(self) -> None:
        """Stop it and its workers (:func:`.load.stop_server`)."""
        stop_server(self.process)


def disrupt(instances: list[Instance], how: str) -> list[dict[str, float]]:
    """``rolling-restart``: each instance in turn SIGTERMed, started again and waited for until
    ready before the next; ``kill-one``: the first one killed (``kill -9``) and started again.
    For each: when it began (seconds from the call), and :meth:`Instance.restart`'s times."""
    began = time.perf_counter()
    events = []
    for instance in instances if how == "rolling-restart" else instances[:1]:
        at = time.perf_counter() - began
        events.append({"at_s": at, **instance.restart(kill=how == "kill-one")})
    return events


async def _play_and_disrupt(url: str, instances: list[Instance], how: str | None, after: float,
                            hold_from_ply: int | None, friend_games: int, agent_games: int, seed: int,
                            time_control: str, think: float, ramp: float, errors: list[str], stall: float,
                            resumes: Resumes) -> tuple[list[Any], float, dict[str, Any]]:
    """The players, and ``after`` seconds into their games the disruption ``how`` (none: None)
    in a thread beside them: the logs, the seconds, and what the disruption did and when. With
    ``hold_from_ply``, the disruption begins instead once every game has a move, and no player
    moves at that ply or later until it has ended (:class:`.load.Hold`)."""
    hold = Hold(hold_from_ply) if hold_from_ply is not None and how is not None else None
    logs: list[Any] = []
    players = asyncio.create_task(_run_clients(url, friend_games, agent_games, seed, time_control, think, ramp,
                                               errors=errors, stall=stall, resumes=resumes, hold=hold, logs=logs))
    started = time.perf_counter()
    timeline: dict[str, Any] = {"events": [], "began_s": None, "ended_s": None, "players_done_first": False}
    if how is not None:
        if hold is None:
            await asyncio.wait([players], timeout=after)
        else:
            while not players.done() and not (len(logs) == friend_games + agent_games
                                              and all(log.seen for log in logs)):
                await asyncio.wait([players], timeout=0.05)  # a look at the games every 50 ms
        timeline["players_done_first"] = players.done()
        timeline["began_s"] = time.perf_counter() - started
        try:
            timeline["events"] = await asyncio.to_thread(disrupt, instances, how)
        finally:
            timeline["ended_s"] = time.perf_counter() - started
            if hold is not None:
                hold.over.set()
    logs, seconds = await players
    return logs, seconds, timeline


def _process_tree_cpu(pids: list[int]) -> float:
    """CPU seconds of the processes ``pids`` and of their children."""
    return sum(cpu_seconds(pid) + sum(cpu_seconds(child) for child in child_pids(pid)) for pid in pids)


def site_load_test(instances: int, friend_games: int, agent_games: int, *, seed: int = 0, workers: int = 1,
                   agents: str = "processes", time_control: str = "5+3", think: float = 0.0, ramp: float = 0.0,
                   synchronous_commit: bool = True, stall: float = STALL_S, disruption: str | None = None,
                   disrupt_after: float = 10.0, hold_from_ply: int | None = None,
                   keep_logs: Path | None = None) -> dict[str, Any]:
    """Run the load test through Caddy against ``instances`` ``serve`` processes sharing a
    PostgreSQL store and a Redis bus (see the module docstring) and return its figures. With
    ``disruption`` (one of :data:`DISRUPTIONS`), ``disrupt_after`` seconds after the players
    start, the instances are restarted under them (:func:`disrupt`), and the players resume
    their lost connections in their seats (:class:`.load.Resumes`); with ``hold_from_ply``
    too, it begins once every game has a move and no game goes past that ply until it has
    ended, so that every player is in a game across it (:func:`_play_and_disrupt`). With
    ``keep_logs``, the logs are copied there before the temporary folder goes."""
    if disruption is not None and disruption not in DISRUPTIONS:
        raise ValueError(f"disruption must be one of {', '.join(DISRUPTIONS)}")
    clients = 2 * friend_games + agent_games
    with tempfile.TemporaryDirectory(prefix="orderchaos-site-load-") as tmp, ExitStack() as running:
        folder = Path(tmp)
        if os.geteuid() == 0:
            os.chmod(folder, 0o755)  # the postgres user must reach its own folder inside
        db_url = running.enter_context(postgres(folder / "postgres", synchronous_commit))
        bus_url, redis_process = running.enter_context(redis_server(folder / "redis"))
        servers: list[Instance] = []
        running.callback(lambda: [server.stop() for server in servers])
        for number in range(instances):
            port = _free_port()
            instance_folder = folder / f"instance{number}"
            instance_folder.mkdir()
            command = instance_command(port, db_url, bus_url, clients + 10, agents, workers)
            servers.append(Instance(number, command, instance_folder, port, 0 if agents == "threads" else workers))
        for server in servers:
            server.wait_ready()
        proxy_port, caddy_process = running.enter_context(caddy(folder / "caddy", [s.port for s in servers]))
        pg_pid = postmaster_pid(folder / "postgres")
        groups = {"instances": [s.process.pid for s in servers], "postgres": [pg_pid] if pg_pid else [],
                  "redis": [redis_process.pid], "caddy": [caddy_process.pid]}
        cpu_before = {name: _process_tree_cpu(pids) for name, pids in groups.items()}
        clients_before = time.process_time()
        errors: list[str] = []
        resumes = Resumes()
        logs, seconds, timeline = asyncio.run(_play_and_disrupt(
            f"ws://{HOST}:{proxy_port}/ws", servers, disruption, disrupt_after, hold_from_ply, friend_games, agent_games, seed,
            time_control, think, ramp, errors, stall, resumes))
        clients_cpu = time.process_time() - clients_before
        # a restarted instance's earlier processes count until they were stopped: then a floor
        groups["instances"] = [s.process.pid for s in servers]
        cpu = {name: _process_tree_cpu(pids) - cpu_before[name] for name, pids in groups.items()}
        cpu["instances"] += sum(s.cpu_s_before for s in servers)
        finished = [log for log in logs if log.winner is not None]
        problems = check_store(db_url, finished, time_control)
        lost = moves_lost(db_url, logs)
        running.close()  # stop everything before reading the logs
        tracebacks = [f"instance {number}: {line}" for number in range(instances)
                      for line in (folder / f"instance{number}" / "serve.log").read_text(errors="replace").splitlines()
                      if "Traceback" in line]
        if keep_logs is not None:
            keep_logs.mkdir(parents=True, exist_ok=True)
            for log in [*folder.glob("instance*/serve.log"), folder / "caddy" / "caddy.log",
                        folder / "postgres" / "server.log", folder / "redis" / "redis.log"]:
                if log.exists():
                    shutil.copyfile(log, keep_logs / f"{log.parent.name}-{log.name}")
    moves = sum(len(log.final) for log in finished)
    return {
        "instances": instances,
        "clients": clients,
        "friend_games": friend_games,
        "agent_games": agent_games,
        "games_finished": len(finished),
        "time_control": time_control,
        "think_s": think,
        "ramp_s": ramp,
        "agents": agents,
        "workers_per_instance": workers,
        "synchronous_commit": synchronous_commit,
        "seconds": seconds,
        "moves": moves,
        **rates(moves, seconds, logs),
        "cpu_s": cpu,
        "clients_cpu_s": clients_cpu,
        "errors": errors,
        "store_problems": problems,
        "server_errors": tracebacks,
        "disruption": disruption,
        "disrupt_after_s": disrupt_after,
        "timeline": timeline,
        "moves_lost": lost,
        "games_broken": len(logs) - len(finished) + len({p.split(":")[0] for p in problems}),
        "resumes": len(resumes.times),
        "resume_attempts": resumes.attempts,
        "asked_again": resumes.asked_again,
        "resume_p50_s": _quantile(resumes.times, 0.5),
        "resume_p99_s": _quantile(resumes.times, 0.99),
        "resume_max_s": max(resumes.times, default=None),
        "moves_refused": resumes.refused,
        "moves_in_flight": resumes.in_flight,
        "moves_in_flight_kept": resumes.in_flight_kept,
        "clock_checks": resumes.clock_checks,
        "clock_faults": resumes.clock_faults,
    }


def _quantile(values: list[float], q: float) -> float | None:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else None


def site_report(result: dict[str, Any]) -> str:
    """The figures of :func:`site_load_test` as a few lines of text."""
    cpu = result["cpu_s"]
    trip = ("-" if result["round_trip_p50_ms"] is None else
            f"p50 {result['round_trip_p50_ms']:.1f} ms, p99 {result['round_trip_p99_ms']:.1f} ms")
    return (
        f"{result['instances']} instance(s) behind Caddy, PostgreSQL (synchronous_commit "
        f"{'on' if result['synchronous_commit'] else 'off'}) and Redis; {result['clients']} clients: "
        f"{result['friend_games']} games between two players, {result['agent_games']} against heuristic, "
        f"{'all at once' if not result['ramp_s'] else 'started evenly over %g s' % result['ramp_s']}, "
        f"clock {result['time_control']}, "
        f"{'moving at once' if not result['think_s'] else 'thinking %g s a move on average' % result['think_s']}\n"
        f"  {result['moves']} moves in {result['seconds']:.1f} s: {result['moves_per_s']:.0f} moves/s; "
        f"{result['games_finished']} of {result['friend_games'] + result['agent_games']} games finished\n"
        f"  move round trip through Caddy: {trip}\n"
        f"  CPU seconds: instances with their workers {cpu['instances']:.1f}, PostgreSQL {cpu['postgres']:.1f}, "
        f"Redis {cpu['redis']:.1f}, Caddy {cpu['caddy']:.1f}, the clients {result['clients_cpu_s']:.1f}\n"
        f"  errors: {len(result['errors'])}{' ' + str(Counter(result['errors']).most_common(3)) if result['errors'] else ''}; "
        f"tracebacks in the instances' logs: {len(result['server_errors'])}; games against the computer asked "
        f"for again: {result['asked_again']}\n"
        f"  store check: {'every finished game matches the moves played' if not result['store_problems'] else result['store_problems'][:5]}"
        + (disruption_report(result) if result["disruption"] else "")
    )


def disruption_report(result: dict[str, Any]) -> str:
    """The lines of :func:`site_report` about the restarts under the players."""
    timeline = result["timeline"]
    steps = "; ".join(f"instance {e['instance']} at {e['at_s'] + timeline['began_s']:.1f} s: exited after "
                      f"{e['exited_s']:.1f} s, ready after {e['ready_s']:.1f} s" for e in timeline["events"])
    seconds = (lambda v: "-" if v is None else f"{v:.2f} s")
    refused = sum(result["moves_refused"].values())
    return (
        f"\n  {result['disruption']} from {timeline['began_s']:.1f} s to {timeline['ended_s']:.1f} s of the "
        f"{result['seconds']:.1f} s run{' (the players had finished before it began)' if timeline['players_done_first'] else ''}: {steps}\n"
        f"  players back in their seats: {result['resumes']} times ({result['resume_attempts']} connections tried), "
        f"p50 {seconds(result['resume_p50_s'])}, p99 {seconds(result['resume_p99_s'])}, "
        f"max {seconds(result['resume_max_s'])}\n"
        f"  moves refused: {refused}{' ' + str(result['moves_refused']) if refused else ''}; moves in flight when a "
        f"connection went: {result['moves_in_flight']} ({result['moves_in_flight_kept']} found stored, the rest sent "
        f"again); moves lost (seen acknowledged, not stored): {result['moves_lost']}; games broken: "
        f"{result['games_broken']}\n"
        f"  clocks compared across a resume: {result['clock_checks']}, not intact: {len(result['clock_faults'])}"
        f"{' ' + str(result['clock_faults'][:3]) if result['clock_faults'] else ''}"
    )


def stop_on_signal() -> None:
    """Turn SIGTERM into KeyboardInterrupt, so that a stopped run still stops what it started."""
    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
