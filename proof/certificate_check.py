"""An independent checker for a central-pairing certificate (:mod:`orderchaos.proof.certificate`).

It shares no code with the strategy, the solver or the prover: it reads the file with the
format module and plays with the rules engine (:class:`orderchaos.envs.rules.State`), whose
five detection is the game's own. Everything it needs about the board (which cells are
central, what the central lines are) it derives from the certificate's pairs, after
checking them. The checks:

* **pairs**: the 10 pairs are disjoint and cover the 20 border cells; each pair's two cells
  are the ends of a straight 6-cell line whose four inner cells are central. Those inner
  cells are the 10 *central lines*. The first move is on a central cell.
* **(a) centre game**: from the first move, every Chaos move on a central cell (both
  symbols) is answered with the certificate's centre move, until a central line holds four
  equal symbols; the central 4x4 must never fill without one, and every Order-to-move
  centre board met must have a legal centre move in the file.
* **(b) lemma**: on each central line, for each symbol filling its four cells and each
  state of its pair (empty; X and O; O and X): a five stands, or Order completes one
  now, or after any Chaos move on an end the border answer completes one. Fives are
  local to their line and the pair cells are empty or mixed whatever else stands on the
  board, so a board holding only the line is enough.
* **(c) replay**: the whole strategy the file describes (complete a five when one can be;
  else answer a border stone on its partner by ``border_answer``; else the centre move)
  is played on the 6x6 board after the first move against every Chaos move on every
  empty cell with both symbols, allowing at most ``border_moves`` Chaos moves on border
  cells. Every line of play must end with a five. It counts the distinct positions in
  which Order is to move (those where Chaos has just completed a five itself are over, and
  counted apart).

With (a) and (b), a Chaos border move followed by its answer leaves the centre and the
invariant (every pair empty or mixed) as they were, which is why (c) with no border
moves already replays every centre line of play; more border moves check the same
argument by brute force.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from orderchaos.proof.certificate import Certificate, parse_move
from orderchaos.envs.rules import CELLS, SIZE, State, action_name, cell_name, parse_cell


PROGRESS_EVERY = 1_000_000
"""The replay reports its count to ``progress`` each time this many positions are checked."""


class CheckFailed(Exception):
    """A part of the certificate does not hold; the message names the first failing position."""


@dataclass
class Part:
    """One checked part: its name, what was counted, and how long it took."""

    name: str
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass
class CheckReport:
    """The outcome of :func:`check`: the parts that held, and the failure (None: all held)."""

    parts: list[Part]
    failure: str | None = None

    @property
    def ok(self) -> bool:
        """True when every part held."""
        return self.failure is None


def _is_border(cell: int) -> bool:
    r, c = divmod(cell, SIZE)
    return r in (0, SIZE - 1) or c in (0, SIZE - 1)


class _Board:
    """The geometry the certificate's pairs describe, checked: partners, central lines."""

    def __init__(self, cert: Certificate) -> None:
        pairs = [(parse_cell(p), parse_cell(q)) for p, q in cert.pairs]
        cells = [c for pair in pairs for c in pair]
        border = [c for c in range(CELLS) if _is_border(c)]
        if len(pairs) != 10 or sorted(cells) != border:
            raise CheckFailed("pairs: the 10 pairs must hold each of the 20 border cells exactly once")
        self.partner: dict[int, int] = {}
        self.lines: list[tuple[int, int, tuple[int, ...]]] = []  # (end, end, four inner cells)
        for p, q in pairs:
            (rp, cp), (rq, cq) = divmod(p, SIZE), divmod(q, SIZE)
            dr, dc = (rq - rp) / 5, (cq - cp) / 5
            if dr not in (-1, 0, 1) or dc not in (-1, 0, 1):
                raise CheckFailed(f"pairs: {cell_name(p)} and {cell_name(q)} are not the two ends of a 6-cell line")
            inner = tuple((rp + int(dr) * k) * SIZE + cp + int(dc) * k for k in range(1, 5))
            if any(_is_border(c) for c in inner):
                raise CheckFailed(f"pairs: the line from {cell_name(p)} to {cell_name(q)} is not through the centre")
            self.partner[p], self.partner[q] = q, p
            self.lines.append((p, q, inner))
        self.centre = tuple(c for c in range(CELLS) if not _is_border(c))
        self.line_masks = [sum(1 << c for c in inner) for _, _, inner in self.lines]
        self.other_symbol = cert.border_answer == "other symbol"

    def has_line_of_four(self, s: State) -> bool:
        """True when a central line holds four equal symbols."""
        return any(s.x & m == m or s.o & m == m for m in self.line_masks)

    def centre_key(self, s: State) -> str:
        """The centre board as in the file: 16 characters, row-major b2..e5."""
        return "".join(s.cell(c) for c in self.centre)

    def border_answer(self, s: State, cell: int) -> int:
        """Order's answer to a stone on border ``cell``: its partner, by the file's rule."""
        symbol = 0 if s.x >> cell & 1 else 1
        return 2 * self.partner[cell] + (1 - symbol if self.other_symbol else symbol)


