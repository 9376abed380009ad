"""Exact solver for Order and Chaos, and a player built on it.

:func:`solve` proves the game-theoretic winner of a position with perfect play from both
sides. The value is binary ("can Order force a five?"), so the search is a boolean AND/OR
depth-first search; its hot loop is the numba kernel in :mod:`orderchaos.agents.solver_kernel`.
What makes it fast, each idea measured in ``agents/solver_benchmark.py``:

* bitboards with incremental per-window stone counts;
* a transposition table keyed on the least of the 16 symmetry images (8 board symmetries
  times swapping X and O), kept across calls within one :class:`Solver`;
* a static test for Chaos wins by a pairing strategy: disjoint pairs of empty cells such
  that every live window holds one pair (Chaos answers in the partner cell with the other
  symbol), found by a small budgeted backtracking search -- the biggest single gain;
* forcing rules: Order with a four on the board wins; Chaos facing two threat cells (or
  one cell threatened with both symbols) loses; a lone threat forces Chaos's reply; a
  Chaos move that makes a four loses and is never searched; an Order move that makes
  fours on two distinct cells wins; no live window left means Chaos wins;
* dominance pruning, safe by a mimicry argument: (1) empty cells that lie in no live
  window are interchangeable tempo moves, so one of them with one symbol stands for all;
  (2) if every live window through a cell already holds X (and no O), then for Chaos O
  there is at least as good as X -- any Chaos strategy that wins after X wins after O by
  playing the same moves, since windows avoiding the cell are identical in both games and
  windows through it are dead after O -- and by the same argument X is at least as good
  as O for Order; the mirror holds for O-only cells. Cells with an empty live window
  through them keep both symbols.
* move ordering by the change in total "window danger" (fours first for Order, the most
  dangerous windows broken first for Chaos) plus a history heuristic.

A board that already holds a five is an Order win (0 nodes); a full board without one is
a Chaos win. Node and time limits are checked inside the search and give ``winner=None``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from orderchaos.agents import cancel
from orderchaos.agents.base import SeedLike, make_rng
from orderchaos.agents import strategy
from orderchaos.agents.proof_book import ProofBook, shipped_book
from orderchaos.agents import solver_kernel as K
from orderchaos.agents.fallback import check_state as _check_state
from orderchaos.agents.fallback import fallback_action, generated_moves  # noqa: F401 (re-exported)
from orderchaos.agents.simple import completes_a_five
from orderchaos.envs.rules import (
    ACTIONS,
    CELLS,
    CHAOS,
    ORDER,
    IllegalActionError,
    State,
)

DEFAULT_TT_BITS = 21
"""Default transposition table: 2**21 entries, about 44 MB."""
AGENT_NODE_BUDGET = 20_000_000
"""Node budget for the agent's extra work in lost positions when it has no time limit."""


@dataclass(frozen=True)
class SolveResult:
    """The outcome of :func:`solve`.

    ``winner`` is ``"order"`` or ``"chaos"`` (perfect play), or None when a time or node
    limit was hit first. ``nodes`` counts search nodes, ``seconds`` is wall time.
    ``best_actions`` (only with ``moves=True``): every legal action that keeps the mover's
    result, ascending -- all legal actions if the mover is lost, ``[]`` on a finished
    board; None without ``moves`` or when a limit stopped the search before every child
    was solved (``winner`` may still be known then).
    """

    winner: str | None
    nodes: int
    seconds: float
    best_actions: list[int] | None = None


class _Budget:
    """A node and time allowance shared by several kernel calls."""

    def __init__(self, time_limit: float | None, node_limit: int | None) -> None:
        self.deadline = 0.0 if time_limit is None else time.perf_counter() + time_limit
        self.node_limit = node_limit
        self.nodes = 0

    def exhausted(self) -> bool:
        """True when no nodes or time are left."""
        if self.node_limit is not None and self.nodes >= self.node_limit:
            return True
        return self.deadline > 0.0 and time.perf_counter() >= self.deadline

    def remaining_nodes(self) -> int:
        """Nodes left for the next kernel call (0 means no limit, as the kernel reads it)."""
        return 0 if self.node_limit is None else self.node_limit - self.nodes

    def remaining_time(self) -> float | None:
        """Seconds left, or None without a time limit."""
        return None if self.deadline == 0.0 else max(0.0, self.deadline - time.perf_counter())


def _check_limits(time_limit: float | None, node_limit: int | None) -> None:
    if time_limit is not None and (
        isinstance(time_limit, bool)
        or not isinstance(time_limit, (int, float))
        or not math.isfinite(time_limit)
        or time_limit <= 0
    ):
        raise ValueError(f"time_limit must be a positive number of seconds or None, got {time_limit!r}")
    if node_limit is not None and (
        isinstance(node_limit, bool) or not isinstance(node_limit, int) or node_limit <= 0
    ):
        raise ValueError(f"node_limit must be a positive int or None, got {node_limit!r}")


