"""Matches between two players: seeded, reproducible, optionally parallel.

A match is ``n`` games with one player as Order and the other as Chaos. Each game ``i``
draws everything random from its own seed sequence, ``SeedSequence(seed, spawn_key=(i,))``
(what ``SeedSequence(seed).spawn(n)[i]`` gives): the random opening and the seeds of both
players, who are rebuilt from their spec for every game. So a game's moves depend only on
the match seed and its index, never on the number of worker processes or the order in
which games finish.

Players given as objects instead of spec strings are used as they are, in game order, in
this process (``workers`` must then be 1); a freshly seeded object still gives
reproducible matches.

Example::

    from orderchaos.arena.matches import play_match
    result = play_match("heuristic", "random", n=100, seed=1, openings=2)
    print(result.order_win_rate, result.ci95)
"""

from __future__ import annotations

import itertools
import math
import multiprocessing
import signal
import sys
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass, field

import numpy as np

from orderchaos.agents.base import Agent
from orderchaos.arena.game_files import GameRecord
from orderchaos.envs.rules import CHAOS, ORDER, IllegalActionError, State

MAX_OPENING_PLIES = 30
"""Longest random opening accepted; later positions may have no move that keeps the game going."""
MAX_GAMES = 10_000_000
"""The most games one match (or one tournament) plays; games are streamed, not listed first."""


# ---------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------


@dataclass
class MatchResult:
    """The outcome of a match; rates are from Order's side."""

    games: int
    order_wins: int
    chaos_wins: int
    order_win_rate: float
    ci95: tuple[float, float]
    mean_length: float
    seconds: float
    games_per_sec: float
    records: list[GameRecord] = field(default_factory=list)
    order: str = ""
    chaos: str = ""
    stopped: BaseException | None = field(default=None, repr=False, compare=False)
    """The KeyboardInterrupt (Ctrl-C, or a signal turned into one) that ended the match
    before all its games; the figures are those of the games finished before it."""

    def to_dict(self) -> dict:
        """A JSON-ready dict; ``ci95`` becomes a two-element list, records a list of dicts."""
        out = asdict(self)
        out["ci95"] = list(self.ci95)
        out["stopped"] = self.stopped is not None
        return out

    def summary(self) -> str:
        """A few human-readable lines describing the match."""
        lo, hi = self.ci95
        return "\n".join(
            [
                f"order: {self.order}   chaos: {self.chaos}   games: {self.games}",
                f"order wins {self.order_wins}, chaos wins {self.chaos_wins}",
                f"order win rate {self.order_win_rate:.3f} (Wilson 95% CI {lo:.3f}-{hi:.3f})",
                f"mean game length {self.mean_length:.1f} plies; "
                f"{self.games_per_sec:.1f} games/s ({self.seconds:.2f} s)",
            ]
        )


