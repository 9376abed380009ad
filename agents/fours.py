"""Victory by continuous fours: Order's forcing lines that a practical player finds.

Order *wins by fours* when it can complete a five, or make two completions at once (Chaos
blocks one at most), or make a four (a window with four equal symbols and an empty fifth
cell) such that Chaos's only block, the other symbol on that cell, leaves Order winning by
fours again. Every Chaos move in such a line is
forced, so the search is narrow and deep lines cost little: it is the exact solver's own
``vcf`` (:mod:`orderchaos.agents.solver_kernel`), which proves an Order win whenever it
answers yes, while a no says only that no such line exists within the plies asked.

The heuristic Order wins its games with these lines (a four, the block, a double four), and
a Chaos move that lets one through where another move would not is a mistake any practical
Order punishes, also in positions lost in theory. :func:`holding_moves` lists the Chaos moves
that leave Order no such line: the training targets of ``selfplay.fours_holding_plies``.
"""

from __future__ import annotations

import numpy as np

from orderchaos.agents import solver_kernel as K
from orderchaos.envs.rules import CHAOS, State


def order_wins_by_fours(state: State, plies: int) -> bool:
    """Whether Order, to move in ``state``, wins by continuous fours within ``plies`` plies
    (both sides counted; a five on the board counts as won)."""
    if state.to_play == CHAOS:
        raise ValueError("order_wins_by_fours is for positions with Order to move")
    if plies < 0:
        raise ValueError(f"plies must be >= 0, got {plies}")
    if state.has_five or state.threats():
        return True
    fours = (plies - 1) // 2  # each four and its block take two plies, the five one more
    if fours <= 0:
        return False
    xc = np.zeros(K.NUM_WINDOWS, dtype=np.int64)
    oc = np.zeros(K.NUM_WINDOWS, dtype=np.int64)
    K.window_counts(state.x, state.o, xc, oc)
    ctl = np.zeros(K.CTL_SIZE, dtype=np.int64)  # no node limit, no deadline
    return K.vcf(state.x, state.o, state.num_empty, xc, oc, ctl, 0.0, fours) == K.ORDER_WINS


def holding_moves(state: State, plies: int) -> list[int]:
    """Chaos's legal moves in ``state`` after which Order has no win by continuous fours
    within ``plies`` plies (a move completing a five never holds)."""
    if state.to_play != CHAOS:
        raise ValueError("holding_moves is for positions with Chaos to move")
    return [a for a in state.legal_actions() if not order_wins_by_fours(state.apply(a), plies)]
