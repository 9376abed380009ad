"""Order's central-pairing strategy: a proof that Order wins, and a player that never loses as Order.

The board splits into the central 4x4 square (b2..e5, 16 cells) and the 20 border cells.
Each of the 10 lines of the centre (4 rows, 4 columns, the diagonals b2-e5 and e2-b5)
runs on to one border cell at each end; these 10 pairs (:data:`PAIRS`) are exactly the
20 border cells.

* **Border rule.** When Chaos plays a border cell, Order answers on its partner with the
  other symbol (unless Order can complete a five at once). So after each Order move every
  pair is empty or holds one X and one O.
* **Lemma.** Four equal symbols on a central line win for Order within two plies: with
  both ends empty, whichever end gets the same symbol makes a five (a six counts), Chaos
  can spoil only one end and the border rule fills the other with the right symbol; with
  the ends holding X and O, one of them already completes a five.
* **Reduction.** A Chaos border move and Order's answer leave the centre as it was, so
  the game reduces to the *centre game*: on the 4x4, either side places X or O, Order
  moving first, and Order wins as soon as one of the 10 central lines holds four equal
  symbols; Chaos wins when the 4x4 fills without one. :func:`centre_table` solves it
  exhaustively (3**16 positions): Order wins it from the empty 4x4.

A position is *covered* (:func:`covers`) when this argument proves it an Order win:
Order can complete a five now; or every pair is empty or mixed and the centre, with the
side to move that the stone count gives, is won for Order in the centre game; or, with
Order to move, one pair holds a single stone (Chaos has just played it), the others are
empty or mixed, and the centre is won for Order with Chaos to move. :func:`move` gives
Order's move in a covered position; :class:`StrategyAgent` (spec ``strategy``) plays it.
"""

from __future__ import annotations

import threading

import numpy as np
from numba import njit

from orderchaos.envs.rules import (
    ACTIONS,
    ORDER,
    IllegalActionError,
    State,
    action_name,
    cell_name,
    parse_cell,
    threat_pairs,
)

CENTRE_CELLS: tuple[int, ...] = tuple((r + 1) * 6 + c + 1 for r in range(4) for c in range(4))
"""The 16 cells of the central 4x4, row-major b2, c2, d2, e2, b3, ..., e5."""
CENTRE_LINES: tuple[tuple[int, ...], ...] = (
    *(tuple(4 * r + c for c in range(4)) for r in range(4)),
    *(tuple(4 * r + c for r in range(4)) for c in range(4)),
    (0, 5, 10, 15),
    (3, 6, 9, 12),
)
"""The 10 central lines as centre indices (0..15): rows 2-5, columns b-e, b2-e5, e2-b5."""
PAIRS: tuple[tuple[int, int], ...] = (
    *(((r + 1) * 6, (r + 1) * 6 + 5) for r in range(4)),
    *((c + 1, 30 + c + 1) for c in range(4)),
    (0, 35),
    (5, 30),
)
"""The border pairs as 6x6 cells, in the order of :data:`CENTRE_LINES`: pair ``i`` holds
the two ends of central line ``i`` (a2/f2 ... a5/f5, b1/b6 ... e1/e6, a1/f6, f1/a6)."""
PARTNER: dict[int, int] = {p: q for a, b in PAIRS for p, q in ((a, b), (b, a))}
"""Each border cell's partner."""
FIRST_MOVE = 2 * parse_cell("c3")
"""Order's first move from the empty board: c3 X (the certificate's first move)."""

CHAOS_WINS = -1
"""Table value of a centre-game position that Chaos wins."""
_POW3 = np.array([3**i for i in range(16)], dtype=np.int64)
_LINE_MASKS = np.array([sum(1 << i for i in line) for line in CENTRE_LINES], dtype=np.int64)


@njit(cache=True)
def centre_bits(idx: int) -> tuple[int, int]:
    """The 16-bit X and O boards of centre-game index ``idx`` (compiled; see
    :func:`centre_index`)."""
    x = 0
    o = 0
    rest = idx
    for i in range(16):
        d = rest % 3
        rest //= 3
        if d == 1:
            x |= 1 << i
        elif d == 2:
            o |= 1 << i
    return x, o


