"""The compiled (numba) rule helpers and their tables, written once for every kernel.

The exact solver (:mod:`orderchaos.agents.solver_kernel`), the random playouts
(:mod:`orderchaos.agents.rollout`) and the tree search (:mod:`orderchaos.agents.mcts`) all take
their window tables, window counts, five test, move generation, popcount and symmetry
transforms from here; the heuristic (:mod:`orderchaos.agents.simple`) takes the window counts
and the danger weights. Nothing is re-derived: every table is built from the Python rules in
:mod:`orderchaos.envs.rules` and :mod:`orderchaos.envs.symmetry`, which stay the reference
engine (``State``).

Everything works on raw ``int64`` bitboards (bit ``c`` set when cell ``c`` holds the symbol)
and numpy arrays; the helpers are meant to be called from other ``@njit`` code.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from orderchaos.envs.batch import CELL_WINDOW_MASKS
from orderchaos.envs.rules import CELL_WINDOWS, CELLS, NUM_WINDOWS, WINDOW_CELLS
from orderchaos.envs.symmetry import NUM_BOARD_SYMMETRIES, transform_bits

WIN_CELLS = np.array(WINDOW_CELLS, dtype=np.int64)
"""(32, 5): the cells of each window."""
MAX_CELL_WINDOWS = max(len(w) for w in CELL_WINDOWS)
CELL_NWIN = np.array([len(w) for w in CELL_WINDOWS], dtype=np.int64)
"""(36,): how many windows pass through each cell: the row length of the two tables below."""
CELL_WIN = np.full((CELLS, MAX_CELL_WINDOWS), -1, dtype=np.int64)
"""(36, 7): the windows through each cell (rules' ``CELL_WINDOWS``), padded with -1."""
CELL_WIN_MASKS = np.ascontiguousarray(CELL_WINDOW_MASKS[:CELLS])
"""(36, 8): the masks of those windows, the batch engine's padded table
(:data:`orderchaos.envs.batch.CELL_WINDOW_MASKS` without its no-op row; only the first
``CELL_NWIN[c]`` entries of a row are read). Kept beside ``CELL_WIN`` because the five test
reads masks directly (one load fewer per window)."""
for _c in range(CELLS):
    CELL_WIN[_c, : CELL_NWIN[_c]] = CELL_WINDOWS[_c]

SYM_BYTES = np.array(
    [[[transform_bits(v << 8 * k, t) for v in range(256)] for k in range(5)]
     for t in range(NUM_BOARD_SYMMETRIES)],
    dtype=np.int64,
)
"""``SYM_BYTES[t, k, v]``: image under board transform t of byte value v at byte k."""

DANGER = np.array([1, 4, 16, 64, 256, 1_000_000], dtype=np.int64)
"""Danger weight of a live window (one that does not hold both symbols) holding k identical
stones, k = 0..5: the heuristic's board danger and the solver's move ordering."""


@njit(cache=True)
def popcount(v: int) -> int:
    """The number of set bits of a non-negative 64-bit integer."""
    v = v - ((v >> 1) & 0x5555555555555555)
    v = (v & 0x3333333333333333) + ((v >> 2) & 0x3333333333333333)
    v = (v + (v >> 4)) & 0x0F0F0F0F0F0F0F0F
    return (v * 0x0101010101010101) >> 56


@njit(cache=True)
def bit_index(single_bit: int) -> int:
    """The index of the one set bit of ``single_bit``."""
    i = 0
    while single_bit > 1:
        single_bit >>= 1
        i += 1
    return i


@njit(cache=True)
def window_counts(x: int, o: int, xc: np.ndarray, oc: np.ndarray) -> None:
    """Fill ``xc``/``oc`` (32 each) with the X and O counts of every window."""
    for w in range(NUM_WINDOWS):
        a = 0
        b = 0
        for k in range(5):
            c = WIN_CELLS[w, k]
            a += (x >> c) & 1
            b += (o >> c) & 1
        xc[w] = a
        oc[w] = b


@njit(cache=True)
def places_five(bits: int, cell: int) -> bool:
    """True when the one-symbol bitboard ``bits`` (already holding ``cell``) fills a window
    through ``cell``."""
    for j in range(CELL_NWIN[cell]):
        m = CELL_WIN_MASKS[cell, j]
        if bits & m == m:
            return True
    return False


@njit(cache=True)
def empty_cells(occupied: int, out: np.ndarray) -> int:
    """Write the empty cells, ascending, into ``out`` (36 long); return how many."""
    n = 0
    for c in range(CELLS):
        if not (occupied >> c) & 1:
            out[n] = c
            n += 1
    return n


@njit(cache=True)
def legal_actions(occupied: int, out: np.ndarray) -> int:
    """Write the legal actions (both symbols on every empty cell, ascending) into ``out``
    (72 long); return how many."""
    n = empty_cells(occupied, out)
    for i in range(n - 1, -1, -1):  # spread in place from the end: 2i >= i never overwrites unread cells
        c = out[i]
        out[2 * i] = 2 * c
        out[2 * i + 1] = 2 * c + 1
    return 2 * n


@njit(cache=True)
def transform(bits: int, t: int) -> int:
    """Board transform ``t`` (0..7) of a 36-bit bitboard (as orderchaos.envs.symmetry.transform_bits)."""
    return (
        SYM_BYTES[t, 0, bits & 255]
        | SYM_BYTES[t, 1, (bits >> 8) & 255]
        | SYM_BYTES[t, 2, (bits >> 16) & 255]
        | SYM_BYTES[t, 3, (bits >> 24) & 255]
        | SYM_BYTES[t, 4, (bits >> 32) & 255]
    )


@njit(cache=True)
def canonical(x: int, o: int) -> tuple[int, int]:
    """The lexicographically least ``(x', o')`` over the 16 symmetry images."""
    bx = x
    bo = o
    if o < x:
        bx, bo = o, x
    for t in range(1, NUM_BOARD_SYMMETRIES):
        tx = transform(x, t)
        to = transform(o, t)
        if tx < bx or (tx == bx and to < bo):
            bx, bo = tx, to
        if to < bx or (to == bx and tx < bo):
            bx, bo = to, tx
    return bx, bo
