"""What one browser tab drives over its WebSocket: a game to play, a match to watch, saved
games to study.

:class:`Connection` reads decoded JSON messages (:meth:`Connection.handle`) and answers
through an async ``send`` callable, so the API tests and the server share one code path.
Every request is checked here: a bad message raises :class:`WebError`, which the app sends
back as an error and which leaves the game as it was. Agents think in daemon threads with
a per-move time limit (:func:`off_loop`), so the event loop stays free for other tabs and a
stuck agent ends its move with an error instead of freezing the page.

This module imports no web framework; :mod:`orderchaos.cli.web.app` wraps it in Starlette.

Messages from the page (JSON objects, by ``type``): ``new_game`` (side, opponent), ``move``
(cell and symbol, or text such as "c3 X"), ``undo``, ``hint``, ``state`` (send the play
view again); ``watch`` (order, chaos, delay_ms), ``pause``, ``resume``, ``step``, ``speed``
(delay_ms); ``list_files``, ``open_file`` (name), ``upload`` (name, content), ``analyse``
(game: its position in the file). Answers: ``hello`` (suggestions, limits), ``state`` (a
play or watch view: board, to_play, winner, winning_line, threats, last, moves, status),
``hint``, ``files``, ``games``, ``analysis`` (verdicts, marks, values) and ``error``
(message).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from orderchaos.agents.base import Agent
from orderchaos.agents.registry import SpecError, check_role, make, resolve
from orderchaos.arena.game_files import GameFileError, SavedGame, load_games
from orderchaos.cli.terminal_game import MoveInputError, parse_move
from orderchaos.envs.rules import (
    AGENTS,
    CELLS,
    CHAOS,
    ORDER,
    SYMBOLS,
    IllegalActionError,
    State,
    action_name,
    cell_name,
)

T = TypeVar("T")
Send = Callable[[dict[str, Any]], Awaitable[None]]

SUGGESTED_AGENTS = [
    "random",
    "heuristic",
    "mcts:sims=800",
    "pretrained",
    "pretrained:sym=16",  # the strongest network alone
    "pretrained:sims=200",
    "pretrained:sims=200,solver=26",  # the strongest player
    "solver",
]
MAX_SPEC_CHARS = 200
MAX_NAME_CHARS = 200
MAX_WATCH_DELAY_MS = 10_000
SOLVER_TIME = 3.0
"""Seconds per move for a solver opponent whose spec gives no ``time=``."""


class WebError(ValueError):
    """A request that cannot be carried out; the message is shown on the page as is."""


class TimedOut(WebError):
    """Work that ran past its time limit; its thread was left behind, still running."""


@dataclass(frozen=True)
class Limits:
    """The server's time and size limits (seconds and bytes)."""

    move_time: float = 30.0
    """Seconds an agent may think about one move before the move ends with an error."""
    build_time: float = 120.0
    """Seconds to build an agent (the first ``pretrained`` imports torch and loads weights)."""
    hint_time: float = 1.0
    """Solver time for a hint."""
    study_time: float = 0.25
    """Solver time for each position of a studied game."""
    max_message_bytes: int = 64 * 1024
    """Largest message other than an upload."""
    max_upload_bytes: int = 2 * 1024 * 1024
    """Largest uploaded games file."""


