"""Load test of ``orderchaos serve`` on loopback (``orderchaos bench web``, or
``python -m orderchaos.web.load --friend-games N --agent-games M``).

Starts ``orderchaos serve`` as its own process on 127.0.0.1 (a free port, a fresh SQLite
file), waits until its workers are warm, then runs the games, each player a WebSocket client
in this process: ``friend_games`` games between two scripted players (the second opens the
first one's invite link) and ``agent_games`` games of one scripted player against
``heuristic``, all at once or started evenly over ``ramp`` seconds. The scripted players
write seeded random legal moves, each after thinking ``think`` seconds on average (0: at
once). It reports moves per second and the median and 99th percentile of a move's round trip
(sent until the mover's view with the move came back) beside the server's own share of it,
the agent queue's wait, the server's garbage collections and the seconds of its SQLite
statements and commits (from the server's ``/metrics``), the CPU seconds of the server
process, of its worker processes and of the clients, and the server's peak memory (from
``/proc``); then it stops the server and checks that every game in the database holds exactly
the moves that were played, and that every game ended. Only loopback addresses are ever
contacted.

:func:`startup_probe` (``--startup-probe SECONDS``) starts a server the same way and asks
``GET /healthz`` every 100 ms from the moment it was started: how long each answer waited
(the event loop held up by work at startup), and when the server first said it was ready.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orderchaos.web.clocks import NO_CLOCK, PRESETS

HOST = "127.0.0.1"
PACED_THINK = 1.0
"""Mean seconds a scripted player thinks in ``bench web``'s paced run: faster than people play
even a 1+0 game, so the figure errs towards more load."""
PACED_RAMP = 5.0
"""Seconds over which ``bench web``'s paced run starts its games."""
STOP_GRACE_S = 15.0
"""Seconds a server the tool started gets to exit after SIGTERM before it is killed."""


@dataclass
class GameLog:
    """What the clients of one game saw: its id, the actions its players sent by ply, every
    move either saw acknowledged (in a state of the game) by ply, and the round trips."""

    kind: str
    game: str = ""
    actions: dict[int, int] = field(default_factory=dict)
    final: list[str] = field(default_factory=list)
    winner: str | None = None
    trips: list[float] = field(default_factory=list)
    seen: dict[int, int] = field(default_factory=dict)


@dataclass
class Resumes:
    """What the players met when their connection went (an instance restarted or killed):
    each resumed in its seat with its seat token through a new connection, as a page does."""

    times: list[float] = field(default_factory=list)
    """Seconds from losing the connection until the first view of the game back in the seat."""
    attempts: int = 0
    """Connections tried while resuming, the refused ones included."""
    asked_again: int = 0
    """Games against the computer asked for again: the connection went before the game was
    joined (no seat token to resume with), and the player asked anew, as a person clicks again."""
    refused: dict[str, int] = field(default_factory=dict)
    """Moves answered with an error, by its code."""
    in_flight: int = 0
    """Moves sent whose answer the lost connection never brought."""
    in_flight_kept: int = 0
    """Of those, the ones found in the game on resuming (the others are sent again)."""
    clock_checks: int = 0
    """Resumes whose clocks could be compared with the last view before (no move between)."""
    clock_faults: list[str] = field(default_factory=list)
    """Resumes whose clocks did not match: the side not to move lost or gained time, or the
    side to move gained time. (How much the side to move may lose is not checked: a view can
    arrive seconds after the server computed it on a busy machine, so the time away from the
    server's point of view is not known here.)"""


RESUME_FIRST_S = 0.5
RESUME_MOST_S = 10.0
"""A lost connection is tried again as the page does (static/app.js): after 0.5 s, doubling on
each failure up to 10 s, each wait drawn from 75 % to 125 % of that, so that the tabs of a
restarted instance do not all come back in the same instant."""
ASK_AGAIN_MOST = 5
"""How many times a player asks again for a game against the computer whose connection went
before it was joined (the first wait as a resume's, doubling)."""
CLOCK_SLACK_S = 0.5
"""How far a clock may differ across a resume (the views are computed a transit apart)."""


REFUSED_PAUSE_S = 0.25
"""How long a player waits after a refused move before it asks for the game again."""


@dataclass
class Hold:
    """Players move freely until ply ``ply`` of their game, and from there only once ``over``
    is set: every game is still open when something happens to the site (a test's restart)."""

    ply: int
    over: asyncio.Event = field(default_factory=asyncio.Event)


class _Lost(Exception):
    """The server said it is restarting: the connection is about to go."""


def _cell(name: str) -> int:
    return (int(name[1]) - 1) * 6 + "abcdef".index(name[0])


def _action(move: str) -> int:
    name, symbol = move.split()
    return 2 * _cell(name) + "XO".index(symbol)


