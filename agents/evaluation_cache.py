"""A transposition cache for leaf evaluations: each position goes to the network once.

Searches ask for the same positions again and again: the next move's search starts below
the one just played, whose subtree the last search has already evaluated, and in this game
moves commute (X on a then O on b, or O on b then X on a, reach one board), so a tree is
full of transpositions. Self-play games also share their openings. :class:`CachedEvaluator`
wraps any evaluator (:class:`orderchaos.agents.base.Evaluator`) and remembers its answer for
each board, so that only positions it has not seen reach the network.

The answers are the wrapped evaluator's own, so a search plays the same moves with or
without the cache (up to float rounding: a network may round a position's outputs a little
differently in a batch of another size).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import numpy as np

from orderchaos.agents.base import Evaluator
from orderchaos.envs.rules import ACTIONS, State

DEFAULT_CAPACITY = 50_000
"""Positions remembered before the cache starts afresh (about 700 bytes each; a game of a
200-simulation player needs a few thousand)."""


class CachedEvaluator:
    """``inner`` with a cache of its answers by board (see the module docstring).

    ``capacity`` bounds the positions kept: when a batch would pass it, the cache is emptied
    first (a search's working set is far smaller, and a cache emptied at a known point keeps
    runs deterministic). ``version`` is called on every batch when given (e.g.
    :meth:`orderchaos.agents.network_agent.NetworkEvaluator.weights_version`); whenever its
    answer changes, as it does when the weights are trained, the cache is emptied, so it
    never answers for networks that no longer exist.

    Counters: ``requested`` positions asked for, ``hits`` of them answered without the
    wrapped evaluator (from the cache, or as a repeat within a batch);
    ``positions_evaluated`` is the wrapped evaluator's own count, the network's real work.
    """

    def __init__(
        self,
        inner: Evaluator,
        capacity: int = DEFAULT_CAPACITY,
        version: Callable[[], Hashable] | None = None,
    ) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise ValueError(f"capacity must be a positive integer, got {capacity!r}")
        self.inner = inner
        self.capacity = capacity
        self._version = version
        self._seen_version: Hashable = version() if version is not None else None
        # each board's row in the answer arrays, which grow by doubling up to ``capacity``
        self._table: dict[tuple[int, int], int] = {}
        self._priors = np.empty((0, ACTIONS), np.float32)
        self._values = np.empty(0, np.float32)
        self.requested = 0
        self.hits = 0

    @property
    def positions_evaluated(self) -> int:
        """Positions the wrapped evaluator has evaluated (0 if it does not count them)."""
        return int(getattr(self.inner, "positions_evaluated", 0))

    def __len__(self) -> int:
        return len(self._table)

    def evaluate(self, states: Sequence[State]) -> tuple[np.ndarray, np.ndarray]:
        """Priors ``(B, 72)`` and values ``(B,)`` as the wrapped evaluator gives them; only
        the boards not in the cache (each once, however often the batch repeats it) are
        passed on, in one batch."""
        if self._version is not None:
            current = self._version()
            if current != self._seen_version:
                self._table.clear()
                self._seen_version = current
        n = len(states)
        keys = [(state.x, state.o) for state in states]
        find = self._table.get
        rows = np.fromiter((find(key, -1) for key in keys), dtype=np.int64, count=n)
        known = rows >= 0
        priors = np.empty((n, ACTIONS), np.float32)
        values = np.empty(n, np.float32)
        priors[known] = self._priors[rows[known]]
        values[known] = self._values[rows[known]]
        unknown = np.flatnonzero(~known)
        # the boards to evaluate, each once, in the order the batch first names them
        missing: dict[tuple[int, int], int] = {}
        for i in unknown.tolist():
            missing.setdefault(keys[i], i)
        self.requested += n
        self.hits += n - len(missing)
        if missing:
            if len(self._table) + len(missing) > self.capacity:
                self._table.clear()
            new_priors, new_values = self.inner.evaluate([states[i] for i in missing.values()])
            new_priors = np.asarray(new_priors, np.float32)
            new_values = np.asarray(new_values, np.float32).reshape(-1)
            start = len(self._table)
            self._reserve(start + len(missing))
            self._priors[start : start + len(missing)] = new_priors
            self._values[start : start + len(missing)] = new_values
            self._table.update(zip(missing, range(start, start + len(missing))))
            where = np.fromiter((self._table[keys[i]] for i in unknown), dtype=np.int64, count=unknown.size)
            priors[unknown] = self._priors[where]
            values[unknown] = self._values[where]
        return priors, values

    def _reserve(self, rows: int) -> None:
        """Grow the answer arrays to hold at least ``rows`` boards (by doubling, up to
        ``capacity`` unless one batch alone brings more)."""
        if rows <= len(self._values):
            return
        size = max(rows, min(self.capacity, max(2 * len(self._values), 64)))
        priors = np.empty((size, ACTIONS), np.float32)
        values = np.empty(size, np.float32)
        priors[: len(self._values)] = self._priors
        values[: len(self._values)] = self._values
        self._priors, self._values = priors, values
