"""Puzzles proven by the exact solver: mining them from games, checking them, the puzzle file.

Two kinds, each a position whose mover wins and has exactly one move that keeps the win:

* ``order_wins`` ("Order to play and win"): Order to move. ``plies`` is the length of the
  forced win with best defence, Order's key move and the final five counted (Order makes
  ``(plies + 1) // 2`` moves). The ``solution`` is the key move, then a best defence (a
  Chaos move after which Order still needs the most plies), Order's fastest win, and so on
  to the five. Order's later moves are not unique: any move that keeps the win is right.
* ``chaos_survives`` ("Chaos to play and survive"): Chaos to move. ``plies`` is the number
  of empty cells (the game ends when the board fills). The ``solution`` is the key move,
  then Order's most dangerous reply by the solver's move ordering and a Chaos move that
  keeps the win, and so on until no five is possible any more.

Puzzle files are JSON lines, one puzzle a line::

    {"id": "p1a2b...", "board": "X.O...", "kind": "order_wins", "solution": ["c3 X", ...],
     "plies": 5, "themes": ["open four"], "rating": 1210.0, "source": "games.jsonl#12@19"}

``id`` is the position's symmetry-canonical key in hex, so that two puzzles that are the
same up to the 8 board symmetries and swapping X and O share it; ``source`` names the game
file, the game's number and the ply. :data:`EXPORT_KEYS` are the keys of the export
contract (``orderchaos puzzles export``); the shipped set is :data:`SHIPPED_PUZZLES`.

Themes, each defined on the position and the solution (:func:`themes`):

* ``open four`` (order_wins): after the key move a six-cell line (a row, a column or a long
  diagonal) holds four equal symbols on its four middle cells and both its end cells are
  empty.
* ``double four`` (order_wins): after the key move the cells that complete a five are at
  least two, or one cell completes a five with either symbol: no single Chaos stone stops them.
* ``six counts`` (order_wins): the solution ends with a six-cell line of one symbol.
* ``border answer``: the key move is on a border cell whose partner (the other end of the
  same central line, :data:`orderchaos.agents.strategy.PAIRS`) holds the other symbol.
* ``centre game``: the key move is in the central 4x4 and after it every border pair is
  empty or holds one X and one O, so the position has reduced to the centre game.
* ``only block`` (chaos_survives): exactly one cell completes a five and the key move is on it.

:func:`check_puzzles` re-proves every puzzle from the board alone with fresh solvers; it
trusts none of the file's other fields but compares them with what it proves.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from orderchaos.agents.solver import Solver, generated_moves
from orderchaos.agents.strategy import CENTRE_CELLS, PARTNER, pair_states
from orderchaos.arena.game_files import json_lines, load_games
from orderchaos.arena.glicko2 import puzzle_start_rating
from orderchaos.envs.rules import (
    CHAOS,
    ORDER,
    SIZE,
    SYMBOLS,
    BoardStringError,
    State,
    action_name,
    parse_action_name,
    parse_board,
    threat_pairs,
)
from orderchaos.envs.symmetry import canonical_key
from orderchaos.files import atomic_write_bytes

ORDER_WINS = "order_wins"
CHAOS_SURVIVES = "chaos_survives"
KINDS: dict[str, str] = {ORDER: ORDER_WINS, CHAOS: CHAOS_SURVIVES}
"""The puzzle kind for each side to move."""
EXPORT_KEYS: tuple[str, ...] = ("id", "board", "kind", "solution", "plies", "themes", "rating")
"""The keys of one exported puzzle, in order (the export contract)."""
THEMES: tuple[str, ...] = ("open four", "double four", "six counts", "border answer", "centre game", "only block")
DATA_DIR: Path = Path(__file__).resolve().parent / "data"
SHIPPED_PUZZLES: Path = DATA_DIR / "puzzles.jsonl"
"""The puzzle set shipped with the package (``arena/data/README.md`` has its commands)."""
DEFAULT_NODE_LIMIT = 2_000_000
"""Solver nodes allowed per solver call while mining; a position any of whose calls hits it is skipped."""
CHECK_NODE_LIMIT = 50_000_000
"""Solver nodes allowed per solver call while checking (each shipped puzzle needs far fewer)."""
DEFAULT_EMPTIES = (10, 24)
TEMPTING_DEPTH = 3
"""A losing Chaos move is tempting when Order needs more than this many plies to punish it."""


class PuzzleFileError(ValueError):
    """A puzzle file that cannot be read; the message names the file and line."""


class PuzzleCheckError(ValueError):
    """A puzzle that does not hold; the message names the file, line, id and what is wrong."""


@dataclass
class Puzzle:
    """One proven puzzle (see the module docstring for the fields)."""

    id: str
    board: str
    kind: str
    solution: list[str]
    plies: int
    themes: list[str]
    rating: float
    source: str = ""

    def to_export(self) -> dict:
        """The puzzle as the export contract has it: exactly :data:`EXPORT_KEYS`."""
        return {key: getattr(self, key) for key in EXPORT_KEYS}

    def to_dict(self) -> dict:
        """The puzzle as a line of a puzzle file (the export keys and ``source``)."""
        return {**self.to_export(), "source": self.source}


@dataclass
class MineStats:
    """What mining looked at and why positions were dropped."""

    games: int = 0
    positions: int = 0
    duplicates: int = 0
    unproven: int = 0
    mover_lost: int = 0
    several_moves_win: int = 0
    puzzles: int = 0
    seconds: float = 0.0
    by_plies: dict[int, int] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """A JSON-ready dict."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