class Solver:
    """An exact solver with its own transposition table, kept across calls.

    ``tt_bits`` sizes the table (2**tt_bits entries of 21 bytes). ``tt_min_empty`` and
    ``canon_min_empty`` are the fewest empty cells at which positions are stored in the
    table and at which their key is made symmetry-canonical (below, probing costs more
    than it saves). ``history`` turns the history move-ordering heuristic on, ``pairing``
    the static pairing-strategy test for Chaos wins (False: off, True or 1: greedy only,
    n > 1: backtracking over at most n pair choices), ``vcf_depth`` the longest run of
    consecutive fours tried before the full search at Order nodes (0: off), ``pruning`` the
    dead-cell and dominated-symbol pruning; these switches exist to measure each idea.
    """

    def __init__(
        self,
        tt_bits: int = DEFAULT_TT_BITS,
        *,
        tt_min_empty: int = 5,
        canon_min_empty: int = 5,
        history: bool = False,
        pairing: bool | int = 200,
        vcf_depth: int = 0,
        pruning: bool = True,
    ) -> None:
        if not isinstance(tt_bits, int) or not 4 <= tt_bits <= 30:
            raise ValueError(f"tt_bits must be an int in 4..30, got {tt_bits!r}")
        size = 1 << tt_bits
        self.tt_x = np.zeros(size, dtype=np.int64)
        self.tt_o = np.zeros(size, dtype=np.int64)
        self.tt_v = np.zeros(size, dtype=np.int8)
        self.tt_w = np.zeros(size, dtype=np.int32)
        self.hist = np.zeros((2, ACTIONS), dtype=np.int64)
        self._moves = np.zeros((CELLS + 1, ACTIONS), dtype=np.int64)
        self._scores = np.zeros((CELLS + 1, ACTIONS), dtype=np.int64)
        self._xc = np.zeros(K.NUM_WINDOWS, dtype=np.int64)
        self._oc = np.zeros(K.NUM_WINDOWS, dtype=np.int64)
        self.ctl = np.zeros(K.CTL_SIZE, dtype=np.int64)
        self.ctl[K.TT_MIN] = tt_min_empty
        self.ctl[K.CANON_MIN] = canon_min_empty
        self.ctl[K.USE_HISTORY] = int(history)
        self.ctl[K.USE_PAIRING] = int(pairing)
        self.ctl[K.VCF_DEPTH] = vcf_depth
        self.ctl[K.USE_PRUNING] = int(pruning)

    def clear(self) -> None:
        """Forget the transposition table and the history scores."""
        self.tt_v[:] = 0
        self.tt_w[:] = 0
        self.hist[:] = 0

    def table_state(self) -> dict[str, Any]:
        """What this solver has learnt, for a trainer-state file: which table slots are
        occupied (a bit each), their keys, results and work, and the history scores. A
        node-limited proof depends on them, so a run that resumes with them solves on as if
        it had not stopped."""
        occupied = self.tt_v != 0
        slots = np.flatnonzero(occupied)
        return {
            "tt_bits": self.tt_capacity.bit_length() - 1,
            "occupied": np.packbits(occupied),
            "x": self.tt_x[slots],
            "o": self.tt_o[slots],
            "v": self.tt_v[slots],
            "w": self.tt_w[slots],
            "history": self.hist.copy(),
        }

    def load_table_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`table_state`; ValueError when it was saved from a table of another
        size. Slots it does not list are left empty, which is all a search reads of them."""
        if state["tt_bits"] != self.tt_capacity.bit_length() - 1:
            raise ValueError(
                f"solver table of 2**{state['tt_bits']} entries cannot be loaded into one of "
                f"{self.tt_capacity} entries"
            )
        self.clear()
        slots = np.flatnonzero(np.unpackbits(state["occupied"], count=self.tt_capacity))
        self.tt_x[slots] = state["x"]
        self.tt_o[slots] = state["o"]
        self.tt_v[slots] = state["v"]
        self.tt_w[slots] = state["w"]
        self.hist[:] = state["history"]

    @property
    def tt_entries(self) -> int:
        """How many table slots hold a proven position."""
        return int(np.count_nonzero(self.tt_v))

    @property
    def tt_capacity(self) -> int:
        """How many slots the table has."""
        return int(self.tt_v.shape[0])

    # -- the kernel call -------------------------------------------------------------------
    def _search(self, state: State, depth: int, budget: _Budget) -> int:
        """Run the kernel on a position without a five: 1 Order, 0 Chaos, -1 limit hit.
        Raises Cancelled (before the kernel call) when this thread's work was cancelled."""
        cancel.check()
        if budget.exhausted():
            return K.ABORT
        self.ctl[K.NODES] = 0
        self.ctl[K.NODE_LIMIT] = budget.remaining_nodes()
        self.ctl[K.ABORTED] = 0
        K.window_counts(state.x, state.o, self._xc, self._oc)
        r = K.search(
            state.x, state.o, state.num_empty, depth, self._xc, self._oc,
            self.tt_x, self.tt_o, self.tt_v, self.tt_w, self.hist,
            self._moves, self._scores, self.ctl, budget.deadline,
        )  # fmt: skip
        budget.nodes += int(self.ctl[K.NODES])
        return int(r)

    def _winner(self, state: State, budget: _Budget) -> str | None:
        done = state.winner
        if done is not None:
            return done
        r = self._search(state, K.EXACT, budget)
        return None if r == K.ABORT else (ORDER if r == K.ORDER_WINS else CHAOS)

    def _child_winner(self, state: State, action: int, budget: _Budget) -> str | None:
        if completes_a_five(state.x, state.o, action):
            return ORDER
        return self._winner(state.apply_unchecked(action), budget)

    # -- public ----------------------------------------------------------------------------
    def solve(
        self,
        state: State,
        *,
        time_limit: float | None = None,
        node_limit: int | None = None,
        moves: bool = False,
    ) -> SolveResult:
        """Prove who wins ``state`` with perfect play; see :class:`SolveResult`."""
        _check_state(state)
        _check_limits(time_limit, node_limit)
        start = time.perf_counter()
        budget = _Budget(time_limit, node_limit)
        winner = self._winner(state, budget)
        best: list[int] | None = None
        if moves and winner is not None:
            best = self._keeping_actions(state, winner, budget)
        return SolveResult(winner, budget.nodes, time.perf_counter() - start, best)

    def _keeping_actions(self, state: State, winner: str, budget: _Budget) -> list[int] | None:
        legal = state.legal_actions()
        if winner != state.to_play:
            return legal
        kept: list[int] = []
        for a in legal:
            w = self._child_winner(state, a, budget)
            if w is None:
                return None
            if w == winner:
                kept.append(a)
        return kept

    def winning_children(
        self, state: State, budget: _Budget
    ) -> tuple[list[int], list[int], bool]:
        """Split the legal actions into (keep the mover's win, lose it) and say whether
        every child was solved before the budget ran out."""
        mover = state.to_play
        good: list[int] = []
        bad: list[int] = []
        for a in state.legal_actions():
            w = self._child_winner(state, a, budget)
            if w is None:
                return good, bad, False
            (good if w == mover else bad).append(a)
        return good, bad, True

    def order_wins_within(
        self,
        state: State,
        plies: int,
        *,
        time_limit: float | None = None,
        node_limit: int | None = None,
    ) -> bool | None:
        """Can Order complete a five within ``plies`` more moves (both sides counted)?

        None when a limit was hit. A depth-limited search: it reads proven Chaos wins from
        the table but stores nothing.
        """
        _check_state(state)
        _check_limits(time_limit, node_limit)
        return self._within(state, plies, _Budget(time_limit, node_limit))

    def _within(self, state: State, plies: int, budget: _Budget) -> bool | None:
        if state.has_five:
            return True
        if state.is_full or plies <= 0:
            return False
        r = self._search(state, min(plies, K.EXACT - 1), budget)
        return None if r == K.ABORT else r == K.ORDER_WINS


