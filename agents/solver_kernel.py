"""The numba hot loop of the exact solver: a boolean AND/OR depth-first search.

The question answered is binary -- "can Order force a five?" -- so the search is a plain
AND/OR search (alpha-beta with the window (0, 1)) over bitboards with incremental window
counts, a symmetry-canonical transposition table, and the game's forcing rules:

* Order to move with a four on the board (a window holding four of one symbol and nothing
  else) wins at once.
* Chaos facing threats on two distinct cells, or one cell threatened with both symbols,
  loses; a lone threat ``(c, s)`` forces Chaos to play the other symbol on ``c``.
* A Chaos move that creates a four loses (Order completes it next), so it is skipped.
* An Order move that creates fours on two distinct cells wins.
* No live window left (every window holds both symbols) means Chaos wins.

Pruning that is provably safe (see ``agents/solver.py`` for the arguments):

* empty cells that lie in no live window are interchangeable tempo moves: only one of them,
  with one symbol, is tried;
* on a cell whose live windows all hold X (and no O), X dominates O for Order and O
  dominates X for Chaos (and the mirror for O-only cells).

Everything here works on raw ints and numpy arrays; ``agents/solver.py`` wraps it. The
window tables, window counts, popcount and symmetry transforms come from
:mod:`orderchaos.agents.compiled_rules` (built from :mod:`orderchaos.envs.rules`; nothing is re-derived),
and ``tests/agents/test_solver.py`` checks the kernel against brute-force minimax on ``State``.
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit, objmode

from orderchaos.agents.compiled_rules import (
    CELL_NWIN,
    CELL_WIN,
    DANGER,
    WIN_CELLS,
    bit_index,
    canonical,
    popcount,
    transform,  # noqa: F401  (re-exported: callers use K.transform and K.window_counts)
    window_counts,  # noqa: F401
)
from orderchaos.envs.rules import CELLS, NUM_WINDOWS, WINDOW_CELLS

PAIR_WINDOWS = np.zeros((CELLS, CELLS), dtype=np.int64)
"""``PAIR_WINDOWS[a, b]``: bit set of the windows that contain both cells a and b."""
for _w, _cells in enumerate(WINDOW_CELLS):
    for _a in _cells:
        for _b in _cells:
            if _a != _b:
                PAIR_WINDOWS[_a, _b] |= 1 << _w

# Slots of the control array ``ctl`` shared between Python and the kernel.
(NODES, NODE_LIMIT, ABORTED, TT_MIN, CANON_MIN, TT_STORES, TT_HITS, USE_HISTORY,
 USE_PAIRING, VCF_DEPTH, USE_PRUNING) = range(11)
CTL_SIZE = 11

ORDER_WINS, CHAOS_WINS, ABORT = 1, 0, -1
EXACT = 1000
"""A depth that never runs out: the search is exact."""
TT_ORDER, TT_CHAOS = 1, 2
FOUR_BONUS = 1 << 40
DEAD_SCORE = -(1 << 50)
DOUBLE_FOUR = -1
SPLIT_FOUR = -2


@njit(cache=True)
def _tt_index(kx: int, ko: int, mask: int) -> int:
    h = kx * -7046029254386353131 + ko * -4417276706812531889
    h ^= h >> 29
    return (h & mask) & ~1


@njit(cache=True)
def _tt_store(
    tt_x: np.ndarray, tt_o: np.ndarray, tt_v: np.ndarray, tt_w: np.ndarray,
    idx: int, kx: int, ko: int, result: int, work: int,
) -> None:
    # Two slots per bucket: the first keeps the costliest proof, the second always replaces.
    j = idx if work >= tt_w[idx] else idx + 1
    tt_x[j] = kx
    tt_o[j] = ko
    tt_v[j] = TT_ORDER if result == ORDER_WINS else TT_CHAOS
    tt_w[j] = min(work, 2_000_000_000)


@njit(cache=True)
def _place(c: int, s: int, xc: np.ndarray, oc: np.ndarray, delta: int) -> None:
    if s == 0:
        for k in range(CELL_NWIN[c]):
            xc[CELL_WIN[c, k]] += delta
    else:
        for k in range(CELL_NWIN[c]):
            oc[CELL_WIN[c, k]] += delta


@njit(cache=True)
def _empty_cell(w: int, occ: int, skip: int) -> int:
    """The first empty cell of window ``w`` other than ``skip`` (-1 for none): the gap of a
    four (``skip`` -1), or the gap a stone on empty ``skip`` leaves in a window of three."""
    for k in range(5):
        c = WIN_CELLS[w, k]
        if c != skip and not (occ >> c) & 1:
            return c
    return -1


@njit(cache=True)
def pairing_exists(x: int, o: int, xc: np.ndarray, oc: np.ndarray) -> bool:
    """Greedy search for a Chaos pairing strategy: disjoint pairs of empty cells such that
    every live window contains one pair. If one exists, Chaos wins whoever is to move.

    Why: whenever Order plays in a pair, Chaos answers on the partner cell with the other
    symbol, which kills every window holding that pair; otherwise Chaos plays an unpaired
    cell (the parity of the board always leaves one: with Order to move the number of
    empty cells, and so of unpaired ones, is even). Each live window keeps two empty
    cells until it dies, so no four (hence no five) can ever appear. A False answer
    proves nothing: the greedy choice (most constrained window first, the pair covering
    most windows) can miss a pairing.
    """
    occ = x | o
    free = ((1 << CELLS) - 1) & ~occ
    uncovered = 0
    for w in range(NUM_WINDOWS):
        if xc[w] == 0 or oc[w] == 0:
            uncovered |= 1 << w
    for need in range(2, 6):
        for w in range(NUM_WINDOWS):
            if not (uncovered >> w) & 1 or 5 - xc[w] - oc[w] != need:
                continue
            best = -1
            best_a = -1
            best_b = -1
            for i in range(5):
                a = WIN_CELLS[w, i]
                if not (free >> a) & 1:
                    continue
                for j in range(i + 1, 5):
                    b = WIN_CELLS[w, j]
                    if not (free >> b) & 1:
                        continue
                    score = popcount(PAIR_WINDOWS[a, b] & uncovered)
                    if score > best:
                        best = score
                        best_a = a
                        best_b = b
            if best < 0:
                return False
            free &= ~((1 << best_a) | (1 << best_b))
            uncovered &= ~PAIR_WINDOWS[best_a, best_b]
    return uncovered == 0  # a live window with fewer than two empty cells cannot be paired


@njit(cache=True)
def _cell_effect(
    c: int, mine: np.ndarray, theirs: np.ndarray, occ: int
) -> tuple[int, int, int, int, int]:
    """What a symbol on empty cell ``c`` does, given the window counts of that symbol
    (``mine``) and of the other (``theirs``). Returns (live windows through c, those holding
    only this symbol, danger added to this symbol's windows, danger of the other symbol's
    windows killed, four): four is -1 if no four is made, SPLIT_FOUR if fours with two
    distinct gaps are made (a won double four), else the one gap Chaos must block."""
    nlive = 0
    only = 0
    gain = 0
    killed = 0
    four = -1
    for k in range(CELL_NWIN[c]):
        w = CELL_WIN[c, k]
        a = mine[w]
        b = theirs[w]
        if a > 0 and b > 0:
            continue
        nlive += 1
        if b > 0:
            killed += DANGER[b]
            continue
        if a > 0:
            only += 1
        gain += DANGER[a + 1] - DANGER[a]
        if a == 3:
            e = _empty_cell(w, occ, c)
            if four == -1:
                four = e
            elif four != e:
                four = SPLIT_FOUR
    return nlive, only, gain, killed, four


@njit(cache=True)
def vcf(x: int, o: int, nempty: int, xc: np.ndarray, oc: np.ndarray, ctl: np.ndarray,
        deadline: float, fours_left: int) -> int:
    """Victory by continuous fours: can Order (to move, no four on the board) win using
    only moves that make a four, each answered by Chaos's forced block? Tries at most
    ``fours_left`` fours in a row. 1 yes, 0 not found this way (proves nothing), -1 limit.
    """
    if fours_left <= 0 or nempty < 2:
        return 0
    occ = x | o
    empty = ((1 << CELLS) - 1) & ~occ
    while empty:
        low = empty & -empty
        empty ^= low
        c = bit_index(low)
        for s in range(2):
            e = _cell_effect(c, xc, oc, occ)[4] if s == 0 else _cell_effect(c, oc, xc, occ)[4]
            if e == -1:
                continue
            if e == SPLIT_FOUR:
                return ORDER_WINS
            ctl[NODES] += 2
            if _check_limits(ctl, deadline):
                return ABORT
            # Order puts s on c; Chaos must put the other symbol on e.
            _place(c, s, xc, oc, 1)
            _place(e, 1 - s, xc, oc, 1)
            nx = x | (1 << c) if s == 0 else x
            no = o | (1 << c) if s == 1 else o
            if s == 0:
                no |= 1 << e
            else:
                nx |= 1 << e
            r = 0
            if nempty - 2 > 0:
                # Chaos's block may itself leave a four, which Order completes at once.
                for k in range(CELL_NWIN[e]):
                    w = CELL_WIN[e, k]
                    if (xc[w] == 4 and oc[w] == 0) or (oc[w] == 4 and xc[w] == 0):
                        r = ORDER_WINS
                        break
                if r == 0:
                    r = vcf(nx, no, nempty - 2, xc, oc, ctl, deadline, fours_left - 1)
            _place(e, 1 - s, xc, oc, -1)
            _place(c, s, xc, oc, -1)
            if r != 0:
                return r
    return 0


@njit(cache=True)
def _pairing_search(free: int, uncovered: int, budget: np.ndarray) -> bool:
    """Backtracking form of the pairing test: cover every window in ``uncovered`` with a
    pair of cells from ``free`` (pairs disjoint). ``budget[0]`` caps the pair choices."""
    if uncovered == 0:
        return True
    # The uncovered window with the fewest free cells is the most constrained.
    best_w = -1
    best_count = 6
    rest = uncovered
    while rest:
        low = rest & -rest
        rest ^= low
        w = bit_index(low)
        count = 0
        for k in range(5):
            count += (free >> WIN_CELLS[w, k]) & 1
        if count < 2:
            return False
        if count < best_count:
            best_count = count
            best_w = w
    pairs_a = np.empty(10, dtype=np.int64)
    pairs_b = np.empty(10, dtype=np.int64)
    gains = np.empty(10, dtype=np.int64)
    n = 0
    for i in range(5):
        a = WIN_CELLS[best_w, i]
        if not (free >> a) & 1:
            continue
        for j in range(i + 1, 5):
            b = WIN_CELLS[best_w, j]
            if (free >> b) & 1:
                gain = popcount(PAIR_WINDOWS[a, b] & uncovered)
                k = n
                while k > 0 and gains[k - 1] < gain:
                    pairs_a[k] = pairs_a[k - 1]
                    pairs_b[k] = pairs_b[k - 1]
                    gains[k] = gains[k - 1]
                    k -= 1
                pairs_a[k] = a
                pairs_b[k] = b
                gains[k] = gain
                n += 1
    for i in range(n):
        budget[0] -= 1
        if budget[0] < 0:
            return False
        a = pairs_a[i]
        b = pairs_b[i]
        if _pairing_search(free & ~((1 << a) | (1 << b)), uncovered & ~PAIR_WINDOWS[a, b], budget):
            return True
    return False


@njit(cache=True)
def pairing_exists_bt(x: int, o: int, xc: np.ndarray, oc: np.ndarray, steps: int) -> bool:
    """:func:`pairing_exists` with backtracking over at most ``steps`` pair choices."""
    free = ((1 << CELLS) - 1) & ~(x | o)
    uncovered = 0
    for w in range(NUM_WINDOWS):
        if xc[w] == 0 or oc[w] == 0:
            uncovered |= 1 << w
    budget = np.empty(1, dtype=np.int64)
    budget[0] = steps
    return _pairing_search(free, uncovered, budget)


@njit(cache=True)
def _check_limits(ctl: np.ndarray, deadline: float) -> bool:
    if ctl[NODE_LIMIT] > 0 and ctl[NODES] > ctl[NODE_LIMIT]:
        ctl[ABORTED] = 1
        return True
    if deadline > 0.0 and (ctl[NODES] & 4095) == 0:
        with objmode(now="float64"):
            now = time.perf_counter()
        if now > deadline:
            ctl[ABORTED] = 1
            return True
    return False


@njit(cache=True)
def generate(
    x: int,
    o: int,
    nempty: int,
    xc: np.ndarray,
    oc: np.ndarray,
    hist: np.ndarray,
    use_history: bool,
    stop_on_double_four: bool,
    mv: np.ndarray,
    sc: np.ndarray,
    prune: bool = True,
) -> int:
    """Write the moves worth searching into ``mv`` (best first, scores in ``sc``); return
    how many, or DOUBLE_FOUR (with the move in ``mv[0]``) when ``stop_on_double_four`` and
    Order has a move that makes fours on two distinct cells.

    The position must hold no four (no threat). Skipped, all provably: with ``prune``,
    every dead cell but one (and its O twin) and the dominated symbol on cells whose live
    windows all hold one symbol; always, every Chaos move that creates a four. Chaos
    getting 0 back means every move it has loses.
    """
    order_to_move = (nempty & 1) == 0
    occ = x | o
    n = 0
    have_dead = False
    empty = ((1 << CELLS) - 1) & ~occ
    while empty:
        low = empty & -empty
        empty ^= low
        c = bit_index(low)
        nlive, xonly, x_gain, o_killed, x4 = _cell_effect(c, xc, oc, occ)
        _, oonly, o_gain, x_killed, o4 = _cell_effect(c, oc, xc, occ)
        dx = x_gain - o_killed  # change of total window danger if X goes on c
        do = o_gain - x_killed  # the same for O
        makes_x4 = x4 >= 0 or x4 == SPLIT_FOUR
        makes_o4 = o4 >= 0 or o4 == SPLIT_FOUR
        x_double = x4 == SPLIT_FOUR
        o_double = o4 == SPLIT_FOUR
        if nlive == 0 and prune:
            # A dead cell: all such cells are interchangeable tempo moves, symbol irrelevant.
            if not have_dead:
                have_dead = True
                mv[n] = 2 * c
                sc[n] = DEAD_SCORE
                n += 1
            continue
        try_x = True
        try_o = True
        dominated = prune and nlive > 0
        if order_to_move:
            if dominated and xonly == nlive:
                try_o = False
            elif dominated and oonly == nlive:
                try_x = False
            if stop_on_double_four and (x_double or o_double):
                mv[0] = 2 * c if x_double else 2 * c + 1
                return DOUBLE_FOUR
            if try_x:
                mv[n] = 2 * c
                sc[n] = dx + (FOUR_BONUS if makes_x4 else 0) + (FOUR_BONUS if x_double else 0)
                n += 1
            if try_o:
                mv[n] = 2 * c + 1
                sc[n] = do + (FOUR_BONUS if makes_o4 else 0) + (FOUR_BONUS if o_double else 0)
                n += 1
        else:
            if dominated and xonly == nlive:
                try_x = False
            elif dominated and oonly == nlive:
                try_o = False
            if try_x and not makes_x4:
                mv[n] = 2 * c
                sc[n] = -dx
                n += 1
            if try_o and not makes_o4:
                mv[n] = 2 * c + 1
                sc[n] = -do
                n += 1
    if use_history:
        side = 0 if order_to_move else 1
        for i in range(n):
            sc[i] += hist[side, mv[i]]
    # Insertion sort, best first.
    for i in range(1, n):
        m = mv[i]
        score = sc[i]
        j = i - 1
        while j >= 0 and sc[j] < score:
            mv[j + 1] = mv[j]
            sc[j + 1] = sc[j]
            j -= 1
        mv[j + 1] = m
        sc[j + 1] = score
    return n



@njit(cache=True, nogil=True)  # a search in a server's thread leaves its event loop running
def search(
    x: int,
    o: int,
    nempty: int,
    depth: int,
    xc: np.ndarray,
    oc: np.ndarray,
    tt_x: np.ndarray,
    tt_o: np.ndarray,
    tt_v: np.ndarray,
    tt_w: np.ndarray,
    hist: np.ndarray,
    moves: np.ndarray,
    scores: np.ndarray,
    ctl: np.ndarray,
    deadline: float,
) -> int:
    """Does Order force a five within ``depth`` plies from ``(x, o)``?

    The position must hold no five; ``xc``/``oc`` must be its window counts (they are
    restored on return). ``depth >= EXACT`` asks for the exact game value. Returns 1
    (Order wins), 0 (Chaos survives: wins, or holds past the horizon) or -1 when the node
    or time limit in ``ctl``/``deadline`` was hit.
    """
    ctl[NODES] += 1
    if _check_limits(ctl, deadline):
        return ABORT
    if depth <= 0 or nempty == 0:
        return CHAOS_WINS
    order_to_move = (nempty & 1) == 0
    occ = x | o
    live = 0
    t_cell = -1
    t_sym = -1
    for w in range(NUM_WINDOWS):
        a = xc[w]
        b = oc[w]
        if a > 0 and b > 0:
            continue
        live += 1
        if a == 4 or b == 4:
            if order_to_move:
                return ORDER_WINS
            cell = _empty_cell(w, occ, -1)
            sym = 0 if a == 4 else 1
            if t_cell < 0:
                t_cell = cell
                t_sym = sym
            elif t_cell != cell or t_sym != sym:
                # Two threat cells, or one cell threatened with both symbols.
                if depth >= 2 or nempty == 1:
                    return ORDER_WINS
                return CHAOS_WINS
    if live == 0:
        return CHAOS_WINS
    if t_cell < 0 and nempty == 1:
        return CHAOS_WINS  # Chaos fills the last cell and no symbol there makes a five
    if t_cell >= 0:
        # A lone threat: Chaos must put the other symbol on it.
        s = 1 - t_sym
        bit = 1 << t_cell
        _place(t_cell, s, xc, oc, 1)
        r = search(x | bit if s == 0 else x, o | bit if s == 1 else o, nempty - 1, depth - 1,
                   xc, oc, tt_x, tt_o, tt_v, tt_w, hist, moves, scores, ctl, deadline)
        _place(t_cell, s, xc, oc, -1)
        return r

    exact = depth >= nempty  # the game ends within nempty plies anyway
    use_tt = nempty >= ctl[TT_MIN]
    idx = 0
    kx = x
    ko = o
    if use_tt:
        if nempty >= ctl[CANON_MIN]:
            kx, ko = canonical(x, o)
        mask = tt_x.shape[0] - 1
        idx = _tt_index(kx, ko, mask)
        for j in range(idx, idx + 2):
            v = tt_v[j]
            if v != 0 and tt_x[j] == kx and tt_o[j] == ko:
                # An exact Chaos win also means Chaos survives any horizon; an exact Order
                # win says nothing about how fast, so shallower searches ignore it.
                if v == TT_CHAOS:
                    ctl[TT_HITS] += 1
                    return CHAOS_WINS
                if exact:
                    ctl[TT_HITS] += 1
                    return ORDER_WINS

    if ctl[USE_PAIRING] and (
        pairing_exists(x, o, xc, oc)
        if ctl[USE_PAIRING] == 1
        else pairing_exists_bt(x, o, xc, oc, ctl[USE_PAIRING])
    ):
        result = CHAOS_WINS
        if use_tt and exact:
            _tt_store(tt_x, tt_o, tt_v, tt_w, idx, kx, ko, result, 1)
            ctl[TT_STORES] += 1
        return result

    if order_to_move and ctl[VCF_DEPTH] > 0 and (exact or depth >= 2 * ctl[VCF_DEPTH] + 1):
        r = vcf(x, o, nempty, xc, oc, ctl, deadline, ctl[VCF_DEPTH])
        if r == ABORT:
            return ABORT
        if r == ORDER_WINS:
            if use_tt and exact:
                _tt_store(tt_x, tt_o, tt_v, tt_w, idx, kx, ko, r, 1)
                ctl[TT_STORES] += 1
            return r

    ply = CELLS - nempty
    side = 0 if order_to_move else 1
    n = generate(x, o, nempty, xc, oc, hist, ctl[USE_HISTORY] != 0, exact or depth >= 3,
                 moves[ply], scores[ply], ctl[USE_PRUNING] != 0)
    if n == DOUBLE_FOUR:
        return ORDER_WINS
    if n == 0:
        # Only Chaos can run out of moves here: every move it has creates a four.
        if depth >= 2:
            return ORDER_WINS
        return CHAOS_WINS

    start_nodes = ctl[NODES]
    result = CHAOS_WINS if order_to_move else ORDER_WINS
    for i in range(n):
        m = moves[ply, i]
        c = m >> 1
        s = m & 1
        bit = 1 << c
        _place(c, s, xc, oc, 1)
        r = search(x | bit if s == 0 else x, o | bit if s == 1 else o, nempty - 1, depth - 1,
                   xc, oc, tt_x, tt_o, tt_v, tt_w, hist, moves, scores, ctl, deadline)
        _place(c, s, xc, oc, -1)
        if r == ABORT:
            return ABORT
        if (order_to_move and r == ORDER_WINS) or (not order_to_move and r == CHAOS_WINS):
            result = r
            if ctl[USE_HISTORY]:
                hist[side, m] += nempty * nempty
            break

    if use_tt and exact:
        _tt_store(tt_x, tt_o, tt_v, tt_w, idx, kx, ko, result, ctl[NODES] - start_nodes)
        ctl[TT_STORES] += 1
    return result