# ---------------------------------------------------------------------------------------
# Facts about positions
# ---------------------------------------------------------------------------------------


def puzzle_id(state: State) -> str:
    """The id shared by a position and its 15 symmetry images: ``p`` and its canonical key in hex."""
    return f"p{canonical_key(state.x, state.o):019x}"


def parse_move(text: object) -> int:
    """An action from its name, e.g. ``"c3 X"``; ValueError naming what is accepted."""
    if not isinstance(text, str):
        raise ValueError(f"a move must be a string like 'c3 X', got {type(text).__name__}")
    return parse_action_name(text)


def _six_lines() -> tuple[tuple[int, ...], ...]:
    rows = tuple(tuple(r * SIZE + c for c in range(SIZE)) for r in range(SIZE))
    cols = tuple(tuple(r * SIZE + c for r in range(SIZE)) for c in range(SIZE))
    diagonals = (tuple(i * SIZE + i for i in range(SIZE)), tuple(i * SIZE + SIZE - 1 - i for i in range(SIZE)))
    return rows + cols + diagonals


SIX_LINES: tuple[tuple[int, ...], ...] = _six_lines()
"""The 14 six-cell lines: 6 rows, 6 columns, 2 long diagonals."""


def has_open_four(state: State) -> bool:
    """Some six-cell line holds four equal symbols on its middle cells, both ends empty."""
    for line in SIX_LINES:
        ends = (1 << line[0]) | (1 << line[-1])
        middle = sum(1 << c for c in line[1:-1])
        if state.occupied & ends == 0 and (state.x & middle == middle or state.o & middle == middle):
            return True
    return False


def has_six(state: State) -> bool:
    """Some six-cell line is full of one symbol."""
    for line in SIX_LINES:
        mask = sum(1 << c for c in line)
        if state.x & mask == mask or state.o & mask == mask:
            return True
    return False


def is_double_four(state: State) -> bool:
    """No single stone stops every five: two cells complete one, or one cell with either symbol."""
    threats = threat_pairs(state.x, state.o)
    return len(threats) >= 2


def themes(state: State, kind: str, line: Sequence[int]) -> list[str]:
    """The themes of a puzzle (module docstring), from its position and solution actions."""
    key = line[0]
    cell, symbol = key >> 1, key & 1
    after = state.apply(key)
    found: list[str] = []
    if kind == ORDER_WINS:
        if has_open_four(after):
            found.append("open four")
        if is_double_four(after):
            found.append("double four")
        end = after
        for action in line[1:]:
            end = end.apply(action)
        if has_six(end):
            found.append("six counts")
    if cell in PARTNER and state.cell(PARTNER[cell]) == SYMBOLS[1 - symbol]:
        found.append("border answer")
    half_pairs, others_empty_or_mixed = pair_states(after)
    if cell in CENTRE_CELLS and others_empty_or_mixed and not half_pairs:
        found.append("centre game")
    if kind == CHAOS_SURVIVES:
        cells = {c for c, _ in threat_pairs(state.x, state.o)}
        if cells == {cell}:
            found.append("only block")
    return found


# ---------------------------------------------------------------------------------------
# Proving a puzzle
# ---------------------------------------------------------------------------------------


class Unproven(Exception):
    """The solver hit its node limit before the question was settled."""


