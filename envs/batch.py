"""The batch game engine: N Order and Chaos games stepped at once with array operations.

The same functions run on numpy arrays and on torch tensors (CPU or CUDA): every array
operation goes through a tiny array-namespace shim (:class:`ArrayBackend`) for the few
calls whose spelling differs (creating arrays, casting, copying, masked zeroing); the
rest (``&``, ``|``, ``==``, fancy indexing, ``where``, ``any``, ``sum``) is spelled the
same in both libraries.

Representation (one row per game)
---------------------------------
* ``x``, ``o``: int64 bitboards (36 bits, bit ``c`` set when cell ``c`` holds that symbol).
* ``num_stones``: stones on the board; the side to move is ``num_stones & 1`` (0 Order).
* Per-window stone counts, packed: for each symbol two int64 words of 16 four-bit
  counters, one counter per five-cell window (32 windows), as an ``(n, 2)`` array. A move
  adds one to the counters of the windows through the placed cell only (an increment
  table per symbol, indexed by action; a game's two words are gathered as one 16-byte
  complex128 element, as fast as one int64), so the win check and the live-window test
  are a handful of word operations instead of per-window loops. Each counter is stored
  plus 3, so a count of 5 is the only value with the nibble's high bit set (a five is
  ``(x_word | o_word) & high bits``), and a window is dead once both symbols' counts are
  non-zero (stored counter ``+ 4`` sets the high bit). ``decided`` (no live window left)
  is "every window dead"; ``live_windows`` counts the live ones on demand.
* Observation planes (encoding v1, see :mod:`orderchaos.envs.encoding`) and action masks are kept
  up to date incrementally: a move writes one plane cell and clears two mask entries;
  the to-move plane is stored XOR a batch-wide parity that each step flips (see
  ``_to_move_parity``), so it is only rewritten for games that did not move.

Internally there is a 37th "no-op" cell (index 36, action 72): its bit is 0 and its
counter increments are 0, so a game that should not move this step (``active`` False)
runs through exactly the same array code without changing; its two writes (a plane cell
and a mask pair) go to spare slots, and a few index writes fix what must not change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from orderchaos.envs.array_backend import ArrayBackend
from orderchaos.envs.rules import (
    ACTIONS,
    CELL_WINDOWS,
    CELLS,
    NUM_WINDOWS,
    WINDOWS,
    BoardStringError,
    IllegalActionError,
    State,
    action_name,
    parse_board,
)

ILLEGAL_ACTION_MODES = ("raise", "lose")
NO_WINNER, ORDER_WINS, CHAOS_WINS = -1, 0, 1
"""Values of :attr:`BatchGame.winner`: the index of the winning agent, or -1."""

NOOP_CELL = CELLS
NOOP_ACTION = 2 * NOOP_CELL
_BOARD = (1 << CELLS) - 1
WINDOWS_PER_WORD = 16
COUNTER_BITS = 4


def _signed64(value: int) -> int:
    """A 64-bit pattern as the int64 value with the same bits (for numpy/torch constants)."""
    return int(np.array([value], dtype=np.uint64).view(np.int64)[0])


def _every_counter(value: int) -> int:
    """An int64 word with ``value`` in each of its 16 four-bit counters."""
    return _signed64(sum(value << (COUNTER_BITS * k) for k in range(WINDOWS_PER_WORD)))


_COUNTER_BIAS, _PLUS_4, _HIGH_BITS = _every_counter(3), _every_counter(4), _every_counter(8)
_BYTES_OF_ONES = 0x01010101  # an int32 whose four int8 bytes are all 1

_CELL_BIT = np.array([1 << c for c in range(CELLS)] + [0], dtype=np.int64)
# _ACTION_WINDOW_INC[s, a, w]: +1 on the counter of each window through the cell of
# action a, in word w, when a places symbol s (0 X, 1 O); zero for the other symbol and
# for the no-op actions past 71.
_ACTION_WINDOW_INC = np.zeros((2, ACTIONS + 2, NUM_WINDOWS // WINDOWS_PER_WORD), dtype=np.int64)
for _c, _windows in enumerate(CELL_WINDOWS):
    for _w in _windows:
        for _s in (0, 1):
            _ACTION_WINDOW_INC[_s, 2 * _c + _s, _w // WINDOWS_PER_WORD] += 1 << (
                COUNTER_BITS * (_w % WINDOWS_PER_WORD)
            )
_WINDOW_MASKS = np.array(WINDOWS, dtype=np.int64)
_COUNTER_SHIFT = np.array([COUNTER_BITS * (w % WINDOWS_PER_WORD) for w in range(NUM_WINDOWS)], np.int64)
IMPOSSIBLE_MASK = 1 << 40
"""A window mask no 36-bit board can fill (a bit outside the board): the padding of
:data:`CELL_WINDOW_MASKS`."""
CELL_WINDOW_MASKS = np.full((CELLS + 1, 8), IMPOSSIBLE_MASK, dtype=np.int64)
"""int64 ``(37, 8)``: row ``c`` holds the masks of the (3 to 7) windows through cell ``c``,
padded with :data:`IMPOSSIBLE_MASK` to 8 (so that a row's 8 flags are one int64); row 36
(the no-op cell) is all padding. So
``((bits[:, None] & CELL_WINDOW_MASKS[cell]) == CELL_WINDOW_MASKS[cell]).any(1)`` is "the
stone just placed on ``cell`` completed a five", with no per-cell loop: the one padded
window table of the array code (the compiled kernels and the benchmarks' peers read it too)."""
for _c, _windows in enumerate(CELL_WINDOWS):
    CELL_WINDOW_MASKS[_c, : len(_windows)] = [WINDOWS[_w] for _w in _windows]
_GATHER_BYTE_BITS = 0x0102040810204080


def _line_by_pattern() -> np.ndarray:
    """Bool ``(37 * 256, 36)``: row ``256 * cell + pattern`` holds the cells of the windows
    through ``cell`` picked by the 8-bit ``pattern`` (bit j: the j-th window of
    ``CELL_WINDOW_MASKS[cell]``; padding windows add no cells)."""
    picked = (np.arange(256)[:, None] >> np.arange(8)) & 1  # (256, 8)
    bits = np.bitwise_or.reduce(picked[None] * CELL_WINDOW_MASKS[:, None, :], axis=2)
    cells = (bits[..., None] >> np.arange(CELLS)) & 1  # (37, 256, 36)
    return cells.reshape(-1, CELLS).astype(bool)


class BatchStep(NamedTuple):
    """What :meth:`BatchGame.step` returns, one entry per game (arrays of the backend).

    * ``reward``: float32, for the player who just moved: +1 win, -1 loss, 0 otherwise.
    * ``terminated``: bool, the game ended with this move.
    * ``illegal``: bool, the move was illegal and (``illegal_action="lose"``) lost.
    """

    reward: Any
    terminated: Any
    illegal: Any


BoardsLike = State | str | Sequence[State | str]


class BatchGame:
    """N independent Order and Chaos games stepped together with array operations.

    Args:
        n: number of games (>= 1).
        backend: ``"numpy"`` or ``"torch"``.
        device: ``"cpu"`` (numpy and torch) or any torch device such as ``"cuda"``.
        end_when_decided: end a game as a Chaos win as soon as no five is possible.
        illegal_action: ``"raise"`` (default) raises :class:`IllegalActionError` and
            changes nothing; ``"lose"`` ends each game given an illegal action (out of
            range or occupied cell) as a loss for its mover, without placing a stone.
            Moving in a game that is already over raises in both modes.

    Public arrays (one entry per game; read them, do not write them): ``x``, ``o``,
    ``num_stones``, ``terminated``, ``winner`` (int8: -1 none, 0 Order, 1 Chaos),
    ``last_action`` (-1 before the first move); properties ``to_play``, ``decided``,
    ``live_windows``.

    Example::

        game = BatchGame(1024)
        masks = game.action_masks()          # (1024, 72) int8
        result = game.step(actions)          # rewards for the movers, terminations
        game.reset(idx=result.terminated)    # start the finished games again
    """

    def __init__(
        self,
        n: int,
        backend: str = "numpy",
        device: str = "cpu",
        *,
        end_when_decided: bool = False,
        illegal_action: str = "raise",
    ) -> None:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"n (the number of games) must be a positive int, got {n!r}")
        if illegal_action not in ILLEGAL_ACTION_MODES:
            raise ValueError(
                f"illegal_action must be one of {ILLEGAL_ACTION_MODES}, got {illegal_action!r}"
            )
        self.xp = ArrayBackend(backend, device)
        self.n = int(n)
        self.end_when_decided = bool(end_when_decided)
        self.illegal_action = illegal_action
        xp = self.xp
        self._cell_bit = xp.asarray(_CELL_BIT)
        # Each action's two increment words as one complex128 (bits only, never arithmetic).
        self._inc_x, self._inc_o = (
            xp.asarray(table).view(xp.complex128).reshape(-1) for table in _ACTION_WINDOW_INC
        )
        self._window_masks = xp.asarray(_WINDOW_MASKS)
        self._cell_window_masks = xp.asarray(CELL_WINDOW_MASKS)
        self._line_by_pattern = xp.asarray(_line_by_pattern())
        self._counter_shift = xp.asarray(_COUNTER_SHIFT)
        self._rows = xp.arange(self.n)
        self.x = xp.zeros((self.n,), xp.int64)
        self.o = xp.zeros((self.n,), xp.int64)
        self.num_stones = xp.zeros((self.n,), xp.int64)
        words = NUM_WINDOWS // WINDOWS_PER_WORD
        # (n, 2), also viewed as (n,) complex128 so that a reset writes one element per game.
        self._count_x = xp.full((self.n, words), _COUNTER_BIAS, xp.int64)
        self._count_o = xp.full((self.n, words), _COUNTER_BIAS, xp.int64)
        self._count_x_pairs = self._count_x.view(xp.complex128).reshape(-1)
        self._count_o_pairs = self._count_o.view(xp.complex128).reshape(-1)
        self._empty_count_pair = xp.full((1, words), _COUNTER_BIAS, xp.int64).view(xp.complex128)[0]
        self.terminated = xp.zeros((self.n,), xp.bool_)
        self.winner = xp.full((self.n,), NO_WINNER, xp.int8)
        self.last_action = xp.full((self.n,), -1, xp.int64)
        # Planes (n, 3, 36) and masks (n, 72) live in flat buffers with one spare slot
        # at the end: moves write through the flat views at ``row * row_size + column``
        # (faster than 2-D fancy indexing), and games that do not move write the spare.
        plane_size = 3 * CELLS
        self._planes_1d = xp.zeros((self.n * plane_size + 4,), xp.int8)
        self._planes = self._planes_1d[: self.n * plane_size].reshape(self.n, 3, CELLS)
        self._planes_spare = self.n * plane_size
        # The stored to-move plane is the side to move XOR ``_to_move_parity``: a step in
        # which every game moves flips the parity instead of rewriting 36 bytes per game,
        # and observations() applies it while copying (one XOR with a fixed pattern). The
        # planes as int32 words (rows are 108 = 27 * 4 bytes) for that XOR and for
        # flipping the to-move plane of games that did not move.
        self._to_move_parity = 0
        self._plane_words = self._planes_1d.view(xp.int32)[: self.n * plane_size // 4]
        self._to_move_words = self._plane_words.reshape(self.n, 27)[:, 18:]
        pattern = xp.zeros((self.n, 27), xp.int32)
        pattern[:, 18:] = _BYTES_OF_ONES
        self._to_move_pattern = pattern.reshape(-1)
        self._empty_planes = xp.zeros((2, 3, CELLS), xp.int8)
        self._empty_planes[1, 2] = 1  # an empty board under parity 1
        self._mask_1d = xp.zeros((self.n * ACTIONS + 2,), xp.int8)
        self._mask = self._mask_1d[: self.n * ACTIONS].reshape(self.n, ACTIONS)
        # Both mask entries of a cell as one int16, so a move clears them in one write.
        self._mask_pairs_1d = self._mask_1d.view(xp.int16)
        self._pairs_spare = self.n * CELLS
        self._planes_base = self._rows * plane_size
        self._pairs_base = self._rows * CELLS
        self.reset()

    # -- construction and conversion ---------------------------------------------------
    @classmethod
    def from_states(
        cls, states: Sequence[State], backend: str = "numpy", device: str = "cpu", **kwargs: Any
    ) -> "BatchGame":
        """A batch holding one game per state (terminal states are marked terminated)."""
        states = list(states)
        game = cls(len(states), backend, device, **kwargs)
        game.reset(boards=states)
        return game

    def states(self, idx: Any = None) -> list[State]:
        """The positions of the games (all, or the rows ``idx``) as scalar States."""
        rows = self._rows_of(idx)
        xs = self.xp.to_numpy(self.x[rows]).reshape(-1)
        os_ = self.xp.to_numpy(self.o[rows]).reshape(-1)
        return [State(int(a), int(b)) for a, b in zip(xs, os_)]

    def reset(self, idx: Any = None, boards: BoardsLike | None = None) -> None:
        """Start games again: all of them, or the rows ``idx`` (int indices or a boolean
        vector of length n), from the empty board or from ``boards`` (one State or board
        string for all, or one per selected row). Terminal boards are accepted and are
        marked terminated with their winner."""
        rows = self._rows_of(idx)
        count = self.n if isinstance(rows, slice) else int(rows.shape[0])
        if count == 0:
            return
        if boards is None:
            self._load_empty(rows)
            return
        states = _states_from_boards(boards, count)
        x = self.xp.asarray([s.x for s in states], self.xp.int64)
        o = self.xp.asarray([s.o for s in states], self.xp.int64)
        self._load(rows, x, o)

    def _load_empty(self, rows: Any, to_move_parity: int | None = None) -> None:
        """Put the empty board into ``rows`` (the autoreset hot path: nothing to compute),
        its to-move plane stored under ``to_move_parity`` (default: the current one)."""
        if to_move_parity is None:
            to_move_parity = self._to_move_parity
        for array in (self.x, self.o, self.num_stones):
            array[rows] = 0
        self._count_x_pairs[rows] = self._empty_count_pair
        self._count_o_pairs[rows] = self._empty_count_pair
        self.terminated[rows] = False
        self.winner[rows] = NO_WINNER
        self.last_action[rows] = -1
        self._planes[rows] = self._empty_planes[to_move_parity]
        self._mask[rows] = 1

    def _rows_of(self, idx: Any) -> Any:
        """Normalise a row selection to an int64 index vector (or a full slice)."""
        if idx is None:
            return slice(None)
        xp = self.xp
        rows = xp.asarray(idx)
        if rows.ndim == 0:
            rows = rows.reshape(1)
        if rows.ndim != 1:
            raise ValueError(f"idx must be a 1-D index or boolean vector, got shape {tuple(rows.shape)}")
        if rows.dtype == xp.bool_:
            if rows.shape[0] != self.n:
                raise ValueError(
                    f"a boolean idx must have one entry per game ({self.n}), got {rows.shape[0]}"
                )
            return xp.nonzero(rows)
        if rows.shape[0] == 0:
            return xp.astype(rows, xp.int64)
        if rows.dtype.is_floating_point if xp.name == "torch" else rows.dtype.kind not in "iu":
            raise ValueError(f"idx must hold integers or booleans, got dtype {rows.dtype}")
        rows = xp.astype(rows, xp.int64)
        if bool((rows.min() < 0) | (rows.max() >= self.n)):
            raise ValueError(f"idx entries must lie in 0..{self.n - 1}")
        return rows

    def _load(self, rows: Any, x: Any, o: Any) -> None:
        """Write bitboards ``x``, ``o`` into ``rows`` and rebuild everything derived."""
        xp = self.xp
        bits = self._cell_bit[:CELLS]
        cells_x = (x[:, None] & bits) != 0
        cells_o = (o[:, None] & bits) != 0
        if bool((cells_x & cells_o).any()):
            raise BoardStringError("a board has a cell holding both X and O")
        ones_x = xp.astype(cells_x, xp.int64)
        ones_o = xp.astype(cells_o, xp.int64)
        stones = ones_x.sum(1) + ones_o.sum(1)
        count_x = self._packed_window_counts(x)
        count_o = self._packed_window_counts(o)
        five = _has_five(count_x, count_o)
        done = five | (stones == CELLS)
        if self.end_when_decided:
            done |= _all_dead(count_x, count_o)
        planes = xp.zeros((stones.shape[0], 3, CELLS), xp.int8)
        planes[:, 0] = xp.astype(cells_x, xp.int8)
        planes[:, 1] = xp.astype(cells_o, xp.int8)
        planes[:, 2] = xp.astype((stones & 1) ^ self._to_move_parity, xp.int8)[:, None]
        empty = xp.astype(~(cells_x | cells_o), xp.int8)
        mask = xp.zeros((stones.shape[0], CELLS, 2), xp.int8)
        mask[:, :, 0] = empty
        mask[:, :, 1] = empty
        mask = mask.reshape(-1, ACTIONS)
        xp.zero_rows(mask, done)
        self.x[rows] = x
        self.o[rows] = o
        self.num_stones[rows] = stones
        self._count_x[rows] = count_x
        self._count_o[rows] = count_o
        self.terminated[rows] = done
        winner = xp.lib.where(five, ORDER_WINS, xp.lib.where(done, CHAOS_WINS, NO_WINNER))
        self.winner[rows] = xp.astype(winner, xp.int8)
        self.last_action[rows] = -1
        self._planes[rows] = planes
        self._mask[rows] = mask

    def _packed_window_counts(self, bits: Any) -> Any:
        """Per-window stone counts ``(k, 2)`` packed into 4-bit counters (stored plus
        3), from the bitboards ``(k,)`` of one symbol."""
        return _packed_counts(bits, self._window_masks, self._counter_shift)

    # -- views ---------------------------------------------------------------------------
    def observations(self) -> Any:
        """Observation planes ``(n, 3, 6, 6)`` int8 (encoding v1), a fresh copy."""
        if self._to_move_parity:
            planes = (self._plane_words ^ self._to_move_pattern).view(self.xp.int8)
        else:
            planes = self.xp.copy(self._planes)
        return planes.reshape(self.n, 3, 6, 6)

    def action_masks(self) -> Any:
        """Legal-action masks ``(n, 72)`` int8 (all zeros for finished games), a fresh copy."""
        return self.xp.copy(self._mask)

    @property
    def to_play(self) -> Any:
        """Index of the side to move per game: 0 Order, 1 Chaos."""
        return self.num_stones & 1

    @property
    def decided(self) -> Any:
        """True per game once no five is possible any more (every window holds both)."""
        return _all_dead(self._count_x, self._count_o)

    @property
    def live_windows(self) -> Any:
        """How many of the 32 windows per game can still become a five (int64)."""
        dead = (self._count_x + _PLUS_4) & (self._count_o + _PLUS_4) & _HIGH_BITS
        return NUM_WINDOWS - _popcount(dead).sum(1)

    def winning_lines(self, idx: Any = None) -> Any:
        """Bool ``(k, 36)``: the cells of every complete window of the selected games."""
        rows = self._rows_of(idx)
        x = self.x[rows].reshape(-1)
        o = self.o[rows].reshape(-1)
        w = self._window_masks
        complete = ((x[:, None] & w) == w) | ((o[:, None] & w) == w)
        # OR the masks of the complete windows by halving (torch has no OR-reduction).
        bits = self.xp.lib.where(complete, w, 0)
        while bits.shape[1] > 1:
            half = bits.shape[1] // 2
            bits = bits[:, :half] | bits[:, half:]
        return (bits & self._cell_bit[:CELLS]) != 0

    def last_move_lines(self, idx: Any = None) -> Any:
        """Bool ``(k, 36)``: the cells of the complete windows through the last move of
        the selected games (all False before a game's first move).

        This is the winning line of a game that has just ended with a five (a five can
        only appear through the stone just placed), found from the (up to 8) windows
        through that cell and a table lookup, instead of :meth:`winning_lines`' scan of
        all 32 windows.
        """
        return self._last_move_lines(self._rows_of(idx))

    def _last_move_lines(self, rows: Any) -> Any:
        """:meth:`last_move_lines` for already normalised ``rows``."""
        last = self.last_action[rows].reshape(-1)
        cell = last >> 1  # -1 before the first move: row -1 is the no-op cell's padding
        masks = self._cell_window_masks[cell]
        x, o = self.x[rows].reshape(-1), self.o[rows].reshape(-1)
        placed = self.xp.lib.where((last & 1) == 1, o, x)
        complete = (placed[:, None] & masks) == masks
        # The 8 flags are 8 bytes: one multiply gathers byte j's low bit into bit 56 + j
        # (no carries), far cheaper than a weighted sum along a length-8 axis.
        pattern = ((complete.view(self.xp.int64)[:, 0] * _GATHER_BYTE_BITS) >> 56) & 0xFF
        # With no move yet the pattern is 0 and -256 wraps to the no-op cell's block.
        return self._line_by_pattern[cell * 256 + pattern]

    # -- the move ------------------------------------------------------------------------
    def step(self, actions: Any, active: Any = None, *, restart: Any = None) -> BatchStep:
        """Play one action in every game (or only where the boolean vector ``active`` is
        true; the other games do not change and report reward 0, not terminated).

        ``actions``: integer array-like of shape ``(n,)``, ``a = 2*cell + symbol``.
        ``restart`` (instead of ``active``): boolean vector of games that ignore their
        action and start again from the empty board, reporting reward 0, not terminated
        (Gymnasium's next-step autoreset, cheaper than ``step(actions, active=~restart)``
        followed by ``reset(idx=restart)``, with the same result).
        Raises :class:`IllegalActionError` naming the first bad game (and changing no
        game) when an action is illegal in ``"raise"`` mode, or any game asked to move
        is already over.
        """
        xp = self.xp
        a = self._check_action_array(actions)
        if restart is not None:
            if active is not None:
                raise ValueError("give active or restart, not both")
            restart = xp.asarray(restart, xp.bool_)
            if tuple(restart.shape) != (self.n,):
                raise ValueError(f"restart must be a boolean vector of shape ({self.n},)")
            active = ~restart
        if active is not None:
            active = xp.asarray(active, xp.bool_)
            if tuple(active.shape) != (self.n,):
                raise ValueError(f"active must be a boolean vector of shape ({self.n},)")
        out_of_range = None
        if xp.any_outside(a, ACTIONS):
            out_of_range = self._out_of_range(a, active)
            a = xp.lib.where(out_of_range, NOOP_ACTION, a)
        # Rows that do not move (inactive, or illegal in "lose" mode), as indices: a few
        # index writes after the whole-batch updates are cheaper than masking them all.
        idle = None
        if active is not None:
            idle = xp.nonzero(~active)
            a = xp.copy(a)  # never write into the caller's array
            a[idle] = NOOP_ACTION
        cell = a >> 1
        bit = 1 << cell
        if out_of_range is not None:
            bit &= _BOARD  # 0 for the no-op cell
        elif idle is not None:
            bit[idle] = 0
        illegal = ((self.x | self.o) & bit) != 0
        illegal |= self.terminated
        if out_of_range is not None:
            illegal |= out_of_range
        if idle is not None:
            illegal[idle] = False
        any_illegal = bool(illegal.any())
        if any_illegal:
            self._raise_if_needed(a, illegal)
            a = xp.lib.where(illegal, NOOP_ACTION, a)
            cell = a >> 1
            bit = (1 << cell) & _BOARD
            idle = xp.nonzero(bit == 0)
        # Restarting games become empty boards now (no error can follow) and then sit
        # this move out like inactive ones. When they are the only idle games, their
        # to-move plane is written for the parity after this step, so the flip of idle
        # rows below is not needed.
        flip_idle = idle is not None
        if restart is not None:
            flip_idle = any_illegal
            restarted = idle if not any_illegal else xp.nonzero(restart)
            self._load_empty(restarted, self._to_move_parity ^ (not any_illegal))

        symbol = a & 1
        x_select = symbol - 1  # all ones when X is placed, 0 for O
        x_bit = bit & x_select
        self.x |= x_bit
        self.o |= bit ^ x_bit
        self._count_x += self._inc_x[a].view(xp.int64).reshape(self.n, 2)
        self._count_o += self._inc_o[a].view(xp.int64).reshape(self.n, 2)
        # Before this move no five stood, so any five now went through the placed cell.
        five = _has_five(self._count_x, self._count_o)

        self.num_stones += 1
        if idle is not None:
            self.num_stones[idle] -= 1
        to_play = xp.astype(self.num_stones, xp.int8) & 1  # int8 first: cheaper ops
        ended = five | (self.num_stones == CELLS)
        if self.end_when_decided:
            ended |= self.decided
        if idle is not None:
            ended[idle] = False
        # The mover wins with a five exactly when the mover is Order, i.e. when the side
        # to move now is Chaos; without a five the game went to Chaos. (int8 arithmetic:
        # much cheaper than int64.)
        mover_won = xp.astype(five == (to_play == 1), xp.int8)
        mover_won += mover_won
        mover_won -= 1
        mover_won *= ended
        reward = xp.astype(mover_won, xp.float32)
        # A game that ends had no winner (-1) yet: add 1 (ORDER_WINS) with a five, else 2.
        won = 2 - xp.astype(five, xp.int8)
        won *= ended
        # In-place updates keep the public arrays the same objects across steps.
        self.winner += won
        if any_illegal:
            reward = xp.lib.where(illegal, -1.0, reward)
            # No stone went down, so the side to move is the mover, who loses.
            self.winner[:] = xp.lib.where(illegal, 1 - to_play, self.winner)
            ended |= illegal
        self.terminated |= ended
        if idle is None:
            self.last_action[:] = a
        else:
            kept = self.last_action[idle]
            self.last_action[:] = a
            self.last_action[idle] = kept

        pair_at = self._pairs_base + cell
        if idle is not None:
            pair_at[idle] = self._pairs_spare
        plane_at = symbol * CELLS
        plane_at += cell
        plane_at += self._planes_base
        if idle is not None:
            plane_at[idle] = self._planes_spare
        self._planes_1d[plane_at] = 1
        self._to_move_parity ^= 1
        if flip_idle:  # the side to move of idle games did not change
            # (A read of one word and a row write: numpy's fancy ``^=`` is slower.)
            flipped = self._to_move_words[idle, 0] ^ _BYTES_OF_ONES
            self._to_move_words[idle] = flipped[:, None]
        self._mask_pairs_1d[pair_at] = 0
        xp.zero_rows(self._mask, ended)
        return BatchStep(reward, ended, illegal)

    def _check_action_array(self, actions: Any) -> Any:
        """``actions`` as an int64 vector of shape ``(n,)``, or a clear error."""
        xp = self.xp
        a = xp.asarray(actions)
        if tuple(a.shape) != (self.n,):
            raise IllegalActionError(
                f"actions must have shape ({self.n},), one per game, got {tuple(a.shape)}"
            )
        is_int = (not a.dtype.is_floating_point and not a.dtype.is_complex and a.dtype != xp.bool_) if (
            xp.name == "torch"
        ) else a.dtype.kind in "iu"
        if not is_int:
            raise IllegalActionError(
                f"actions must be integers in 0..{ACTIONS - 1} (2*cell + symbol), got dtype {a.dtype}"
            )
        return xp.astype(a, xp.int64) if a.dtype != xp.int64 else a

    def _out_of_range(self, a: Any, active: Any) -> Any:
        """Flags for active games whose action lies outside 0..71; in "raise" mode,
        raise for the first such game instead."""
        xp = self.xp
        out = (a < 0) | (a >= ACTIONS)
        if active is not None:
            out &= active
        if self.illegal_action == "raise" and bool(out.any()):
            i = int(xp.to_numpy(xp.nonzero(out))[0])
            raise IllegalActionError(
                f"game {i}: action {int(a[i])} is outside 0..{ACTIONS - 1} "
                "(action = 2*cell + symbol, cell 0..35, symbol 0=X 1=O)"
            )
        return out

    def _raise_if_needed(self, a: Any, illegal: Any) -> None:
        """Raise for the first illegal game unless it may lose instead."""
        xp = self.xp
        over = illegal & self.terminated
        if self.illegal_action == "lose" and not bool(over.any()):
            return
        bad = over if bool(over.any()) else illegal
        i = int(xp.to_numpy(xp.nonzero(bad))[0])
        action = int(a[i])
        if bool(self.terminated[i]):
            who = ("Order", "Chaos")[int(self.winner[i])]
            raise IllegalActionError(
                f"game {i} is over ({who} won); no action is legal, reset it first"
            )
        raise IllegalActionError(
            f"game {i}: action {action} ({action_name(action)}) is on an occupied cell; "
            "choose an empty cell"
        )


def _states_from_boards(boards: BoardsLike, count: int) -> list[State]:
    """One State per selected row from a State, a board string, or a sequence of them."""
    if isinstance(boards, (State, str)):
        single = boards if isinstance(boards, State) else parse_board(boards)
        return [single] * count
    items = list(boards)
    if len(items) != count:
        raise BoardStringError(f"got {len(items)} boards for {count} games; give one per game")
    return [b if isinstance(b, State) else parse_board(b) for b in items]


def _packed_counts(bits: Any, window_masks: Any, counter_shift: Any) -> Any:
    """Per-window stone counts ``(k, 2)`` packed into 4-bit counters (stored plus 3), from
    the bitboards ``(k,)`` of one symbol (``window_masks`` and ``counter_shift`` as arrays
    of the backend)."""
    per_window = _popcount(bits[:, None] & window_masks)
    shifted = per_window << counter_shift
    words = shifted.reshape(-1, NUM_WINDOWS // WINDOWS_PER_WORD, WINDOWS_PER_WORD).sum(2)
    return words + _COUNTER_BIAS


def finished_flags(x: Any, o: Any) -> np.ndarray:
    """Bool ``(N,)``: which positions, given as numpy X and O bitboards ``(N,)``, are over: a
    five stands or the board is full (the batch engine's own test, for code that holds
    positions as plain arrays rather than in a :class:`BatchGame`)."""
    x = np.asarray(x).astype(np.int64)
    o = np.asarray(o).astype(np.int64)
    five = _has_five(_packed_counts(x, _WINDOW_MASKS, _COUNTER_SHIFT), _packed_counts(o, _WINDOW_MASKS, _COUNTER_SHIFT))
    return five | ((x | o) == _BOARD)


def _has_five(count_x: Any, count_o: Any) -> Any:
    """Per game: some window count (of either symbol) has reached 5 (stored counters:
    only a count of 5 sets a nibble's high bit)."""
    both = count_x | count_o
    either_word = both[:, 0] | both[:, 1]
    either_word &= _HIGH_BITS
    return either_word != 0


def _all_dead(count_x: Any, count_o: Any) -> Any:
    """Per game: every window holds both symbols (both counts non-zero)."""
    dead = count_x + _PLUS_4
    dead &= count_o + _PLUS_4
    both_words = dead[:, 0] & dead[:, 1]
    both_words &= _HIGH_BITS
    return both_words == _HIGH_BITS


def _popcount(words: Any) -> Any:
    """Set bits per int64 entry (SWAR; correct for negative words too, since every
    shifted term is masked before use)."""
    v = words - ((words >> 1) & _M1)
    v = (v & _M2) + ((v >> 2) & _M2)
    v = (v + (v >> 4)) & _M4
    return ((v * _H01) >> 56) & 0xFF  # the top byte collects the byte sums


_M1 = _signed64(0x5555555555555555)
_M2 = _signed64(0x3333333333333333)
_M4 = _signed64(0x0F0F0F0F0F0F0F0F)
_H01 = _signed64(0x0101010101010101)
