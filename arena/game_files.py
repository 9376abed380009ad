"""Saved games: the one module that knows the games file format (JSON lines).

Three kinds of game record exist, each for its own job: :class:`GameRecord` (the moves and
result of a played game, what matches return), :class:`SavedGame` (a ``GameRecord`` read
back from a file, with the players' labels and its number there), and the trainer's
``SelfPlayGame`` (states and search policies, in :mod:`orderchaos.train.selfplay`).

One line per game::

    {"game": 0, "order": "heuristic", "chaos": "random", "actions": [28, 15, ...],
     "winner": "order", "length": 17, "opening_plies": 2, "moves": ["c3 X", ...]}

``actions`` is authoritative (``moves`` is for people); loading replays every game with the
rules and refuses a file whose games are illegal, unfinished or disagree with ``winner``.

A game that ended off the board, before a five or a full board decided it, says how with
``"reason"``: ``"resign"`` (a player gave up) or ``"time"`` (a clock ran out); its
``winner`` is then the file's word, and its actions must leave the game unfinished. A game
without ``reason`` (or with ``"five"`` or ``"full_board"``, checked against the replay) ended
on the board. The site's aborted games have no winner and are never written.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from orderchaos.envs.rules import IllegalActionError, State, action_name
from orderchaos.files import InputTooLargeError, JSONLimitError, atomic_write_bytes, loads_bounded, read_text_bounded


BOARD_ENDS = ("five", "full_board")
"""How a game ends on the board: Order's five, or a full board without one (Chaos wins)."""
OFF_BOARD_ENDS = ("resign", "time")
"""How a game ends before the board decides it: a resignation, or a clock that ran out."""


@dataclass
class GameRecord:
    """One finished game: every action from the empty board (opening included). ``reason``
    None: it ended on the board (the replay shows how); one of :data:`OFF_BOARD_ENDS`: it
    ended off the board, won by ``winner``, with the board still open."""

    actions: list[int]
    winner: str
    length: int
    opening_plies: int
    reason: str | None = None

    def to_dict(self) -> dict:
        """A JSON-ready dict of the record (``reason`` only for a game ended off the board)."""
        out = asdict(self)
        if self.reason is None:
            del out["reason"]
        return out




@dataclass
class SavedGame:
    """A game read back from a JSON-lines file, with the players' labels."""

    index: int
    order: str
    chaos: str
    record: GameRecord


class GameFileError(ValueError):
    """A saved-games file that cannot be read; the message names the file and line."""


def save_games(
    path: str | os.PathLike, records: Sequence[GameRecord], order: str = "", chaos: str = ""
) -> None:
    """Write each game as one JSON line, labelled with the players' specs, atomically (a
    failure, a full disk included, leaves no partial file)."""
    text = "".join(game_line(record, order, chaos, i) + "\n" for i, record in enumerate(records))
    atomic_write_bytes(Path(path), text.encode())


def game_line(record: GameRecord, order: str, chaos: str, index: int) -> str:
    """One game as its line of a games file (without the newline)."""
    line = {"game": index, "order": order, "chaos": chaos, **record.to_dict()}
    line["moves"] = [action_name(a) for a in record.actions]
    return json.dumps(line)


def load_games(path: str | os.PathLike) -> list[SavedGame]:
    """Read and check a saved-games file: every game is replayed with the rules.

    Raises GameFileError naming the line and what is wrong (bad JSON, a missing or
    mistyped field, an illegal action, a game that does not end where the file says,
    or a winner or reason that disagrees with the replay).
    """
    games = []
    for where, obj in json_lines(path, GameFileError):
        actions = obj.get("actions")
        if not isinstance(actions, list) or not all(
            isinstance(a, int) and not isinstance(a, bool) for a in actions
        ):
            raise GameFileError(f"{where}: 'actions' must be a list of integers 0..71")
        reason = obj.get("reason")
        if reason is not None and reason not in BOARD_ENDS + OFF_BOARD_ENDS:
            raise GameFileError(f"{where}: 'reason' must be one of {', '.join(BOARD_ENDS + OFF_BOARD_ENDS)}, "
                                f"got {reason!r}")
        state = State()
        for ply, a in enumerate(actions, 1):
            if state.is_terminal:
                raise GameFileError(f"{where}: the game is already over before ply {ply}")
            try:
                state = state.apply(a)
            except IllegalActionError as exc:
                raise GameFileError(f"{where}: ply {ply}: {exc}") from None
        if reason in OFF_BOARD_ENDS:
            if state.is_terminal:
                raise GameFileError(f"{where}: 'reason' is {reason!r}, but the board decides the game "
                                    f"after {len(actions)} plies")
            winner = obj.get("winner")
            if winner not in ("order", "chaos"):
                raise GameFileError(f"{where}: a game ended by {reason!r} needs 'winner': 'order' or 'chaos'")
        else:
            if not state.is_terminal:
                raise GameFileError(f"{where}: the game is not finished after {len(actions)} plies (a game "
                                    f"that ended off the board says how: 'reason': 'resign' or 'time')")
            winner = obj.get("winner", state.winner)
            if winner != state.winner:
                raise GameFileError(
                    f"{where}: the file says {winner!r} won, but replaying gives {state.winner!r}"
                )
            on_board = "five" if state.has_five else "full_board"
            if reason not in (None, on_board):
                raise GameFileError(f"{where}: the file says the game ended by {reason!r}, but replaying "
                                    f"gives {on_board!r}")
        opening = obj.get("opening_plies", 0)
        if not isinstance(opening, int) or not 0 <= opening <= len(actions):
            raise GameFileError(f"{where}: 'opening_plies' must be an integer 0..{len(actions)}")
        record = GameRecord(list(actions), winner, len(actions), opening,
                            reason if reason in OFF_BOARD_ENDS else None)
        games.append(
            SavedGame(
                int(obj.get("game", len(games))),
                str(obj.get("order", "")),
                str(obj.get("chaos", "")),
                record,
            )
        )
    return games


def json_lines(path: str | os.PathLike, error: type[ValueError]) -> Iterator[tuple[str, dict]]:
    """Yield ``("FILE:LINE", object)`` for every non-blank line of a JSON-lines file.

    A missing file, unreadable text, a file larger than
    :data:`orderchaos.files.MAX_INPUT_BYTES`, bad JSON or a line that is not a JSON object
    raises ``error`` naming the file and line.
    """
    try:
        text = read_text_bounded(path)
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except InputTooLargeError as exc:
        raise error(f"{path}: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{path}: cannot be read as text: {exc}") from None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            obj = loads_bounded(line)
        except json.JSONDecodeError as exc:
            raise error(f"{where}: bad JSON ({exc.msg} at column {exc.colno})") from None
        except JSONLimitError as exc:
            raise error(f"{where}: refused: {exc}") from None
        if not isinstance(obj, dict):
            raise error(f"{where}: expected a JSON object, got {type(obj).__name__}")
        yield where, obj