@dataclass
class Services:
    """What all connections of one server share: the limits, the games folder, the hint
    solver (behind a lock, it is not thread-safe) and the network evaluator."""

    limits: Limits = field(default_factory=Limits)
    games_dir: Path | None = None
    _solver: Any = None
    _solver_lock: threading.Lock = field(default_factory=threading.Lock)
    _evaluator: Any = None
    _evaluator_error: str | None = None
    _evaluator_lock: threading.Lock = field(default_factory=threading.Lock)

    def solve(self, state: State, time_limit: float) -> Any:
        """The exact solver's :class:`SolveResult` (with best moves) within ``time_limit``."""
        from orderchaos.agents.solver import Solver

        with self._solver_lock:
            if self._solver is None:
                self._solver = Solver()
            return self._solver.solve(state, time_limit=time_limit, moves=True)

    def winning_move(self, state: State, time_limit: float) -> int | None:
        """One move that provably keeps the mover's win, found within ``time_limit``
        (sensible moves first), or None; for when :meth:`solve` ran out of time listing all."""
        import time

        from orderchaos.agents.solver import Solver, fallback_action

        deadline = time.perf_counter() + time_limit
        first = fallback_action(state)
        with self._solver_lock:
            if self._solver is None:
                self._solver = Solver()
            for action in [first] + [a for a in state.legal_actions() if a != first]:
                child = state.apply(action)
                if child.winner == state.to_play:
                    return action
                left = deadline - time.perf_counter()
                if left <= 0:
                    return None
                if self._solver.solve(child, time_limit=left).winner == state.to_play:
                    return action
        return None

    def evaluator(self) -> Any:
        """The pretrained network evaluator, or None when it cannot be loaded (see
        :meth:`evaluator_error`)."""
        with self._evaluator_lock:
            if self._evaluator is None and self._evaluator_error is None:
                try:
                    from orderchaos.agents.network_agent import shared_evaluator
                    from orderchaos.agents.policy_files import pretrained_dir

                    self._evaluator = shared_evaluator(pretrained_dir())
                except Exception as exc:  # a missing or broken policy disables values only
                    self._evaluator_error = f"{type(exc).__name__}: {exc}"
            return self._evaluator

    def evaluator_error(self) -> str:
        """Why :meth:`evaluator` returned None."""
        return self._evaluator_error or ""

    def warm_up(self) -> None:
        """Compile (or load from the cache) the solver's kernels before the first hint."""
        self.solve(State(), time_limit=0.05)


async def off_loop(fn: Callable[..., T], *args: Any, timeout: float, what: str) -> T:
    """Run ``fn(*args)`` in a daemon thread and await its result for at most ``timeout``
    seconds.

    Raises TimedOut when it takes longer (the thread is left to finish on its own and its
    result is dropped; being a daemon it never delays the server's exit) or when it raises
    anything other than a WebError (the message names ``what`` and the exception).
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def deliver(setter: Callable[[Any], None], value: Any) -> None:
        if not future.done():
            setter(value)

    def work() -> None:
        try:
            result = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the caller
            outcome = (future.set_exception, exc)
        else:
            outcome = (future.set_result, result)
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
            loop.call_soon_threadsafe(deliver, *outcome)

    threading.Thread(target=work, name=f"orderchaos-web: {what}", daemon=True).start()
    try:
        return await asyncio.wait_for(future, timeout)
    except asyncio.TimeoutError:
        raise TimedOut(f"{what} did not finish within {timeout:g} s and was abandoned") from None
    except WebError:
        raise
    except Exception as exc:
        raise WebError(f"{what} failed: {type(exc).__name__}: {exc}") from None


def effective_spec(spec: object, limits: Limits) -> str:
    """Check an agent spec and give the one to build: an agent whose only budget is a
    time limit (the solver) gets ``time=`` (SOLVER_TIME, or less to fit in the per-move
    limit) unless the spec sets it.

    Raises WebError for a missing, overlong or unknown spec.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise WebError("give an agent spec, e.g. " + ", ".join(SUGGESTED_AGENTS))
    if len(spec) > MAX_SPEC_CHARS:
        raise WebError(f"an agent spec has at most {MAX_SPEC_CHARS} characters")
    spec = spec.strip()
    try:
        info, _, params = resolve(spec)
    except SpecError as exc:
        raise WebError(f"bad agent spec {spec!r}: {exc}") from None
    if "time" in info.params and "sims" not in info.params and "time" not in params:
        budget = round(min(SOLVER_TIME, 0.8 * limits.move_time), 3)
        spec = f"{spec},time={budget:g}" if ":" in spec else f"{spec}:time={budget:g}"
    return spec