@njit(cache=True, nogil=True)
def _solve_centre(pow3: np.ndarray, line_masks: np.ndarray) -> np.ndarray:
    """Retrograde solve of the centre game over all 3**16 boards (index: base-3 digits,
    0 empty, 1 X, 2 O, digit i for centre cell i). Placing a stone raises the index, so a
    pass from the top index down sees every child before its parent. The value is the
    number of plies to a line of four with best play (0: one stands already; Order
    hastens, Chaos delays), or CHAOS_WINS. The mover is Order when the stone count is even.
    It releases the GIL while it runs (seconds): a server building the table in a thread
    keeps answering."""
    n = 3**16
    table = np.empty(n, dtype=np.int8)
    for idx in range(n - 1, -1, -1):
        x, o = centre_bits(idx)
        done = False
        for m in line_masks:
            if x & m == m or o & m == m:
                done = True
                break
        if done:
            table[idx] = 0
            continue
        occupied = x | o
        if occupied == 0xFFFF:
            table[idx] = -1
            continue
        stones = 0
        for i in range(16):
            stones += occupied >> i & 1
        order_moves = stones % 2 == 0
        best = -1 if order_moves else 0
        for i in range(16):
            if occupied >> i & 1:
                continue
            for s in range(1, 3):
                v = table[idx + s * pow3[i]]
                if order_moves:
                    if v >= 0 and (best < 0 or v + 1 < best):
                        best = v + 1
                elif v < 0:
                    best = -1
                    break
                elif v + 1 > best:
                    best = v + 1
            if not order_moves and best < 0:
                break
        table[idx] = best
    return table


_TABLE: np.ndarray | None = None
_TABLE_LOCK = threading.Lock()


def centre_table() -> np.ndarray:
    """The solved centre game: an int8 array over the 3**16 centre boards (see
    :func:`centre_index`), each the plies to a line of four with best play, or
    :data:`CHAOS_WINS`. Built on first use (a few seconds) and kept for the process; threads
    asking while it is built wait for that one build."""
    global _TABLE
    if _TABLE is None:
        with _TABLE_LOCK:
            if _TABLE is None:
                _TABLE = _solve_centre(_POW3, _LINE_MASKS)
    return _TABLE


def centre_index(state: State) -> int:
    """The centre-game index of ``state``'s central 4x4 (base 3, cell i of the centre the
    i-th digit: 0 empty, 1 X, 2 O)."""
    idx = 0
    for i, c in enumerate(CENTRE_CELLS):
        if state.x >> c & 1:
            idx += 3**i
        elif state.o >> c & 1:
            idx += 2 * 3**i
    return idx


def centre_string(state: State) -> str:
    """The central 4x4 as 16 characters of X, O and ``.``, row-major b2..e5."""
    return "".join(state.cell(c) for c in CENTRE_CELLS)


def pair_states(state: State) -> tuple[list[int], bool]:
    """The pairs (indices into :data:`PAIRS`) holding exactly one stone, and whether every
    other pair is empty or mixed (one X and one O); when it is not, the list may stop short."""
    half: list[int] = []
    for i, (p, q) in enumerate(PAIRS):
        stones = (state.x >> p & 1) + (state.o >> p & 1) + (state.x >> q & 1) + (state.o >> q & 1)
        if stones == 1:
            half.append(i)
        elif stones == 2 and (state.x >> p & 1) == (state.x >> q & 1):
            return half, False  # two equal symbols: outside the strategy
    return half, True


def covers(state: State) -> bool:
    """True when the strategy proves ``state`` (not finished, either side to move) an Order
    win: see the module docstring. Cheap: a few bit tests and one table lookup (the table
    is built on the first lookup)."""
    if state.is_terminal:
        return False
    order_to_move = state.to_play == ORDER
    if order_to_move and threat_pairs(state.x, state.o):
        return True
    half, ok = pair_states(state)
    if not ok or len(half) > (1 if order_to_move else 0):
        return False
    return bool(centre_table()[centre_index(state)] >= 0)


def centre_moves(state: State) -> list[tuple[int, int]]:
    """Order's winning centre-game moves in ``state`` (Order to move in the centre game),
    as ``(plies to the line of four after the move, action)``, fastest first."""
    table, base = centre_table(), centre_index(state)
    out = []
    for i, c in enumerate(CENTRE_CELLS):
        if (state.x | state.o) >> c & 1:
            continue
        for s in (0, 1):
            v = int(table[base + (s + 1) * 3**i])
            if v >= 0:
                out.append((v, 2 * c + s))
    return sorted(out)


