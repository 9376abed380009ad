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


FIVE_IN_NINE = [0, 13, 2, 15, 4, 17, 6, 19, 8]  # X on a1..e1, O on a2..d2: Order wins at ply 9


def test_saved_lines_hold_the_index_labels_and_move_names(tmp_path) -> None:
    from orderchaos.arena.game_files import GameRecord

    record = GameRecord(FIVE_IN_NINE, "order", 9, 2)
    path = tmp_path / "games.jsonl"
    save_games(path, [record, record], "alice", "bob")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["game"] for line in lines] == [0, 1]
    assert lines[0] == {"game": 0, "order": "alice", "chaos": "bob", "actions": FIVE_IN_NINE,
                        "winner": "order", "length": 9, "opening_plies": 2,
                        "moves": ["a1 X", "a2 O", "b1 X", "b2 O", "c1 X", "c2 O", "d1 X", "d2 O", "e1 X"]}
    (first, second) = load_games(path)
    assert (first.index, first.order, first.chaos) == (0, "alice", "bob")
    assert first.record == record and second.index == 1


def test_optional_fields_default_and_blank_lines_are_skipped(tmp_path) -> None:
    path = tmp_path / "games.jsonl"
    path.write_text("\n" + json.dumps({"actions": FIVE_IN_NINE}) + "\n   \n"
                    + json.dumps({"actions": FIVE_IN_NINE, "game": 7, "winner": "order"}) + "\n")
    (a, b) = load_games(path)
    assert (a.index, a.order, a.chaos) == (0, "", "")
    assert a.record.winner == "order" and a.record.length == 9 and a.record.opening_plies == 0
    assert b.index == 7


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"opening_plies": -1}, ":1: 'opening_plies' must be an integer 0..9"),
        ({"opening_plies": 10}, ":1: 'opening_plies' must be an integer 0..9"),
        ({"opening_plies": "2"}, ":1: 'opening_plies' must be an integer 0..9"),
        ({"actions": [*FIVE_IN_NINE, 20]}, ":1: the game is already over before ply 10"),
        ({"actions": [0, True]}, ":1: 'actions' must be a list of integers 0..71"),
        ({"actions": "0 1 2"}, ":1: 'actions' must be a list of integers 0..71"),
    ],
)
def test_bad_fields_are_refused_naming_the_line(tmp_path, fields: dict, message: str) -> None:
    path = tmp_path / "games.jsonl"
    path.write_text(json.dumps({"actions": FIVE_IN_NINE, **fields}) + "\n")
    with pytest.raises(GameFileError, match=message.replace("..", r"\.\.")):
        load_games(path)


def test_the_extreme_opening_lengths_are_accepted(tmp_path) -> None:
    path = tmp_path / "games.jsonl"
    path.write_text("".join(json.dumps({"actions": FIVE_IN_NINE, "opening_plies": k}) + "\n" for k in (0, 9)))
    assert [g.record.opening_plies for g in load_games(path)] == [0, 9]


def test_a_file_that_is_not_text_is_one_error(tmp_path) -> None:
    path = tmp_path / "games.jsonl"
    path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(GameFileError, match="cannot be read as text"):
        load_games(path)


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "{path}:1: bad JSON (Expecting property name enclosed in double quotes at column 2)"),
        ("[1, 2]", "{path}:1: expected a JSON object, got list"),
        ('{"actions": "x"}', "{path}:1: 'actions' must be a list of integers 0..71"),
        ('{"actions": [0, 0]}', "{path}:1: ply 2: action 0 places X on a1 (cell 0), which already holds X; "
                                "choose an empty cell"),
        ('{"actions": [0, 2]}', "{path}:1: the game is not finished after 2 plies (a game that ended off the "
                                "board says how: 'reason': 'resign' or 'time')"),
        (json.dumps({"actions": [*FIVE_IN_NINE, 20]}), "{path}:1: the game is already over before ply 10"),
        (json.dumps({"actions": FIVE_IN_NINE, "winner": "chaos"}),
         "{path}:1: the file says 'chaos' won, but replaying gives 'order'"),
        (json.dumps({"actions": FIVE_IN_NINE, "opening_plies": 10}),
         "{path}:1: 'opening_plies' must be an integer 0..9"),
    ],
)
def test_error_messages_are_exactly_one_line_naming_the_place(tmp_path, content: str, message: str) -> None:
    path = tmp_path / "games.jsonl"
    path.write_text(content + "\n")
    with pytest.raises(GameFileError) as err:
        load_games(path)
    assert str(err.value) == message.format(path=path)


def test_unreadable_files_are_exactly_named(tmp_path) -> None:
    with pytest.raises(GameFileError) as err:
        load_games(tmp_path / "missing.jsonl")
    assert str(err.value) == f"{tmp_path / 'missing.jsonl'}: no such file"
    binary = tmp_path / "games.jsonl"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(GameFileError) as err:
        load_games(binary)
    assert str(err.value).startswith(f"{binary}: cannot be read as text: ") and str(err.value).endswith("byte")


def test_players_default_to_empty_labels(tmp_path) -> None:
    from orderchaos.arena.game_files import GameRecord

    path = tmp_path / "games.jsonl"
    save_games(path, [GameRecord(FIVE_IN_NINE, "order", 9, 0)])
    line = json.loads(path.read_text())
    assert (line["order"], line["chaos"]) == ("", "")


def test_a_game_ended_off_the_board_says_how_and_reads_back(tmp_path) -> None:
    from orderchaos.arena.game_files import GameRecord

    resigned = GameRecord(FIVE_IN_NINE[:5], "chaos", 5, 0, "resign")
    on_time = GameRecord(FIVE_IN_NINE[:4], "order", 4, 0, "time")
    path = tmp_path / "games.jsonl"
    save_games(path, [resigned, on_time, GameRecord(FIVE_IN_NINE, "order", 9, 0)])
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line.get("reason") for line in lines] == ["resign", "time", None]  # a board ending needs no word
    assert [g.record for g in load_games(path)] == [resigned, on_time, GameRecord(FIVE_IN_NINE, "order", 9, 0)]


@pytest.mark.parametrize(
    "line, message",
    [
        ({"actions": FIVE_IN_NINE[:5], "winner": "chaos"}, ":1: the game is not finished after 5 plies (a game "
         "that ended off the board says how: 'reason': 'resign' or 'time')"),
        ({"actions": FIVE_IN_NINE, "winner": "chaos", "reason": "resign"},
         ":1: 'reason' is 'resign', but the board decides the game after 9 plies"),
        ({"actions": FIVE_IN_NINE[:5], "reason": "time"}, ":1: a game ended by 'time' needs 'winner': 'order' or 'chaos'"),
        ({"actions": FIVE_IN_NINE[:5], "winner": "nobody", "reason": "resign"}, "needs 'winner'"),
        ({"actions": FIVE_IN_NINE, "reason": "full_board"},
         ":1: the file says the game ended by 'full_board', but replaying gives 'five'"),
        ({"actions": FIVE_IN_NINE[:5], "reason": "gave up"}, ":1: 'reason' must be one of five, full_board, resign, time"),
    ],
)
def test_a_reason_that_disagrees_with_the_board_is_refused(line: dict, message: str, tmp_path) -> None:
    path = tmp_path / "games.jsonl"
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(GameFileError) as refused:
        load_games(path)
    assert message in str(refused.value)