class _Player:
    """One scripted player's part in one game across its connections (see :func:`_player`)."""

    def __init__(self, log: GameLog, rng: random.Random, think: float, pace: random.Random | None,
                 ready: asyncio.Future | None, stall: float | None, resumes: Resumes | None,
                 hold: Hold | None) -> None:
        self.log, self.rng, self.think, self.pace, self.ready = log, rng, think, pace, ready
        self.stall, self.resumes, self.hold = stall, resumes, hold
        self.ws: Any = None
        self.waker: asyncio.Task | None = None
        self.seat: str | None = None
        self.token: str | None = None
        self.sent_at: dict[int, float] = {}
        self.lost_at: float | None = None
        self.unanswered: set[int] = set()
        self.tries = 0
        """Tries to resume since the connection went."""
        self.jitter = random.Random(hash(rng.getstate()))  # its own, seeded: the moves stay the same
        self.last_view: tuple[int, dict[str, Any] | None, float] | None = None

    def held(self) -> bool:
        """Whether this player now waits for :class:`Hold` before its next move."""
        return self.waker is not None and not self.waker.done()

    async def receive(self, ws: Any) -> dict[str, Any]:
        try:  # a held player hears nothing until the hold ends: no stall then
            return json.loads(await asyncio.wait_for(ws.recv(), None if self.held() else self.stall))
        except asyncio.TimeoutError:
            raise RuntimeError(f"{self.log.kind} game {self.log.game or '(not joined)'}: "
                               f"no message for {self.stall:g} s") from None

    def lost(self) -> None:
        """The connection went: the moves it never answered are in flight."""
        if self.lost_at is None:
            self.lost_at = time.perf_counter()
            self.unanswered |= set(self.sent_at)
        self.sent_at.clear()

    async def play(self, ws: Any, first: dict[str, Any]) -> None:
        """Open the game (``first``, or the seat with its token when resuming) and move
        whenever it is this player's turn, until the game ends; :class:`_Lost` when the
        server says it is restarting."""
        self.ws = ws
        await self.receive(ws)  # hello
        resuming = self.token is not None and self.lost_at is not None
        await ws.send(json.dumps({"type": "open", "game": self.log.game, "token": self.token} if resuming else first))
        log = self.log
        while True:
            msg = await self.receive(ws)
            if msg["type"] == "joined":
                if resuming and msg["seat"] != self.seat:
                    raise RuntimeError(f"{log.kind} game {log.game}: resumed as {msg['seat']}, not {self.seat}")
                self.seat, log.game = msg["seat"], msg["game"]
                if not resuming:  # joined at last: a resume's waits start from the first again
                    self.tries = 0
                self.token = msg.get("token", self.token)
                continue
            if msg["type"] == "error":
                if msg.get("code") == "restarting":
                    raise _Lost
                if msg.get("code") == "reconnecting" and self.token is None and first.get("type") == "new_game":
                    raise _Lost  # not joined yet: the player asks again, as a person clicks again
                if self.resumes is None or self.seat is None:
                    raise RuntimeError(f"{log.kind} game {log.game}: {msg['message']}")
                self.resumes.refused[msg.get("code", "?")] = self.resumes.refused.get(msg.get("code", "?"), 0) + 1
                self.sent_at.clear()  # the move was not taken: decide again on a fresh view
                await asyncio.sleep(REFUSED_PAUSE_S)
                await ws.send(json.dumps({"type": "state"}))
                continue
            if msg["type"] != "state" or msg.get("mode") != "play" or msg.get("game") != log.game:
                continue
            if msg.get("error"):
                raise RuntimeError(f"{log.kind} game {log.game}: {msg['error']['message']}")
            if self.ready is not None and msg.get("invite") and not self.ready.done():
                self.ready.set_result({"game": msg["game"], "invite": msg["invite"]})
            moves = msg["moves"]
            actions = [_action(m["move"]) for m in moves]
            log.seen.update(enumerate(actions))
            if self.lost_at is not None:
                self.resumed(actions, msg.get("clock"))
            self.last_view = (len(actions), msg.get("clock"), time.perf_counter())
            for ply in [p for p in self.sent_at if p < len(moves)]:
                log.trips.append(time.perf_counter() - self.sent_at.pop(ply))
            if msg["winner"] is not None:
                log.final, log.winner = [m["move"] for m in moves], msg["winner"]
                return
            taken = all(msg["players"][role]["taken"] for role in ("order", "chaos"))
            if msg["to_play"] != self.seat or msg["thinking"] or not taken or len(moves) in self.sent_at:
                continue
            ply = len(moves)
            if self.hold is not None and ply >= self.hold.ply and not self.hold.over.is_set():
                if self.waker is None:
                    self.waker = asyncio.create_task(self.wake())
                continue
            if ply in log.actions and not msg["board"][log.actions[ply] >> 1]:
                cell, symbol = log.actions[ply] >> 1, "XO"[log.actions[ply] & 1]  # sent before, never taken
            else:
                empty = [c for c in range(36) if not msg["board"][c]]
                cell, symbol = self.rng.choice(empty), self.rng.choice("XO")
                log.actions[ply] = 2 * cell + "XO".index(symbol)
                if self.think and self.pace is not None:
                    await asyncio.sleep(self.pace.uniform(0.0, 2.0 * self.think))
            self.sent_at[ply] = time.perf_counter()
            await ws.send(json.dumps({"type": "move", "cell": cell, "symbol": symbol}))

    async def wake(self) -> None:
        """When the hold ends, ask for the game again: the answer brings the next move."""
        assert self.hold is not None
        await self.hold.over.wait()
        try:
            await self.ws.send(json.dumps({"type": "state"}))
        except Exception:  # the connection went meanwhile: resuming brings the view  # noqa: BLE001
            pass

    def resumed(self, actions: list[int], clock: dict[str, Any] | None) -> None:
        """The first view back in the seat: the time away, the moves in flight, the clocks."""
        assert self.lost_at is not None and self.resumes is not None
        now = time.perf_counter()
        self.resumes.times.append(now - self.lost_at)
        self.resumes.in_flight += len(self.unanswered)
        self.resumes.in_flight_kept += sum(ply < len(actions) for ply in self.unanswered)
        before = self.last_view
        if before is not None and before[1] is not None and clock is not None and before[0] == len(actions):
            self.resumes.clock_checks += 1
            running, away = before[1]["running"], now - before[2]
            for role, left in before[1]["left"].items():
                after = clock["left"][role]
                spent = left - after
                if spent < -CLOCK_SLACK_S or (role != running and spent > CLOCK_SLACK_S):
                    self.resumes.clock_faults.append(f"game {self.log.game}: {role} had {left:.2f} s, "
                                                     f"{after:.2f} s after {away:.2f} s away")
        self.lost_at, self.unanswered, self.tries = None, set(), 0


