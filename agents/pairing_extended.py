"""The central-pairing argument stretched to border stones it does not allow: equal pairs and a
half-filled pair that stays open. The prover's leaf rule and its ``--verify`` use it.

:mod:`orderchaos.agents.strategy` covers a position when every pair is empty or mixed (or one
pair holds a single stone and Order is to move). Two generalisations stay sound:

* **An equal pair restricts its line.** A pair holding the same symbol ``s`` at both ends
  still turns a central four of ``s`` into a win (the four and its two ends are a six), but a
  four of the other symbol on that line no longer makes a five. Such a pair is full and never
  changes, so the argument goes through with the centre game *restricted*: on that line only
  a four of ``s`` counts.
* **A half-filled pair may stay open.** A pair holding one stone ``s`` (Order's own border
  first move, say) with its other end empty also turns a central four of ``s`` into a five at
  once. Order need not fill it: the centre game goes on with the line restricted to ``s``,
  and (i) Order may at any time fill the empty end with the other symbol (the pair is then
  mixed and the plain centre game goes on, Chaos to move); (ii) if Chaos fills it, with
  either symbol, the pair becomes mixed or equal (``s s``), no worse for Order than the
  restriction to ``s``, and Order is to move in the restricted centre game. Chaos's other
  border moves are answered by the border rule as before.

A restricted centre game is at least as good for Order when fewer lines are restricted
(Order's winning play wins the less restricted game too), which is why (ii) may take the
equal case for both. Both games have their own tables, solved like
:func:`strategy.centre_table` but for either side to move on every board (with a persistent
half pair, the centre's stone count no longer says whose move it is): :func:`restricted_table`
and :func:`half_pair_table`. By the 16 symmetries every restricted line is one of three (an
outer line of the centre such as row 2, an inner one such as row 3, or a diagonal) and its
symbol X, so seven tables (86 MB each, about 5 s of CPU time to build, built on first use and
kept) serve every position.

:func:`covers_extended` is true when :func:`strategy.covers` is, or in one of these cases
(no five to complete, pairs otherwise empty or mixed):

1. one equal pair, no half pair: the restricted game is an Order win with the actual side to
   move;
2. one half pair, no equal pair, either side to move: the half-pair game is an Order win;
3. Order to move, one equal and one half pair: Order fills the half pair with the other
   symbol and case 1 holds with Chaos to move;
4. Order to move, two half pairs: filling one of them with the other symbol leaves case 2
   with Chaos to move.

:func:`extended_move` gives Order's move in each case.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from orderchaos.agents import strategy
from orderchaos.agents.strategy import CENTRE_CELLS, CENTRE_LINES, PAIRS, centre_bits
from orderchaos.envs.rules import ORDER, X, O, State, threat_pairs
from orderchaos.envs.symmetry import CELL_PERM, INVERSE, transform_action, transform_state

_POW3 = np.array([3**i for i in range(16)], dtype=np.int64)
_ALL_LINES = np.array([sum(1 << i for i in line) for line in CENTRE_LINES], dtype=np.int64)
REPRESENTATIVE_PAIRS: tuple[int, ...] = (0, 1, 8)
"""The pairs that stand for the three kinds of line up to symmetry: a2-f2 (row 2, an outer
line of the centre), a3-f3 (row 3, an inner one) and a1-f6 (the diagonal b2-e5)."""


def _pair_images() -> dict[tuple[int, int], tuple[int, int]]:
    """For each (pair index, symbol): (symmetry g, representative pair index) with g mapping
    the pair onto the representative and the symbol onto X."""
    out: dict[tuple[int, int], tuple[int, int]] = {}
    for i, (p, q) in enumerate(PAIRS):
        for t in range(8):
            image = {CELL_PERM[t][p], CELL_PERM[t][q]}
            rep = next((r for r in REPRESENTATIVE_PAIRS if image == set(PAIRS[r])), None)
            if rep is not None:
                for symbol in (X, O):
                    out[(i, symbol)] = (t + 8 * symbol, rep)
                break
    return out


PAIR_IMAGES = _pair_images()
"""``PAIR_IMAGES[(pair, symbol)] = (g, rep)``: symmetry ``g`` sends the pair onto
representative ``rep`` and the symbol onto X."""


@njit(cache=True)
def _has_four(x: int, o: int, x_lines: np.ndarray, o_lines: np.ndarray) -> bool:
    for m in x_lines:
        if x & m == m:
            return True
    for m in o_lines:
        if o & m == m:
            return True
    return False


@njit(cache=True)
def _solve(
    pow3: np.ndarray,
    x_lines: np.ndarray,
    o_lines: np.ndarray,
    half_open: bool,
    mixed_chaos: np.ndarray,
    equal_order: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The centre game where an X four counts on ``x_lines`` and an O four on ``o_lines``,
    for Order to move and for Chaos to move on every board: plies to a counted four with
    best play, or -1 (Chaos fills the 4x4 without one). With ``half_open``, an open half
    pair lies beside it: besides a centre move, Order may fill it (the plain game with Chaos
    to move: ``mixed_chaos``) and Chaos may fill it (the restricted game with Order to move:
    ``equal_order``), each one ply; without, those two arrays are not read."""
    n = 3**16
    order_tab = np.empty(n, dtype=np.int8)
    chaos_tab = np.empty(n, dtype=np.int8)
    for idx in range(n - 1, -1, -1):
        x, o = centre_bits(idx)
        if _has_four(x, o, x_lines, o_lines):
            order_tab[idx] = 0
            chaos_tab[idx] = 0
            continue
        occupied = x | o
        best_order = -1
        best_chaos = 0
        chaos_escapes = occupied == 0xFFFF
        if half_open:
            if mixed_chaos[idx] >= 0:
                best_order = mixed_chaos[idx] + 1
            chaos_escapes = equal_order[idx] < 0
            best_chaos = 0 if chaos_escapes else equal_order[idx] + 1
        for i in range(16):
            if occupied >> i & 1:
                continue
            for s in range(1, 3):
                child = idx + s * pow3[i]
                v = chaos_tab[child]
                if v >= 0 and (best_order < 0 or v + 1 < best_order):
                    best_order = v + 1
                w = order_tab[child]
                if w < 0:
                    chaos_escapes = True
                elif w + 1 > best_chaos:
                    best_chaos = w + 1
        order_tab[idx] = best_order
        chaos_tab[idx] = -1 if chaos_escapes else best_chaos
    return order_tab, chaos_tab


