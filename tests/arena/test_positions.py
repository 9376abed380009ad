"""Solver-labelled positions: file checks with clear errors, making sets, and accuracy."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orderchaos.agents.simple import RandomAgent
from orderchaos.arena.positions import (
    DEFAULT_POSITIONS,
    SHIPPED_SETS,
    LabelledPosition,
    PositionsFileError,
    check_position,
    load_positions,
    make_positions,
    parse_empties,
    pooled_accuracy,
    positions_accuracy,
    save_positions,
    set_name,
    stage_accuracies,
)
from orderchaos.envs.rules import parse_board

from helpers import winning_moves

# Order to move (4 X, 4 O); X on a1..d1 is a four, completed only by e1 X (action 8).
FOUR_BOARD = "XXXX.." + ".O...." + "...O.." + "O....." + "....O." + "......"


@pytest.fixture(scope="module")
def small_set() -> list[LabelledPosition]:
    return make_positions(8, empties=(5, 7), seed=1)


def test_made_positions_are_labelled_exactly(small_set) -> None:
    assert len(small_set) == 8
    keys = set()
    for p in small_set:
        state = p.state
        assert 5 <= state.num_empty <= 7 and not state.is_terminal
        good = winning_moves(state)
        assert p.good_actions == good  # the mover wins, exactly these moves keep the win
        assert 0 < len(good) < len(state.legal_actions())
        keys.add(p.board)
    assert len(keys) == 8


def test_made_sets_are_seeded(small_set) -> None:
    again = make_positions(8, empties=(5, 7), seed=1)
    assert again == small_set


@pytest.mark.parametrize("side", ["order", "chaos"])
def test_a_side_keeps_only_positions_it_moves_in(side: str) -> None:
    made = make_positions(6, empties=(5, 8), seed=1, side=side)
    assert len(made) == 6
    counts = {p.state.num_empty for p in made}
    assert all(p.state.to_play == side for p in made)
    assert counts <= ({6, 8} if side == "order" else {5, 7}) and len(counts) == 2
    for p in made:
        assert p.good_actions == winning_moves(p.state)


def test_a_side_that_never_moves_in_the_range_is_refused() -> None:
    with pytest.raises(ValueError, match="chaos never moves with 6-6 empty cells"):
        make_positions(2, empties=(6, 6), side="chaos")
    with pytest.raises(ValueError, match="side must be one of order, chaos, got 'x'"):
        make_positions(2, empties=(6, 7), side="x")


def test_excluded_positions_are_never_chosen_up_to_symmetry(small_set) -> None:
    """The same seed without the first three positions (given as mirror images): the rest
    of the set moves up, and three candidates count as excluded."""
    from orderchaos.arena.positions import MakeStats

    mirrored = [LabelledPosition(p.board[::-1], []) for p in small_set[:3]]  # the 180° turn
    stats = MakeStats()
    again = make_positions(8, empties=(5, 7), seed=1, exclude=mirrored, stats=stats)
    assert again[:5] == small_set[3:] and stats.excluded == 3
    assert not {p.board for p in again} & {p.board for p in small_set[:3]}


def test_solver_scores_one_and_random_does_not(small_set) -> None:
    assert positions_accuracy("solver", small_set).accuracy == 1.0
    scores = [positions_accuracy("random", small_set, seed=s).accuracy for s in range(5)]
    assert sum(scores) / len(scores) < 0.9


def test_shipped_set_loads_and_random_is_well_below_the_solver() -> None:
    positions = load_positions(DEFAULT_POSITIONS)
    assert 300 <= len(positions) <= 500
    assert all(12 <= p.state.num_empty <= 18 for p in positions)
    result = positions_accuracy("random", positions, seed=0)
    assert result.accuracy < 0.6
    assert positions_accuracy("solver", positions[:10]).accuracy == 1.0


def test_accuracy_counts_by_side() -> None:
    order_pos = LabelledPosition(FOUR_BOARD, [8])  # e1 X completes a1..e1
    chaos_board = FOUR_BOARD[:35] + "X"  # one more X on f6: Chaos to move, facing the four
    chaos_state = parse_board(chaos_board)
    assert chaos_state.to_play == "chaos"
    chaos_pos = LabelledPosition(chaos_board, [9])  # e1 O blocks the four
    result = positions_accuracy(RandomAgent(seed=0), [order_pos, chaos_pos] * 10)
    assert result.positions == 20
    assert result.by_side["order"]["positions"] == result.by_side["chaos"]["positions"] == 10
    assert result.correct == result.by_side["order"]["correct"] + result.by_side["chaos"]["correct"]
    assert result.accuracy == result.correct / 20
    assert result.to_dict()["accuracy"] == result.accuracy


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(0, 71), min_size=1, max_size=4, unique=True))
def test_save_and_load_round_trip(tmp_path_factory, picks: list[int]) -> None:
    state = parse_board(FOUR_BOARD)
    legal = state.legal_actions()
    good = sorted({legal[i % len(legal)] for i in picks})
    path = tmp_path_factory.mktemp("pos") / "p.jsonl"
    save_positions(path, [LabelledPosition(FOUR_BOARD, good)])
    loaded = load_positions(path)
    assert loaded == [LabelledPosition(FOUR_BOARD, good)]
    line = json.loads(path.read_text())
    assert line["to_move"] == "order" and line["empties"] == state.num_empty


@pytest.mark.parametrize(
    "line, message",
    [
        ("{oops", r":2: bad JSON"),
        ("[]", r":2: expected a JSON object"),
        ('{"good_actions": [8]}', r":2: missing 'board'"),
        (json.dumps({"board": FOUR_BOARD}), r":2: missing 'good_actions'"),
        (json.dumps({"board": "XX", "good_actions": [8]}), r":2: malformed board: .*found 2"),
        (json.dumps({"board": "Z" * 36, "good_actions": [8]}), r":2: malformed board: bad character 'Z'"),
        (json.dumps({"board": FOUR_BOARD, "good_actions": [72]}), r":2: good action 72 is not an action 0..71"),
        (json.dumps({"board": FOUR_BOARD, "good_actions": [0]}), r":2: good action 0 is illegal here"),
        (json.dumps({"board": FOUR_BOARD, "good_actions": []}), r":2: 'good_actions' must be a non-empty"),
        (json.dumps({"board": FOUR_BOARD, "good_actions": [8, 8]}), r":2: 'good_actions' repeats"),
        (json.dumps({"board": FOUR_BOARD, "good_actions": ["e1 X"]}), r":2: good action 'e1 X'"),
        (json.dumps({"board": "XXXXX." + FOUR_BOARD[6:], "good_actions": [10]}), r":2: .*finished game"),
    ],
)
def test_bad_position_files_name_line_and_problem(tmp_path, line: str, message: str) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"board": FOUR_BOARD, "good_actions": [8]}) + "\n" + line + "\n")
    with pytest.raises(PositionsFileError, match=message):
        load_positions(path)


def test_missing_and_empty_files(tmp_path) -> None:
    with pytest.raises(PositionsFileError, match="no such file"):
        load_positions(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(PositionsFileError, match="no positions"):
        load_positions(tmp_path / "empty.jsonl")


def test_check_position_normalises() -> None:
    spaced = " / ".join(FOUR_BOARD[i:i + 6] for i in range(0, 36, 6))
    assert check_position(spaced, [9, 8]) == LabelledPosition(FOUR_BOARD, [8, 9])


@pytest.mark.parametrize("text, expected", [("12-18", (12, 18)), ("15", (15, 15))])
def test_parse_empties(text: str, expected: tuple[int, int]) -> None:
    assert parse_empties(text) == expected


@pytest.mark.parametrize("text", ["18-12", "0-5", "a-b", "1-2-3", "36"])
def test_parse_empties_refuses_bad_ranges(text: str) -> None:
    with pytest.raises(ValueError, match="empties"):
        parse_empties(text)


def test_stage_accuracies_per_set_and_pooled(tmp_path) -> None:
    order_pos = LabelledPosition(FOUR_BOARD, [8])
    chaos_board = FOUR_BOARD[:35] + "X"
    chaos_pos = LabelledPosition(chaos_board, [9])
    save_positions(tmp_path / "a.jsonl", [order_pos, chaos_pos, order_pos])
    save_positions(tmp_path / "b.jsonl", [chaos_pos])
    sets = {"a": tmp_path / "a.jsonl", "b": tmp_path / "b.jsonl"}
    results = stage_accuracies("heuristic", sets)
    assert list(results) == ["a", "b"]
    assert results["a"].positions == 3 and results["a"].by_side["order"]["positions"] == 2
    assert results["b"].by_side["order"]["positions"] == 0 and results["b"].correct == 1
    limited = stage_accuracies("heuristic", sets, limit=1)
    assert [r.positions for r in limited.values()] == [1, 1]
    pooled = pooled_accuracy(list(results.values()))
    assert pooled.positions == 4 and pooled.correct == 4 and pooled.accuracy == 1.0
    assert pooled.by_side["chaos"] == {"positions": 2, "correct": 2, "accuracy": 1.0}
    # a random agent's figure on a set does not depend on the other sets scored with it
    alone = stage_accuracies("random", [tmp_path / "a.jsonl"], seed=4)
    assert alone[str(tmp_path / "a.jsonl")].to_dict() == stage_accuracies("random", sets, seed=4)["a"].to_dict()
    assert set_name(SHIPPED_SETS["23_26"]) == "23_26"
    with pytest.raises(ValueError, match="limit"):
        stage_accuracies("random", sets, limit=-1)
    (tmp_path / "b.jsonl").write_text("{}\n")
    with pytest.raises(PositionsFileError, match="b.jsonl:1: missing 'board'"):
        stage_accuracies("random", sets)
