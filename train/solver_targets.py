"""Exact solver targets for training positions, optionally computed in a worker process.

For positions late in a game the exact solver (``orderchaos.agents.solver.solve``) gives the true
value and, for a position the mover wins, the set of winning moves. :class:`SolverWorker`
runs the solver in one persistent spawned process (this module imports no torch, so the
worker starts fast): if the compiled solver crashes, the run loses that batch of targets
with a warning instead of dying.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

from orderchaos.agents.solver import default_solver, first_proven_win, solve
from orderchaos.envs.rules import ORDER, State


@dataclass
class SolverTargets:
    """Exact results for some positions, keyed by list index: the value from the mover's
    view, and (for proven wins, when asked) proven winning moves: all of them, or one
    proven candidate where listing all exceeded the budget."""

    values: dict[int, float] = field(default_factory=dict)
    winning_moves: dict[int, list[int]] = field(default_factory=dict)


def solver_targets(
    states: list[State],
    node_limit: int,
    moves: bool,
    candidates: list[list[int]] | None = None,
    fastest_plies: int = 0,
) -> SolverTargets:
    """Solve each state within ``node_limit`` nodes (``orderchaos.agents.solver.solve``); unproven ones
    are left out.

    With ``moves``, a won position lists every winning move. Listing them all needs a proof
    for every losing move too, which often exceeds the budget early in the game; then, if
    ``candidates[i]`` gives moves to try (most favoured first), the first of them proven to
    win within a quarter of the budget becomes the position's one winning move.

    With ``fastest_plies``, a listed set of Order's winning moves is narrowed to those
    that force a five soonest, looking up to that many plies ahead within a quarter of the
    budget (``Solver.fastest_wins``); kept whole when no five is that close.
    """
    out = SolverTargets()
    for i, state in enumerate(states):
        result = solve(state, node_limit=node_limit, moves=moves)
        if result.winner is None:
            continue
        wins = result.winner == state.to_play
        out.values[i] = 1.0 if wins else -1.0
        if not (wins and moves):
            continue
        if result.best_actions:
            winning = list(result.best_actions)
            if fastest_plies and state.to_play == ORDER:
                quick = default_solver().fastest_wins(
                    state, winning, fastest_plies, node_limit=max(1, node_limit // 4)
                )
                winning = quick[0] if quick is not None else winning
            out.winning_moves[i] = winning
        elif candidates is not None:
            found = first_proven_win(state, candidates[i], max(1, node_limit // 4), solve)
            if found is not None:
                out.winning_moves[i] = [found]
    return out



def _exit_with_parent(parent_pid: int) -> None:
    """Worker initializer: end this process once its parent is gone (e.g. a trainer killed
    with SIGKILL), instead of idling forever on the pool's queue."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


class SolverWorker:
    """Computes :func:`solver_targets` in persistent worker processes (``workers`` of them;
    a batch is dealt out among them), so that a crash of the compiled solver loses one batch
    of targets (with a warning), never the run."""

    def __init__(self, workers: int = 1) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None
        self.failures = 0

    def targets(self, *args: Any, **kwargs: Any) -> SolverTargets:
        """Like :func:`solver_targets` (same arguments), in the workers, waiting for the
        result; empty targets if a worker died."""
        return self.submit(*args, **kwargs).result()

    def submit(
        self,
        states: list[State],
        node_limit: int,
        moves: bool,
        candidates: list[list[int]] | None = None,
        fastest_plies: int = 0,
    ) -> "PendingTargets":
        """Start :func:`solver_targets` in the workers and return at once; the caller
        collects the targets with :meth:`PendingTargets.result` (and can work meanwhile)."""
        states = list(states)
        if not states:
            return PendingTargets([], 1)
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_exit_with_parent,
                initargs=(os.getpid(),),
            )
        try:
            futures = [
                (k, self._pool.submit(solver_targets, share, node_limit, moves, share_candidates, fastest_plies).result)
                for k, share, share_candidates in deal(states, candidates, self.workers)
            ]
        except BrokenProcessPool:
            self._lost(len(states))
            return PendingTargets([], 1)
        return PendingTargets(futures, self.workers, (BrokenProcessPool,), lambda _: self._lost(len(states)))

    def _lost(self, count: int) -> None:
        """Record a dead worker (a later call starts new ones) and warn."""
        self.failures += 1
        self.close()
        warnings.warn(
            f"the solver worker died (failure {self.failures}); this batch of "
            f"{count} positions keeps its game-outcome targets",
            stacklevel=3,
        )

    def close(self) -> None:
        """Stop the worker processes (a later call starts new ones)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


def deal(
    states: list[State], candidates: list[list[int]] | None, workers: int
) -> list[tuple[int, list[State], list[list[int]] | None]]:
    """Deal a batch of positions (and their candidate moves) out among ``workers``: share
    ``k`` takes positions ``k, k + workers, ...`` (neighbouring positions come from the same
    ply of different games, so striding spreads the hard ones evenly); no empty shares.
    :meth:`PendingTargets.result` puts the shares' targets back in batch order."""
    return [
        (k, states[k::workers], None if candidates is None else candidates[k::workers])
        for k in range(min(workers, len(states)))
    ]


class PendingTargets:
    """Solver targets being computed in the shares of :func:`deal` (by worker processes, or
    by Ray tasks in :mod:`orderchaos.train.ray_backend`): ``shares`` pairs each share's
    index with a call that waits for its targets; a wait that raises one of ``failures``
    loses the batch (``on_failure`` is told, and the targets are empty)."""

    def __init__(
        self,
        shares: list[tuple[int, Callable[[], SolverTargets]]],
        stride: int,
        failures: tuple[type[BaseException], ...] = (),
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> None:
        self._shares, self._stride = shares, stride
        self._failures, self._on_failure = failures, on_failure

    def result(self) -> SolverTargets:
        """Wait for the targets (keyed by position in the submitted list); empty ones if a
        share failed."""
        out = SolverTargets()
        try:
            for k, wait in self._shares:
                share = wait()
                out.values.update({k + self._stride * j: v for j, v in share.values.items()})
                out.winning_moves.update({k + self._stride * j: m for j, m in share.winning_moves.items()})
        except self._failures as exc:
            if self._on_failure is not None:
                self._on_failure(exc)
            return SolverTargets()
        return out
