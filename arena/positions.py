"""Solver-labelled positions and optimal-move accuracy.

A labelled position is a board where the side to move can force a win, with
``good_actions``: every move that keeps that win (from the exact solver). An agent's move
is correct when it is one of them. Sets are JSON lines, one position a line::

    {"board": "X.O...", "good_actions": [14, 15], "to_move": "order", "empties": 14, ...}

Only ``board`` and ``good_actions`` are read back; the other fields are for people.

Sets are made from sensible play: both sides play the heuristic agent, with a seeded
chance ``epsilon`` of a uniformly random move instead, until a randomly chosen number of
empty cells is reached. The solver then labels the position (within a node limit, so a
set is the same on every machine); it is kept only when the mover is winning and not
every legal move wins, and it is new up to the 16 symmetries. Positions the solver cannot
label within the node limit are dropped (counted in :class:`MakeStats`), so a late-stage set
leans towards positions that are quicker to prove.

Four sets ship, one per stage of the game (:data:`SHIPPED_SETS`): 12-18, 19-22, 23-26 and
27-30 empty cells. :func:`stage_accuracies` scores an agent on each of them; each set's
command is in ``arena/data/README.md``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from orderchaos.agents.base import Agent
from orderchaos.agents.simple import epsilon_heuristic_position
from orderchaos.envs.rules import (
    ACTIONS,
    AGENTS,
    BoardStringError,
    IllegalActionError,
    State,
    action_name,
    parse_board,
)
from orderchaos.envs.symmetry import canonical_key
from orderchaos.arena.game_files import json_lines
from orderchaos.files import atomic_write_bytes

DATA_DIR: Path = Path(__file__).resolve().parent / "data"

SHIPPED_SETS: dict[str, Path] = {
    "12_18": DATA_DIR / "positions_12-18.jsonl",
    "19_22": DATA_DIR / "positions_19-22.jsonl",
    "23_26": DATA_DIR / "positions_23-26.jsonl",
    "27_30": DATA_DIR / "positions_27-30.jsonl",
}
"""The shipped solver-labelled sets by stage of the game, keyed ``"LOW_HIGH"`` (empty cells),
from the end of the game backwards; the keys are also the TensorBoard tag fragments
(``eval/accuracy_19_22``)."""

DEFAULT_POSITIONS: Path = SHIPPED_SETS["12_18"]
"""The first shipped set: solver-labelled positions with 12 to 18 empty cells."""


class PositionsFileError(ValueError):
    """A positions file that cannot be used; the message names the file, line and problem."""


@dataclass
class LabelledPosition:
    """A board (36-char string) whose mover can force a win, and the moves that keep it."""

    board: str
    good_actions: list[int]

    @property
    def state(self) -> State:
        """The position as a State."""
        return parse_board(self.board)


@dataclass
class AccuracyResult:
    """How often an agent chose a winning move; ``by_side`` splits by the side to move."""

    positions: int
    correct: int
    accuracy: float
    by_side: dict[str, dict]

    def to_dict(self) -> dict:
        """A JSON-ready dict."""
        return {
            "positions": self.positions,
            "correct": self.correct,
            "accuracy": self.accuracy,
            "by_side": self.by_side,
        }


# ---------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------


def check_position(board: object, good_actions: object) -> LabelledPosition:
    """Validate one position and return it normalised (36-char board, sorted actions).

    Raises ValueError saying what is wrong: a malformed board, a finished game, or
    good_actions that are not a non-empty list of distinct legal actions 0..71.
    """
    if not isinstance(board, str):
        raise ValueError(f"'board' must be a string of 36 cells, got {type(board).__name__}")
    try:
        state = parse_board(board)
    except BoardStringError as exc:
        raise ValueError(f"malformed board: {exc}") from None
    if state.is_terminal:
        raise ValueError(f"the board is a finished game ({state.winner} won); nothing to play")
    if not isinstance(good_actions, list) or not good_actions:
        raise ValueError("'good_actions' must be a non-empty list of actions 0..71")
    for a in good_actions:
        if isinstance(a, bool) or not isinstance(a, int) or not 0 <= a < ACTIONS:
            raise ValueError(
                f"good action {a!r} is not an action 0..{ACTIONS - 1} (2*cell + symbol)"
            )
        try:
            state.check_action(a)
        except IllegalActionError as exc:
            raise ValueError(f"good action {a} is illegal here: {exc}") from None
    if len(set(good_actions)) != len(good_actions):
        raise ValueError(f"'good_actions' repeats an action: {good_actions}")
    return LabelledPosition(state.to_string(), sorted(good_actions))


def load_positions(path: str | os.PathLike) -> list[LabelledPosition]:
    """Read a JSON-lines positions file; blank lines are skipped.

    Raises PositionsFileError naming the file and line and what is wrong: bad JSON, a
    missing ``board`` or ``good_actions``, a malformed board, or an action out of range
    or illegal.
    """
    positions = []
    for where, obj in json_lines(path, PositionsFileError):
        for key in ("board", "good_actions"):
            if key not in obj:
                raise PositionsFileError(f"{where}: missing {key!r} (each line needs 'board' "
                                         f"and 'good_actions')")
        try:
            positions.append(check_position(obj["board"], obj["good_actions"]))
        except ValueError as exc:
            raise PositionsFileError(f"{where}: {exc}") from None
    if not positions:
        raise PositionsFileError(f"{path}: holds no positions")
    return positions


def save_positions(path: str | os.PathLike, positions: Sequence[LabelledPosition]) -> None:
    """Write positions as JSON lines, with the side to move, empties and move names added,
    atomically (a failure, a full disk included, leaves no partial file)."""
    lines = []
    for p in positions:
        checked = check_position(p.board, list(p.good_actions))
        state = checked.state
        line = {
            "board": checked.board,
            "good_actions": checked.good_actions,
            "to_move": state.to_play,
            "empties": state.num_empty,
            "good_moves": [action_name(a) for a in checked.good_actions],
            "legal_moves": len(state.legal_actions()),
        }
        lines.append(json.dumps(line) + "\n")
    atomic_write_bytes(Path(path), "".join(lines).encode())


# ---------------------------------------------------------------------------------------
# Accuracy
# ---------------------------------------------------------------------------------------


def positions_accuracy(
    agent: Agent | str, positions: Sequence[LabelledPosition], seed: int = 0
) -> AccuracyResult:
    """The fraction of positions where ``agent`` plays one of the good actions.

    A spec string is built once with ``agents.make(spec, seed=seed)``; an agent object is
    used as it is. An illegal move from the agent raises IllegalActionError.
    """
    if isinstance(agent, str):
        from orderchaos.agents.registry import make

        agent = make(agent, seed=seed)
    counts = {side: [0, 0] for side in AGENTS}  # side -> [positions, correct]
    for p in positions:
        state = p.state
        action = agent.act(state)
        try:
            state.check_action(action)
        except IllegalActionError as exc:
            raise IllegalActionError(
                f"agent {getattr(agent, 'name', agent)!r} played an illegal move on board "
                f"{p.board}: {exc}"
            ) from None
        tally = counts[state.to_play]
        tally[0] += 1
        tally[1] += int(action) in p.good_actions
    total = sum(t[0] for t in counts.values())
    correct = sum(t[1] for t in counts.values())
    by_side = {
        side: {"positions": n, "correct": c, "accuracy": c / n if n else float("nan")}
        for side, (n, c) in counts.items()
    }
    return AccuracyResult(total, correct, correct / total if total else float("nan"), by_side)


def pooled_accuracy(results: Sequence[AccuracyResult]) -> AccuracyResult:
    """Several results as one: positions and correct moves added, overall and by side."""
    by_side = {}
    for side in AGENTS:
        n = sum(r.by_side[side]["positions"] for r in results)
        c = sum(r.by_side[side]["correct"] for r in results)
        by_side[side] = {"positions": n, "correct": c, "accuracy": c / n if n else float("nan")}
    total = sum(r.positions for r in results)
    correct = sum(r.correct for r in results)
    return AccuracyResult(total, correct, correct / total if total else float("nan"), by_side)


def set_name(path: str | os.PathLike) -> str:
    """The key of a shipped set (``"19_22"``) when ``path`` is one, else the path as given."""
    resolved = Path(path).resolve()
    for name, shipped in SHIPPED_SETS.items():
        if shipped.resolve() == resolved:
            return name
    return str(path)


def stage_accuracies(
    agent: Agent | str,
    sets: Mapping[str, str | os.PathLike] | Sequence[str | os.PathLike] | None = None,
    seed: int = 0,
    limit: int = 0,
) -> dict[str, AccuracyResult]:
    """Score ``agent`` on each position set: ``{name: AccuracyResult}`` in the sets' order.

    ``sets`` defaults to :data:`SHIPPED_SETS` (one set per stage of the game); a sequence of
    paths is named by :func:`set_name`. ``limit`` (0: all) scores only the first ``limit``
    positions of each set. A spec string is built afresh for each set with
    ``agents.make(spec, seed=seed)``, so a set's figure does not depend on which other sets
    are scored (``--file F`` gives the same row as the full table). Every file is read
    before any is scored, so a missing or malformed one fails at once with
    PositionsFileError.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValueError(f"limit must be a non-negative integer (0: all), got {limit!r}")
    if sets is None:
        sets = SHIPPED_SETS
    named = dict(sets) if isinstance(sets, Mapping) else {set_name(p): p for p in sets}
    if not named:
        raise ValueError("no position sets to score")
    loaded = {name: load_positions(path) for name, path in named.items()}
    results = {}
    for name, positions in loaded.items():
        results[name] = positions_accuracy(agent, positions[:limit] if limit else positions, seed=seed)
    return results