class _Prover:
    """Solver calls of at most ``node_limit`` nodes each; a call that hits it raises Unproven."""

    def __init__(self, solver: Solver, node_limit: int) -> None:
        self.solver = solver
        self.node_limit = node_limit

    def winner_and_keeping(self, state: State) -> tuple[str, list[int]]:
        """Who wins, and the mover's moves that keep the result (every move if the mover loses)."""
        r = self.solver.solve(state, node_limit=self.node_limit, moves=True)
        if r.winner is None or r.best_actions is None:
            raise Unproven
        return r.winner, r.best_actions

    def winner(self, state: State) -> str:
        """Who wins ``state``."""
        r = self.solver.solve(state, node_limit=self.node_limit)
        if r.winner is None:
            raise Unproven
        return r.winner

    def order_wins_within(self, state: State, plies: int) -> bool:
        """Can Order complete a five within ``plies`` plies of ``state``?"""
        if state.has_five:
            return True
        if plies <= 0 or state.is_full:
            return False
        r = self.solver.order_wins_within(state, plies, node_limit=self.node_limit)
        if r is None:
            raise Unproven
        return r

    def fastest_wins(self, state: State, actions: list[int]) -> tuple[list[int], int]:
        """Of Order's winning ``actions`` in ``state``, those after which Order forces a five
        soonest, and that number of plies (the move itself counted)."""
        children = {a: state.apply(a) for a in actions}
        for plies in range(1, state.num_empty + 1):
            quick = [a for a, child in children.items() if self.order_wins_within(child, plies - 1)]
            if quick:
                return quick, plies
        raise ValueError("none of the moves wins")

    def forced_length(self, state: State) -> int:
        """The plies Order needs to force a five from ``state`` (won for Order), both sides counted."""
        plies = 0
        while not self.order_wins_within(state, plies):
            plies += 1
            if plies > state.num_empty:
                raise ValueError("Order does not win this position")
        return plies

    def forced_plies(self, state: State, action: int) -> int:
        """The plies to Order's five after Order's ``action`` with best defence, the action counted."""
        return 1 + self.forced_length(state.apply(action))


def _order_line(prover: _Prover, state: State, key: int, plies: int) -> list[int]:
    """The key move, a best defence, Order's fastest win, and so on to the five."""
    line = [key]
    current = state.apply(key)
    remaining = plies - 1
    while not current.has_five:
        if current.to_play == CHAOS:
            defence = _slowest_defence(prover, current, remaining)
            line.append(defence)
            current = current.apply(defence)
        else:
            move = next(
                a for a in current.legal_actions()
                if prover.order_wins_within(current.apply(a), remaining - 1)
            )
            line.append(move)
            current = current.apply(move)
        remaining -= 1
    return line


def _order_reply(state: State) -> int:
    """Order's most dangerous move by the solver's ordering (most window danger created)."""
    _, ordered = generated_moves(state, stop_on_double_four=False, prune=False)
    return int(ordered[0])


def _chaos_line(prover: _Prover, state: State, key: int) -> list[int]:
    """The key move, then Order's most dangerous reply and Chaos's first keeping move, until
    no five is possible any more (or the board is full)."""
    line = [key]
    current = state.apply(key)
    while not current.is_terminal and not current.decided:
        if current.to_play == ORDER:
            move = _order_reply(current)
        else:
            _, keeping = prover.winner_and_keeping(current)
            move = keeping[0]
        line.append(move)
        current = current.apply(move)
    return line


def tempting_moves(prover: _Prover, state: State, key: int) -> int:
    """How many of the mover's losing moves look right: for Order, those that make a new
    four (forcing, but not winning); for Chaos, those after which Order needs more than
    :data:`TEMPTING_DEPTH` plies to force the five."""
    before = set(threat_pairs(state.x, state.o))
    count = 0
    for action in state.legal_actions():
        if action == key:
            continue
        child = state.apply(action)
        if state.to_play == ORDER:
            if not child.has_five and set(threat_pairs(child.x, child.o)) - before:
                count += 1
        elif not prover.order_wins_within(child, TEMPTING_DEPTH):
            count += 1
    return count


def difficulty_plies(kind: str, plies: int, line: Sequence[object]) -> int:
    """The plies a solver has to read for a puzzle's start rating: an ``order_wins`` puzzle's
    forced length; for ``chaos_survives`` the solution's length (until no five is possible),
    not the empty cells, which say little about how hard the survival is."""
    return plies if kind == ORDER_WINS else len(line)


def _start_rating(prover: _Prover, state: State, kind: str, plies: int, line: Sequence[int]) -> float:
    tempting = tempting_moves(prover, state, line[0])
    return round(puzzle_start_rating(difficulty_plies(kind, plies, line), tempting).r, 1)


