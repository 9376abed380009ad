"""The rules of Order and Chaos (original 1981 rules), once, with no Gymnasium import.

Board and action contract
-------------------------
* Cell ``c = row * 6 + col``; rows and columns run 0..5.
* Action ``a = 2 * c + s`` with symbol ``s = 0`` for X and ``1`` for O, so 72 actions.
* A position is a :class:`State`: two 36-bit bitboards, ``x`` and ``o`` (bit ``c`` set when
  that cell holds that symbol). It is an immutable, hashable named tuple, cheap to copy
  for search (as in pgx).
* Order moves first. The side to move follows from the stone count: even means Order.
* Order wins as soon as five identical symbols stand in one of the 32 five-cell windows
  (rows, columns, diagonals; a line of six contains a five). Chaos wins when the board is
  full with no such line. There are no draws. A Chaos move that completes a five loses.

Low-level helpers work on raw ints so that search code can avoid object overhead.
"""

from __future__ import annotations

import operator
from typing import NamedTuple

SIZE = 6
CELLS = SIZE * SIZE
ACTIONS = 2 * CELLS
X, O = 0, 1
SYMBOLS = "XO"
EMPTY_CHAR = "."
ORDER, CHAOS = "order", "chaos"
AGENTS = (ORDER, CHAOS)
FULL = (1 << CELLS) - 1
COLUMN_LABELS = "abcdef"


def _build_windows() -> tuple[tuple[int, ...], ...]:
    """All 32 five-cell windows as tuples of cells: 12 rows, 12 columns, 4 + 4 diagonals."""
    windows: list[tuple[int, ...]] = []
    for r in range(SIZE):
        for c0 in range(2):
            windows.append(tuple(r * SIZE + c0 + i for i in range(5)))
    for c in range(SIZE):
        for r0 in range(2):
            windows.append(tuple((r0 + i) * SIZE + c for i in range(5)))
    for r0 in range(2):
        for c0 in range(2):
            windows.append(tuple((r0 + i) * SIZE + c0 + i for i in range(5)))
    for r0 in range(2):
        for c0 in (4, 5):
            windows.append(tuple((r0 + i) * SIZE + c0 - i for i in range(5)))
    return tuple(windows)


WINDOW_CELLS: tuple[tuple[int, ...], ...] = _build_windows()
"""The 32 windows, each as its five cells."""
WINDOWS: tuple[int, ...] = tuple(sum(1 << c for c in w) for w in WINDOW_CELLS)
"""The 32 windows as 36-bit masks."""
CELL_WINDOWS: tuple[tuple[int, ...], ...] = tuple(
    tuple(i for i, w in enumerate(WINDOW_CELLS) if c in w) for c in range(CELLS)
)
"""For each cell, the indices of the windows that contain it (3 to 7 of them)."""
CELL_WINDOW_MASKS: tuple[tuple[int, ...], ...] = tuple(
    tuple(WINDOWS[i] for i in ws) for ws in CELL_WINDOWS
)
"""For each cell, the masks of the windows that contain it."""
NUM_WINDOWS = len(WINDOWS)
ALL_WINDOWS = (1 << NUM_WINDOWS) - 1
"""Every window, as a window set: a 32-bit int whose bit ``i`` stands for window ``i``."""
CELL_WINDOW_SETS: tuple[int, ...] = tuple(sum(1 << i for i in ws) for ws in CELL_WINDOWS)
"""For each cell, the window set of the windows through it (what a stone there touches)."""


class IllegalActionError(ValueError):
    """An action that cannot be played here: not an integer, outside 0..71, on an occupied
    cell, or played after the game has ended."""


class BoardStringError(ValueError):
    """A board string that is not 36 characters of ``X``, ``O`` and ``.``, or a board
    that no game reaches (see :func:`unreachable_reason`)."""


# ---------------------------------------------------------------------------------------
# Raw-int helpers (hot paths of search code call these directly).
# ---------------------------------------------------------------------------------------


def _window_starts() -> tuple[tuple[int, int], ...]:
    """``(step, starts)`` per direction: the windows are the five cells ``c, c + step, ...,
    c + 4 step`` for each start cell ``c`` set in the ``starts`` mask."""
    starts: dict[int, int] = {}
    for cells in WINDOW_CELLS:
        step = cells[1] - cells[0]
        starts[step] = starts.get(step, 0) | 1 << cells[0]
    return tuple(sorted(starts.items()))