def _check_role(spec: str, role: str) -> None:
    try:
        check_role(spec, role)
    except SpecError as exc:
        raise WebError(f"bad agent spec {spec!r}: {exc}") from None


def _build(spec: str) -> Agent:
    try:
        return make(spec, seed=0)
    except SpecError as exc:
        raise WebError(f"bad agent spec {spec!r}: {exc}") from None


def _act(agent: Agent, state: State, spec: str) -> int:
    action = agent.act(state)
    try:
        return state.check_action(action)
    except IllegalActionError as exc:
        raise WebError(f"the agent {spec} chose an illegal move: {exc}") from None


def board_view(state: State) -> dict[str, Any]:
    """The board facts every view shows: cells, whose turn, result, fives and fours."""
    return {
        "board": ["" if state.cell(c) == "." else state.cell(c) for c in range(CELLS)],
        "to_play": None if state.is_terminal else state.to_play,
        "winner": state.winner,
        "winning_line": list(state.winning_line),
        "threats": [] if state.is_terminal else [{"cell": c, "symbol": SYMBOLS[s]} for c, s in state.threats()],
    }


def _field(msg: dict[str, Any], name: str, kind: type, what: str) -> Any:
    value = msg.get(name)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise WebError(f"'{msg.get('type')}' needs '{name}': {what}")
    return value


def _title(role: str) -> str:
    return role.capitalize()


# -- play -----------------------------------------------------------------------------