def start_rating(puzzle: Puzzle, solver: Solver, node_limit: int = CHECK_NODE_LIMIT) -> float:
    """The puzzle's start rating from its board and solution, as :func:`prove_puzzle` gives
    it (:func:`orderchaos.arena.glicko2.puzzle_start_rating` of :func:`difficulty_plies` and
    :func:`tempting_moves`); Unproven past ``node_limit``."""
    line = [parse_move(m) for m in puzzle.solution]
    return _start_rating(_Prover(solver, node_limit), parse_board(puzzle.board), puzzle.kind, puzzle.plies, line)


def forced_blocks(puzzle: Puzzle) -> int:
    """How many of Chaos's moves in a row, from the start of a ``chaos_survives`` solution
    (Order's replies between them), block the one cell where a five threatens."""
    state = parse_board(puzzle.board)
    count = 0
    for i, move in enumerate(puzzle.solution):
        action = parse_move(move)
        if i % 2 == 0:
            if {cell for cell, _ in state.threats()} != {action >> 1}:
                break
            count += 1
        state = state.apply(action)
    return count


def served_rating(puzzle: Puzzle) -> float:
    """The start rating the site gives a puzzle: an "only block" is rated by what it asks,
    its run of :func:`forced_blocks` (each block a ply to read, Order's replies between, and
    no tempting wrong move: any other move lets Order complete the five), not by the empty
    cells its shipped rating was made from; every other puzzle keeps its shipped rating.

    Computed when the site loads the set, without the solver: the shipped file stays what its
    documented command makes, and regenerating it would mean mining the candidates again."""
    if puzzle.kind != CHAOS_SURVIVES or "only block" not in puzzle.themes:
        return puzzle.rating
    return round(puzzle_start_rating(2 * forced_blocks(puzzle) - 1, 0).r, 1)


def prove_puzzle(state: State, solver: Solver, node_limit: int, source: str = "") -> tuple[Puzzle | None, str]:
    """The puzzle at ``state`` if it is one, and why not otherwise (``"unproven"``,
    ``"mover lost"``, ``"several moves win"``, ``"finished"``); raises nothing for a
    position the solver cannot settle within ``node_limit`` nodes."""
    if state.is_terminal:
        return None, "finished"
    prover = _Prover(solver, node_limit)
    try:
        winner, keeping = prover.winner_and_keeping(state)
        if winner != state.to_play:
            return None, "mover lost"
        if len(keeping) != 1:
            return None, "several moves win"
        key = keeping[0]
        kind = KINDS[state.to_play]
        if kind == ORDER_WINS:
            plies = prover.forced_plies(state, key)
            line = _order_line(prover, state, key, plies)
        else:
            plies = state.num_empty
            line = _chaos_line(prover, state, key)
        rating = _start_rating(prover, state, kind, plies, line)
    except Unproven:
        return None, "unproven"
    puzzle = Puzzle(
        id=puzzle_id(state),
        board=state.to_string(),
        kind=kind,
        solution=[action_name(a) for a in line],
        plies=plies,
        themes=themes(state, kind, line),
        rating=rating,
        source=source,
    )
    return puzzle, ""


# ---------------------------------------------------------------------------------------
# Mining
# ---------------------------------------------------------------------------------------