def _moves(s: State, cells: Iterable[int]) -> Iterator[int]:
    """Both symbols on each empty cell among ``cells``."""
    for c in cells:
        if not (s.x | s.o) >> c & 1:
            yield 2 * c
            yield 2 * c + 1


def _centre_move(board: _Board, cert: Certificate, s: State) -> int:
    """The file's centre move at ``s``, checked to be a legal move on a central cell."""
    key = board.centre_key(s)
    text = cert.centre_moves.get(key)
    if text is None:
        raise CheckFailed(f"no centre move for centre board {key} (position {s.to_string()})")
    a = parse_move(text)
    if a >> 1 not in board.centre or (s.x | s.o) >> (a >> 1) & 1:
        raise CheckFailed(f"centre move {text} for centre board {key} is not on an empty central cell")
    return a


def check_centre(board: _Board, cert: Certificate, first: int) -> dict[str, int]:
    """(a): the centre moves win the centre game against every Chaos move."""
    seen: set[State] = set()
    stack = [State().apply(first)]
    terminal = 0
    while stack:
        chaos_to_move = stack.pop()
        for a in _moves(chaos_to_move, board.centre):
            s = chaos_to_move.apply(a)
            if board.has_line_of_four(s):
                terminal += 1
                continue
            if s in seen:
                continue
            seen.add(s)
            after = s.apply(_centre_move(board, cert, s))
            if board.has_line_of_four(after):
                continue
            if all((after.x | after.o) >> c & 1 for c in board.centre):
                raise CheckFailed(f"the centre fills without a line of four at {after.to_string()}")
            stack.append(after)
    return {"order_to_move_centre_boards": len(seen), "entries_in_file": len(cert.centre_moves),
            "chaos_moves_making_a_line": terminal}


def check_lemma(board: _Board) -> dict[str, int]:
    """(b): four equal symbols on a central line win within two plies, for each pair state.
    (Stones are placed with ``apply_unchecked`` on cells known to be empty, since ``apply``
    refuses any move once a five stands.)"""
    cases = 0
    for p, q, inner in board.lines:
        for symbol in (0, 1):
            four = State()
            for c in inner:
                four = four.apply_unchecked(2 * c + symbol)
            for xp, xq in ((0, 1), (1, 0)):  # ends mixed: a five already stands
                cases += 1
                mixed = four.apply_unchecked(2 * p + xp).apply_unchecked(2 * q + xq)
                if not mixed.has_five:
                    raise CheckFailed(f"lemma: no five at {mixed.to_string()}")
            cases += 1  # ends empty, Order to move: a five can be completed now
            if not any(four.apply_unchecked(2 * c + t).has_five for c, t in four.threats()):
                raise CheckFailed(f"lemma: Order cannot complete a five at {four.to_string()}")
            for end in (p, q):  # ends empty, Chaos takes an end: the border answer makes a five
                for t in (0, 1):
                    cases += 1
                    s = four.apply_unchecked(2 * end + t)
                    if not s.has_five and not s.apply_unchecked(board.border_answer(s, end)).has_five:
                        raise CheckFailed(f"lemma: the border answer to {action_name(2 * end + t)} "
                                          f"makes no five at {s.to_string()}")
    return {"lines": len(board.lines), "cases": cases}


