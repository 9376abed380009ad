"""What the tests share: paths, boards, the random-game strategies and position generators,
and the brute-force oracles. Imported as ``helpers`` (``pythonpath = ["tests"]`` in
pyproject.toml); no test module imports another.

Oracles here use nothing beyond ``orderchaos.envs.rules`` (State, apply, legal actions,
winner), so they stay independent of the solver, MCTS and the trainer they check.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from orderchaos.envs.rules import CELLS, CHAOS, ORDER, State, parse_board

REPO = Path(__file__).resolve().parent.parent
SMOKE = str(REPO / "configs" / "smoke.yaml")

FULL_BOARD_NO_FIVE = "XXOXXO" "OOXOOX" "XXOXXO" "OOXOOX" "XXOXXO" "OOXOOX"
WIN_IN_ONE = parse_board("XXXX.. OO.... " + "." * 24)  # Order to move: X on e1 (action 8) wins
LONE_FOUR = parse_board("XXXX.. .....O " + "." * 24)  # Chaos to move: only O on e1 (action 9) holds

# Seeded games the web tests play and check move by move. X on the first empty cell each
# move against ``random:seed=3``: e4 X completes the diagonal b1-f5.
RANDOM_SEED_3_GAME = ["a1 X", "f5 X", "b1 X", "e1 O", "c1 X", "d2 O", "d1 X", "a3 O", "f1 X", "f2 O", "a2 X",
                      "b6 X", "b2 X", "c6 O", "c2 X", "a5 X", "e2 X", "b3 O", "c3 X", "e3 O", "d3 X", "d4 O",
                      "f3 X", "b5 O", "a4 X", "e5 O", "b4 X", "d5 X", "c4 X", "f4 O", "e4 X"]
# ``heuristic`` as Order against ``random``, both seeded 0 (as the server seeds its players):
# f6 X completes the diagonal b2-f6.
HEURISTIC_VS_RANDOM_GAME = ["d4 X", "a6 O", "c3 X", "f4 X", "e5 X", "e3 O", "b2 X", "c2 O", "f6 X"]


# ---------------------------------------------------------------------------------------
# Random games and positions.
# ---------------------------------------------------------------------------------------


def random_game(seed: int, careful_chaos: bool = False) -> list[State]:
    """Every position of one game of uniformly random legal moves, from the empty board to
    the end (about 40% end by a five Chaos made, 18% on a full board). A ``careful_chaos``
    picks at random among the moves that complete no five and leave no four, when there
    are any: such games mostly fill the board (decided boards)."""
    rng = np.random.default_rng(seed)
    states = [State()]
    while not states[-1].is_terminal:
        state = states[-1]
        legal = state.legal_actions()
        if careful_chaos and state.to_play == CHAOS:
            safe = [a for a in legal if not (nxt := state.apply(a)).is_terminal and not nxt.threats()]
            legal = safe or legal
        states.append(state.apply(legal[int(rng.integers(len(legal)))]))
    return states


def game_actions(states: Sequence[State]) -> list[int]:
    """The actions that lead from each position of a game to the next."""
    out = []
    for before, after in zip(states, states[1:]):
        cell = ((before.x | before.o) ^ (after.x | after.o)).bit_length() - 1
        out.append(2 * cell + (1 if after.o != before.o else 0))
    return out


@st.composite
def games(draw: st.DrawFn) -> list[State]:
    """A whole random game (every position, the last one terminal); in about half of them
    Chaos plays carefully, so that boards fill up."""
    return random_game(draw(st.integers(0, 2**32 - 1)), careful_chaos=draw(st.booleans()))


@st.composite
def positions(draw: st.DrawFn, terminal: bool = True) -> State:
    """A position of a whole random game (see ``games``): half of the examples are the
    game's final position (``terminal``) or the one before it (not ``terminal``: then the
    position is never finished), the others any ply alike. The ply comes from the game's
    seed, not from Hypothesis, whose integers favour small values."""
    seed = draw(st.integers(0, 2**32 - 1))
    states = random_game(seed, careful_chaos=draw(st.booleans()))
    last = len(states) - 1 if terminal else len(states) - 2
    rng = np.random.default_rng([seed, 1])
    return states[last if rng.random() < 0.5 else int(rng.integers(last + 1))]


def ends_by_chaos_five(state: State) -> bool:
    """A five stands and Chaos placed the last stone (Chaos completed it and lost)."""
    return state.has_five and state.to_play == ORDER


def assert_reaches_ends(states: Sequence[State], terminal: float = 0.25, decided: float = 0.05,
                        chaos_five: float = 0.05) -> None:
    """A good share of ``states`` are finished games, decided boards and fives made by
    Chaos (the cases a generator of short openings never shows)."""
    n = len(states)
    assert n >= 10, n
    shares = {
        "terminal": sum(s.is_terminal for s in states) / n,
        "decided": sum(s.decided for s in states) / n,
        "chaos_five": sum(ends_by_chaos_five(s) for s in states) / n,
    }
    wanted = {"terminal": terminal, "decided": decided, "chaos_five": chaos_five}
    assert all(shares[k] >= wanted[k] for k in wanted), (shares, wanted)


def check_examples(strategy: st.SearchStrategy, check: Callable[[Any], None], max_examples: int) -> list:
    """Run ``check`` on ``max_examples`` examples of ``strategy`` (derandomized, so the
    coverage a test asserts afterwards is the same on every run) and return them."""
    seen: list = []

    @settings(max_examples=max_examples, deadline=None, derandomize=True, database=None)
    @given(strategy)
    def run(example: Any) -> None:
        check(example)
        seen.append(example)

    run()
    return seen


def play_random_to(seed: int, empties: int) -> State:
    """A non-terminal position with ``empties`` empty cells, from random legal play (games
    that end earlier are replayed with the same generator until one gets there)."""
    rng = np.random.default_rng(seed)
    while True:
        state = State()
        while state.num_empty > empties and not state.is_terminal:
            legal = state.legal_actions()
            state = state.apply(legal[int(rng.integers(len(legal)))])
        if not state.is_terminal:
            return state


def endgames(n: int, empties: int, seed: int) -> list[State]:
    """``n`` non-terminal positions with ``empties`` empty cells, from random play."""
    return [play_random_to(seed * 1000 + i, empties) for i in range(n)]


def random_board(seed: int, empties: int) -> State:
    """A random board (not necessarily reachable by play) with ``empties`` empty cells and
    no five on it."""
    rng = np.random.default_rng(seed)
    while True:
        cells = rng.permutation(CELLS)[: CELLS - empties]
        symbols = rng.integers(0, 2, size=len(cells))
        x = sum(1 << int(c) for c, s in zip(cells, symbols) if s == 0)
        o = sum(1 << int(c) for c, s in zip(cells, symbols) if s == 1)
        state = State(x, o)
        if not state.has_five:
            return state


def self_play_moves(agent: Any) -> list[int]:
    """The moves of one game an agent (or agent spec) plays against itself."""
    from orderchaos.agents.registry import make

    agent = make(agent) if isinstance(agent, str) else agent
    state, moves = State(), []
    while not state.is_terminal:
        moves.append(agent.act(state))
        state = state.apply(moves[-1])
    return moves


# ---------------------------------------------------------------------------------------
# Networks and training runs.
# ---------------------------------------------------------------------------------------


def tiny_nets(seed: int = 0) -> dict:
    """Two small seeded PolicyValueNets in eval mode, one per role."""
    import torch

    from orderchaos.agents.network import PolicyValueNet

    torch.manual_seed(seed)
    return {role: PolicyValueNet(8, 1, 16).eval() for role in ("order", "chaos")}


def run_weights(run_dir: Path) -> dict:
    """The latest policy of a run (or policy directory): role -> tensor name -> tensor."""
    from safetensors.torch import load_file

    from orderchaos.agents.policy_files import find_policy_dir

    latest = find_policy_dir(run_dir)
    return {role: load_file(str(latest / f"{role}.safetensors")) for role in ("order", "chaos")}


def train_smoke(run_dir: Path, *overrides: str) -> dict:
    """Train the smoke config two iterations (no evaluation) and return its weights."""
    from orderchaos.train.config import load_config
    from orderchaos.train.factory import make_trainer

    config = load_config(SMOKE, ["eval.enabled=false", "run.iterations=2", *overrides])
    make_trainer(config, run_dir).fit()
    return run_weights(run_dir)


# ---------------------------------------------------------------------------------------
# Brute-force oracles.
# ---------------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def brute_force(state: State) -> str:
    """The winner with best play: plain minimax on State, no pruning or rules beyond
    orderchaos.envs.rules (a few empty cells only)."""
    if state.winner is not None:
        return state.winner
    mover = state.to_play
    results = {brute_force(state.apply(a)) for a in state.legal_actions()}
    return mover if mover in results else (CHAOS if mover == ORDER else ORDER)


def mover_wins(state: State) -> bool:
    """Does the player to move in a non-terminal ``state`` win with best play?"""
    assert not state.is_terminal
    return brute_force(state) == state.to_play


def winning_moves(state: State) -> list[int]:
    """The legal moves after which the mover still wins with best play."""
    return [a for a in state.legal_actions() if brute_force(state.apply(a)) == state.to_play]


@lru_cache(maxsize=None)
def order_wins_within(state: State, plies: int) -> bool:
    """Can Order force a five within ``plies`` plies (Chaos resisting)?"""
    if state.has_five:
        return True
    if state.is_full or plies <= 0:
        return False
    children = [order_wins_within(state.apply(a), plies - 1) for a in state.legal_actions()]
    return any(children) if state.to_play == ORDER else all(children)


@lru_cache(maxsize=1)
def _centre_line_bits() -> list[int]:
    from orderchaos.agents.strategy import CENTRE_LINES

    return [sum(1 << i for i in line) for line in CENTRE_LINES]


@lru_cache(maxsize=None)
def brute_centre(x: int, o: int) -> int:
    """The centre game (the strategy's 4x4, cell i of the centre bit i) by plain minimax over
    16-bit boards: plies to a line of four with best play (Order hastens, Chaos delays), or
    -1 when Chaos fills the 4x4 without one. Fast from about nine stones on."""
    if any(x & m == m or o & m == m for m in _centre_line_bits()):
        return 0
    empty = [i for i in range(16) if not (x | o) >> i & 1]
    if not empty:
        return -1
    values = [brute_centre(x | 1 << i, o) for i in empty] + [brute_centre(x, o | 1 << i) for i in empty]
    if bin(x | o).count("1") % 2 == 0:  # Order to move
        wins = [v for v in values if v >= 0]
        return 1 + min(wins) if wins else -1
    return -1 if min(values) < 0 else 1 + max(values)


def centre_bits(state: State) -> tuple[int, int]:
    """``state``'s central 4x4 as the 16-bit X and O boards :func:`brute_centre` takes."""
    from orderchaos.agents.strategy import CENTRE_CELLS

    x = sum(1 << i for i, c in enumerate(CENTRE_CELLS) if state.x >> c & 1)
    o = sum(1 << i for i, c in enumerate(CENTRE_CELLS) if state.o >> c & 1)
    return x, o


def naive_lines() -> list[list[tuple[int, int]]]:
    """Every run of five cells along a row, column or diagonal, as (row, col) pairs."""
    lines = []
    for r in range(6):
        for c in range(6):
            for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
                cells = [(r + i * dr, c + i * dc) for i in range(5)]
                if all(0 <= rr < 6 and 0 <= cc < 6 for rr, cc in cells):
                    lines.append(cells)
    return lines


NAIVE_LINES = naive_lines()


def naive_facts(board: str) -> dict:
    """Winner, terminal, winning cells, decided, threats and legal actions of a board
    string, by brute force on a 6x6 grid of characters (independent of the rules engine)."""
    grid = [list(board[r * 6 : r * 6 + 6]) for r in range(6)]
    winning: set[int] = set()
    threats: set[tuple[int, int]] = set()
    decided = True
    for line in NAIVE_LINES:
        chars = [grid[r][c] for r, c in line]
        if chars.count("X") == 5 or chars.count("O") == 5:
            winning.update(r * 6 + c for r, c in line)
        if not ("X" in chars and "O" in chars):
            decided = False
        for sym, index in (("X", 0), ("O", 1)):
            if chars.count(sym) == 4 and chars.count(".") == 1:
                r, c = line[chars.index(".")]
                threats.add((r * 6 + c, index))
    full = "." not in board
    winner = "order" if winning else ("chaos" if full else None)
    terminal = winner is not None
    legal = [] if terminal else [2 * i + s for i, ch in enumerate(board) if ch == "." for s in (0, 1)]
    return {
        "winner": winner,
        "terminal": terminal,
        "winning_line": tuple(sorted(winning)),
        "decided": decided,
        "threats": sorted(threats),
        "legal": legal,
    }


# ---------------------------------------------------------------------------------------
# A fake network.
# ---------------------------------------------------------------------------------------


class HashEvaluator:
    """A deterministic fake network: priors and values from a hash of the position, the
    same whatever batch a position comes in.

    Counts the positions it evaluates (``evaluated``) and records each batch's size."""

    def __init__(self) -> None:
        self.evaluated = 0
        self.batch_sizes: list[int] = []

    def evaluate(self, states: Sequence[State]) -> tuple[np.ndarray, np.ndarray]:
        from orderchaos.agents.mcts import uniform_legal_priors

        self.batch_sizes.append(len(states))
        self.evaluated += len(states)
        priors = uniform_legal_priors(states)
        for i, s in enumerate(states):
            priors[i] *= np.random.default_rng([s.x, s.o]).uniform(0.1, 1.0, size=72).astype(np.float32)
        values = np.array([np.random.default_rng([s.o, s.x]).uniform(-1, 1) for s in states])
        return priors, values.astype(np.float32)


def free_loopback_port() -> int:
    """A TCP port free on 127.0.0.1 when asked (for a server a test starts there)."""
    import socket

    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return port


POLL_SECONDS = 0.02
"""How often a test looks again at a condition it waits for (a poll interval, not a wait for
a result): every wait of the tests goes through :func:`wait_for`."""


def wait_for(condition: Callable[[], Any], what: str, *, still_running: Callable[[], None] | None = None,
             not_yet: tuple[type[BaseException], ...] = (), seconds: float | None = None) -> Any:
    """Look at ``condition`` until it gives a true value, and return that value.

    ``still_running`` is called before each look and raises (with a log) when a process the
    wait depends on has ended; an exception of a type in ``not_yet`` (a server not listening
    yet: OSError) counts as a false look. Without ``seconds`` a wait that never ends fails at
    the test's timeout (pytest-timeout); with it, after that long with ``what`` named."""
    import time

    deadline = None if seconds is None else time.monotonic() + seconds
    while True:
        if still_running is not None:
            still_running()
        try:
            value = condition()
        except not_yet:
            value = None
        if value:
            return value
        assert deadline is None or time.monotonic() < deadline, f"never: {what} (within {seconds:g} s)"
        time.sleep(POLL_SECONDS)


def wait_until_serving(base: str, still_starting: Callable[[], None], *, workers: int = 0,
                       context: Any = None) -> None:
    """Wait until the ``orderchaos serve`` at ``base`` (e.g. ``http://127.0.0.1:8000``)
    answers ``/healthz`` with 200 and, with ``workers``, until that many of its search
    workers are warm (``orderchaos_workers_ready`` on ``/metrics``): a site still warming up
    on a busy machine is slow to answer its first page or game. ``still_starting`` is called
    before each try and raises, with the server's log, when a process the site needs has
    ended. No deadline of its own: a slow start is waited for, and a site that never gets
    ready fails at the test's timeout (pytest-timeout)."""
    import re
    import urllib.request

    def answer(path: str) -> str | None:
        try:
            with urllib.request.urlopen(base + path, timeout=5, context=context) as got:
                return got.read().decode() if got.status == 200 else None
        except OSError:  # not listening yet, not ready (503), or slow to answer
            return None

    def ready_workers() -> float:
        found = re.search(r"^orderchaos_workers_ready (\S+)$", answer("/metrics") or "", re.M)
        return float(found.group(1)) if found else 0.0

    wait_for(lambda: answer("/healthz") is not None and (workers == 0 or ready_workers() >= workers),
             f"{base} ready", still_running=still_starting)


SOCKET_DEADLINE = 60.0
"""Seconds a web test waits for the server's next message before it fails: far more than any
answer takes on a busy machine, so only a message that never comes reaches it."""


def receive_json(ws: Any, seconds: float = SOCKET_DEADLINE) -> Any:
    """The next JSON message on a web test socket (Starlette's TestClient), as
    ``ws.receive_json()`` gives it (WebSocketDisconnect when the server closed the socket),
    but an AssertionError when none comes within ``seconds``: the TestClient's own receive
    waits forever, so a server that never answers would hang the run instead of failing.

    It waits on the socket's stream of messages from the app (``_send_rx``, an anyio
    memory stream) in the TestClient's event loop, so a message that comes late is not lost."""
    import json

    import anyio

    if not hasattr(ws, "portal"):  # a client of a real server, whose own receive has a deadline
        return ws.receive_json()
    stream = getattr(ws, "_send_rx", None)
    assert stream is not None, "this Starlette's TestClient has no _send_rx stream to wait on with a deadline"

    async def within_deadline() -> Any:
        with anyio.fail_after(seconds):
            return await stream.receive()

    try:
        message = ws.portal.call(within_deadline)
    except TimeoutError:
        raise AssertionError(f"no message came from the server within {seconds:g} s") from None
    ws._raise_on_close(message)
    return json.loads(message["text"])
def _end_with_parent() -> None:
    """In a child process before it runs its program: have Linux send it SIGTERM when the
    test process ends, even one stopped by a timeout's ``os._exit`` (no finalizer runs then)."""
    import ctypes
    import signal

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class RedisServer:
    """Debian's ``redis-server`` on a free loopback port, with its files in ``folder`` and
    nothing saved to disk; :meth:`start` returns once it answers PING, :meth:`stop` ends it
    (and :meth:`start` brings it back on the same port)."""

    BINARY = "/usr/bin/redis-server"

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_loopback_port()
        self.process: Any = None

    def url(self, database: int = 0) -> str:
        """The ``redis://`` URL of one of its databases."""
        return f"redis://127.0.0.1:{self.port}/{database}"

    def start(self, timeout: float = 60.0) -> None:
        """Start it and wait until it answers PING (a RuntimeError when it exits, an
        AssertionError when it does not answer within ``timeout`` seconds)."""
        import subprocess

        import redis

        self.folder.mkdir(parents=True, exist_ok=True)
        log = (self.folder / "redis.log").open("a")
        self.process = subprocess.Popen(
            [self.BINARY, "--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(self.folder),
             "--save", "", "--appendonly", "no", "--protected-mode", "yes"],
            stdout=log, stderr=subprocess.STDOUT, preexec_fn=_end_with_parent)
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=1, socket_timeout=1)

        def still_running() -> None:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited: {(self.folder / 'redis.log').read_text()[-2000:]}")

        try:
            wait_for(client.ping, "redis-server answers PING", still_running=still_running,
                     not_yet=(redis.ConnectionError,), seconds=timeout)
        finally:
            client.close()

    def stop(self) -> None:
        """End it (SIGTERM, then SIGKILL after 10 s)."""
        import subprocess

        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None