def mine_puzzles(
    game_files: Sequence[str | os.PathLike],
    *,
    limit: int = 0,
    node_limit: int = DEFAULT_NODE_LIMIT,
    empties: tuple[int, int] = DEFAULT_EMPTIES,
    stats: MineStats | None = None,
    exclude: Iterable[str] = (),
    per_game: int = 0,
    progress: Callable[[MineStats], None] | None = None,
    resume: tuple[int, Sequence[Puzzle]] = (0, ()),
    on_game: Callable[[int, list[Puzzle]], None] | None = None,
) -> list[Puzzle]:
    """Puzzles from every position of every game in ``game_files`` (read and checked with
    :func:`orderchaos.arena.game_files.load_games`) whose empty cells are within ``empties``,
    in file, game and ply order; the first of each position up to symmetry only, none whose
    id is in ``exclude``, at most ``per_game`` from one game (0: no cap; a cap spreads a set
    over more games). ``limit`` (0: no limit) stops after that many puzzles. The same
    files and arguments give the same puzzles. A game that ended off the board (resigned or
    lost on time, with its board still open) gives its positions like any other: a puzzle is
    proven from its position alone, whatever became of the game.

    ``resume`` is ``(games, puzzles)`` from an interrupted run with the same arguments: the
    first ``games`` games are replayed without the solver, their puzzles taken from
    ``puzzles``, so the result is the uninterrupted run's. ``on_game(games, puzzles)`` is
    called after each game mined with the solver, with the games done so far and that
    game's puzzles (what a caller saves to resume from)."""
    stats = stats if stats is not None else MineStats()
    low, high = empties
    start = time.perf_counter()
    solver = Solver()
    seen: set[str] = set(exclude)
    found: list[Puzzle] = []
    replay_games, replay_puzzles = resume[0], {p.id: p for p in resume[1]}
    games = [(str(path), load_games(path)) for path in game_files]
    for path, saved in games:
        for game in saved:
            replaying = stats.games < replay_games
            stats.games += 1
            state = State()
            from_game: list[Puzzle] = []
            for ply, action in enumerate(game.record.actions):
                if per_game and len(from_game) >= per_game:
                    break
                if low <= state.num_empty <= high and not state.is_terminal:
                    pid = puzzle_id(state)
                    if pid in seen:
                        stats.duplicates += 1
                    else:
                        seen.add(pid)
                        stats.positions += 1
                        if replaying:
                            puzzle, why = replay_puzzles.get(pid), "replayed"
                        else:
                            puzzle, why = prove_puzzle(state, solver, node_limit,
                                                       f"{Path(path).name}#{game.index}@{ply}")
                        if puzzle is not None:
                            found.append(puzzle)
                            from_game.append(puzzle)
                            stats.puzzles += 1
                            stats.by_plies[puzzle.plies] = stats.by_plies.get(puzzle.plies, 0) + 1
                            if limit and len(found) >= limit:
                                break
                        elif not replaying:
                            setattr(stats, why.replace(" ", "_"), getattr(stats, why.replace(" ", "_")) + 1)
                state = state.apply(action)
            if on_game is not None and not replaying:
                on_game(stats.games, from_game)
            stats.seconds = time.perf_counter() - start
            if limit and len(found) >= limit:
                return found
            if progress is not None:
                progress(stats)
    stats.seconds = time.perf_counter() - start
    return found


# ---------------------------------------------------------------------------------------
# Choosing a set
# ---------------------------------------------------------------------------------------

SELECT_CAPS: dict[str, float] = {"only block": 0.15, "one move": 0.10}
"""The most of a selected set each easy kind may fill: Chaos's only block, and Order's
five in one move."""
RATING_BAND = 200.0
"""Selection takes puzzles from each band of this many start-rating points in turn."""


def easy_kind(puzzle: Puzzle) -> str:
    """``"only block"`` for a Chaos puzzle whose key move blocks the one five, ``"one move"``
    for an Order puzzle won by the key move itself, else ``""``."""
    if puzzle.kind == CHAOS_SURVIVES and "only block" in puzzle.themes:
        return "only block"
    if puzzle.kind == ORDER_WINS and puzzle.plies == 1:
        return "one move"
    return ""


