"""Victory by continuous fours: Order's forcing lines that a practical player finds.

Order *wins by fours* when it can complete a five, or make two completions at once (Chaos
blocks one at most), or make a four (a window with four equal symbols and an empty fifth
cell) such that Chaos's only block, the other symbol on that cell, leaves Order winning by
fours again. Every Chaos move in such a line is
forced, so the search is narrow and deep lines cost little; it proves an Order win whenever
it answers yes, but a no says only that no such line exists within the plies asked.

The heuristic Order wins its games with these lines (a four, the block, a double four), and
a Chaos move that lets one through where another move would not is a mistake any practical
Order punishes, also in positions lost in theory. :func:`holding_moves` lists the Chaos moves
that leave Order no such line: the training targets of ``selfplay.fours_holding_plies``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from orderchaos.agents.compiled_rules import bit_index, popcount
from orderchaos.envs.rules import CHAOS, FULL, NUM_WINDOWS, WINDOWS, State

_WINDOW_MASKS = np.array(WINDOWS, dtype=np.int64)


@njit(cache=True)
def _completions(x: int, o: int, cells: np.ndarray, symbols: np.ndarray) -> int:
    """Write the distinct (cell, symbol) pairs that would complete a five into ``cells`` and
    ``symbols`` (at most their length) and return how many there are."""
    found = 0
    for w in range(NUM_WINDOWS):
        mask = _WINDOW_MASKS[w]
        xs = x & mask
        os_ = o & mask
        if os_ == 0 and popcount(xs) == 4:
            cell, symbol = bit_index(mask & ~xs), 0
        elif xs == 0 and popcount(os_) == 4:
            cell, symbol = bit_index(mask & ~os_), 1
        else:
            continue
        seen = False
        for k in range(found):
            if cells[k] == cell and symbols[k] == symbol:
                seen = True
        if not seen and found < cells.shape[0]:
            cells[found] = cell
            symbols[found] = symbol
            found += 1
    return found


@njit(cache=True)
def _wins_by_fours(x: int, o: int, plies: int) -> bool:
    """Order to move on (x, o): a win by continuous fours within ``plies`` plies."""
    cells = np.empty(4, np.int64)
    symbols = np.empty(4, np.int64)
    if _completions(x, o, cells, symbols) > 0:
        return True
    if plies < 3:
        return False
    empty = FULL & ~(x | o)
    while empty:
        low = empty & -empty
        empty ^= low
        for symbol in range(2):
            nx = x | low if symbol == 0 else x
            no = o | low if symbol == 1 else o
            made = _completions(nx, no, cells, symbols)
            if made == 0:
                continue
            if made >= 2:  # two completions: one block cannot stop both
                return True
            # The block cannot complete a five: that completion would have stood already.
            cell, block = cells[0], 1 - symbols[0]
            bit = np.int64(1) << cell
            bx = nx | bit if block == 0 else nx
            by = no | bit if block == 1 else no
            if _wins_by_fours(bx, by, plies - 2):
                return True
    return False


def order_wins_by_fours(state: State, plies: int) -> bool:
    """Whether Order, to move in ``state``, wins by continuous fours within ``plies`` plies
    (both sides counted; a five on the board counts as won)."""
    if state.to_play == CHAOS:
        raise ValueError("order_wins_by_fours is for positions with Order to move")
    if plies < 0:
        raise ValueError(f"plies must be >= 0, got {plies}")
    if state.has_five:
        return True
    return bool(_wins_by_fours(state.x, state.o, plies))


def holding_moves(state: State, plies: int) -> list[int]:
    """Chaos's legal moves in ``state`` after which Order has no win by continuous fours
    within ``plies`` plies (a move completing a five never holds)."""
    if state.to_play != CHAOS:
        raise ValueError("holding_moves is for positions with Chaos to move")
    return [a for a in state.legal_actions() if not order_wins_by_fours(state.apply(a), plies)]
