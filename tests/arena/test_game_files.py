"""Saved games: round trip and files refused naming the line and problem."""

from __future__ import annotations

import json

import pytest

from orderchaos.arena.game_files import GameFileError, load_games, save_games
from orderchaos.arena.matches import play_match


def test_saved_games_round_trip(tmp_path) -> None:
    result = play_match("heuristic", "random", n=4, seed=5, openings=1, keep_games=True)
    path = tmp_path / "games.jsonl"
    save_games(path, result.records, result.order, result.chaos)
    loaded = load_games(path)
    assert [g.record for g in loaded] == result.records
    assert [g.index for g in loaded] == [0, 1, 2, 3]
    assert all(g.order == "heuristic" and g.chaos == "random" for g in loaded)


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", ":2: bad JSON"),
        ("[1, 2]", ":2: expected a JSON object"),
        ('{"winner": "order"}', ":2: 'actions' must be a list"),
        ('{"actions": [0, 0]}', ":2: ply 2: action 0 places X on a1"),
        ('{"actions": [0, 99]}', ":2: ply 2: action 99 is outside"),
        ('{"actions": [0, 2]}', ":2: the game is not finished"),
    ],
)
def test_bad_game_files_name_the_line_and_problem(tmp_path, line: str, message: str) -> None:
    good = play_match("heuristic", "random", n=1, seed=0, keep_games=True)
    path = tmp_path / "games.jsonl"
    save_games(path, good.records)
    path.write_text(path.read_text() + line + "\n")
    with pytest.raises(GameFileError, match=message):
        load_games(path)


def test_a_winner_that_disagrees_with_the_replay_is_refused(tmp_path) -> None:
    good = play_match("heuristic", "random", n=1, seed=0, keep_games=True)
    path = tmp_path / "games.jsonl"
    save_games(path, good.records)
    obj = json.loads(path.read_text())
    obj["winner"] = "chaos" if obj["winner"] == "order" else "order"
    path.write_text(json.dumps(obj) + "\n")
    with pytest.raises(GameFileError, match="replaying gives"):
        load_games(path)
    with pytest.raises(GameFileError, match="no such file"):
        load_games(tmp_path / "missing.jsonl")