async def _player(url: str, log: GameLog, rng: random.Random, *, first: dict[str, Any], think: float = 0.0,
                  pace: random.Random | None = None, arrive: float = 0.0, ready: asyncio.Future | None = None,
                  invite_for: asyncio.Future | None = None, stall: float | None = None,
                  resumes: Resumes | None = None, hold: Hold | None = None) -> None:
    """One scripted player: after ``arrive`` seconds, open or create a game, then move whenever
    it is its turn (a move drawn from its seeded ``rng``), after thinking a time drawn uniformly
    from 0 to ``2 * think`` seconds (from ``pace``, a generator of its own, so that thinking
    does not change the moves). With ``stall``, a RuntimeError when no message comes for that
    many seconds. With ``resumes``, a lost connection is opened again through ``url`` and the
    player goes back into its seat with its seat token (as a page does), counted there; a move
    sent before and never taken is sent again; without, a lost connection ends the player.
    With ``hold``, it waits there before the moves from its ply on."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed, InvalidHandshake

    await asyncio.sleep(arrive)
    if invite_for is not None:  # a friend opens the link once it is sent, as a person does
        try:
            first = {"type": "open", **(await asyncio.wait_for(invite_for, stall))}
        except asyncio.TimeoutError:
            raise RuntimeError(f"{log.kind} game: no invite link within {stall:g} s (its creator failed "
                               "or waited that long)") from None
    player = _Player(log, rng, think, pace, ready, stall, resumes, hold)
    while True:
        try:
            async with connect(url, max_size=2**22) as ws:
                await player.play(ws, first)
                return
        except (_Lost, ConnectionClosed, InvalidHandshake, OSError) as exc:
            if resumes is not None and player.token is None and first.get("type") == "new_game" \
                    and player.tries < ASK_AGAIN_MOST:
                await asyncio.sleep(RESUME_FIRST_S * 2 ** player.tries * player.jitter.uniform(0.75, 1.25))
                player.tries += 1
                resumes.asked_again += 1
                continue
            if resumes is None or player.token is None:
                raise RuntimeError(f"{log.kind} game {log.game or '(not joined)'}: connection lost "
                                   f"({type(exc).__name__})") from None
            player.lost()
            assert player.lost_at is not None
            if stall is not None and time.perf_counter() - player.lost_at > stall:
                raise RuntimeError(f"{log.kind} game {log.game}: not back in its seat after {stall:g} s") from None
            backoff = min(RESUME_MOST_S, RESUME_FIRST_S * 2 ** player.tries)
            await asyncio.sleep(backoff * player.jitter.uniform(0.75, 1.25))
            player.tries += 1
            resumes.attempts += 1


async def _run_clients(url: str, friend_games: int, agent_games: int, seed: int, time_control: str,
                       think: float, ramp: float, *, errors: list[str] | None = None,
                       stall: float | None = None, resumes: Resumes | None = None, hold: Hold | None = None,
                       logs: list[GameLog] | None = None) -> tuple[list[GameLog], float]:
    """Play the games (see the module docstring): their logs and the seconds they took. A
    player's failure ends the run, or with ``errors``, is added there and ends its game alone
    (its partner's wait for an invite or a move ends at ``stall`` seconds). With ``resumes``,
    players resume lost connections, with ``hold`` they wait there (:func:`_player`); the logs
    go into ``logs`` as the games are set up when it is given."""
    logs = [] if logs is None else logs
    tasks = []
    loop = asyncio.get_running_loop()
    for g in range(friend_games):
        log = GameLog("friend")
        logs.append(log)
        invite: asyncio.Future = loop.create_future()
        side = "order" if g % 2 == 0 else "chaos"
        tasks.append(_player(url, log, random.Random(seed * 7919 + 2 * g), first={"type": "play_friend", "side": side,
                                                                                       "time_control": time_control},
                             think=think, pace=random.Random(f"think {seed} friend {g} first"),
                             arrive=ramp * g / friend_games, ready=invite, stall=stall, resumes=resumes, hold=hold))
        # the friend arrives with its creator: its wait for the invite is bounded from then
        tasks.append(_player(url, log, random.Random(seed * 7919 + 2 * g + 1), first={}, think=think,
                             pace=random.Random(f"think {seed} friend {g} second"), invite_for=invite,
                             arrive=ramp * g / friend_games, stall=stall, resumes=resumes, hold=hold))
    for g in range(agent_games):
        log = GameLog("agent")
        logs.append(log)
        side = "order" if g % 2 == 0 else "chaos"
        tasks.append(_player(url, log, random.Random(seed * 104729 + g),
                             first={"type": "new_game", "side": side, "opponent": "heuristic",
                                    "time_control": time_control}, think=think,
                             pace=random.Random(f"think {seed} agent {g}"), arrive=ramp * g / agent_games,
                             stall=stall, resumes=resumes, hold=hold))
    if errors is not None:
        tasks = [_noted(task, errors) for task in tasks]
    start = time.perf_counter()
    await asyncio.gather(*tasks)
    return logs, time.perf_counter() - start


async def _noted(player: Any, errors: list[str]) -> None:
    """Run ``player``; a failure of it goes into ``errors`` as one line."""
    try:
        await player
    except Exception as exc:  # a refused or dropped connection, an error message, a stall
        frames = traceback.extract_tb(exc.__traceback__)
        where = next((f for f in reversed(frames) if f.filename == __file__), frames[-1])  # the line here
        errors.append(f"{type(exc).__name__}: {exc or '(no message)'} [{Path(where.filename).name}:{where.lineno}]"[:300])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def _wait_for_port(port: int, process: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"orderchaos serve exited with status {process.returncode}")
        try:
            with socket.create_connection((HOST, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("orderchaos serve did not start listening")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds of process ``pid`` so far (Linux /proc; 0 without it)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_memory_mb(pid: int) -> float:
    """The peak resident memory of process ``pid`` so far in MB (Linux /proc; 0 without it)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    return next((int(line.split()[1]) / 1024 for line in status.splitlines() if line.startswith("VmHWM:")), 0.0)


def child_pids(pid: int) -> list[int]:
    """The child processes of ``pid`` (its worker processes), from /proc."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children") if Path(f"/proc/{pid}/task").is_dir() else []:
        try:
            found += [int(p) for p in task.read_text().split()]
        except OSError:
            pass
    return found


def scrape(port: int) -> dict[str, float]:
    """The server's metrics (``/metrics`` on loopback), unlabelled samples by name."""
    from urllib.request import urlopen

    with urlopen(f"http://{HOST}:{port}/metrics", timeout=30) as answer:
        text = answer.read().decode()
    values: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    return values


def bucket_quantile(metrics: dict[str, float], histogram: str, q: float) -> float | None:
    """The upper bound of the bucket of Prometheus histogram ``histogram`` that holds quantile
    ``q`` (None: nothing observed)."""
    prefix = histogram + "_bucket{le=\""
    buckets = sorted((float("inf") if k[len(prefix):-2] == "+Inf" else float(k[len(prefix):-2]), v)
                     for k, v in metrics.items() if k.startswith(prefix))
    total = buckets[-1][1] if buckets else 0
    if not total:
        return None
    return next(bound for bound, count in buckets if count >= q * total)


def rates(moves: int, seconds: float, logs: list["GameLog"]) -> dict[str, float | None]:
    """Moves per second and the p50 and p99 round trips (ms) of the players' moves in
    ``logs`` (None without any)."""
    trips = sorted(t for log in logs for t in log.trips)
    return {
        "moves_per_s": moves / seconds,
        "round_trip_p50_ms": 1000 * statistics.median(trips) if trips else None,
        "round_trip_p99_ms": 1000 * trips[min(len(trips) - 1, int(0.99 * len(trips)))] if trips else None,
    }


def check_store(db: str | Path, logs: list[GameLog], time_control: str = NO_CLOCK) -> list[str]:
    """Every way the stored games differ from what the clients played, or from the time
    control they asked for (empty: all match)."""
    from orderchaos.web.store import GameStore

    store = GameStore(db)
    problems = []
    for log in logs:
        stored = store.load(log.game)
        if stored is None:
            problems.append(f"game {log.game}: not in the store")
            continue
        final = [_action(m) for m in log.final]
        if stored.actions != final:
            problems.append(f"game {log.game}: stored {len(stored.actions)} moves, the players saw {len(final)}")
        if any(final[ply] != action for ply, action in log.actions.items()):
            problems.append(f"game {log.game}: a move sent is not the move stored at its ply")
        if log.kind == "friend" and len(log.actions) != len(final):
            problems.append(f"game {log.game}: {len(final)} moves, {len(log.actions)} sent by its players")
        control = stored.clock.control.name if stored.clock is not None else "none"
        if control != time_control:
            problems.append(f"game {log.game}: stored with clock {control}, asked for {time_control}")
        if stored.winner is None or stored.winner != log.winner:
            problems.append(f"game {log.game}: stored winner {stored.winner}, the players saw {log.winner}")
    store.close()
    return problems


def moves_lost(db: str | Path, logs: list[GameLog]) -> int:
    """How many moves a player saw acknowledged (in a view of its game) that are not in the
    store at their ply afterwards, over every game, finished or not."""
    from orderchaos.web.store import GameStore

    store = GameStore(db)
    try:
        lost = 0
        for log in logs:
            stored = store.load(log.game) if log.game else None
            kept = stored.actions if stored is not None else []
            lost += sum(ply >= len(kept) or kept[ply] != action for ply, action in log.seen.items())
        return lost
    finally:
        store.close()


def serve_command(port: int, db: Path, max_connections: int, agents: str, workers: int | None) -> list[str]:
    """The ``orderchaos serve`` command line the load tool starts."""
    command = [sys.executable, "-m", "orderchaos", "serve", "--host", HOST, "--port", str(port),
               "--db", str(db), "--max-connections", str(max_connections), "--agents", agents]
    return command + (["--workers", str(workers)] if workers is not None else [])


def spawn_server(command: list[str], folder: Path, append: bool = False) -> subprocess.Popen:
    """Start ``command`` (a ``serve``) in a process group of its own, its data in ``folder``
    and its log in ``folder/serve.log`` (added to with ``append``, as after a restart)."""
    env = {**os.environ, "XDG_DATA_HOME": str(folder)}
    # the server logs a line per request and game event: into a file, as a pipe read only at
    # the end would fill and stop the server
    with (folder / "serve.log").open("ab" if append else "wb") as log_file:
        # its own process group (start_new_session) holds its worker processes too
        return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log_file, env=env,
                                start_new_session=True)