Tables = tuple[np.ndarray, np.ndarray]
_TABLES: dict[tuple[str, int], Tables] = {}


def _line_masks(restricted_line: int | None) -> tuple[np.ndarray, np.ndarray]:
    """X-four lines and O-four lines with ``restricted_line`` counting for X only."""
    o_lines = _ALL_LINES if restricted_line is None else np.delete(_ALL_LINES, restricted_line)
    return _ALL_LINES, np.ascontiguousarray(o_lines)


def restricted_table(line: int | None) -> Tables:
    """``(order_to_move, chaos_to_move)`` tables of the centre game in which a four of O on
    ``line`` (one of :data:`REPRESENTATIVE_PAIRS`) does not count; ``None``: the plain game.
    Indexed like :func:`strategy.centre_index`. Built on first use and kept."""
    key = ("restricted", -1 if line is None else line)
    if key not in _TABLES:
        unused = np.empty(0, dtype=np.int8)
        _TABLES[key] = _solve(_POW3, *_line_masks(line), False, unused, unused)
    return _TABLES[key]


def half_pair_table(line: int) -> Tables:
    """``(order_to_move, chaos_to_move)`` tables of the centre game beside an open half pair
    holding X on ``line`` (one of :data:`REPRESENTATIVE_PAIRS`). Built on first use and kept."""
    key = ("half", line)
    if key not in _TABLES:
        mixed_chaos = restricted_table(None)[1]
        equal_order = restricted_table(line)[0]
        _TABLES[key] = _solve(_POW3, *_line_masks(line), True, mixed_chaos, equal_order)
    return _TABLES[key]


def _pairs(state: State) -> tuple[list[tuple[int, int, int]], list[tuple[int, int]]]:
    """Half pairs as (pair, symbol, empty cell) and equal pairs as (pair, symbol)."""
    halves: list[tuple[int, int, int]] = []
    equals: list[tuple[int, int]] = []
    for i, (p, q) in enumerate(PAIRS):
        cells = [(c, X if state.x >> c & 1 else O if state.o >> c & 1 else None) for c in (p, q)]
        symbols = [s for _, s in cells if s is not None]
        if len(symbols) == 1:
            empty = next(c for c, s in cells if s is None)
            halves.append((i, symbols[0], empty))
        elif len(symbols) == 2 and symbols[0] == symbols[1]:
            equals.append((i, symbols[0]))
    return halves, equals


def _value(tables: Tables, state: State, pair: int, symbol: int, order_to_move: bool) -> int:
    """The table value of ``state``'s centre, seen through the symmetry that sends ``pair``
    and ``symbol`` onto their representative and X."""
    g, _ = PAIR_IMAGES[(pair, symbol)]
    idx = strategy.centre_index(transform_state(state, g))
    return int(tables[0 if order_to_move else 1][idx])


def _restricted(pair: int, symbol: int) -> Tables:
    return restricted_table(PAIR_IMAGES[(pair, symbol)][1])


def _half(pair: int, symbol: int) -> Tables:
    return half_pair_table(PAIR_IMAGES[(pair, symbol)][1])