def next_message(ws: Any, kind: str, limit: int = 50) -> dict:
    """The next message of type ``kind`` on a web test socket (Starlette's TestClient),
    skipping up to ``limit`` others."""
    for _ in range(limit):
        msg = receive_json(ws)
        if msg["type"] == kind:
            return msg
    raise AssertionError(f"no {kind} message came")

def receive(ws: Any, kind: str, *, error_ok: bool = False) -> dict:
    """The next message of type ``kind`` on a web test socket, skipping up to 200 others; an
    ``error`` on the way fails the test unless ``error_ok``."""
    for _ in range(200):
        msg = receive_json(ws)
        if msg["type"] == kind:
            return msg
        assert msg["type"] != "error" or error_ok, msg
    raise AssertionError(f"no {kind} message came")


def until_moves(ws: Any, count: int) -> list[dict]:
    """The messages on a web test socket up to the first position with ``count`` moves,
    that one included (the last)."""
    seen = []
    for _ in range(200):
        seen.append(receive_json(ws))
        if seen[-1]["type"] == "state" and len(seen[-1]["moves"]) == count:
            return seen
    raise AssertionError(f"no position with {count} moves came")


def late_position(seed: int, empties: int) -> State:
    """A seeded random unfinished position with ``empties`` (even) empty cells, Order to move."""
    assert empties % 2 == 0, "Order is to move only with an even number of empty cells"
    rng = np.random.default_rng(seed)
    while True:
        s = State()
        for _ in range(CELLS - empties):
            s = s.apply(int(rng.choice(s.legal_actions())))
            if s.is_terminal:
                break
        if not s.is_terminal and s.to_play == "order":
            return s