def wilson_interval(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval for a binomial proportion ``successes / n``.

    Unlike the normal approximation it stays inside [0, 1] and is sensible at 0/n and n/n.
    ``n == 0`` gives the uninformative (0, 1).
    """
    if n < 0 or not 0 <= successes <= max(n, 0):
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    # at 0/n and n/n one bound is exactly 0 or 1; say so instead of leaving rounding error
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return (low, high)


# ---------------------------------------------------------------------------------------
# Playing
# ---------------------------------------------------------------------------------------


def random_quiet_action(state: State, rng: np.random.Generator) -> int | None:
    """A uniformly random legal action of ``state`` that does not end the game (one draw
    from ``rng``), or None when every legal action ends it."""
    keeps_going = [a for a in state.legal_actions() if not state.apply_unchecked(a).is_terminal]
    if not keeps_going:
        return None
    return keeps_going[int(rng.integers(len(keeps_going)))]


def random_opening(plies: int, rng: np.random.Generator) -> list[int]:
    """``plies`` uniform random legal moves from the empty board, none of which ends the game."""
    check_opening_plies(plies)
    state = State()
    actions: list[int] = []
    for _ in range(plies):
        a = random_quiet_action(state, rng)
        if a is None:
            raise ValueError(
                f"no move keeps the game going after {len(actions)} opening plies; "
                f"use fewer opening plies"
            )
        actions.append(a)
        state = state.apply_unchecked(a)
    return actions


def check_opening_plies(plies: int) -> None:
    """Raise ValueError unless ``plies`` is an int in 0..MAX_OPENING_PLIES."""
    if isinstance(plies, bool) or not isinstance(plies, int):
        raise ValueError(f"opening plies must be an integer, got {plies!r}")
    if not 0 <= plies <= MAX_OPENING_PLIES:
        raise ValueError(f"opening plies must be in 0..{MAX_OPENING_PLIES}, got {plies}")


def play_game(order_agent: Agent, chaos_agent: Agent, opening: Sequence[int] = ()) -> GameRecord:
    """Play one game to the end: the ``opening`` actions first, then the agents in turn.

    Raises IllegalActionError naming the agent if an opening action or an agent's move
    is illegal.
    """
    state = State()
    actions: list[int] = []
    for a in opening:
        try:
            state = state.apply(a)
        except IllegalActionError as exc:
            raise IllegalActionError(f"opening ply {len(actions) + 1}: {exc}") from None
        actions.append(int(a))
    if state.is_terminal:
        raise ValueError("the opening ends the game; an opening must leave moves to play")
    players = {ORDER: order_agent, CHAOS: chaos_agent}
    while not state.is_terminal:
        mover = state.to_play
        agent = players[mover]
        a = agent.act(state)
        try:
            state = state.apply(a)
        except IllegalActionError as exc:
            raise IllegalActionError(
                f"{mover} agent {getattr(agent, 'name', agent)!r} played an illegal move at "
                f"ply {len(actions) + 1}: {exc}"
            ) from None
        actions.append(int(a))
    winner = state.winner
    assert winner is not None
    return GameRecord(actions, winner, len(actions), len(opening))


class WorkerCrashError(RuntimeError):
    """A worker process died mid-match; the message says how to find out why."""


@dataclass(frozen=True)
class GameTask:
    """Everything a worker needs to play one game: picklable specs and seeds only."""

    order: str
    chaos: str
    seed: int
    spawn_key: tuple[int, ...]
    openings: int


def game_seeds(seed: int, spawn_key: tuple[int, ...]) -> tuple[np.random.Generator, int, int]:
    """The opening generator and the two agent seeds of one game, from the match seed."""
    opening_ss, order_ss, chaos_ss = np.random.SeedSequence(seed, spawn_key=spawn_key).spawn(3)
    order_seed = int(order_ss.generate_state(1, np.uint32)[0])
    chaos_seed = int(chaos_ss.generate_state(1, np.uint32)[0])
    return np.random.default_rng(opening_ss), order_seed, chaos_seed


def _play_task(task: GameTask) -> GameRecord:
    """Build both agents from their specs with the game's seeds and play the game."""
    from orderchaos.agents.registry import make

    rng, order_seed, chaos_seed = game_seeds(task.seed, task.spawn_key)
    opening = random_opening(task.openings, rng)
    return play_game(make(task.order, seed=order_seed), make(task.chaos, seed=chaos_seed), opening)


CHUNK_SECONDS = 0.5
"""About how long one worker call plays: chunks grow from one game up to this (at most
:data:`MAX_CHUNK` games), so that fast games save round trips while slow ones reach the
caller, and a stopped match, game by game."""
MAX_CHUNK = 64


def _play_tasks(tasks: list[GameTask]) -> tuple[list[GameRecord], float]:
    """Play a chunk of tasks in one worker call (fewer round trips than one task per call);
    returns the records and the seconds they took."""
    start = time.perf_counter()
    records = [_play_task(task) for task in tasks]
    return records, time.perf_counter() - start


def _ignore_interrupts() -> None:
    """A worker's start: Ctrl-C (SIGINT to the whole process group) is the parent's to
    handle, which keeps the finished games and ends the workers itself."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _stop_now(pool: ProcessPoolExecutor) -> None:
    """End ``pool`` without waiting for the chunks in flight (a stopped match keeps only the
    games finished): cancel the chunks not started and end the worker processes."""
    processes = list((getattr(pool, "_processes", None) or {}).values())  # no public way before Python 3.14
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()


def _pool_context() -> multiprocessing.context.BaseContext:
    # fork would copy whatever torch/numba threads the parent holds; forkserver/spawn are safe.
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def run_tasks(
    tasks: Iterable[GameTask], workers: int = 1, progress: bool = False, total: int | None = None
) -> Iterator[GameRecord]:
    """Play spec-only game tasks, yielding records in task order (identical for any workers).

    ``tasks`` may be a lazy iterable (``total`` then sizes the progress bar and the chunks):
    tasks are drawn as workers free up, at most a few chunks per worker ahead, so memory
    stays bounded however many games are asked for."""
    check_workers(workers)
    if total is None:
        tasks = list(tasks)
        total = len(tasks)
    bar = _progress_bar(total, progress)
    try:
        if workers == 1 or total <= 1:
            for task in tasks:
                yield _play_task(task)
                bar.update(1)
            return
        most = max(1, min(MAX_CHUNK, total // (workers * 8)))
        chunk = 1  # until a chunk says how long a game takes
        source = iter(tasks)
        with ProcessPoolExecutor(max_workers=workers, mp_context=_pool_context(),
                                 initializer=_ignore_interrupts) as pool:
            pending: deque = deque()
            try:
                while True:
                    while len(pending) < 4 * workers:
                        batch = list(itertools.islice(source, chunk))
                        if not batch:
                            break
                        pending.append(pool.submit(_play_tasks, batch))
                    if not pending:
                        break
                    try:
                        chunk_records, seconds = pending.popleft().result()
                    except KeyboardInterrupt:  # the chunks that had finished, in order, are games played
                        for future in itertools.takewhile(_finished_well, list(pending)):
                            for record in future.result()[0]:
                                yield record
                                bar.update(1)
                        raise
                    chunk = max(1, min(most, int(CHUNK_SECONDS * len(chunk_records) / max(seconds, 1e-9))))
                    for record in chunk_records:
                        yield record
                        bar.update(1)
            finally:
                if pending:  # stopped (Ctrl-C, SIGTERM, the caller): the chunks in flight are not waited for
                    _stop_now(pool)
    except BrokenProcessPool:
        raise WorkerCrashError(
            "a worker process died while playing (a crash inside an agent, e.g. in compiled "
            "code, or out of memory); rerun with workers=1 to see where"
        ) from None
    finally:
        bar.close()


def _finished_well(future: Future) -> bool:
    return future.done() and not future.cancelled() and future.exception() is None


def check_games(n: object, what: str = "the number of games") -> None:
    """Raise ValueError unless ``n`` is an integer from 1 to :data:`MAX_GAMES`."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_GAMES:
        raise ValueError(f"{what} must be an integer from 1 to {MAX_GAMES:,}, got {n!r}")


def check_workers(workers: int) -> None:
    """Raise ValueError unless ``workers`` is a positive integer."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")


def _progress_bar(total: int, enabled: bool):  # -> tqdm
    from tqdm import tqdm

    return tqdm(total=total, disable=not enabled, file=sys.stderr, unit="game", leave=False)


def agent_label(agent: Agent | str) -> str:
    """The name shown for a player: its spec string, or the agent object's ``name``."""
    return agent if isinstance(agent, str) else str(getattr(agent, "name", type(agent).__name__))


def _check_agent(agent: object, role: str) -> None:
    if isinstance(agent, str):
        from orderchaos.agents.registry import check_role

        check_role(agent, role)  # raises SpecError naming what is accepted
    elif not callable(getattr(agent, "act", None)):
        raise TypeError(
            f"the {role} player must be an agent spec string or an object with act(state), "
            f"got {type(agent).__name__}"
        )


def play_match(
    order_agent: Agent | str,
    chaos_agent: Agent | str,
    n: int,
    seed: int = 0,
    *,
    openings: int = 0,
    workers: int = 1,
    progress: bool = False,
    keep_games: bool = False,
) -> MatchResult:
    """Play ``n`` games, ``order_agent`` as Order against ``chaos_agent`` as Chaos.

    Players are spec strings (rebuilt per game with a seed derived from ``seed`` and the
    game index) or agent objects (used as they are; only with ``workers=1``). ``openings``
    plays that many seeded uniform random plies first in each game, so deterministic
    players do not replay one game ``n`` times. ``workers > 1`` plays in parallel
    processes with the same results as one worker. ``keep_games`` keeps every game record.
    A KeyboardInterrupt after some games ends the match with those games and ``stopped``
    set; before the first one it propagates.
    """
    check_games(n)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    check_opening_plies(openings)
    check_workers(workers)
    _check_agent(order_agent, ORDER)
    _check_agent(chaos_agent, CHAOS)
    start = time.perf_counter()
    if isinstance(order_agent, str) and isinstance(chaos_agent, str):
        tasks = (GameTask(order_agent, chaos_agent, seed, (i,), openings) for i in range(n))
        records = run_tasks(tasks, workers, progress, total=n)
    else:
        if workers != 1:
            raise ValueError(
                "workers > 1 needs both players as spec strings (processes rebuild them); "
                "agent objects can only be played with workers=1"
            )
        records = _play_with_objects(order_agent, chaos_agent, n, seed, openings, progress)
    games = order_wins = length_sum = 0
    kept: list[GameRecord] = []
    stopped: KeyboardInterrupt | None = None
    try:
        for record in records:  # streamed: only the counts are kept unless keep_games
            games += 1
            order_wins += record.winner == ORDER
            length_sum += record.length
            if keep_games:
                kept.append(record)
    except KeyboardInterrupt as exc:  # Ctrl-C: the finished games are the result
        if games == 0:
            raise
        stopped = exc
    finally:
        close = getattr(records, "close", None)
        if close is not None:  # ends the worker processes now, not when the generator is collected
            close()
    seconds = time.perf_counter() - start
    result = _result(games, order_wins, length_sum, seconds, kept,
                     agent_label(order_agent), agent_label(chaos_agent))
    result.stopped = stopped
    return result


def _play_with_objects(
    order_agent: Agent | str,
    chaos_agent: Agent | str,
    n: int,
    seed: int,
    openings: int,
    progress: bool,
) -> Iterator[GameRecord]:
    from orderchaos.agents.registry import make

    bar = _progress_bar(n, progress)
    try:
        for i in range(n):
            rng, order_seed, chaos_seed = game_seeds(seed, (i,))
            order = make(order_agent, seed=order_seed) if isinstance(order_agent, str) else order_agent
            chaos = make(chaos_agent, seed=chaos_seed) if isinstance(chaos_agent, str) else chaos_agent
            yield play_game(order, chaos, random_opening(openings, rng))
            bar.update(1)
    finally:
        bar.close()


def _result(
    games: int, order_wins: int, length_sum: int, seconds: float, records: list[GameRecord],
    order: str, chaos: str,
) -> MatchResult:
    return MatchResult(
        games=games,
        order_wins=order_wins,
        chaos_wins=games - order_wins,
        order_win_rate=order_wins / games if games else 0.0,
        ci95=wilson_interval(order_wins, games),
        mean_length=length_sum / games if games else 0.0,
        seconds=seconds,
        games_per_sec=games / seconds if seconds > 0 else float("inf"),
        records=records,
        order=order,
        chaos=chaos,
    )