def select_puzzles(puzzles: Iterable[Puzzle], count: int, seed: int = 0, rerate: Solver | None = None) -> list[Puzzle]:
    """At most ``count`` puzzles spread over difficulty: the first of each id only (with
    ``rerate``, a solver, each given its start rating again by :func:`start_rating`, so that
    puzzles mined by an older rule are rated as :func:`prove_puzzle` rates now), each easy
    kind (:func:`easy_kind`) held to its share in :data:`SELECT_CAPS`, and the rest taken in
    turn from each :data:`RATING_BAND` of start ratings, in a seeded order within a band, so
    that no band crowds out the others. The result is sorted by rating, then id."""
    import numpy as np

    unique: dict[str, Puzzle] = {}
    for p in puzzles:
        unique.setdefault(p.id, p)
    pool = sorted(unique.values(), key=lambda p: p.id)
    if rerate is not None:
        pool = [Puzzle(**{**p.__dict__, "rating": start_rating(p, rerate)}) for p in pool]
    order = np.random.default_rng(seed).permutation(len(pool))
    bands: dict[int, list[Puzzle]] = {}
    for i in order:
        bands.setdefault(int(pool[i].rating // RATING_BAND), []).append(pool[i])
    caps = {kind: int(share * count) for kind, share in SELECT_CAPS.items()}
    taken: dict[str, int] = {kind: 0 for kind in caps}
    chosen: list[Puzzle] = []
    queues = [bands[b] for b in sorted(bands)]
    while len(chosen) < count and any(queues):
        for queue in queues:
            while queue:
                p = queue.pop(0)
                kind = easy_kind(p)
                if kind and taken[kind] >= caps[kind]:
                    continue
                if kind:
                    taken[kind] += 1
                chosen.append(p)
                break
            if len(chosen) >= count:
                break
    return sorted(chosen, key=lambda p: (p.rating, p.id))


# ---------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------


def save_puzzles(path: str | os.PathLike, puzzles: Iterable[Puzzle], *, export: bool = False) -> None:
    """Write one puzzle a line, atomically (a failure, a full disk included, leaves no
    partial file); ``export`` keeps only :data:`EXPORT_KEYS`."""
    text = "".join(json.dumps(p.to_export() if export else p.to_dict()) + "\n" for p in puzzles)
    atomic_write_bytes(path, text.encode())


def load_puzzle_lines(path: str | os.PathLike) -> list[tuple[str, dict]]:
    """The raw lines of a puzzle file as ``("FILE:LINE", object)``, for the checker."""
    return list(json_lines(path, PuzzleFileError))


def load_puzzles(path: str | os.PathLike = SHIPPED_PUZZLES) -> list[Puzzle]:
    """Read a puzzle file (the shipped set by default); PuzzleFileError names a line with
    missing or mistyped fields. Nothing is proven here: :func:`check_puzzles` does that."""
    out = []
    for where, obj in load_puzzle_lines(path):
        try:
            out.append(_puzzle_from(obj))
        except (KeyError, TypeError, ValueError) as exc:
            raise PuzzleFileError(f"{where}: {exc}") from None
    return out


def _puzzle_from(obj: dict) -> Puzzle:
    missing = [k for k in EXPORT_KEYS if k not in obj]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}; a puzzle has {', '.join(EXPORT_KEYS)}")
    solution, puzzle_themes = obj["solution"], obj["themes"]
    if not isinstance(solution, list) or not solution or not all(isinstance(m, str) for m in solution):
        raise ValueError("'solution' must be a non-empty list of moves like 'c3 X'")
    if not isinstance(puzzle_themes, list) or not all(t in THEMES for t in puzzle_themes):
        raise ValueError(f"'themes' must be a list of: {', '.join(THEMES)}")
    plies, rating = obj["plies"], obj["rating"]
    if not isinstance(plies, int) or isinstance(plies, bool) or plies < 1:
        raise ValueError("'plies' must be a positive integer")
    if isinstance(rating, bool) or not isinstance(rating, (int, float)) or not math.isfinite(rating):
        raise ValueError("'rating' must be a finite number")
    if obj["kind"] not in (ORDER_WINS, CHAOS_SURVIVES):
        raise ValueError(f"'kind' must be {ORDER_WINS} or {CHAOS_SURVIVES}, got {obj['kind']!r}")
    if not isinstance(obj["board"], str) or not isinstance(obj["id"], str):
        raise ValueError("'board' and 'id' must be strings")
    return Puzzle(obj["id"], obj["board"], obj["kind"], list(solution), plies, list(puzzle_themes),
                  float(rating), str(obj.get("source", "")))


# ---------------------------------------------------------------------------------------
# Checking
# ---------------------------------------------------------------------------------------


def check_puzzle(puzzle: Puzzle, solver: Solver, node_limit: int = CHECK_NODE_LIMIT) -> str | None:
    """What is wrong with one puzzle, proven again from its board, or None when it holds.

    The board must be a position whose side to move matches ``kind``, won for the mover
    with exactly one winning move, the solution's first move; the solution must be legal,
    each of the winner's moves in it must keep the win; for ``order_wins`` it must end in
    a five after exactly ``plies`` plies, ``plies`` must be the forced length and each Chaos
    move in it a best defence; for ``chaos_survives`` ``plies`` must be the empty cells and
    the line must end where no five is possible; themes and id must be what the position gives.
    """
    try:
        state = parse_board(puzzle.board)
    except BoardStringError as exc:
        return f"bad board: {exc}"
    if state.is_terminal:
        return f"the board is a finished game ({state.winner} won)"
    if KINDS[state.to_play] != puzzle.kind:
        return (f"the kind is {puzzle.kind} but {state.to_play.capitalize()} is to move "
                f"({state.num_stones} stones on the board)")
    if puzzle.id != puzzle_id(state):
        return f"the id should be {puzzle_id(state)} (the position's canonical key)"
    try:
        line = [parse_move(m) for m in puzzle.solution]
    except ValueError as exc:
        return f"bad solution: {exc}"
    prover = _Prover(solver, node_limit)
    try:
        winner, keeping = prover.winner_and_keeping(state)
        if winner != state.to_play:
            return f"the position is lost for {state.to_play}: {winner} wins with best play"
        if len(keeping) != 1:
            return f"{len(keeping)} moves win, not one: {', '.join(action_name(a) for a in keeping)}"
        if line[0] != keeping[0]:
            return f"the winning move is {action_name(keeping[0])}, not {action_name(line[0])}"
        problem = _check_line(prover, state, puzzle, line)
    except Unproven:
        return f"not proven within {node_limit:,} solver nodes"
    if problem:
        return problem
    expected = themes(state, puzzle.kind, line)
    if sorted(puzzle.themes) != sorted(expected):
        return f"the themes should be {expected}, not {puzzle.themes}"
    return None


def _check_line(prover: _Prover, state: State, puzzle: Puzzle, line: list[int]) -> str | None:
    current = state
    for i, action in enumerate(line):
        if current.is_terminal:
            return f"the solution goes on after the game ended (move {i + 1})"
        if (current.x | current.o) >> (action >> 1) & 1:
            return f"solution move {i + 1} ({action_name(action)}) is on an occupied cell"
        mover = current.to_play
        current = current.apply(action)
        if mover == state.to_play and prover.winner(current) != mover:
            return f"solution move {i + 1} ({action_name(action)}) loses the win"
        if puzzle.kind == ORDER_WINS and mover == CHAOS:
            left = len(line) - i - 1
            if prover.order_wins_within(current, left - 2):
                return f"solution move {i + 1} ({action_name(action)}) is not a best defence"
    if puzzle.kind == ORDER_WINS:
        if not current.has_five:
            return "the solution does not end in a five"
        if len(line) != puzzle.plies:
            return f"the solution has {len(line)} plies, the puzzle says {puzzle.plies}"
        if puzzle.plies >= 3 and prover.order_wins_within(state.apply(line[0]), puzzle.plies - 3):
            return f"Order wins faster than in {puzzle.plies} plies"
    else:
        if puzzle.plies != state.num_empty:
            return f"plies should be the {state.num_empty} empty cells, not {puzzle.plies}"
        if not (current.decided or current.is_full):
            return "the solution stops while a five is still possible"
    return None


def check_puzzles(
    path: str | os.PathLike,
    *,
    sample: int = 0,
    seed: int = 0,
    node_limit: int = CHECK_NODE_LIMIT,
) -> int:
    """Re-prove the puzzles of a file with a fresh solver; raise PuzzleCheckError naming the
    first bad one (by file and line), a duplicate up to symmetry included, and
    PuzzleFileError for a file without puzzles. ``sample`` > 0
    checks that many puzzles drawn with ``seed`` (duplicates over the whole file still).
    Returns how many puzzles were proven."""
    import numpy as np

    lines = load_puzzle_lines(path)
    if not lines:
        raise PuzzleFileError(f"{path} holds no puzzles (a puzzle file has one JSON line per puzzle, "
                              "as orderchaos puzzles generate writes)")
    puzzles: list[tuple[str, Puzzle]] = []
    for where, obj in lines:
        try:
            puzzles.append((where, _puzzle_from(obj)))
        except (KeyError, TypeError, ValueError) as exc:
            raise PuzzleCheckError(f"{where}: {exc}") from None
    seen: dict[int, str] = {}
    for where, p in puzzles:
        try:
            state = parse_board(p.board)
        except BoardStringError as exc:
            raise PuzzleCheckError(f"{where} ({p.id}): bad board: {exc}") from None
        key = canonical_key(state.x, state.o)
        if key in seen:
            raise PuzzleCheckError(f"{where} ({p.id}): the same position as {seen[key]} up to symmetry")
        seen[key] = where
    chosen = puzzles
    if sample and sample < len(puzzles):
        picks = np.random.default_rng(seed).choice(len(puzzles), size=sample, replace=False)
        chosen = [puzzles[i] for i in sorted(picks)]
    solver = Solver()
    for where, p in chosen:
        problem = check_puzzle(p, solver, node_limit)
        if problem is not None:
            raise PuzzleCheckError(f"{where} ({p.id}): {problem}")
    return len(chosen)


# ---------------------------------------------------------------------------------------
# Solving a puzzle move by move (what the page asks the server)
# ---------------------------------------------------------------------------------------


class AttemptError(ValueError):
    """Moves that are not a puzzle attempt in progress (illegal, or past its end)."""


@dataclass
class AttemptStep:
    """The answer to the solver's latest move in a puzzle.

    ``kept``: the move keeps the mover's win. ``solved``: the puzzle is over and won (a five
    for ``order_wins``; for ``chaos_survives`` no five is possible any more, or after Order's
    reply more than one move keeps Chaos's win: the forced part is over). ``reply``: the
    opponent's answer when the puzzle goes on. When the move loses, ``best`` is a move
    that kept the win and ``line`` a winning line from there, that move first.
    """

    kept: bool
    solved: bool = False
    reply: int | None = None
    best: int | None = None
    line: list[int] = field(default_factory=list)

    @property
    def over(self) -> bool:
        """Whether the attempt has ended (solved or failed)."""
        return self.solved or not self.kept


def _puzzle_over(kind: str, state: State) -> bool:
    """A position where the puzzle's mover has won: a five, or (Chaos) no five possible."""
    if kind == ORDER_WINS:
        return state.has_five
    return state.decided or state.is_full


def _slowest_defence(prover: _Prover, state: State, plies: int) -> int:
    """Chaos's move in ``state``, where Order forces a five in ``plies`` plies and no fewer,
    after which Order needs the most plies: ``plies - 1``. With ``plies`` 1 every move
    completes a five itself, and the first is returned."""
    legal = state.legal_actions()
    if plies <= 1:
        return legal[0]
    return next(a for a in legal if not prover.order_wins_within(state.apply(a), plies - 2))


def best_defence(prover: _Prover, state: State) -> int:
    """Chaos's answer in a lost position: a move after which Order needs the most plies."""
    return _slowest_defence(prover, state, prover.forced_length(state))


def _winning_line(prover: _Prover, state: State, kind: str) -> list[int]:
    """A winning line for the mover of ``state`` (a won position): Order's fastest win, or
    Chaos's keeping moves against Order's most dangerous replies."""
    _, keeping = prover.winner_and_keeping(state)
    if kind == ORDER_WINS:
        moves, plies = prover.fastest_wins(state, keeping)
        return _order_line(prover, state, moves[0], plies)
    return _chaos_line(prover, state, keeping[0])


def attempt_step(
    puzzle: Puzzle, moves: Sequence[int], solver: Solver, node_limit: int = CHECK_NODE_LIMIT
) -> AttemptStep:
    """Judge the last of ``moves``: the solver's moves and the opponent's replies so far,
    alternating from the puzzle's board, the solver's newest move last.

    Every earlier move of the solver must have kept the win and every reply must be the
    one this function gave (the best defence is deterministic); anything else, an illegal
    move, or moves past the end raise AttemptError. Unproven when the solver hits
    ``node_limit``.
    """
    if not moves or len(moves) % 2 == 0:
        raise AttemptError("an attempt is the solver's moves and the replies, the solver's newest move last")
    state = parse_board(puzzle.board)
    prover = _Prover(solver, node_limit)
    for i, action in enumerate(moves):
        try:
            action = state.check_action(action)
        except ValueError as exc:
            raise AttemptError(f"move {i + 1}: {exc}") from None
        if i % 2 == 1:
            if action != _opponent_reply(prover, state, puzzle.kind):
                raise AttemptError(f"move {i + 1} is not the reply the puzzle plays")
            state = state.apply(action)
            continue
        before, state = state, state.apply(action)
        if prover.winner(state) != before.to_play:
            if i + 1 < len(moves):
                raise AttemptError(f"move {i + 1} lost the win: the attempt ended there")
            line = [parse_move(m) for m in puzzle.solution] if i == 0 else _winning_line(prover, before, puzzle.kind)
            return AttemptStep(kept=False, best=line[0], line=line)
        if _puzzle_over(puzzle.kind, state):
            if i + 1 < len(moves):
                raise AttemptError(f"the puzzle was solved at move {i + 1}")
            return AttemptStep(kept=True, solved=True)
    reply = _opponent_reply(prover, state, puzzle.kind)
    after = state.apply(reply)
    solved = _puzzle_over(puzzle.kind, after)
    if puzzle.kind == CHAOS_SURVIVES and not solved:
        # Survival is the puzzle while it is forced: once more than one move keeps Chaos's
        # win, the rest is no longer a puzzle (the page shows the solution's line).
        solved = len(prover.winner_and_keeping(after)[1]) > 1
    return AttemptStep(kept=True, solved=solved, reply=reply)


def _opponent_reply(prover: _Prover, state: State, kind: str) -> int:
    """The opponent's deterministic answer: Chaos's best defence, or Order's most dangerous move."""
    return best_defence(prover, state) if kind == ORDER_WINS else _order_reply(state)