def move(state: State) -> int:
    """Order's move in a covered position (:func:`covers`, Order to move): complete a five
    when one can be; else answer a Chaos border move on the partner with the other symbol;
    else the centre-game move that makes a line of four soonest (lowest action on ties;
    c3 X on the empty board). Raises ValueError for a position the strategy does not cover."""
    if state.to_play != ORDER or not covers(state):
        raise ValueError(f"the strategy does not cover {state.to_string()} ({state.to_play} to move)")
    fives = threat_pairs(state.x, state.o)
    if fives:
        cell, symbol = fives[0]
        return 2 * cell + symbol
    half, _ = pair_states(state)
    if half:
        p, q = PAIRS[half[0]]
        if (state.x | state.o) >> q & 1:
            p, q = q, p
        return 2 * q + (1 if state.x >> p & 1 else 0)
    if state.num_stones == 0:
        return FIRST_MOVE
    return centre_moves(state)[0][1]


def keeps_win(state: State, action: int) -> bool:
    """Whether Order's ``action`` in ``state`` (Order to move, ``action`` legal) ends with a
    win the strategy proves: it completes a five, or the position after it is covered
    (:func:`covers`). Raises IllegalActionError for an illegal action."""
    child = state.apply(action)
    return child.winner == ORDER or covers(child)


def keeping_moves(state: State) -> list[int]:
    """Every legal Order move in ``state`` that keeps a win the strategy proves
    (:func:`keeps_win`), ascending; empty when the strategy covers nothing after any move."""
    if state.is_terminal or state.to_play != ORDER:
        return []
    return [a for a in state.legal_actions() if keeps_win(state, a)]


def certificate_moves(first_move: int = FIRST_MOVE) -> dict[str, str]:
    """Order's centre move (``"d4 O"``) for every Order-to-move centre board (16 characters,
    :func:`centre_string`) that the strategy reaches after ``first_move`` when Chaos plays
    only central cells; boards with a line of four already (the lemma finishes those) are
    left out. Raises ValueError when ``first_move`` is not a central move that wins the
    centre game."""
    root = State().apply(first_move)
    if first_move >> 1 not in CENTRE_CELLS or not covers(root):
        raise ValueError(f"{action_name(first_move)} is not a central first move won by the strategy")
    lines = [sum(1 << CENTRE_CELLS[i] for i in line) for line in CENTRE_LINES]
    out: dict[str, str] = {}
    seen: set[State] = set()
    stack = [root]
    while stack:
        chaos_to_move = stack.pop()
        for c in CENTRE_CELLS:
            if (chaos_to_move.x | chaos_to_move.o) >> c & 1:
                continue
            for s in (0, 1):
                pos = chaos_to_move.apply_unchecked(2 * c + s)
                if pos in seen or any(pos.x & m == m or pos.o & m == m for m in lines):
                    continue
                seen.add(pos)
                reply = move(pos)
                out[centre_string(pos)] = action_name(reply)
                stack.append(pos.apply_unchecked(reply))
    return out


def pair_names() -> list[list[str]]:
    """:data:`PAIRS` as cell names, ``[["a2", "f2"], ...]``."""
    return [[cell_name(p), cell_name(q)] for p, q in PAIRS]


class StrategyAgent:
    """The central-pairing strategy as a player: Order only. In a covered position it plays
    :func:`move` (``last_reason == "strategy"``); from the empty board every position it
    meets is covered. Given an uncovered Order position (a game started elsewhere) it
    falls back to a tactical move (``"fallback"``: take a five, block a four). Asked to
    move for Chaos it raises IllegalActionError: the strategy plays Order only."""

    name = "strategy"
    roles = (ORDER,)

    def __init__(self) -> None:
        self.last_reason = ""

    def act(self, state: State) -> int:
        """Order's move (see the class docstring)."""
        if state.is_terminal:
            raise IllegalActionError(f"the game is over ({state.winner} won); no move to choose")
        if state.to_play != ORDER:
            raise IllegalActionError("the strategy player plays Order only; it cannot move for Chaos")
        if covers(state):
            self.last_reason = "strategy"
            return move(state)
        from orderchaos.agents.fallback import fallback_action

        self.last_reason = "fallback"
        return fallback_action(state)

    def policy(self, state: State) -> np.ndarray:
        """One-hot on :meth:`act`'s move."""
        out = np.zeros(ACTIONS, dtype=np.float64)
        out[self.act(state)] = 1.0
        return out