_DEFAULT_SOLVER: Solver | None = None


def default_solver() -> Solver:
    """The module-wide Solver behind :func:`solve` (created on first use)."""
    global _DEFAULT_SOLVER
    if _DEFAULT_SOLVER is None:
        _DEFAULT_SOLVER = Solver()
    return _DEFAULT_SOLVER


def solve(
    state: State,
    *,
    time_limit: float | None = None,
    node_limit: int | None = None,
    moves: bool = False,
) -> SolveResult:
    """Prove the game-theoretic winner of ``state`` with perfect play from both sides.

    ``time_limit`` (seconds) and ``node_limit`` cap the search; hitting one gives
    ``winner=None``. With ``moves=True`` the result also lists ``best_actions``: every
    legal action that keeps the mover's result (all legal actions when the mover is lost).
    Calls share one module-wide :class:`Solver`, so its transposition table carries over
    (node counts of a repeated call are therefore smaller).
    """
    return default_solver().solve(state, time_limit=time_limit, node_limit=node_limit, moves=moves)


def first_proven_win(state: State, candidates: list[int], node_limit: int, solve) -> int | None:
    """The first of ``candidates`` after which the mover provably still wins, or None."""
    for action in candidates:  # solve() returns a finished board's winner at once
        if solve(state.apply(action), node_limit=node_limit).winner == state.to_play:
            return int(action)
    return None