class PlayGame:
    """A human against an agent: moves checked here, undo, hints, the agent's replies."""

    def __init__(self, services: Services, send: Send) -> None:
        self.services, self.send = services, send
        self.state = State()
        self.human: str | None = None
        self.spec = ""
        self.agent: Agent | None = None
        self.history: list[tuple[int, bool]] = []  # (action, made by the human)
        self.thinking = False
        self.generation = 0  # bumped by every new game, so a stale reply is dropped
        self.task: asyncio.Task | None = None

    def view(self, status: str | None = None) -> dict[str, Any]:
        """The ``state`` message for the page."""
        last = self.history[-1][0] if self.history else None
        return {
            "type": "state",
            "mode": "play",
            **board_view(self.state),
            "last": None if last is None else last >> 1,
            "moves": [action_name(a) for a, _ in self.history],
            "side": self.human,
            "opponent": self.spec,
            "thinking": self.thinking,
            "can_undo": any(by_human for _, by_human in self.history) and not self.thinking,
            "status": status or self.status(),
        }

    def status(self) -> str:
        """Whose turn it is, or the result."""
        if self.human is None:
            return "Choose a side and an opponent, then start a new game."
        winner = self.state.winner
        if winner is not None:
            verdict = "you win!" if winner == self.human else f"{self.spec} wins."
            return f"Game over: {_title(winner)} wins — {verdict}"
        if self.thinking:
            return f"{self.spec} ({_title(self.state.to_play)}) is thinking…"
        if self.state.to_play == self.human:
            return f"Your move ({_title(self.human)}): choose X or O and click a cell."
        return f"{self.spec} ({_title(self.state.to_play)}) to move."

    async def new_game(self, msg: dict[str, Any]) -> None:
        """Start a game: ``side`` (order/chaos) for the human, ``opponent`` an agent spec."""
        side = msg.get("side")
        if side not in AGENTS:
            raise WebError(f"side must be 'order' or 'chaos', got {side!r}")
        spec = effective_spec(msg.get("opponent"), self.services.limits)
        _check_role(spec, CHAOS if side == ORDER else ORDER)
        agent = await off_loop(
            _build, spec, timeout=self.services.limits.build_time, what=f"building the agent {spec}"
        )
        self.cancel()
        self.generation += 1
        self.state, self.history = State(), []
        self.human, self.spec, self.agent = side, spec, agent
        self.maybe_agent_move()
        await self.send(self.view())

    async def move(self, msg: dict[str, Any]) -> None:
        """Play the human's move: ``cell`` (0..35) and ``symbol`` (X/O), or ``text`` like c3 X."""
        if self.human is None:
            raise WebError("start a new game first")
        if self.state.is_terminal:
            raise WebError("the game is over: undo or start a new game")
        if self.thinking or self.state.to_play != self.human:
            raise WebError(f"not your turn: {self.spec} is to move")
        action = _read_move(msg, self.state)
        try:
            self.state = self.state.apply(action)
        except IllegalActionError as exc:
            raise WebError(f"illegal move {action_name(action)}: {exc}") from None
        self.history.append((action, True))
        self.maybe_agent_move()
        await self.send(self.view())

    def maybe_agent_move(self) -> None:
        """Start the agent's reply in the background when it is the agent's turn."""
        if self.human is None or self.state.is_terminal or self.state.to_play == self.human:
            return
        self.thinking = True
        self.task = asyncio.create_task(self._agent_move(self.generation))

    async def _agent_move(self, generation: int) -> None:
        limits = self.services.limits
        try:
            if self.agent is None:  # the last one timed out and may still be running
                self.agent = await off_loop(
                    _build, self.spec, timeout=limits.build_time, what=f"building the agent {self.spec}"
                )
            action = await off_loop(
                _act, self.agent, self.state, self.spec, timeout=limits.move_time,
                what=f"the agent {self.spec}",
            )
        except WebError as exc:
            if generation != self.generation:
                return
            if isinstance(exc, TimedOut):  # the stuck agent may still be using its state
                self.agent = None
            self.thinking = False
            await self.send(self.view())
            await self.send({"type": "error", "mode": "play", "message": f"{exc}; undo or start a new game"})
            return
        if generation != self.generation:
            return
        self.thinking = False
        self.state = self.state.apply(action)
        self.history.append((action, False))
        await self.send(self.view())

    async def undo(self) -> None:
        """Take back the human's last move and the replies after it."""
        if self.thinking:
            raise WebError(f"wait for {self.spec} to move, or start a new game")
        if not any(by_human for _, by_human in self.history):
            raise WebError("nothing to undo: you have not moved yet")
        while True:
            action, by_human = self.history.pop()
            bit = 1 << (action >> 1)
            self.state = State(self.state.x & ~bit, self.state.o & ~bit)
            if by_human:
                break
        await self.send(self.view(f"Took back your move {action_name(action)}. " + self.status()))

    async def hint(self) -> None:
        """Send a ``hint``: the solver's proof, else the network's favourite moves."""
        if self.human is None:
            raise WebError("start a new game first")
        if self.state.is_terminal:
            raise WebError("the game is over; no hint needed")
        if self.thinking or self.state.to_play != self.human:
            raise WebError(f"hints are for your move: wait for {self.spec} to move")
        state = self.state
        hint = await off_loop(
            make_hint, self.services, state, timeout=self.services.limits.hint_time + 30,
            what="the hint",
        )
        await self.send({"type": "hint", "mode": "play", **hint})

    def cancel(self) -> None:
        """Forget a reply still being computed."""
        if self.task is not None:
            self.task.cancel()
        self.thinking = False


def _read_move(msg: dict[str, Any], state: State) -> int:
    """The action a ``move`` message asks for, checked against ``state``."""
    if "text" in msg:
        text = _field(msg, "text", str, "a move such as 'c3 X'")
        try:
            return parse_move(text[:40], state)
        except MoveInputError as exc:
            raise WebError(str(exc)) from None
    cell = msg.get("cell")
    symbol = msg.get("symbol")
    if not isinstance(cell, int) or isinstance(cell, bool) or not 0 <= cell < CELLS:
        raise WebError(f"'move' needs 'cell': an integer 0..{CELLS - 1}, got {cell!r}")
    if symbol not in ("X", "O"):
        raise WebError(f"'move' needs 'symbol': 'X' or 'O', got {symbol!r}")
    if (state.x | state.o) >> cell & 1:
        raise WebError(f"illegal move: {cell_name(cell)} already holds {state.cell(cell)}; choose an empty cell")
    return 2 * cell + SYMBOLS.index(symbol)