WINDOW_STARTS: tuple[tuple[int, int], ...] = _window_starts()
"""The windows by direction, ``(step, starts)``: for each start cell ``c`` set in ``starts``,
the cells ``c, c + step, ..., c + 4 step`` (steps 1, 5, 6 and 7)."""


def has_five_bits(bits: int) -> bool:
    """True when the single-symbol bitboard ``bits`` fills some window (``bits & m == m``
    for a window mask ``m``; tested that way per direction, with four shifts)."""
    for step, starts in WINDOW_STARTS:
        if bits & bits >> step & bits >> 2 * step & bits >> 3 * step & bits >> 4 * step & starts:
            return True
    return False


def completes_five(bits: int, cell: int) -> bool:
    """True when ``bits`` (one symbol, already including ``cell``) fills a window through ``cell``."""
    for m in CELL_WINDOW_MASKS[cell]:
        if bits & m == m:
            return True
    return False


def is_dead_window(x: int, o: int, m: int) -> bool:
    """A window is dead once it holds both symbols: it can never become a five."""
    return bool(x & m) and bool(o & m)


def window_set(bits: int) -> int:
    """The window set of the windows holding at least one stone of the bitboard ``bits``.

    A window is dead once it is in the sets of both symbols; ``window_set(x) &
    window_set(o) == ALL_WINDOWS`` is "no five is possible any more". Placing a stone on
    cell ``c`` adds ``CELL_WINDOW_SETS[c]`` to its symbol's set, so code that follows a game
    move by move can keep both sets up to date.
    """
    out = 0
    for i, m in enumerate(WINDOWS):
        if bits & m:
            out |= 1 << i
    return out


def threat_pairs(x: int, o: int) -> list[tuple[int, int]]:
    """The (cell, symbol) pairs that would complete a five, sorted and without repeats."""
    found: set[tuple[int, int]] = set()
    for m in WINDOWS:
        xs, os_ = x & m, o & m
        if os_ == 0 and xs.bit_count() == 4:
            found.add(((m & ~xs).bit_length() - 1, X))
        elif xs == 0 and os_.bit_count() == 4:
            found.add(((m & ~os_).bit_length() - 1, O))
    return sorted(found)


def legal_action_list(x: int, o: int) -> list[int]:
    """All legal actions (both symbols on every empty cell), ascending."""
    empty = FULL & ~(x | o)
    out = []
    while empty:
        low = empty & -empty
        c = low.bit_length() - 1
        out.append(2 * c)
        out.append(2 * c + 1)
        empty ^= low
    return out


# ---------------------------------------------------------------------------------------
# The game state.
# ---------------------------------------------------------------------------------------