def _case(state: State) -> str | None:
    """Which extended case (``"equal"``, ``"half"``, ``"equal+half"``, ``"two halves"``) the
    position is in, when the tables prove it; None otherwise. Assumes no five to complete."""
    order_to_move = state.to_play == ORDER
    halves, equals = _pairs(state)
    if len(equals) == 1 and not halves:
        (pair, symbol), = equals
        return "equal" if _value(_restricted(pair, symbol), state, pair, symbol, order_to_move) >= 0 else None
    if len(halves) == 1 and not equals:
        pair, symbol, _ = halves[0]
        return "half" if _value(_half(pair, symbol), state, pair, symbol, order_to_move) >= 0 else None
    if not order_to_move:
        return None
    if len(halves) == 1 and len(equals) == 1:
        (pair, symbol), = equals
        return "equal+half" if _value(_restricted(pair, symbol), state, pair, symbol, False) >= 0 else None
    if len(halves) == 2 and not equals:
        return "two halves" if _two_halves_fill(state, halves) is not None else None
    return None


def _two_halves_fill(state: State, halves: list[tuple[int, int, int]]) -> int | None:
    """The fill (an action) of one of two half pairs that leaves the other's half-pair game
    won for Order with Chaos to move, or None."""
    for filled, kept in ((halves[0], halves[1]), (halves[1], halves[0])):
        pair, symbol, _ = kept
        if _value(_half(pair, symbol), state, pair, symbol, False) >= 0:
            _, s, empty = filled
            return 2 * empty + (1 - s)
    return None


def covers_extended(state: State) -> bool:
    """True when the pairing argument, with equal pairs and open half pairs as in the
    module docstring, proves ``state`` (not finished) an Order win."""
    if strategy.covers(state):
        return True
    if state.is_terminal:
        return False
    return _case(state) is not None


def _best_centre_move(tables: Tables, state: State, pair: int, symbol: int) -> int | None:
    """The centre move (in ``state``'s frame) reaching a Chaos-to-move table win soonest
    (lowest action of the image on ties), or None."""
    g, _ = PAIR_IMAGES[(pair, symbol)]
    image = transform_state(state, g)
    base = strategy.centre_index(image)
    best: tuple[int, int] | None = None
    for i, c in enumerate(CENTRE_CELLS):
        if image.occupied >> c & 1:
            continue
        for s in (0, 1):
            v = int(tables[1][base + (s + 1) * 3**i])
            if v >= 0 and (best is None or (v, 2 * c + s) < best):
                best = (v, 2 * c + s)
    return None if best is None else transform_action(best[1], INVERSE[g])


def extended_move(state: State) -> int:
    """Order's move in a position :func:`covers_extended` proves (Order to move): the
    strategy's move where :func:`strategy.covers` holds; else complete a five; else, by
    case, the restricted game's fastest centre move, the half-pair game's fastest move (a
    centre move, or filling the pair with the other symbol), or the fill of the half pair
    named in the module docstring. Raises ValueError for a position it does not prove."""
    if state.to_play != ORDER or not covers_extended(state):
        raise ValueError(f"the extended pairing argument does not cover {state.to_string()} ({state.to_play} to move)")
    if strategy.covers(state):
        return strategy.move(state)
    fives = threat_pairs(state.x, state.o)
    if fives:
        cell, symbol = fives[0]
        return 2 * cell + symbol
    case = _case(state)
    halves, equals = _pairs(state)
    if case == "equal":
        (pair, symbol), = equals
        found = _best_centre_move(_restricted(pair, symbol), state, pair, symbol)
    elif case == "half":
        pair, symbol, _ = halves[0]
        tables = _half(pair, symbol)
        found = _best_centre_move(tables, state, pair, symbol)
        if found is not None:
            after = _value(tables, state.apply_unchecked(found), pair, symbol, False)
        fill_value = _value(restricted_table(None), state, pair, symbol, False)
        if found is None or (0 <= fill_value < after):
            found = 2 * halves[0][2] + (1 - symbol)
    elif case == "equal+half":
        found = 2 * halves[0][2] + (1 - halves[0][1])
    else:
        found = _two_halves_fill(state, halves)
    assert found is not None  # _case said the tables prove it
    return found


class ExtendedStrategyAgent(strategy.StrategyAgent):
    """The extended pairing rule as a player (spec ``strategy:extended``), Order only: in a
    position :func:`covers_extended` proves and :func:`strategy.covers` does not (after a
    border first move of Order's, say) it plays :func:`extended_move` (``last_reason ==
    "extended"``); elsewhere it is :class:`strategy.StrategyAgent` (the strategy's move
    where the plain rule covers the position, else the tactical fallback). The first
    position it meets outside the plain rule builds the tables it needs (about 5 s each)."""

    name = "strategy:extended"

    def act(self, state: State) -> int:
        """Order's move (see the class docstring)."""
        if (not state.is_terminal and state.to_play == ORDER and not strategy.covers(state)
                and covers_extended(state)):
            self.last_reason = "extended"
            return extended_move(state)
        return super().act(state)