@contextmanager
def started_server(command: list[str], folder: Path) -> Iterator[subprocess.Popen]:
    """``command`` (a ``serve``) running with its data and log in ``folder``; stopped with
    its worker processes on leaving, however the block ends (:func:`stop_server`)."""
    server = spawn_server(command, folder)
    try:
        yield server
    finally:
        stop_server(server)


def stop_server(server: subprocess.Popen) -> None:
    """SIGTERM to ``server``, SIGKILL if it has not exited :data:`STOP_GRACE_S` seconds later,
    then SIGKILL to what is left of its process group (its workers; a Ctrl-C here too)."""
    try:
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    finally:
        try:
            os.killpg(server.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass  # the group is gone: nothing was left


def _wait_for_workers(port: int, expected: int) -> None:
    deadline = time.monotonic() + 600
    while scrape(port).get("orderchaos_workers_ready", 0) < expected and time.monotonic() < deadline:
        time.sleep(0.5)


def load_test(friend_games: int, agent_games: int, *, seed: int = 0, db: Path | None = None,
              workers: int | None = None, agents: str = "processes", time_control: str = "5+3",
              think: float = 0.0, ramp: float = 0.0) -> dict[str, Any]:
    """Run the load test (see the module docstring) and return its figures."""
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="orderchaos-load-") as tmp:
        db_path = db or Path(tmp) / "games.sqlite3"
        command = serve_command(port, db_path, 2 * friend_games + agent_games + 10, agents, workers)
        with started_server(command, Path(tmp)) as server:
            _wait_for_port(port, server)
            if agents != "threads":  # measure the site at work, not its workers warming up
                _wait_for_workers(port, workers or os.cpu_count() or 1)
            before = scrape(port)
            cpu_before = cpu_seconds(server.pid)
            workers_before = {p: cpu_seconds(p) for p in child_pids(server.pid)}
            clients_before = time.process_time()
            logs, seconds = asyncio.run(
                _run_clients(f"ws://{HOST}:{port}/ws", friend_games, agent_games, seed, time_control, think, ramp))
            clients_cpu = time.process_time() - clients_before
            server_cpu = cpu_seconds(server.pid) - cpu_before
            server_memory = peak_memory_mb(server.pid)
            worker_cpu = sum(cpu_seconds(p) - workers_before.get(p, 0.0) for p in child_pids(server.pid))
            after = scrape(port)
        err = (Path(tmp) / "serve.log").read_bytes()
        problems = check_store(db_path, logs, time_control)
    moves = sum(len(log.final) for log in logs)
    person_moves = sum(len(log.actions) for log in logs)
    def grew(name: str) -> float:
        return after.get(name, 0.0) - before.get(name, 0.0)

    waits = grew("orderchaos_agent_queue_wait_seconds_count")
    return {
        "clients": 2 * friend_games + agent_games,
        "time_control": time_control,
        "think_s": think,
        "ramp_s": ramp,
        "agents": agents,
        "server_cpu_s": server_cpu,
        "server_cpu_share": server_cpu / seconds,
        "server_peak_memory_mb": server_memory,
        "worker_cpu_s": worker_cpu,
        "clients_cpu_s": clients_cpu,
        "clients_cpu_share": clients_cpu / seconds,
        "agent_searches": int(waits),
        "queue_wait_mean_ms": 1000 * grew("orderchaos_agent_queue_wait_seconds_sum") / waits if waits else None,
        "queue_wait_p99_bucket_s": bucket_quantile(after, "orderchaos_agent_queue_wait_seconds", 0.99),
        "server_move_p50_bucket_s": bucket_quantile(after, "orderchaos_move_round_trip_seconds", 0.5),
        "server_move_p99_bucket_s": bucket_quantile(after, "orderchaos_move_round_trip_seconds", 0.99),
        "gc_pauses": {generation: int(grew(f'orderchaos_gc_pause_seconds_count{{generation="{generation}"}}'))
                      for generation in "012"},
        "gc_full_pause_mean_ms": (1000 * grew('orderchaos_gc_pause_seconds_sum{generation="2"}')
                                  / max(grew('orderchaos_gc_pause_seconds_count{generation="2"}'), 1)),
        "store_statement_s": grew("orderchaos_store_statement_seconds"),
        "store_commit_s": grew("orderchaos_store_commit_seconds"),
        "friend_games": friend_games,
        "agent_games": agent_games,
        "seconds": seconds,
        "moves": moves,
        "person_moves": person_moves,
        **rates(moves, seconds, logs),
        "store_problems": problems,
        "server_errors": [line for line in err.decode(errors="replace").splitlines() if "Traceback" in line],
    }


