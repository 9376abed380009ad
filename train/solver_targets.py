"""Exact solver targets for training positions, optionally computed by solver workers.

For positions late in a game the exact solver (``orderchaos.agents.solver.solve``) gives the true
value and, for a position the mover wins, the set of winning moves. :class:`SolverWorker`
runs the solver on a :class:`orderchaos.agents.solver_pool.SolverPool`: persistent spawned
processes (this module imports no torch, so they start fast) or Ray actors. If a worker
crashes, the run loses that batch of targets with a warning instead of dying.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from orderchaos.agents.solver import Solver, default_solver, first_proven_win
from orderchaos.agents.solver_pool import PoolBatch, SolverPool, SolverPoolError
from orderchaos.envs.rules import State


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
    solver: Solver | None = None,
) -> SolverTargets:
    """Solve each state within ``node_limit`` nodes (``orderchaos.agents.solver.solve``); unproven ones
    are left out.

    With ``moves``, a won position lists every winning move. Listing them all needs a proof
    for every losing move too, which often exceeds the budget early in the game; then, if
    ``candidates[i]`` gives moves to try (most favoured first), the first of them proven to
    win within a quarter of the budget becomes the position's one winning move.

    ``solver`` defaults to the module-wide one (:func:`orderchaos.agents.solver.default_solver`).
    """
    solver = solver if solver is not None else default_solver()
    out = SolverTargets()
    for i, state in enumerate(states):
        result = solver.solve(state, node_limit=node_limit, moves=moves)
        if result.winner is None:
            continue
        wins = result.winner == state.to_play
        out.values[i] = 1.0 if wins else -1.0
        if not (wins and moves):
            continue
        if result.best_actions:
            out.winning_moves[i] = list(result.best_actions)
        elif candidates is not None:
            found = first_proven_win(state, candidates[i], max(1, node_limit // 4), solver.solve)
            if found is not None:
                out.winning_moves[i] = [found]
    return out


def targets_job(
    solver: Solver,
    states: list[State],
    node_limit: int,
    moves: bool,
    candidates: list[list[int]] | None,
) -> SolverTargets:
    """:func:`solver_targets` with a pool worker's Solver (a :class:`SolverPool` job)."""
    return solver_targets(states, node_limit, moves, candidates, solver=solver)


def table_job(solver: Solver) -> dict[str, Any]:
    """A pool worker's solver table (:meth:`Solver.table_state`), as a :class:`SolverPool` job."""
    return solver.table_state()


def load_table_job(solver: Solver, state: dict[str, Any]) -> None:
    """Restore a pool worker's solver table from :func:`table_job`'s result."""
    solver.load_table_state(state)


class SolverWorker:
    """Computes :func:`solver_targets` on a :class:`SolverPool` of ``workers`` workers of
    ``kind`` (``processes``, or ``ray`` with ``num_cpus`` per actor): a batch is dealt out
    among them (:func:`deal`), so that a crash of the compiled solver loses one batch of
    targets (with a warning), never the run. Local workers start on first use."""

    def __init__(self, workers: int = 1, *, kind: str = "processes", num_cpus: float | None = None) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.workers = workers
        self.pool = SolverPool(kind, workers, num_cpus=num_cpus)
        self.failures = 0
        self.started = False  # whether a batch was ever submitted (the workers start then)

    def targets(self, *args: Any, **kwargs: Any) -> SolverTargets:
        """Like :func:`solver_targets` (same arguments), in the workers, waiting for the
        result; empty targets if a worker failed."""
        return self.submit(*args, **kwargs).result()

    def submit(
        self,
        states: list[State],
        node_limit: int,
        moves: bool,
        candidates: list[list[int]] | None = None,
    ) -> "PendingTargets":
        """Start :func:`solver_targets` in the workers and return at once; the caller
        collects the targets with :meth:`PendingTargets.result` (and can work meanwhile)."""
        states = list(states)
        self.started = True
        shares = deal(states, candidates, self.workers)
        batch = self.pool.map_async(
            targets_job,
            [(share, node_limit, moves, share_candidates) for _, share, share_candidates in shares],
        )
        return PendingTargets(batch, self.workers, lambda exc: self._lost(len(states), exc))

    def table_state(self) -> dict[str, Any] | None:
        """The table of the one local worker's solver (after the batches submitted before),
        for a checkpoint: a node-limited proof depends on it. None when there is nothing
        to keep: no batch was submitted yet, or the workers are several (which worker
        solves which share depends on timing) or Ray actors."""
        if not self.started or self.workers != 1 or self.pool.kind == "ray":
            return None
        try:
            return self.pool.map(table_job, [()])[0]
        except SolverPoolError as exc:
            warnings.warn(f"{exc}; the checkpoint keeps no solver table of the worker", stacklevel=2)
            return None

    def load_table_state(self, state: dict[str, Any]) -> None:
        """Give the one local worker the table of :meth:`table_state` (starting it)."""
        if self.workers == 1 and self.pool.kind != "ray":
            self.pool.map(load_table_job, [(state,)])
            self.started = True

    def _lost(self, count: int, exc: SolverPoolError) -> None:
        """Count a failed batch and warn (after a dead worker process, the next batch
        starts new ones)."""
        self.failures += 1
        warnings.warn(
            f"{exc} (solver failure {self.failures}); this batch of {count} positions keeps "
            f"its game-outcome targets",
            stacklevel=3,
        )

    def close(self) -> None:
        """Stop the workers (local ones start again on the next batch)."""
        self.pool.close()


def deal(
    states: list[State], candidates: list[list[int]] | None, workers: int
) -> list[tuple[int, list[State], list[list[int]] | None]]:
    """Deal a batch of positions (and their candidate moves) out among ``workers``: share
    ``k`` takes positions ``k, k + workers, ...`` (neighbouring positions come from the same
    ply of different games, so striding spreads the hard ones evenly); no empty shares.
    :func:`merge` puts the shares' targets back in batch order."""
    return [
        (k, states[k::workers], None if candidates is None else candidates[k::workers])
        for k in range(min(workers, len(states)))
    ]


def merge(shares: list[SolverTargets], stride: int) -> SolverTargets:
    """The targets of the shares of :func:`deal` (in share order, dealt with ``stride``
    workers), keyed by position in the batch again."""
    out = SolverTargets()
    for k, share in enumerate(shares):
        out.values.update({k + stride * j: v for j, v in share.values.items()})
        out.winning_moves.update({k + stride * j: m for j, m in share.winning_moves.items()})
    return out


class PendingTargets:
    """Solver targets being computed by the jobs of ``batch`` (one per share of
    :func:`deal`, dealt with ``stride`` workers); if a job fails the batch is lost:
    ``on_failure`` is told, and the targets are empty."""

    def __init__(
        self, batch: PoolBatch, stride: int, on_failure: Callable[[SolverPoolError], None] | None = None
    ) -> None:
        self._batch, self._stride, self._on_failure = batch, stride, on_failure

    def result(self) -> SolverTargets:
        """Wait for the targets (keyed by position in the submitted list); empty ones if a
        share failed."""
        try:
            shares = self._batch.wait()
        except SolverPoolError as exc:
            if self._on_failure is not None:
                self._on_failure(exc)
            return SolverTargets()
        return merge(shares, self._stride)
