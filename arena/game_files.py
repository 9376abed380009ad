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
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from orderchaos.envs.rules import IllegalActionError, State, action_name
from orderchaos.files import InputTooLargeError, JSONLimitError, atomic_write_bytes, loads_bounded, read_text_bounded


@dataclass
class GameRecord:
    """One finished game: every action from the empty board (opening included)."""

    actions: list[int]
    winner: str
    length: int
    opening_plies: int

    def to_dict(self) -> dict:
        """A JSON-ready dict of the record."""
        return asdict(self)




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
    or a winner that disagrees with the replay).
    """
    games = []
    for where, obj in json_lines(path, GameFileError):
        actions = obj.get("actions")
        if not isinstance(actions, list) or not all(
            isinstance(a, int) and not isinstance(a, bool) for a in actions
        ):
            raise GameFileError(f"{where}: 'actions' must be a list of integers 0..71")
        state = State()
        for ply, a in enumerate(actions, 1):
            if state.is_terminal:
                raise GameFileError(f"{where}: the game is already over before ply {ply}")
            try:
                state = state.apply(a)
            except IllegalActionError as exc:
                raise GameFileError(f"{where}: ply {ply}: {exc}") from None
        if not state.is_terminal:
            raise GameFileError(f"{where}: the game is not finished after {len(actions)} plies")
        winner = obj.get("winner", state.winner)
        if winner != state.winner:
            raise GameFileError(
                f"{where}: the file says {winner!r} won, but replaying gives {state.winner!r}"
            )
        opening = obj.get("opening_plies", 0)
        if not isinstance(opening, int) or not 0 <= opening <= len(actions):
            raise GameFileError(f"{where}: 'opening_plies' must be an integer 0..{len(actions)}")
        record = GameRecord(list(actions), state.winner, len(actions), opening)
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
