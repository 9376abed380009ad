"""Numba kernels for random playouts on raw bitboards, with an explicit random stream.

The rules are not re-derived here: the playouts use the compiled helpers of
:mod:`orderchaos.agents.compiled_rules` (``places_five``: a placed stone wins when it fills one of the
windows through its cell) and the game ends for Chaos when the board fills. Tests replay every
playout in the scalar engine to check that both agree.

Randomness comes from a xorshift64* generator whose state is a one-element ``uint64`` array
owned by the caller, so no global random state is ever touched.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from orderchaos.agents.base import SeedLike, make_rng
from orderchaos.agents.compiled_rules import empty_cells, places_five, popcount
from orderchaos.envs.rules import CELLS, ORDER, CHAOS, State

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_STAR = np.uint64(0x2545F4914F6CDD1D)


def seed_stream(seed: SeedLike) -> np.ndarray:
    """A fresh one-element ``uint64`` xorshift state drawn from a seed-like value."""
    raw = int(make_rng(seed).integers(1, 2**63))
    return np.array([splitmix64(np.uint64(raw))], dtype=np.uint64)


@njit(cache=True)
def splitmix64(value: np.uint64) -> np.uint64:
    """Scramble a seed into a well-mixed, non-zero 64-bit generator state."""
    z = value + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    z = z ^ (z >> np.uint64(31))
    if z == np.uint64(0):
        z = _GOLDEN
    return z


@njit(cache=True)
def rand_below(stream: np.ndarray, n: int) -> int:
    """A random integer in ``[0, n)`` (n < 2**32) from the xorshift64* stream ``stream``."""
    s = stream[0]
    s ^= s >> np.uint64(12)
    s ^= s << np.uint64(25)
    s ^= s >> np.uint64(27)
    stream[0] = s
    high = (s * _STAR) >> np.uint64(32)
    return int((high * np.uint64(n)) >> np.uint64(32))


@njit(cache=True)
def playout(
    x: np.int64,
    o: np.int64,
    stream: np.ndarray,
    trace: np.ndarray,
) -> tuple[int, int]:
    """Play uniformly random legal actions from a non-terminal position to the end.

    Returns ``(outcome, plies)``: outcome +1 when Order wins (a five), -1 when Chaos wins (a
    full board without one); the actions played are written to ``trace[:plies]``.
    """
    empties = np.empty(CELLS, dtype=np.int64)
    n = empty_cells(x | o, empties)
    plies = 0
    one = np.int64(1)
    while n > 0:
        k = rand_below(stream, 2 * n)
        i = k >> 1
        cell = empties[i]
        empties[i] = empties[n - 1]
        n -= 1
        trace[plies] = 2 * cell + (k & 1)
        plies += 1
        if k & 1 == 0:
            x |= one << cell
            if places_five(x, cell):
                return 1, plies
        else:
            o |= one << cell
            if places_five(o, cell):
                return 1, plies
    return -1, plies


@njit(cache=True)
def rollout_value(
    x: np.int64,
    o: np.int64,
    n_rollouts: int,
    stream: np.ndarray,
    trace: np.ndarray,
) -> float:
    """Mean outcome of ``n_rollouts`` random playouts, from the view of the player to move."""
    stones = popcount(x | o)
    total = 0.0
    for _ in range(n_rollouts):
        outcome, _plies = playout(x, o, stream, trace)
        total += outcome
    mean = total / n_rollouts
    return mean if stones % 2 == 0 else -mean


@njit(cache=True)
def rollout_values(
    xs: np.ndarray,
    os_: np.ndarray,
    n_rollouts: int,
    stream: np.ndarray,
) -> np.ndarray:
    """:func:`rollout_value` for a batch of positions, using one random stream in order."""
    out = np.empty(xs.shape[0], dtype=np.float32)
    trace = np.empty(CELLS, dtype=np.int64)
    for i in range(xs.shape[0]):
        out[i] = rollout_value(xs[i], os_[i], n_rollouts, stream, trace)
    return out


def random_playout(state: State, seed: SeedLike = None) -> tuple[str, list[int]]:
    """One random playout from a non-terminal ``state``: the winner and the actions played."""
    if state.is_terminal:
        raise ValueError(f"random_playout needs a non-terminal state; {state.winner} has already won")
    trace = np.empty(CELLS, dtype=np.int64)
    outcome, plies = playout(np.int64(state.x), np.int64(state.o), seed_stream(seed), trace)
    return (ORDER if outcome > 0 else CHAOS), [int(a) for a in trace[:plies]]