def make_hint(services: Services, state: State) -> dict[str, Any]:
    """A hint for the side to move: the solver's verdict and best moves when it proves the
    position within the hint time, otherwise the network's three favourite moves and value."""
    limit = services.limits.hint_time
    mover = state.to_play
    result = services.solve(state, limit)
    if result.winner is not None:
        best = result.best_actions or []
        if result.winner == mover and not best:
            found = services.winning_move(state, limit)
            best = [] if found is None else [found]
        if result.winner == mover:
            shown = best[:3]
            text = f"Solver: {_title(mover)} to move wins with perfect play; " + (
                "winning moves: " + ", ".join(action_name(a) for a in shown)
                + (f" (and {len(best) - 3} more)" if len(best) > 3 else "")
                if shown else "no winning move was found in time"
            )
        else:
            shown = []
            text = f"Solver: {_title(result.winner)} wins with perfect play from here; every move loses."
        return {"text": text, "winner": result.winner, "actions": shown, "source": "solver"}
    evaluator = services.evaluator()
    if evaluator is None:
        return {
            "text": f"Solver: no proof within {limit:g} s, and no network to ask ({services.evaluator_error()}).",
            "winner": None, "actions": [], "source": "none",
        }
    priors, values = evaluator.evaluate([state])
    top = [int(a) for a in priors[0].argsort()[::-1][:3]]
    moves = ", ".join(f"{action_name(a)} ({priors[0][a]:.0%})" for a in top)
    value = float(values[0])
    return {
        "text": f"Solver: no proof within {limit:g} s. Network: favourite moves {moves}; "
        f"value for {_title(mover)} {value:+.2f} (−1 lost … +1 won).",
        "winner": None, "actions": top, "value": value, "source": "network",
    }


# -- watch ----------------------------------------------------------------------------