def _order_move(board: _Board, cert: Certificate, s: State) -> int:
    """The strategy the file describes, at Order-to-move ``s`` (not finished)."""
    fives = [2 * c + t for c, t in s.threats()]
    if fives:
        return fives[0]
    half = [c for c in board.partner if (s.x | s.o) >> c & 1 and not (s.x | s.o) >> board.partner[c] & 1]
    if len(half) > 1:
        raise CheckFailed(f"two pairs hold a single stone at {s.to_string()}")
    if half:
        return board.border_answer(s, half[0])
    return _centre_move(board, cert, s)


def check_replay(board: _Board, cert: Certificate, first: int, border_moves: int,
                 progress: Callable[[int], None] | None = None) -> dict[str, int]:
    """(c): the whole strategy on the 6x6 board against every Chaos move, with at most
    ``border_moves`` Chaos moves on border cells; counts the distinct positions in which
    Order is to move, those where Order's move completes a five, and the positions where
    Chaos completed a five itself (game over, no Order move)."""
    seen: set[State] = set()
    stack = [(State().apply(first), 0)]  # (Chaos to move, border moves used)
    order_moves = chaos_fives = order_fives = left_to_lemma = 0
    while stack:
        chaos_to_move, used = stack.pop()
        cells = range(CELLS) if used < border_moves else board.centre
        any_move = False
        for a in _moves(chaos_to_move, cells):
            any_move = True
            s = chaos_to_move.apply(a)
            if s in seen:
                continue
            seen.add(s)
            if s.has_five:  # Chaos completed a five itself: the game is over
                chaos_fives += 1
                continue
            if s.is_full:
                raise CheckFailed(f"the board is full without a five at {s.to_string()}")
            order_moves += 1
            if progress is not None and order_moves % PROGRESS_EVERY == 0:
                progress(order_moves)
            after = s.apply(_order_move(board, cert, s))
            if after.has_five:
                order_fives += 1
                continue
            if after.is_full:
                raise CheckFailed(f"the board is full without a five at {after.to_string()}")
            stack.append((after, used + (0 if a >> 1 in board.centre else 1)))
        if not any_move:
            left_to_lemma += 1  # only border moves are left to Chaos, beyond the allowance
    return {"order_to_move_positions": order_moves, "order_completes_a_five": order_fives,
            "chaos_completed_a_five": chaos_fives, "left_to_the_lemma": left_to_lemma,
            "border_moves_allowed": border_moves}


def check(cert: Certificate, border_moves: int = 0,
          progress: Callable[[str], None] | None = None) -> CheckReport:
    """Check every part (see the module docstring); the report stops at the first failure."""
    parts: list[Part] = []
    report = CheckReport(parts)
    try:
        start = time.perf_counter()
        board = _Board(cert)
        first = parse_move(cert.first_move)
        if first >> 1 not in board.centre:
            raise CheckFailed(f"first move {cert.first_move} is not on a central cell")
        parts.append(Part("pairs", {"pairs": len(board.lines)}, time.perf_counter() - start))
        steps: list[tuple[str, Callable[[], dict[str, int]]]] = [
            ("centre game", lambda: check_centre(board, cert, first)),
            ("lemma", lambda: check_lemma(board)),
            ("replay", lambda: check_replay(
                board, cert, first, border_moves,
                None if progress is None else lambda n: progress(f"replay: {n:,} positions"))),
        ]
        for name, step in steps:
            start = time.perf_counter()
            counts = step()
            parts.append(Part(name, counts, time.perf_counter() - start))
    except CheckFailed as e:
        report.failure = str(e)
    return report


PART_LABELS = {"pairs": "pairs", "centre game": "(a) centre game", "lemma": "(b) lemma", "replay": "(c) replay"}


def describe(report: CheckReport) -> list[str]:
    """The report as lines of text: one per part that held, with its counts and time, then
    the failure if there is one."""
    lines = []
    for part in report.parts:
        counts = ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in part.counts.items())
        lines.append(f"  {PART_LABELS[part.name]}: holds; {counts} ({part.seconds:.1f} s)")
    if report.failure is not None:
        lines.append(f"  FAILED: {report.failure}")
    return lines