# ---------------------------------------------------------------------------------------
# Making sets
# ---------------------------------------------------------------------------------------


@dataclass
class MakeStats:
    """What making a set cost: attempts, why candidates were dropped, solver time."""

    attempts: int = 0
    ended_early: int = 0
    unproven: int = 0
    mover_lost: int = 0
    all_moves_win: int = 0
    duplicates: int = 0
    excluded: int = 0
    solver_seconds: float = 0.0
    seconds: float = 0.0
    empties: dict[int, int] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """A JSON-ready dict."""
        return dict(self.__dict__)


def make_positions(
    n: int,
    empties: tuple[int, int] = (12, 18),
    seed: int = 0,
    *,
    node_limit: int = 1_000_000,
    time_limit: float | None = None,
    progress: bool = False,
    epsilon: float = 0.3,
    stats: MakeStats | None = None,
    side: str | None = None,
    exclude: Sequence[LabelledPosition] = (),
) -> list[LabelledPosition]:
    """Make ``n`` solver-labelled positions with ``empties[0]..empties[1]`` empty cells.

    Reproducible: candidate ``k`` is played with its own generator, seeded ``(seed, k)``,
    and labelled by one Solver made for the call, within ``node_limit`` nodes (positions
    it cannot prove are skipped). So the same arguments give the same set on any machine,
    and asking for fewer positions gives a prefix of the larger set. A ``time_limit``
    (seconds per position) is an extra cap that makes the set depend on the machine's
    speed. Gives up after ``200 * n`` attempts and returns what it has. Pass a MakeStats as
    ``stats`` to learn what was dropped and how long the solver took.

    ``side`` (``"order"`` or ``"chaos"``) draws only empty counts where that side moves
    (Order: even, Chaos: odd), so every position has it to move. ``exclude`` holds positions
    that are never chosen, up to symmetry (a training set kept apart from the evaluation
    sets); such candidates count as ``excluded``.
    """
    from tqdm import tqdm

    from orderchaos.agents.solver import Solver

    lo, hi = _check_empties(empties)
    counts = _side_empties(lo, hi, side)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"the number of positions must be a positive integer, got {n!r}")
    if time_limit is not None and not time_limit > 0:
        raise ValueError(f"time_limit must be positive seconds, got {time_limit!r}")
    if isinstance(node_limit, bool) or not isinstance(node_limit, int) or node_limit < 1:
        raise ValueError(f"node_limit must be a positive integer, got {node_limit!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    stats = stats if stats is not None else MakeStats()
    start = time.perf_counter()
    solver = Solver()
    seen: set[int] = set()
    excluded = {canonical_key(p.state.x, p.state.o) for p in exclude}
    found: list[LabelledPosition] = []
    bar = tqdm(total=n, disable=not progress, unit="pos", leave=False)
    try:
        while len(found) < n and stats.attempts < 200 * n:
            rng = np.random.default_rng([seed, stats.attempts])
            stats.attempts += 1
            target = int(rng.integers(lo, hi + 1)) if counts is None else int(rng.choice(counts))
            state = epsilon_heuristic_position(target, rng, epsilon)
            if state is None:
                stats.ended_early += 1
                continue
            key = canonical_key(state.x, state.o)
            if key in excluded:
                stats.excluded += 1
                continue
            if key in seen:
                stats.duplicates += 1
                continue
            seen.add(key)
            result = solver.solve(state, time_limit=time_limit, node_limit=node_limit, moves=True)
            stats.solver_seconds += result.seconds
            # a proven result whose move list ran out of budget is as good as unproven here
            if result.winner is None or not result.best_actions:
                stats.unproven += 1
                continue
            if result.winner != state.to_play:
                stats.mover_lost += 1
                continue
            good = sorted(set(result.best_actions))
            if len(good) == len(state.legal_actions()):
                stats.all_moves_win += 1
                continue
            found.append(LabelledPosition(state.to_string(), good))
            stats.empties[state.num_empty] = stats.empties.get(state.num_empty, 0) + 1
            bar.update(1)
    finally:
        bar.close()
    stats.seconds = time.perf_counter() - start
    return found


def _side_empties(lo: int, hi: int, side: str | None) -> list[int] | None:
    """The empty counts in lo..hi where ``side`` moves (None: no restriction)."""
    if side is None:
        return None
    if side not in AGENTS:
        raise ValueError(f"side must be one of {', '.join(AGENTS)}, got {side!r}")
    # Order moves on an even stone count, so on an even number of empty cells (36 is even)
    parity = 0 if side == AGENTS[0] else 1
    counts = [e for e in range(lo, hi + 1) if e % 2 == parity]
    if not counts:
        raise ValueError(f"{side} never moves with {lo}-{hi} empty cells; widen the range")
    return counts


def _check_empties(empties: tuple[int, int]) -> tuple[int, int]:
    try:
        lo, hi = (int(v) for v in empties)
    except (TypeError, ValueError):
        raise ValueError(f"empties must be a pair (low, high), got {empties!r}") from None
    if not 1 <= lo <= hi <= 35:
        raise ValueError(f"empties must satisfy 1 <= low <= high <= 35, got {lo}-{hi}")
    return lo, hi


def parse_empties(text: str) -> tuple[int, int]:
    """Parse ``"12-18"`` (or a single ``"15"``) into a (low, high) pair of empty counts."""
    parts = text.split("-")
    try:
        values = [int(p) for p in parts]
    except ValueError:
        raise ValueError(f"bad empties {text!r}: expected LOW-HIGH like '12-18', or one number")
    if len(values) == 1:
        values *= 2
    if len(values) != 2:
        raise ValueError(f"bad empties {text!r}: expected LOW-HIGH like '12-18', or one number")
    return _check_empties((values[0], values[1]))