STARTUP_SECONDS = 60.0
"""How long :func:`startup_probe` watches a fresh server."""
PROBE_EVERY_S = 0.1
"""How often it asks ``/healthz``."""
SLOW_ANSWER_S = 0.5
"""A wait for ``/healthz`` longer than this counts as the event loop held up."""


async def _probe_once(port: int, timeout: float) -> int | None:
    """One ``GET /healthz``: its status, or None when nothing listens yet."""
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port), timeout)
    except OSError:
        return None
    try:
        writer.write(f"GET /healthz HTTP/1.1\r\nHost: {HOST}:{port}\r\nConnection: close\r\n\r\n".encode())
        status_line = await asyncio.wait_for(reader.readline(), timeout)
        return int(status_line.split()[1])
    finally:
        writer.close()


async def _probe_schedule(port: int, seconds: float, every: float, started: float) -> list[tuple[float, float, int | None]]:
    """A probe at each tick of ``every`` seconds for ``seconds`` from ``started`` (the
    server's start, perf_counter), each its own task, so that a held-up answer does not delay
    the next question: (sent at, waited, status or None) for each, None also for a probe that
    timed out."""
    async def one(at: float) -> tuple[float, float, int | None]:
        await asyncio.sleep(max(0.0, at - time.perf_counter()))
        sent = time.perf_counter()
        try:
            status = await _probe_once(port, timeout=seconds)
        except (asyncio.TimeoutError, OSError, ValueError, IndexError):
            status = -1  # answered wrongly or not at all
        return sent - started, time.perf_counter() - sent, status

    ticks = int(seconds / every)
    return list(await asyncio.gather(*(one(started + k * every) for k in range(ticks))))


