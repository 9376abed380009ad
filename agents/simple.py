"""Baseline players: uniform random, and a fast rule-based heuristic for both roles.

The heuristic scores every action by how it changes the *danger* of the board, the sum over
live windows (windows that do not hold both symbols) of a weight that grows with the number
of identical stones in the window. Order maximises the danger, Chaos minimises it. Tactics
come first: Order takes a five, then a move that leaves two completion cells (Chaos can block
only one); Chaos never completes a five and never leaves Order a five to complete when it has
a choice, blocking a four with the opposite symbol on its completion cell.
"""

from __future__ import annotations

import numpy as np

from agents.base import SeedLike, make_rng
from envs.rules import (
    ACTIONS,
    CELL_WINDOWS,
    CELLS,
    WINDOWS,
    X,
    State,
    legal_action_list,
    threat_pairs,
)

# Danger weight of a live window holding k identical stones (k = 0..5).
WINDOW_WEIGHTS: tuple[float, ...] = (1.0, 4.0, 16.0, 64.0, 256.0, 1e6)


def _require_playable(state: State, who: str) -> None:
    if not isinstance(state, State):
        raise TypeError(f"{who} needs an envs.rules.State, got {type(state).__name__}")
    if state.is_terminal:
        raise ValueError(f"{who}: the game is over ({state.winner} won); no move to choose")


def _uniform_over(actions: list[int]) -> np.ndarray:
    probs = np.zeros(ACTIONS, dtype=np.float32)
    probs[actions] = 1.0 / len(actions)
    return probs


class RandomAgent:
    """Plays a uniformly random legal action (both the cell and the symbol)."""

    name = "random"

    def __init__(self, seed: SeedLike = None) -> None:
        self._rng = make_rng(seed)

    def policy(self, state: State) -> np.ndarray:
        """Uniform probabilities over the legal actions of ``state``."""
        _require_playable(state, "RandomAgent")
        return _uniform_over(state.legal_actions())

    def act(self, state: State) -> int:
        """A uniformly random legal action."""
        _require_playable(state, "RandomAgent")
        actions = state.legal_actions()
        return actions[int(self._rng.integers(len(actions)))]


def window_counts(x: int, o: int) -> tuple[list[int], list[int]]:
    """Per window (in ``WINDOWS`` order) the number of X stones and of O stones."""
    return [(x & m).bit_count() for m in WINDOWS], [(o & m).bit_count() for m in WINDOWS]


def danger_deltas(x: int, o: int) -> dict[int, float]:
    """For every legal action, the change in board danger that it causes.

    A window holding only ``s`` stones (or none) gains one stone when ``s`` is placed in
    it; a window holding only the other symbol dies; a window holding both is already dead.
    """
    xc, oc = window_counts(x, o)
    w = WINDOW_WEIGHTS
    deltas: dict[int, float] = {}
    for a in legal_action_list(x, o):
        cell, sym = a >> 1, a & 1
        mine, theirs = (xc, oc) if sym == X else (oc, xc)
        d = 0.0
        for i in CELL_WINDOWS[cell]:
            k, other = mine[i], theirs[i]
            if other == 0:
                d += w[k + 1] - w[k]
            elif k == 0:
                d -= w[other]
        deltas[a] = d
    return deltas


def new_threat_cells(x: int, o: int, action: int) -> set[tuple[int, int]]:
    """The (cell, symbol) completions that ``action`` creates in the windows through its cell."""
    cell, sym = action >> 1, action & 1
    bit = 1 << cell
    mine, theirs = (x | bit, o) if sym == X else (o | bit, x)
    found: set[tuple[int, int]] = set()
    for i in CELL_WINDOWS[cell]:
        m = WINDOWS[i]
        if theirs & m == 0 and (mine & m).bit_count() == 4:
            found.add(((m & ~mine).bit_length() - 1, sym))
    return found


def completes_a_five(x: int, o: int, action: int) -> bool:
    """True when ``action`` completes five identical symbols in a window."""
    cell, sym = action >> 1, action & 1
    bits = (x if sym == X else o) | 1 << cell
    return any(bits & WINDOWS[i] == WINDOWS[i] for i in CELL_WINDOWS[cell])


def is_unstoppable(threats: set[tuple[int, int]]) -> bool:
    """True when Chaos cannot block every completion: two cells, or one cell completable
    with either symbol."""
    cells = {c for c, _ in threats}
    return len(cells) >= 2 or len(threats) > len(cells)


class HeuristicAgent:
    """A fast rule-based player for whichever side is to move (see the module docstring).

    ``policy(state)`` is uniform over the moves the rules rank best; ``act`` samples it with
    the agent's seeded generator, so ties are broken reproducibly.
    """

    name = "heuristic"

    def __init__(self, seed: SeedLike = None) -> None:
        self._rng = make_rng(seed)

    def best_actions(self, state: State) -> list[int]:
        """The equally good actions the rules pick for the side to move."""
        _require_playable(state, "HeuristicAgent")
        x, o = state.x, state.o
        if state.to_play_index == 0:
            return self._order_moves(x, o)
        return self._chaos_moves(x, o)

    def policy(self, state: State) -> np.ndarray:
        """Uniform probabilities over :meth:`best_actions`."""
        return _uniform_over(self.best_actions(state))

    def act(self, state: State) -> int:
        """One of :meth:`best_actions`, chosen with the seeded generator."""
        best = self.best_actions(state)
        return best[int(self._rng.integers(len(best)))]

    @staticmethod
    def _order_moves(x: int, o: int) -> list[int]:
        wins = threat_pairs(x, o)
        if wins:
            return sorted(2 * c + s for c, s in wins)
        deltas = danger_deltas(x, o)
        forcing = [a for a in deltas if is_unstoppable(new_threat_cells(x, o, a))]
        if forcing:
            return forcing
        return _argmax(deltas, list(deltas))

    @staticmethod
    def _chaos_moves(x: int, o: int) -> list[int]:
        threats = set(threat_pairs(x, o))
        deltas = danger_deltas(x, o)
        last_move = (x | o).bit_count() == CELLS - 1
        non_suicide = [a for a in deltas if not completes_a_five(x, o, a)]
        if not non_suicide:  # every move completes a five: Chaos has lost anyway
            return list(deltas)
        if last_move:
            return non_suicide
        safe = []
        for a in non_suicide:
            cell = a >> 1
            left = {t for t in threats if t[0] != cell} | new_threat_cells(x, o, a)
            if not left:
                safe.append(a)
        if safe:
            return _argmax({a: -deltas[a] for a in safe}, safe)
        # Lost against best play: leave Order as few completions as possible.
        def remaining(a: int) -> float:
            cell = a >> 1
            return -len({t for t in threats if t[0] != cell} | new_threat_cells(x, o, a))

        return _argmax({a: remaining(a) for a in non_suicide}, non_suicide)


def _argmax(scores: dict[int, float], candidates: list[int]) -> list[int]:
    best = max(scores[a] for a in candidates)
    return [a for a in candidates if scores[a] >= best - 1e-9]


__all__ = [
    "RandomAgent",
    "HeuristicAgent",
    "WINDOW_WEIGHTS",
    "danger_deltas",
    "new_threat_cells",
    "completes_a_five",
    "is_unstoppable",
    "window_counts",
]