class WatchGame:
    """Two agents play each other at a chosen speed, with pause and step."""

    def __init__(self, services: Services, send: Send) -> None:
        self.services, self.send = services, send
        self.state = State()
        self.specs: dict[str, str] = {}
        self.agents: dict[str, Agent | None] = {}
        self.history: list[int] = []
        self.delay = 0.5
        self.running = False
        self.wake = asyncio.Event()
        self.steps = 0
        self.task: asyncio.Task | None = None
        self.error = ""

    def view(self) -> dict[str, Any]:
        """The ``state`` message for the page."""
        return {
            "type": "state",
            "mode": "watch",
            **board_view(self.state),
            "last": self.history[-1] >> 1 if self.history else None,
            "moves": [action_name(a) for a in self.history],
            "order": self.specs.get(ORDER, ""),
            "chaos": self.specs.get(CHAOS, ""),
            "running": self.running,
            "status": self.status(),
        }

    def status(self) -> str:
        """Who is to move (and whether paused), or the result."""
        if not self.specs:
            return "Choose two agents and start watching."
        if self.state.winner is not None:
            return f"Game over: {_title(self.state.winner)} ({self.specs[self.state.winner]}) wins."
        if self.error:
            return f"Error: {self.error}; paused (step or resume to retry)."
        mover = self.state.to_play
        paused = "" if self.running else " (paused)"
        return f"{_title(mover)} ({self.specs[mover]}) to move{paused}."

    async def start(self, msg: dict[str, Any]) -> None:
        """Start a match: ``order`` and ``chaos`` agent specs, ``delay_ms`` between moves."""
        limits = self.services.limits
        specs = {role: effective_spec(msg.get(role), limits) for role in AGENTS}
        for role, spec in specs.items():
            _check_role(spec, role)
        delay = self._read_delay(msg)
        agents = {}
        for role, spec in specs.items():
            agents[role] = await off_loop(
                _build, spec, timeout=limits.build_time, what=f"building the agent {spec}"
            )
        self.stop()
        self.state, self.history, self.error = State(), [], ""
        self.specs, self.agents, self.delay = specs, agents, delay
        self.running, self.steps = True, 0
        self.wake.set()
        await self.send(self.view())
        self.task = asyncio.create_task(self._loop())

    def _read_delay(self, msg: dict[str, Any]) -> float:
        delay = msg.get("delay_ms", 500)
        if not isinstance(delay, (int, float)) or isinstance(delay, bool) or not 0 <= delay <= MAX_WATCH_DELAY_MS:
            raise WebError(f"delay_ms must be a number 0..{MAX_WATCH_DELAY_MS}, got {delay!r}")
        return delay / 1000

    async def control(self, kind: str, msg: dict[str, Any]) -> None:
        """``pause``, ``resume``, ``step`` (one move while paused) or ``speed`` (delay_ms)."""
        if kind == "speed":
            self.delay = self._read_delay(msg)
            return
        if self.task is None:
            raise WebError("start watching first")
        if self.state.is_terminal:
            raise WebError("the game is over; start a new one")
        if kind == "pause":
            self.running = False
            self.wake.clear()
        elif kind == "resume":
            self.running, self.error = True, ""
            self.wake.set()
        elif kind == "step":
            if self.running:
                raise WebError("pause first, then step")
            self.steps += 1
            self.error = ""
            self.wake.set()
        await self.send(self.view())

    async def _loop(self) -> None:
        limits = self.services.limits
        while not self.state.is_terminal:
            await self.wake.wait()
            if not self.running:
                self.steps -= 1
                if self.steps <= 0:
                    self.steps = 0
                    self.wake.clear()
            role = self.state.to_play
            spec = self.specs[role]
            try:
                agent = self.agents[role]
                if agent is None:
                    agent = self.agents[role] = await off_loop(
                        _build, spec, timeout=limits.build_time, what=f"building the agent {spec}"
                    )
                action = await off_loop(
                    _act, agent, self.state, spec, timeout=limits.move_time, what=f"the agent {spec}"
                )
            except WebError as exc:
                if isinstance(exc, TimedOut):  # the stuck agent may still be using its state
                    self.agents[role] = None
                self.error = str(exc)
                self.running = False
                self.wake.clear()
                await self.send(self.view())
                await self.send({"type": "error", "mode": "watch", "message": self.status()})
                continue
            self.state = self.state.apply(action)
            self.history.append(action)
            await self.send(self.view())
            if self.running and not self.state.is_terminal:
                await asyncio.sleep(self.delay)
        self.running = False

    def stop(self) -> None:
        """End the match being played."""
        if self.task is not None:
            self.task.cancel()
            self.task = None
        self.running = False


# -- study ----------------------------------------------------------------------------


def list_games_dir(games_dir: Path | None) -> list[str]:
    """The names of the regular files directly inside ``games_dir`` (none without one)."""
    if games_dir is None or not games_dir.is_dir():
        return []
    root = games_dir.resolve()
    return sorted(
        p.name for p in root.iterdir()
        if p.is_file() and not p.name.startswith(".") and p.resolve().parent == root
    )


def _games_payload(name: str, games: list[SavedGame]) -> dict[str, Any]:
    return {
        "type": "games",
        "mode": "study",
        "file": name,
        "games": [
            {
                "index": g.index, "order": g.order, "chaos": g.chaos, "winner": g.record.winner,
                "length": g.record.length, "opening_plies": g.record.opening_plies,
                "actions": g.record.actions, "moves": [action_name(a) for a in g.record.actions],
            }
            for g in games
        ],
    }