def startup_probe(seconds: float = STARTUP_SECONDS, *, workers: int | None = None, agents: str = "processes",
                  every: float = PROBE_EVERY_S) -> dict[str, Any]:
    """Start ``orderchaos serve`` (as :func:`load_test` does) and ask ``GET /healthz`` every
    ``every`` seconds for ``seconds`` from the moment it was started: how long each answer
    took once the server listened, when it first answered ready (200), and the figures."""
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="orderchaos-start-") as tmp:
        command = serve_command(port, Path(tmp) / "games.sqlite3", 100, agents, workers)
        started = time.perf_counter()
        with started_server(command, Path(tmp)) as server:
            probes = asyncio.run(_probe_schedule(port, seconds, every, started))
            exited = server.poll()
        err = (Path(tmp) / "serve.log").read_bytes()
    answered = [(at, waited, status) for at, waited, status in probes if status is not None]
    waits = sorted(waited for _, waited, status in answered if status != -1)
    slowest = max(answered, key=lambda probe: probe[1], default=None)
    quantile = (lambda q: waits[min(len(waits) - 1, int(q * len(waits)))]) if waits else (lambda q: None)
    return {
        "seconds": seconds,
        "every_s": every,
        "agents": agents,
        "workers": workers or os.cpu_count() or 1,
        "probes": len(probes),
        "not_listening": len(probes) - len(answered),
        "listening_after_s": answered[0][0] if answered else None,
        "ok": sum(status == 200 for _, _, status in answered),
        "not_ready": sum(status == 503 for _, _, status in answered),
        "failed": sum(status not in (200, 503) for _, _, status in answered),
        "ready_after_s": next((at for at, _, status in answered if status == 200), None),
        "wait_p50_ms": 1000 * quantile(0.5) if waits else None,
        "wait_p90_ms": 1000 * quantile(0.9) if waits else None,
        "wait_p99_ms": 1000 * quantile(0.99) if waits else None,
        "wait_max_ms": 1000 * slowest[1] if slowest else None,
        "slowest_sent_at_s": slowest[0] if slowest else None,
        "slow_answers": sum(waited > SLOW_ANSWER_S for _, waited, _ in answered),
        "wait_histogram": {f"<={bound:g}s": sum(w <= bound for w in waits)
                           for bound in (0.01, 0.05, 0.1, 0.5, 1.0, 5.0, float("inf"))},
        "server_exited": exited,
        "server_errors": [line for line in err.decode(errors="replace").splitlines() if "Traceback" in line],
    }


