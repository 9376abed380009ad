"""The move without search: complete a five, block a lone four, else the solver kernel's
first-ordered move.

Both the solver (:mod:`orderchaos.agents.solver`, past its budget) and the pairing strategy
(:mod:`orderchaos.agents.strategy`, off its covered positions) fall back on it, so it sits
below both: it imports the compiled kernel and the rules, nothing of either player.
"""

from __future__ import annotations

import numpy as np

from orderchaos.agents import solver_kernel as K
from orderchaos.envs.rules import ACTIONS, ORDER, IllegalActionError, State, check_reachable, threat_pairs


def check_state(state: object) -> State:
    """``state`` itself when it is a reachable :class:`State`; a TypeError or a
    BoardStringError (a ValueError naming why) otherwise."""
    if not isinstance(state, State):
        raise TypeError(
            f"expected an orderchaos.envs.rules.State (e.g. parse_board('...')), got {type(state).__name__}"
        )
    return check_reachable(state)


def fallback_action(state: State) -> int:
    """A sensible move without search: complete a five, block a lone four, else the
    solver's own first-ordered move (most window danger created for Order, destroyed for
    Chaos); any legal move if every move loses."""
    check_state(state)
    legal = state.legal_actions()
    if not legal:
        raise IllegalActionError(f"the game is over ({state.winner} won); no move to choose")
    threats = threat_pairs(state.x, state.o)
    if threats:
        cell, sym = threats[0]
        return 2 * cell + (sym if state.to_play == ORDER else 1 - sym)
    n, ordered = generated_moves(state, stop_on_double_four=True, prune=True)
    if n == K.DOUBLE_FOUR or n > 0:
        return int(ordered[0])
    return legal[0]


def generated_moves(state: State, *, stop_on_double_four: bool, prune: bool) -> tuple[int, np.ndarray]:
    """The solver kernel's move generation at ``state``, outside a search: its return code
    (the number of moves, or a negative ``K.DOUBLE_FOUR``/``K.SPLIT_FOUR``) and the moves,
    best first by its ordering."""
    xc = np.zeros(K.NUM_WINDOWS, dtype=np.int64)
    oc = np.zeros(K.NUM_WINDOWS, dtype=np.int64)
    K.window_counts(state.x, state.o, xc, oc)
    mv = np.zeros(ACTIONS, dtype=np.int64)
    sc = np.zeros(ACTIONS, dtype=np.int64)
    hist = np.zeros((2, ACTIONS), dtype=np.int64)
    n = K.generate(state.x, state.o, state.num_empty, xc, oc, hist, False, stop_on_double_four, mv, sc, prune)
    return int(n), mv