class SolverAgent:
    """A player that never gives away a won game.

    From a won position it plays uniformly (seeded) among the moves that keep the win.
    From a lost position it plays to make the win hardest:

    * lost Chaos delays the loss: for d = 1, 3, 5, ... it drops the moves after which
      Order forces a five within d plies, and plays among the moves that survive longest;
    * lost Order (the game can then only end on a full board) plays the move after which
      Chaos has the fewest moves that keep its win, so a Chaos mistake is most likely.

    ``time`` caps the seconds per move; when the proof does not finish in time it falls
    back to :func:`fallback_action`. Without ``time`` the proof is exact and the extra work
    in lost positions is capped at ``AGENT_NODE_BUDGET`` nodes. The transposition table is
    kept across moves.

    A position in the proof ``book`` (default: the book shipped with the package, see
    :mod:`orderchaos.agents.proof_book`) whose mover wins is answered with the book's stored
    winning move at once, without search (``last_reason == "book"``). Before the book, an
    Order position covered by the central-pairing strategy (:mod:`orderchaos.agents.strategy`,
    which covers every position of its own games from the empty board) is answered with the
    strategy's move (``last_reason == "strategy"``), so as Order this player never loses.
    """

    name = "solver"

    def __init__(
        self,
        time: float | None = None,
        seed: SeedLike = None,
        *,
        solver: Solver | None = None,
        book: ProofBook | None = None,
    ) -> None:
        _check_limits(time, None)
        self.book = book if book is not None else shipped_book()
        self.time_limit = time
        self.rng = make_rng(seed)
        self.solver = solver if solver is not None else Solver()
        self.last_reason = ""
        """How the last move was chosen: "strategy", "book", "win", "delay", "hardest", or "fallback"."""

    def candidates(self, state: State) -> list[int]:
        """The moves this agent considers equally good here (it plays one at random)."""
        _check_state(state)
        if state.is_terminal:
            raise IllegalActionError(f"the game is over ({state.winner} won); no move to choose")
        if state.to_play == ORDER and strategy.covers(state):
            self.last_reason = "strategy"
            return [strategy.move(state)]
        entry = self.book.lookup(state)
        if entry is not None and entry.winner == state.to_play and entry.move is not None:
            self.last_reason = "book"
            return [entry.move]
        budget = _Budget(self.time_limit, None)
        winner = self.solver._winner(state, budget)
        if winner is None:
            return self._fallback(state)
        if winner == state.to_play:
            good, _, _ = self.solver.winning_children(state, budget)
            if good:  # a partial list under a time limit still holds proven winning moves
                self.last_reason = "win"
                return good
            return self._fallback(state)
        extra = budget if self.time_limit is not None else _Budget(None, AGENT_NODE_BUDGET)
        choice = (
            self._delay_loss(state, extra) if state.to_play == CHAOS else self._hardest(state, extra)
        )
        return choice if choice else self._fallback(state)

    def _fallback(self, state: State) -> list[int]:
        self.last_reason = "fallback"
        return [fallback_action(state)]

    def _delay_loss(self, state: State, budget: _Budget) -> list[int]:
        """Lost Chaos: the moves after which Order needs the most plies to force a five."""
        survivors = [a for a in state.legal_actions() if not completes_a_five(state.x, state.o, a)]
        if not survivors:
            return []
        children = {a: state.apply_unchecked(a) for a in survivors}
        plies = 1
        while plies <= state.num_empty:
            still: list[int] = []
            for a in survivors:
                r = self.solver._within(children[a], plies, budget)
                if r is None:  # out of budget: those not yet beaten are the longest seen
                    self.last_reason = "delay"
                    return survivors
                if not r:
                    still.append(a)
            if not still:
                break
            survivors = still
            plies += 2
        self.last_reason = "delay"
        return survivors

    def _hardest(self, state: State, budget: _Budget) -> list[int]:
        """Lost Order: the moves after which Chaos has the fewest replies keeping its win."""
        best: list[int] = []
        best_count = ACTIONS + 1
        for a in state.legal_actions():
            good, _, complete = self.solver.winning_children(state.apply_unchecked(a), budget)
            if not complete:
                break
            if len(good) < best_count:
                best, best_count = [a], len(good)
            elif len(good) == best_count:
                best.append(a)
        self.last_reason = "hardest"
        return best

    def act(self, state: State) -> int:
        """Choose a move for the side to move (see the class docstring)."""
        options = self.candidates(state)
        return int(options[int(self.rng.integers(len(options)))])

    def policy(self, state: State) -> np.ndarray:
        """Uniform probabilities over :meth:`candidates` (the moves ``act`` picks from)."""
        out = np.zeros(ACTIONS, dtype=np.float64)
        options = self.candidates(state)
        out[options] = 1.0 / len(options)
        return out