def startup_report(result: dict[str, Any]) -> str:
    """The startup probe's figures as a few lines of text."""
    if result["listening_after_s"] is None:
        return f"startup: the server never listened in {result['seconds']:g} s (exit status {result['server_exited']})"
    return (
        f"startup: GET /healthz every {1000 * result['every_s']:g} ms for {result['seconds']:g} s after `orderchaos "
        f"serve` started (--agents {result['agents']}, {result['workers']} workers)\n"
        f"  listening after {result['listening_after_s']:.1f} s; ready (200) after "
        f"{'-' if result['ready_after_s'] is None else '%.1f s' % result['ready_after_s']}; "
        f"{result['ok']} answered 200, {result['not_ready']} 503, {result['failed']} failed\n"
        f"  wait for an answer: p50 {result['wait_p50_ms']:.1f} ms, p90 {result['wait_p90_ms']:.1f} ms, "
        f"p99 {result['wait_p99_ms']:.1f} ms, max {result['wait_max_ms']:.0f} ms (the probe sent "
        f"{result['slowest_sent_at_s']:.1f} s after the start); {result['slow_answers']} over "
        f"{1000 * SLOW_ANSWER_S:g} ms\n"
        f"  waits by bound: " + ", ".join(f"{k} {v}" for k, v in result["wait_histogram"].items())
    )


def report(result: dict[str, Any]) -> str:
    """The figures as a few lines of text."""
    return (
        f"{result['clients']} clients: {result['friend_games']} games between two players, "
        f"{result['agent_games']} against heuristic, "
        f"{'all at once' if not result['ramp_s'] else 'started evenly over %g s' % result['ramp_s']}, "
        f"clock {result['time_control']}, "
        f"{'moving at once' if not result['think_s'] else 'thinking %g s a move on average' % result['think_s']}\n"
        f"  {result['moves']} moves ({result['person_moves']} by the scripted players) in {result['seconds']:.1f} s: "
        f"{result['moves_per_s']:.0f} moves/s\n"
        f"  move round trip: p50 {result['round_trip_p50_ms']:.1f} ms, p99 {result['round_trip_p99_ms']:.1f} ms "
        f"(in the server, from arrival until every tab was told: p50 at most {result['server_move_p50_bucket_s']} s, "
        f"p99 at most {result['server_move_p99_bucket_s']} s)\n"
        f"  agent queue ({result['agents']}): {result['agent_searches']} searches, mean wait "
        f"{_ms(result['queue_wait_mean_ms'])}, p99 at most {result['queue_wait_p99_bucket_s']} s\n"
        f"  server process CPU {result['server_cpu_s']:.1f} s ({100 * result['server_cpu_share']:.0f}% of one core, "
        f"peak memory {result['server_peak_memory_mb']:.0f} MB), "
        f"worker processes {result['worker_cpu_s']:.1f} s, "
        f"the clients' process {result['clients_cpu_s']:.1f} s ({100 * result['clients_cpu_share']:.0f}% of one core)\n"
        f"  garbage collections in the server: {result['gc_pauses']['0']}, {result['gc_pauses']['1']} and "
        f"{result['gc_pauses']['2']} of generations 0, 1 and 2 (full), a full one {result['gc_full_pause_mean_ms']:.1f} ms "
        f"on average\n"
        f"  SQLite: {result['store_statement_s']:.2f} s in statements and {result['store_commit_s']:.2f} s "
        f"committing ({100 * result['store_commit_s'] / max(result['server_cpu_s'], 1e-9):.1f}% of the server's CPU time, "
        f"{100 * result['store_commit_s'] / result['seconds']:.1f}% of the wall time)\n"
        f"  store check: {'every game matches the moves played' if not result['store_problems'] else result['store_problems'][:5]}"
    )


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def run(quick: bool = False) -> dict[str, Any]:
    """``orderchaos bench web``: 500 clients (200 friend games, 100 against heuristic, the
    agents on worker processes), or a few with ``quick`` (thinking and ramp a twentieth as
    long); first as people play (games starting
    over :data:`PACED_RAMP` seconds, players thinking :data:`PACED_THINK` seconds a move on
    average), then every game at once with moves sent without thinking (the server's capacity).
    Before them, :func:`startup_probe` of a fresh server (for a twentieth of the time with
    ``quick``)."""
    started = startup_probe(STARTUP_SECONDS / 20 if quick else STARTUP_SECONDS)
    print(startup_report(started))
    friend, agent = (2, 2) if quick else (200, 100)
    paced = load_test(friend, agent, think=PACED_THINK / 20 if quick else PACED_THINK,
                      ramp=PACED_RAMP / 20 if quick else PACED_RAMP)
    print(report(paced))
    flat_out = load_test(friend, agent)
    print(report(flat_out))
    return {"startup": started, "paced": paced, "flat_out": flat_out}


