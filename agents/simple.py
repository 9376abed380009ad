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

from orderchaos.agents import compiled_rules
from orderchaos.agents.base import SeedLike, make_rng
from orderchaos.envs.rules import (
    ACTIONS,
    CELL_WINDOWS,
    CELLS,
    NUM_WINDOWS,
    WINDOWS,
    O,
    X,
    State,
    completes_five,
    legal_action_list,
    threat_pairs,
)

_DANGER: tuple[float, ...] = tuple(float(w) for w in compiled_rules.DANGER)
""":data:`orderchaos.agents.compiled_rules.DANGER` as Python floats, for the scalar loop below."""


def _require_playable(state: State, who: str) -> None:
    if not isinstance(state, State):
        raise TypeError(f"{who} needs an orderchaos.envs.rules.State, got {type(state).__name__}")
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
    xc = np.empty(NUM_WINDOWS, dtype=np.int64)
    oc = np.empty(NUM_WINDOWS, dtype=np.int64)
    compiled_rules.window_counts(x, o, xc, oc)
    return xc.tolist(), oc.tolist()


def danger_deltas(x: int, o: int) -> dict[int, float]:
    """For every legal action, the change in board danger that it causes.

    A window holding only ``s`` stones (or none) gains one stone when ``s`` is placed in
    it; a window holding only the other symbol dies; a window holding both is already dead.
    """
    xc, oc = window_counts(x, o)
    w = _DANGER
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


def threats_after(x: int, o: int, action: int) -> list[tuple[int, int]]:
    """The (cell, symbol) pairs that would complete a five once ``action`` is played (the
    rules' :func:`orderchaos.envs.rules.threat_pairs` of the position after it)."""
    return threat_pairs(*_after(x, o, action))


def completes_a_five(x: int, o: int, action: int) -> bool:
    """True when ``action`` completes five identical symbols in a window."""
    cell = action >> 1
    return completes_five((x if action & 1 == X else o) | 1 << cell, cell)


def double_threat_moves(x: int, o: int) -> list[int]:
    """Actions that leave two completion cells at once (Chaos can block only one).

    A stone of symbol ``s`` on an empty cell of a window holding three ``s`` and nothing
    else makes the window's last empty cell a completion cell; the action is a double
    threat when such windows give it two different completion cells. (A position that
    already has a completion cell is not asked about: Order simply completes it.)
    """
    created: dict[int, set[int]] = {}
    for m in WINDOWS:
        for mine, theirs, sym in ((x, o, X), (o, x, O)):
            if theirs & m == 0 and (mine & m).bit_count() == 3:
                rest = m & ~mine
                first = rest & -rest
                c1, c2 = first.bit_length() - 1, (rest ^ first).bit_length() - 1
                created.setdefault(2 * c1 + sym, set()).add(c2)
                created.setdefault(2 * c2 + sym, set()).add(c1)
    return sorted(a for a, cells in created.items() if len(cells) >= 2)


def single_threat_followups(x: int, o: int) -> list[int]:
    """Order actions that make one completion cell such that, after Chaos's only block
    (the other symbol on that cell), Order has a double threat or a five. None when a
    completion cell already stands (Order then simply completes it)."""
    found = []
    if threat_pairs(x, o):
        return []  # Order completes a five instead
    for a in legal_action_list(x, o):
        threats = threats_after(x, o, a)
        if len(threats) != 1:
            continue
        (cell, sym), = threats
        bit, placed = 1 << cell, 1 << (a >> 1)
        nx, no = (x | placed, o) if a & 1 == X else (x, o | placed)
        block = 2 * cell + (1 - sym)
        if completes_a_five(nx, no, block):
            found.append(a)  # the block itself completes a five: Chaos cannot answer
            continue
        bx, bo = (nx | bit, no) if sym == O else (nx, no | bit)
        if threat_pairs(bx, bo) or double_threat_moves(bx, bo):
            found.append(a)
    return found


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
        forcing = double_threat_moves(x, o) or single_threat_followups(x, o)
        return _argmax(deltas, forcing or list(deltas))

    @staticmethod
    def _chaos_moves(x: int, o: int) -> list[int]:
        deltas = danger_deltas(x, o)
        last_move = (x | o).bit_count() == CELLS - 1
        non_suicide = [a for a in deltas if not completes_a_five(x, o, a)]
        if not non_suicide:  # every move completes a five: Chaos has lost anyway
            return list(deltas)
        if last_move:
            return non_suicide
        safe = [a for a in non_suicide if not threats_after(x, o, a)]
        if safe:
            # Prefer moves that leave Order no double threat to play next.
            quiet = [a for a in safe if not double_threat_moves(*_after(x, o, a))]
            return _argmax({a: -deltas[a] for a in safe}, quiet or safe)
        # Lost against best play: leave Order as few completions as possible.
        return _argmax({a: -len(threats_after(x, o, a)) for a in non_suicide}, non_suicide)


def epsilon_heuristic_position(
    target_empties: int, rng: np.random.Generator, epsilon: float
) -> State | None:
    """Play heuristic against heuristic, with a uniformly random legal move at chance
    ``epsilon``, until ``target_empties`` cells are empty: a position reached by sensible
    play. None if the game ends first. All randomness comes from ``rng``."""
    heuristic = HeuristicAgent(seed=rng)
    state = State()
    while state.num_empty > target_empties:
        if state.is_terminal:
            return None
        if rng.random() < epsilon:
            legal = state.legal_actions()
            action = legal[int(rng.integers(len(legal)))]
        else:
            action = heuristic.act(state)
        state = state.apply(action)
    return None if state.is_terminal else state


def _after(x: int, o: int, action: int) -> tuple[int, int]:
    bit = 1 << (action >> 1)
    return (x | bit, o) if action & 1 == X else (x, o | bit)


def _argmax(scores: dict[int, float], candidates: list[int]) -> list[int]:
    best = max(scores[a] for a in candidates)
    return [a for a in candidates if scores[a] >= best - 1e-9]


__all__ = [
    "RandomAgent",
    "HeuristicAgent",
    "danger_deltas",
    "threats_after",
    "completes_a_five",
    "double_threat_moves",
    "single_threat_followups",
    "window_counts",
]