class State(NamedTuple):
    """An immutable Order and Chaos position: the X and O bitboards.

    Equality and hashing are by position, so states can key transposition tables.
    Use :meth:`apply` to get the successor; the original is never modified.
    """

    x: int = 0
    o: int = 0

    # -- basic facts -------------------------------------------------------------------
    @property
    def occupied(self) -> int:
        """Bitboard of all stones."""
        return self.x | self.o

    @property
    def num_stones(self) -> int:
        """How many stones are on the board (0..36)."""
        return (self.x | self.o).bit_count()

    @property
    def num_empty(self) -> int:
        """How many empty cells remain."""
        return CELLS - self.num_stones

    @property
    def to_play_index(self) -> int:
        """0 when Order is to move, 1 when Chaos is (stone count parity)."""
        return self.num_stones & 1

    @property
    def to_play(self) -> str:
        """``"order"`` or ``"chaos"``: who moves next (by stone count parity)."""
        return AGENTS[self.num_stones & 1]

    @property
    def is_full(self) -> bool:
        """True when all 36 cells hold a stone."""
        return (self.x | self.o) == FULL

    def cell(self, c: int) -> str:
        """The character at cell ``c``: ``"X"``, ``"O"`` or ``"."``."""
        if self.x >> c & 1:
            return "X"
        if self.o >> c & 1:
            return "O"
        return EMPTY_CHAR

    # -- outcome -----------------------------------------------------------------------
    @property
    def has_five(self) -> bool:
        """True when five identical symbols stand in some window (Order has won)."""
        return has_five_bits(self.x) or has_five_bits(self.o)

    @property
    def is_terminal(self) -> bool:
        """True when the game is over: a five stands, or the board is full."""
        return self.has_five or self.is_full

    @property
    def winner(self) -> str | None:
        """``"order"`` when a five stands, ``"chaos"`` on a full board without one, else None."""
        if self.has_five:
            return ORDER
        if self.is_full:
            return CHAOS
        return None

    @property
    def winning_line(self) -> tuple[int, ...]:
        """The cells of every complete window (a six shows as six cells); empty if none."""
        cells: set[int] = set()
        for m, w in zip(WINDOWS, WINDOW_CELLS):
            if self.x & m == m or self.o & m == m:
                cells.update(w)
        return tuple(sorted(cells))

    @property
    def decided(self) -> bool:
        """True when no five is possible any more: every window holds both symbols.

        From then on the game is a certain Chaos win (unless a five already stands).
        """
        return window_set(self.x) & window_set(self.o) == ALL_WINDOWS

    def rewards(self) -> dict[str, int]:
        """Zero-sum rewards for both agents: +1 winner, -1 loser, zeros if not over."""
        w = self.winner
        if w is None:
            return {ORDER: 0, CHAOS: 0}
        return {ORDER: 1, CHAOS: -1} if w == ORDER else {ORDER: -1, CHAOS: 1}

    # -- moves -------------------------------------------------------------------------
    def legal_actions(self) -> list[int]:
        """Legal actions in ascending order; empty when the game is over."""
        if self.is_terminal:
            return []
        return legal_action_list(self.x, self.o)

    def legal_mask(self) -> list[bool]:
        """A 72-long list of booleans, True for legal actions (all False when over)."""
        if self.is_terminal:
            return [False] * ACTIONS
        occ = self.x | self.o
        return [not (occ >> (a >> 1) & 1) for a in range(ACTIONS)]

    def threats(self) -> list[tuple[int, int]]:
        """The (cell, symbol) pairs that would complete a five right now."""
        return threat_pairs(self.x, self.o)

    def check_action(self, action: object) -> int:
        """Return ``action`` as an int if it is legal here, else raise IllegalActionError
        with a message that says what is wrong and what is accepted."""
        if isinstance(action, bool) or isinstance(action, float):
            raise IllegalActionError(
                f"action must be an integer in 0..{ACTIONS - 1} (2*cell + symbol), "
                f"got {type(action).__name__} {action!r}"
            )
        try:
            a = operator.index(action)  # type: ignore[arg-type]
        except TypeError:
            raise IllegalActionError(
                f"action must be an integer in 0..{ACTIONS - 1} (2*cell + symbol), "
                f"got {type(action).__name__} {action!r}"
            ) from None
        if not 0 <= a < ACTIONS:
            raise IllegalActionError(
                f"action {a} is outside 0..{ACTIONS - 1} (action = 2*cell + symbol, "
                f"cell 0..35, symbol 0=X 1=O)"
            )
        if self.is_terminal:
            raise IllegalActionError(
                f"the game is over ({self.winner} won); no action is legal, call reset()"
            )
        c = a >> 1
        if (self.x | self.o) >> c & 1:
            raise IllegalActionError(
                f"action {a} places {SYMBOLS[a & 1]} on {cell_name(c)} (cell {c}), "
                f"which already holds {self.cell(c)}; choose an empty cell"
            )
        return a

    def apply(self, action: int) -> "State":
        """The state after ``action``; raises IllegalActionError if it is not legal."""
        a = self.check_action(action)
        bit = 1 << (a >> 1)
        return State(self.x | bit, self.o) if a & 1 == X else State(self.x, self.o | bit)

    def apply_unchecked(self, action: int) -> "State":
        """The state after ``action`` with no legality check (for search hot paths)."""
        bit = 1 << (action >> 1)
        return State(self.x | bit, self.o) if action & 1 == X else State(self.x, self.o | bit)

    # -- text --------------------------------------------------------------------------
    def to_string(self) -> str:
        """The 36-character board string (row-major, ``X``, ``O``, ``.``)."""
        return "".join(self.cell(c) for c in range(CELLS))

    @classmethod
    def from_string(cls, text: str) -> "State":
        """Parse a board string; see :func:`parse_board`."""
        return parse_board(text)

    def __str__(self) -> str:
        return render_ascii(self)