def main(argv: list[str] | None = None) -> int:
    """``python -m orderchaos.web.load``: the load test with chosen sizes."""
    parser = argparse.ArgumentParser(prog="python -m orderchaos.web.load", description=__doc__.split("\n\n")[0])
    parser.add_argument("--friend-games", type=int, default=200, metavar="N", help="games between two players (default 200)")
    parser.add_argument("--agent-games", type=int, default=100, metavar="N", help="games against heuristic (default 100)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the scripted players (default 0)")
    parser.add_argument("--workers", type=int, default=None, metavar="N", help="the server's --workers")
    parser.add_argument("--agents", choices=("processes", "ray", "threads"), default="processes",
                        help="the server's --agents (default processes)")
    parser.add_argument("--time-control", default="5+3", choices=[*PRESETS, NO_CLOCK],
                        help="every game's clock (default 5+3; none: no clock)")
    parser.add_argument("--think", type=float, default=0.0, metavar="SECONDS",
                        help="mean think time of a scripted player before each move, drawn uniformly from 0 to "
                             "twice this (default 0: move at once, the server's saturation)")
    parser.add_argument("--ramp", type=float, default=0.0, metavar="SECONDS",
                        help="start the games evenly over this many seconds (default 0: all at once)")
    parser.add_argument("--startup-probe", type=float, default=None, metavar="SECONDS",
                        help=f"instead of games: ask GET /healthz every {1000 * PROBE_EVERY_S:g} ms for SECONDS "
                             f"after the server starts and report how long the answers waited (e.g. {STARTUP_SECONDS:g})")
    parser.add_argument("--instances", type=int, default=None, metavar="N",
                        help="instead of one server on a SQLite file: N servers sharing a PostgreSQL store and a "
                             "Redis bus behind Caddy, all started here on loopback (web/site_load.py; each server "
                             "with --workers 1 unless --workers says otherwise)")
    parser.add_argument("--synchronous-commit", choices=("on", "off"), default="on",
                        help="with --instances: PostgreSQL's fsync and synchronous_commit (default on)")
    parser.add_argument("--rolling-restart", action="store_true",
                        help="with --instances: while the players play, SIGTERM each instance in turn, start it "
                             "again and wait until it is ready before the next; the players resume in their seats "
                             "through the proxy, and the run reports moves refused and lost, games broken and the "
                             "times to resume")
    parser.add_argument("--kill-one", action="store_true",
                        help="with --instances: as --rolling-restart, but kill -9 one instance (with its workers) "
                             "mid-game, then start it again")
    parser.add_argument("--disrupt-after", type=float, default=10.0, metavar="SECONDS",
                        help="with --rolling-restart or --kill-one: seconds after the players start (default 10)")
    parser.add_argument("--logs", type=Path, default=None, metavar="DIR",
                        help="with --instances: copy the logs of the instances, Caddy, PostgreSQL and Redis into "
                             "DIR (made if missing) before the temporary folder goes")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.startup_probe is not None:
        if not 0 < args.startup_probe <= 3600:
            print("orderchaos.web.load: --startup-probe takes seconds in (0, 3600]", file=sys.stderr)
            return 2
        probed = startup_probe(args.startup_probe, workers=args.workers, agents=args.agents)
        print(json.dumps(probed, indent=2) if args.json else startup_report(probed))
        return 0 if probed["listening_after_s"] is not None and not probed["failed"] else 1
    if args.friend_games < 0 or args.agent_games < 0 or args.friend_games + args.agent_games == 0:
        print("orderchaos.web.load: --friend-games and --agent-games must be at least 0, and not both 0", file=sys.stderr)
        return 2
    if args.instances is not None:
        return _site_main(args)
    if args.rolling_restart or args.kill_one:
        print("orderchaos.web.load: --rolling-restart and --kill-one need --instances N", file=sys.stderr)
        return 2
    result = load_test(args.friend_games, args.agent_games, seed=args.seed, workers=args.workers, agents=args.agents,
                       time_control=args.time_control, think=args.think, ramp=args.ramp)
    print(json.dumps(result, indent=2) if args.json else report(result))
    return 0 if not result["store_problems"] else 1


def _site_main(args: argparse.Namespace) -> int:
    """The load test against ``--instances`` servers (web/site_load.py)."""
    from orderchaos.web.site_load import StartFailed, site_load_test, site_report, stop_on_signal

    if not 1 <= args.instances <= 32:
        print("orderchaos.web.load: --instances takes a number of servers from 1 to 32", file=sys.stderr)
        return 2
    if args.rolling_restart and args.kill_one:
        print("orderchaos.web.load: --rolling-restart or --kill-one, not both", file=sys.stderr)
        return 2
    if (args.rolling_restart or args.kill_one) and args.instances < 2:
        print("orderchaos.web.load: --rolling-restart and --kill-one need --instances 2 or more "
              "(the players resume on another instance)", file=sys.stderr)
        return 2
    if not 0 <= args.disrupt_after <= 3600:
        print("orderchaos.web.load: --disrupt-after takes seconds in [0, 3600]", file=sys.stderr)
        return 2
    stop_on_signal()
    try:
        result = site_load_test(args.instances, args.friend_games, args.agent_games, seed=args.seed,
                                workers=args.workers or 1, agents=args.agents, time_control=args.time_control,
                                think=args.think, ramp=args.ramp, synchronous_commit=args.synchronous_commit == "on",
                                disruption="rolling-restart" if args.rolling_restart else
                                "kill-one" if args.kill_one else None, disrupt_after=args.disrupt_after,
                                keep_logs=args.logs)
    except StartFailed as exc:
        print(f"orderchaos.web.load: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("orderchaos.web.load: stopped; everything it started has been stopped", file=sys.stderr)
        return 130
    print(json.dumps(result, indent=2) if args.json else site_report(result))
    return 0 if not (result["store_problems"] or result["errors"] or result["moves_lost"]) else 1


if __name__ == "__main__":
    sys.exit(main())