# ---------------------------------------------------------------------------------------
# A PostgreSQL cluster of the tests' own.
# ---------------------------------------------------------------------------------------

def postgres_bindir() -> Path | None:
    """The folder of PostgreSQL's server programs, as the load tool finds it
    (:func:`orderchaos.web.site_load.postgres_bindir`)."""
    from orderchaos.web.site_load import postgres_bindir as found

    return found()


class PostgresCluster:
    """A throwaway PostgreSQL cluster in a temporary folder, listening on a free port of
    127.0.0.1 only, user ``orderchaos`` with trust authentication, fsync off (nothing here
    outlives the tests). PostgreSQL refuses to run as root: as root it runs as the
    ``postgres`` user that Debian's package creates (``runuser``)."""

    USER = "orderchaos"

    def __init__(self, bindir: Path) -> None:
        import tempfile

        self.bindir = bindir
        self.folder = Path(tempfile.mkdtemp(prefix="orderchaos-pg-"))
        self.data = self.folder / "data"
        self.port = free_loopback_port()
        self.databases = 0

    def command(self, program: str, *args: str) -> list[str]:
        """``program`` of the cluster's PostgreSQL, as the user that owns the cluster."""
        import os

        line = [str(self.bindir / program), *args]
        return ["runuser", "-u", "postgres", "--", *line] if os.geteuid() == 0 else line

    def run(self, program: str, *args: str) -> None:
        """Run one of PostgreSQL's programs; its output in the exception when it fails."""
        import subprocess

        done = subprocess.run(self.command(program, *args), capture_output=True, text=True, timeout=120,
                              cwd=self.folder)  # the postgres user may not enter the tests' own folder
        if done.returncode != 0:
            raise RuntimeError(f"{program} failed ({done.returncode}): {done.stdout}{done.stderr}")

    def create(self) -> None:
        """initdb the cluster (as root: the folder is given to the postgres user first)."""
        import os
        import shutil

        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        self.run("initdb", "-D", str(self.data), "-U", self.USER, "-A", "trust", "--no-sync",
                 "-E", "UTF8", "--locale=C")

    def start(self) -> None:
        """Start the server and return once it accepts connections (pg_ctl -w, then pg_isready)."""
        self.run("pg_ctl", "-D", str(self.data), "-l", str(self.folder / "server.log"), "-w", "-t", "60",
                 "-o", f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.folder} -c fsync=off"
                       " -c full_page_writes=off -c synchronous_commit=off", "start")
        self.run("pg_isready", "-h", "127.0.0.1", "-p", str(self.port), "-t", "60")

    def stop(self) -> None:
        """Stop the server (fast: open connections are cut, as when a database goes away)."""
        self.run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop")

    def url(self, database: str = "postgres") -> str:
        """The URL of one of the cluster's databases."""
        return f"postgresql://{self.USER}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """The URL of a new, empty database of the cluster."""
        import psycopg

        self.databases += 1
        name = f"store{self.databases}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def remove(self) -> None:
        """Stop the server if it runs and delete the folder."""
        import shutil
        import subprocess

        if (self.data / "postmaster.pid").exists():
            subprocess.run(self.command("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop"),
                           capture_output=True, timeout=120, cwd=self.folder)
        shutil.rmtree(self.folder, ignore_errors=True)


class AppSite:
    """A web app under Starlette's TestClient and the sockets a test opens on it (all from
    the test client's one address), closed together when the ``with`` block ends."""

    def __init__(self, app: Any) -> None:
        from contextlib import ExitStack

        self.app = app
        self.stack = ExitStack()

    def __enter__(self) -> "AppSite":
        from starlette.testclient import TestClient

        self.client = self.stack.enter_context(TestClient(self.app))
        return self

    def __exit__(self, *exc: object) -> None:
        self.stack.close()

    def connect(self) -> Any:
        """A new tab's socket, past the server's hello."""
        ws = self.stack.enter_context(self.client.websocket_connect("/ws"))
        assert receive_json(ws)["type"] == "hello"
        return ws