def unreachable_reason(x: int, o: int) -> str | None:
    """Why no game reaches the board with bitboards ``x`` and ``o``, or None when one does.

    A game ends with the move that makes the first five, so a finished board has one last
    move: every complete window (of either symbol) runs through its cell, and the board
    without that stone has no five. Such a cell exists exactly when the complete windows
    share a cell. A board without a five is always reached (its stones in any order, each
    side placing either symbol; the stone count fixes who moves next). So a full board with
    no five is reachable, a full board of X is not.
    """
    if x & o:
        return "a cell holds both X and O"
    if (x | o) & ~FULL:
        return f"a stone lies outside the {CELLS} cells"
    common = FULL
    fives = 0
    for m in WINDOWS:
        if x & m == m or o & m == m:
            common &= m
            fives += 1
    if fives and not common:
        return (
            f"its {fives} fives share no cell, so no single last move made them; a game "
            "ends at its first five"
        )
    return None


def check_reachable(state: State) -> State:
    """Return ``state`` if some game reaches it, else raise BoardStringError saying why."""
    why = unreachable_reason(state.x, state.o)
    if why is not None:
        raise BoardStringError(f"no game reaches the board {state.to_string()!r}: {why}")
    return state


def parse_board(text: str) -> State:
    """Parse a 36-character board string of ``X``, ``O`` and ``.`` (row-major).

    Whitespace and ``/`` are ignored. Raises BoardStringError naming the bad character
    and its position, or the length found, or saying why no game reaches the board
    (:func:`unreachable_reason`).
    """
    if not isinstance(text, str):
        raise BoardStringError(f"a board string must be a str, got {type(text).__name__}")
    chars: list[str] = []
    for pos, ch in enumerate(text):
        if ch.isspace() or ch == "/":
            continue
        if ch not in "XO.":
            raise BoardStringError(
                f"bad character {ch!r} at position {pos} of the board string "
                f"(board cell {len(chars)}); accepted: 'X', 'O', '.', whitespace and '/'"
            )
        chars.append(ch)
    if len(chars) != CELLS:
        raise BoardStringError(
            f"a board string needs {CELLS} cells of 'X', 'O' or '.', found {len(chars)} "
            f"(whitespace and '/' are ignored)"
        )
    x = o = 0
    for c, ch in enumerate(chars):
        if ch == "X":
            x |= 1 << c
        elif ch == "O":
            o |= 1 << c
    return check_reachable(State(x, o))


def cell_name(c: int) -> str:
    """The coordinate name of cell ``c``: column a-f then row 1-6, e.g. cell 0 is ``a1``."""
    return f"{COLUMN_LABELS[c % SIZE]}{c // SIZE + 1}"


def parse_cell(name: str) -> int:
    """Parse a coordinate like ``c3`` (column a-f, row 1-6) into a cell index."""
    s = name.strip().lower()
    if len(s) != 2 or s[0] not in COLUMN_LABELS or s[1] not in "123456":
        raise ValueError(f"bad cell {name!r}: expected a column a-f and a row 1-6, like 'c3'")
    return (int(s[1]) - 1) * SIZE + COLUMN_LABELS.index(s[0])


def action_name(action: int) -> str:
    """Human name of an action, e.g. ``"c3 X"``."""
    return f"{cell_name(action >> 1)} {SYMBOLS[action & 1]}"


def parse_action_name(name: str) -> int:
    """The action named ``name`` as :func:`action_name` writes it (a cell, a space, a symbol:
    ``"c3 X"``); ValueError naming the accepted form otherwise."""
    parts = name.split()
    if len(parts) != 2 or parts[1] not in ("X", "O"):
        raise ValueError(f"bad move {name!r}: expected a cell and a symbol, like 'c3 X'")
    return 2 * parse_cell(parts[0]) + SYMBOLS.index(parts[1])


def render_ascii(state: State, last_action: int | None = None) -> str:
    """An ASCII board with coordinates (columns a-f, rows 1-6, row 1 on top).

    The last move is shown in parentheses, e.g. ``(X)``; cells of a winning line in
    brackets, e.g. ``[O]``. A status line follows.
    """
    line_cells = set(state.winning_line)
    last_cell = None if last_action is None else last_action >> 1
    rows = ["    " + "  ".join(COLUMN_LABELS)]
    for r in range(SIZE):
        parts = []
        for col in range(SIZE):
            c = r * SIZE + col
            ch = state.cell(c)
            if c in line_cells:
                parts.append(f"[{ch}]")
            elif c == last_cell:
                parts.append(f"({ch})")
            else:
                parts.append(f" {ch} ")
        rows.append(f"{r + 1:>2} " + "".join(parts).rstrip())
    w = state.winner
    if w is not None:
        status = f"game over: {w} wins"
    else:
        status = f"{state.to_play} to move"
    if last_action is not None:
        status += f" (last move {action_name(last_action)})"
    rows.append(status)
    return "\n".join(rows)