def load_upload(name: str, content: str) -> list[SavedGame]:
    """Check an uploaded games file's text as :func:`load_games` checks a file on disk."""
    base = Path(name).name or "upload.jsonl"
    with tempfile.TemporaryDirectory(prefix="orderchaos-upload-") as tmp:
        path = Path(tmp) / base
        path.write_text(content)
        try:
            return load_games(path)
        except GameFileError as exc:
            raise WebError(str(exc).replace(tmp + os.sep, "")) from None


def move_marks(verdicts: list[str | None]) -> list[str | None]:
    """For each move between positions with these solver verdicts (the game's positions in
    order, Order to move at even plies): ``"throws"`` when the mover had a proven win and
    lost it, ``"keeps"`` when the proven result stayed, None when either is unproven."""
    marks: list[str | None] = []
    for ply, (before, after) in enumerate(zip(verdicts, verdicts[1:])):
        mover = AGENTS[ply % 2]
        if before is None or after is None:
            marks.append(None)
        else:
            marks.append("throws" if before == mover and after != mover else "keeps")
    return marks


def analyse_game(services: Services, actions: list[int]) -> dict[str, Any]:
    """Per position: the solver's verdict (None when not proven within the study time) and
    the network's value for Order; per move: whether it keeps the result or throws it away."""
    states = [State()]
    for a in actions:
        states.append(states[-1].apply(a))
    verdicts: list[str | None] = [None] * len(states)
    for i in reversed(range(len(states))):  # late positions first: their proofs help earlier ones
        verdicts[i] = services.solve(states[i], services.limits.study_time).winner
    marks = move_marks(verdicts)
    values: list[float | None] = []
    evaluator = services.evaluator()
    live = [s for s in states if not s.is_terminal]
    net_values = iter(evaluator.evaluate(live)[1].tolist() if evaluator is not None and live else [])
    for s in states:
        if s.is_terminal:
            values.append(1.0 if s.winner == ORDER else -1.0)
        elif evaluator is None:
            values.append(None)
        else:
            v = next(net_values)
            values.append(v if s.to_play == ORDER else -v)
    return {
        "verdicts": verdicts, "marks": marks, "values": values,
        "network": evaluator is not None, "network_error": services.evaluator_error(),
    }


class Study:
    """Saved games from the games folder or an upload, and their analysis."""

    def __init__(self, services: Services, send: Send) -> None:
        self.services, self.send = services, send
        self.games: list[SavedGame] = []

    async def list_files(self) -> None:
        """Send the names of the files in the games folder."""
        folder = self.services.games_dir
        await self.send({
            "type": "files", "mode": "study", "files": list_games_dir(folder),
            "games_dir": str(folder) if folder is not None else None,
        })

    async def open_file(self, msg: dict[str, Any]) -> None:
        """Open a games file by ``name``; only a file directly in the games folder."""
        name = _field(msg, "name", str, "a file name from the games folder")
        folder = self.services.games_dir
        if folder is None:
            raise WebError("the server has no games folder: start it with --games-dir DIR, or upload a file")
        if name not in list_games_dir(folder):
            raise WebError(f"no file {name[:MAX_NAME_CHARS]!r} in the games folder; choose one from the list")
        path = folder.resolve() / name
        if path.stat().st_size > self.services.limits.max_upload_bytes:
            raise WebError(f"{name} is larger than {self.services.limits.max_upload_bytes} bytes")
        try:
            games = await off_loop(load_games, path, timeout=60, what=f"reading {name}")
        except WebError as exc:
            raise WebError(str(exc).replace(str(folder.resolve()) + os.sep, "")) from None
        await self._loaded(name, games)

    async def upload(self, msg: dict[str, Any]) -> None:
        """Read an uploaded games file: ``name`` and its text ``content``."""
        name = _field(msg, "name", str, "the file's name")[:MAX_NAME_CHARS]
        content = _field(msg, "content", str, "the file's text")
        if len(content.encode()) > self.services.limits.max_upload_bytes:
            raise WebError(f"uploads are limited to {self.services.limits.max_upload_bytes} bytes")
        games = await off_loop(load_upload, name, content, timeout=60, what=f"reading {name}")
        await self._loaded(name, games)

    async def _loaded(self, name: str, games: list[SavedGame]) -> None:
        if not games:
            raise WebError(f"{name} holds no games")
        self.games = games
        await self.send(_games_payload(name, games))

    async def analyse(self, msg: dict[str, Any]) -> None:
        """Send the ``analysis`` of game number ``game`` (its position in the opened file)."""
        index = _field(msg, "game", int, "the game's position in the file")
        if not 0 <= index < len(self.games):
            raise WebError(f"no game at position {index}: open a file first" if not self.games
                           else f"game position must be 0..{len(self.games) - 1}, got {index}")
        actions = self.games[index].record.actions
        timeout = 60 + self.services.limits.study_time * (len(actions) + 1) * 4
        result = await off_loop(analyse_game, self.services, actions, timeout=timeout, what="the analysis")
        await self.send({"type": "analysis", "mode": "study", "game": index, **result})


