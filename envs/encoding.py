"""The observation encoding shared by every env and by the networks.

Encoding version 1 (``OBS_VERSION``): an ``int8`` array of shape ``(3, 6, 6)``:

* plane 0: 1 where an X stands;
* plane 1: 1 where an O stands;
* plane 2: all ones when Chaos is to move, all zeros when Order is.

The action mask is a separate ``int8`` vector of 72 entries, 1 for legal actions
(``a = 2 * cell + symbol``), all zeros once the game is over.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from orderchaos.envs.batch import finished_flags
from orderchaos.envs.rules import CELLS, SIZE, State

OBS_VERSION = 1
OBS_SHAPE = (3, SIZE, SIZE)

_BIT_INDEX = np.arange(CELLS, dtype=np.uint64)


def bits_to_cells(bits: np.ndarray) -> np.ndarray:
    """Expand bitboards ``(N,)`` into ``(N, 36)`` int8 arrays of 0/1."""
    b = np.asarray(bits, dtype=np.uint64)
    return ((b[..., None] >> _BIT_INDEX) & np.uint64(1)).astype(np.int8)


def encode_bitboards(x: np.ndarray, o: np.ndarray) -> np.ndarray:
    """Observation planes ``(N, 3, 6, 6)`` int8 for arrays of X and O bitboards."""
    x = np.asarray(x, dtype=np.uint64)
    o = np.asarray(o, dtype=np.uint64)
    xs, os_ = bits_to_cells(x), bits_to_cells(o)
    n = x.shape[0]
    out = np.empty((n, 3, CELLS), dtype=np.int8)
    out[:, 0] = xs
    out[:, 1] = os_
    out[:, 2] = ((xs.sum(1, dtype=np.int32) + os_.sum(1, dtype=np.int32)) & 1)[:, None]
    return out.reshape(n, *OBS_SHAPE)


def state_bitboards(states: Sequence[State]) -> tuple[np.ndarray, np.ndarray]:
    """The X and the O bitboards ``(N,)`` uint64 of a sequence of states."""
    x = np.fromiter((s.x for s in states), dtype=np.uint64, count=len(states))
    o = np.fromiter((s.o for s in states), dtype=np.uint64, count=len(states))
    return x, o


def encode_states(states: Sequence[State]) -> np.ndarray:
    """Observation planes ``(N, 3, 6, 6)`` int8 for a sequence of states."""
    return encode_bitboards(*state_bitboards(states))


def encode_state(state: State) -> np.ndarray:
    """Observation planes ``(3, 6, 6)`` int8 for one state."""
    return encode_states([state])[0]


def action_mask(state: State) -> np.ndarray:
    """The 72-long int8 legal-action mask of one state (all zeros when it is over)."""
    return action_masks([state])[0]


def bitboard_masks(x: np.ndarray, o: np.ndarray) -> np.ndarray:
    """Legal-action masks ``(N, 72)`` int8 for arrays of X and O bitboards (a row of zeros
    for each finished game)."""
    x = np.asarray(x, dtype=np.uint64)
    o = np.asarray(o, dtype=np.uint64)
    empty = 1 - bits_to_cells(x | o)
    empty[finished_flags(x, o)] = 0
    return np.repeat(empty, 2, axis=1)


def action_masks(states: Sequence[State]) -> np.ndarray:
    """Legal-action masks ``(N, 72)`` int8 for a sequence of states (a row of zeros for
    each finished game)."""
    return bitboard_masks(*state_bitboards(states))
