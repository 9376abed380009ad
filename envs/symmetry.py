"""The 16 symmetries of Order and Chaos: 8 board symmetries (the dihedral group of the
square) times swapping X and O. Both leave the rules unchanged, so a position and its
images have the same game-theoretic value.

Symmetry ``g`` in 0..15 applies board transform ``g % 8`` and swaps the symbols when
``g >= 8``. ``CELL_PERM[t][c]`` is where transform ``t`` sends cell ``c``.
"""

from __future__ import annotations

import numpy as np

from orderchaos.envs.rules import ACTIONS, CELLS, SIZE, State

NUM_BOARD_SYMMETRIES = 8
NUM_SYMMETRIES = 16


def _transform_cell(t: int, c: int) -> int:
    r, col = divmod(c, SIZE)
    n = SIZE - 1
    if t & 4:  # transpose first
        r, col = col, r
    for _ in range(t & 3):  # then rotate 90 degrees clockwise, t & 3 times
        r, col = col, n - r
    return r * SIZE + col


CELL_PERM: tuple[tuple[int, ...], ...] = tuple(
    tuple(_transform_cell(t, c) for c in range(CELLS)) for t in range(NUM_BOARD_SYMMETRIES)
)
"""``CELL_PERM[t][c]``: the image of cell ``c`` under board transform ``t``."""

ACTION_PERM: np.ndarray = np.array(
    [
        [2 * CELL_PERM[g % 8][a >> 1] + ((a & 1) ^ (g >= 8)) for a in range(ACTIONS)]
        for g in range(NUM_SYMMETRIES)
    ],
    dtype=np.int64,
)
"""``ACTION_PERM[g, a]``: the image of action ``a`` under symmetry ``g``."""

INVERSE: tuple[int, ...] = tuple(
    next(h for h in range(NUM_SYMMETRIES) if all(ACTION_PERM[h, ACTION_PERM[g, a]] == a for a in range(ACTIONS)))
    for g in range(NUM_SYMMETRIES)
)
"""``INVERSE[g]``: the symmetry that undoes ``g``."""

_CHUNKS = (CELLS + 7) // 8
# _BYTE_TABLE[t][k][v]: image bits of byte value v placed at byte k of a bitboard.
_BYTE_TABLE: tuple[tuple[tuple[int, ...], ...], ...] = tuple(
    tuple(
        tuple(
            sum(1 << CELL_PERM[t][8 * k + i] for i in range(8) if v >> i & 1 and 8 * k + i < CELLS)
            for v in range(256)
        )
        for k in range(_CHUNKS)
    )
    for t in range(NUM_BOARD_SYMMETRIES)
)


def transform_bits(bits: int, t: int) -> int:
    """Apply board transform ``t`` (0..7) to a 36-bit bitboard."""
    table = _BYTE_TABLE[t]
    return (
        table[0][bits & 255]
        | table[1][bits >> 8 & 255]
        | table[2][bits >> 16 & 255]
        | table[3][bits >> 24 & 255]
        | table[4][bits >> 32 & 255]
    )


def transform_state(state: State, g: int) -> State:
    """The image of ``state`` under symmetry ``g`` (0..15)."""
    t = g & 7
    x, o = transform_bits(state.x, t), transform_bits(state.o, t)
    return State(o, x) if g >= 8 else State(x, o)


def transform_action(action: int, g: int) -> int:
    """The image of ``action`` under symmetry ``g``."""
    return int(ACTION_PERM[g, action])


def transform_policy(policy: np.ndarray, g: int) -> np.ndarray:
    """Map a 72-long vector (policy, mask, or a batch ``(..., 72)``) under symmetry ``g``:
    ``out[..., ACTION_PERM[g, a]] = policy[..., a]``."""
    policy = np.asarray(policy)
    out = np.empty_like(policy)
    out[..., ACTION_PERM[g]] = policy
    return out


def transform_planes(planes: np.ndarray, g: int) -> np.ndarray:
    """Map observation planes ``(..., 3, 6, 6)`` (X, O, chaos-to-move) under symmetry ``g``."""
    planes = np.asarray(planes)
    flat = planes.reshape(*planes.shape[:-2], CELLS)
    out = np.empty_like(flat)
    out[..., list(CELL_PERM[g & 7])] = flat
    if g >= 8:
        out[..., [0, 1], :] = out[..., [1, 0], :]
    return out.reshape(planes.shape)


def canonical_key(x: int, o: int) -> int:
    """A key shared by all 16 images of a position: the least ``x | o << 36`` over them."""
    best = -1
    for t in range(NUM_BOARD_SYMMETRIES):
        tx, to = transform_bits(x, t), transform_bits(o, t)
        k1 = tx | to << CELLS
        k2 = to | tx << CELLS
        k = k1 if k1 < k2 else k2
        if best < 0 or k < best:
            best = k
    return best


def all_images(state: State) -> list[State]:
    """The 16 images of ``state`` (with repeats when the position is itself symmetric)."""
    return [transform_state(state, g) for g in range(NUM_SYMMETRIES)]