# -- one connection -------------------------------------------------------------------


class Connection:
    """One tab's games and the dispatch of its messages."""

    def __init__(self, services: Services, send: Send) -> None:
        self.services = services
        self.play = PlayGame(services, send)
        self.watch = WatchGame(services, send)
        self.study = Study(services, send)
        self.send = send
        self.tasks: set[asyncio.Task] = set()

    async def hello(self) -> None:
        """The first message: the agent suggestions and the limits."""
        limits = self.services.limits
        await self.send({
            "type": "hello",
            "suggestions": SUGGESTED_AGENTS,
            "limits": {
                "move_time": limits.move_time, "hint_time": limits.hint_time,
                "max_message_bytes": limits.max_message_bytes,
                "max_upload_bytes": limits.max_upload_bytes,
            },
            "games_dir": self.services.games_dir is not None,
        })
        await self.send(self.play.view())

    async def handle(self, msg: object) -> None:
        """Carry out one decoded message; raises WebError for a bad one."""
        if not isinstance(msg, dict):
            raise WebError("a message must be a JSON object with a 'type'")
        kind = msg.get("type")
        handlers: dict[str, Callable[[], Awaitable[None]]] = {
            "new_game": lambda: self.play.new_game(msg),
            "move": lambda: self.play.move(msg),
            "undo": self.play.undo,
            "hint": lambda: self._background(self.play.hint(), "play"),
            "state": lambda: self.send(self.play.view()),
            "watch": lambda: self.watch.start(msg),
            "pause": lambda: self.watch.control("pause", msg),
            "resume": lambda: self.watch.control("resume", msg),
            "step": lambda: self.watch.control("step", msg),
            "speed": lambda: self.watch.control("speed", msg),
            "list_files": self.study.list_files,
            "open_file": lambda: self.study.open_file(msg),
            "upload": lambda: self.study.upload(msg),
            "analyse": lambda: self._background(self.study.analyse(msg), "study"),
        }
        if not isinstance(kind, str) or kind not in handlers:
            raise WebError(f"unknown message type {str(kind)[:40]!r}; expected one of: {', '.join(handlers)}")
        await handlers[kind]()

    async def _background(self, work: Awaitable[None], mode: str) -> None:
        """Run slow answers (hints, analyses) beside the message loop, errors sent back."""

        async def guarded() -> None:
            try:
                await work
            except WebError as exc:
                await self.send({"type": "error", "mode": mode, "message": str(exc)})

        task = asyncio.create_task(guarded())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def close(self) -> None:
        """Stop everything this tab started."""
        self.play.cancel()
        self.watch.stop()
        for task in list(self.tasks):
            task.cancel()
