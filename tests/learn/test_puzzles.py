"""Puzzles: mining finds exactly what a brute-force search finds, the checker refuses planted
faults, attempts are judged move by move, and the shipped set holds (a sample every run, the
whole file in a slow test)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest

from orderchaos.arena.game_files import load_games
from orderchaos.learn.puzzles import (
    CHAOS_SURVIVES,
    EXPORT_KEYS,
    ORDER_WINS,
    SHIPPED_PUZZLES,
    Puzzle,
    PuzzleCheckError,
    check_puzzles,
    load_puzzles,
    parse_move,
    puzzle_id,
    save_puzzles,
)
from orderchaos.envs.rules import CHAOS, State, action_name, parse_board
from orderchaos.envs.symmetry import transform_state

EMPTIES = "1-10"
"""Late positions only, so that the brute-force search below settles them in a second."""


@lru_cache(maxsize=None)
def _mover_wins(x: int, o: int) -> bool:
    """Plain minimax over the rules alone (no solver): does the side to move win?"""
    state = State(x, o)
    if state.is_terminal:
        return state.winner == state.to_play
    if state.decided:
        return state.to_play == CHAOS
    return any(not _mover_wins(*state.apply(a)[:2]) for a in state.legal_actions())


def _winning_moves(state: State) -> list[int]:
    return [a for a in state.legal_actions() if not _mover_wins(*state.apply(a)[:2])]


def _brute_force_puzzles(path: Path) -> dict[str, int]:
    """Every position of the games with 1-10 empty cells whose mover has exactly one winning
    move, first occurrence up to symmetry: board -> the move."""
    found: dict[str, int] = {}
    seen: set[str] = set()
    for game in load_games(path):
        state = State()
        for action in game.record.actions:
            if 1 <= state.num_empty <= 10 and not state.is_terminal and puzzle_id(state) not in seen:
                seen.add(puzzle_id(state))
                wins = _winning_moves(state)
                if len(wins) == 1:
                    found[state.to_string()] = wins[0]
            state = state.apply(action)
    return found


@pytest.fixture(scope="module")
def mined(tmp_path_factory) -> tuple[Path, Path]:
    """A seeded game file from ``eval`` and the puzzles ``puzzles generate`` mines from it."""
    from orderchaos.cli.main import main

    folder = tmp_path_factory.mktemp("puzzles")
    games, out = folder / "games.jsonl", folder / "puzzles.jsonl"
    assert main(["eval", "--order", "heuristic", "--chaos", "heuristic", "--games", "6", "--openings", "10",
                 "--seed", "13", "--save-games", str(games)]) == 0
    assert main(["puzzles", "generate", "--games", str(games), "--out", str(out), "--empties", EMPTIES]) == 0
    return games, out


def test_generate_finds_exactly_the_brute_force_puzzles(mined, capsys) -> None:
    games, out = mined
    puzzles = load_puzzles(out)
    expected = _brute_force_puzzles(games)
    assert {p.board: parse_move(p.solution[0]) for p in puzzles} == expected
    assert {p.kind for p in puzzles} == {ORDER_WINS, CHAOS_SURVIVES}  # the seed gives both kinds
    for p in puzzles:
        state = parse_board(p.board)
        assert p.kind == (ORDER_WINS if state.to_play == "order" else CHAOS_SURVIVES)
        end = state
        for move in p.solution:
            end = end.apply(parse_move(move))
        if p.kind == ORDER_WINS:
            assert end.has_five and len(p.solution) == p.plies
        else:
            assert end.decided and not end.has_five and p.plies == state.num_empty
    assert main_check(out) == 0
    assert f"{len(puzzles)} puzzles" in capsys.readouterr().out


def main_check(path: Path, *extra: str) -> int:
    from orderchaos.cli.main import main

    return main(["puzzles", "check", str(path), *extra])


def _write(path: Path, puzzles: list[Puzzle]) -> Path:
    save_puzzles(path, puzzles)
    return path


def test_check_refuses_planted_faults(mined, tmp_path, capsys) -> None:
    _, out = mined
    puzzles = load_puzzles(out)
    good = next(p for p in puzzles if p.kind == ORDER_WINS)

    # Duplicate under symmetry: the same position mirrored with X and O swapped.
    state = parse_board(good.board)
    image = transform_state(state, 9)
    assert image.to_string() != state.to_string() and puzzle_id(image) == good.id
    twin = Puzzle(good.id, image.to_string(), good.kind, ["a1 X"], good.plies, good.themes, good.rating)
    path = _write(tmp_path / "dup.jsonl", [*puzzles, twin])
    assert main_check(path) == 1
    assert f"dup.jsonl:{len(puzzles) + 1} ({good.id}): the same position as" in capsys.readouterr().out

    # A second winning move: a position from the games where the mover wins with two or more.
    games, _ = mined
    several = _position_with(games, lambda wins, state: len(wins) == 2)
    wins = _winning_moves(several)
    planted = Puzzle(puzzle_id(several), several.to_string(),
                     ORDER_WINS if several.to_play == "order" else CHAOS_SURVIVES,
                     [action_name(wins[0])], 1, [], 1500.0)
    with pytest.raises(PuzzleCheckError, match=f"{len(wins)} moves win, not one"):
        check_puzzles(_write(tmp_path / "two.jsonl", [planted]))

    # A lost position: the mover has no winning move at all.
    lost = _position_with(games, lambda wins, state: not wins)
    planted = Puzzle(puzzle_id(lost), lost.to_string(),
                     ORDER_WINS if lost.to_play == "order" else CHAOS_SURVIVES,
                     [action_name(lost.legal_actions()[0])], 1, [], 1500.0)
    with pytest.raises(PuzzleCheckError, match="the position is lost for"):
        check_puzzles(_write(tmp_path / "lost.jsonl", [planted]))

    # The wrong side to move: the kind says Order but Chaos moves (one stone more).
    chaos_one = next(p for p in puzzles if p.kind == CHAOS_SURVIVES)
    flipped = Puzzle(**{**chaos_one.__dict__, "kind": ORDER_WINS})
    with pytest.raises(PuzzleCheckError, match="the kind is order_wins but Chaos is to move"):
        check_puzzles(_write(tmp_path / "side.jsonl", [flipped]))

    # A wrong length, too long or too short, for either kind: each named exactly.
    length = len(good.solution)
    assert good.plies == length
    for plies in (length + 2, length - 2):
        wrong = Puzzle(**{**good.__dict__, "plies": plies})
        assert _refusal(tmp_path, wrong) == f"the solution has {length} plies, the puzzle says {plies}"
    empties = parse_board(chaos_one.board).num_empty
    assert chaos_one.plies == empties
    for plies in (empties + 2, empties - 2):
        wrong = Puzzle(**{**chaos_one.__dict__, "plies": plies})
        assert _refusal(tmp_path, wrong) == f"plies should be the {empties} empty cells, not {plies}"

    # A Chaos defence that is not the best one: a reply after which Order wins sooner.
    from orderchaos.agents.solver import Solver

    long = next(p for p in puzzles if p.kind == ORDER_WINS and len(p.solution) >= 5)
    after_key = parse_board(long.board).apply(parse_move(long.solution[0]))
    weaker = next(a for a in after_key.legal_actions()
                  if Solver().order_wins_within(after_key.apply(a), len(long.solution) - 4))
    planted = Puzzle(**{**long.__dict__, "solution": [long.solution[0], action_name(weaker), *long.solution[2:]]})
    with pytest.raises(PuzzleCheckError, match="solution move 2 .* is not a best defence"):
        check_puzzles(_write(tmp_path / "defence.jsonl", [planted]))

    # A fault in the middle of a file is named by its line; the good ones before it pass.
    path = _write(tmp_path / "mixed.jsonl", [*puzzles, flipped])
    assert main_check(path) == 1
    assert f"mixed.jsonl:{len(puzzles) + 1}" in capsys.readouterr().out


def _refusal(tmp_path: Path, puzzle: Puzzle) -> str:
    """The problem ``puzzles check`` names in a file of ``puzzle`` alone (after its place)."""
    path = _write(tmp_path / "one.jsonl", [puzzle])
    with pytest.raises(PuzzleCheckError) as refused:
        check_puzzles(path)
    where = f"{path}:1 ({puzzle.id}): "
    assert str(refused.value).startswith(where), str(refused.value)
    return str(refused.value)[len(where):]


def _position_with(games: Path, wanted) -> State:
    for game in load_games(games):
        state = State()
        for action in game.record.actions:
            if 1 <= state.num_empty <= 10 and not state.is_terminal:
                wins = _winning_moves(state)
                if wanted(wins, state):
                    return state
            state = state.apply(action)
    raise AssertionError("no such position in the games")


def test_generate_limit_and_bad_input(mined, tmp_path, capsys) -> None:
    from orderchaos.cli.main import main

    games, out = mined
    limited = tmp_path / "two.jsonl"
    assert main(["puzzles", "generate", "--games", str(games), "--out", str(limited), "--empties", EMPTIES,
                 "--limit", "2"]) == 0
    assert [p.id for p in load_puzzles(limited)] == [p.id for p in load_puzzles(out)][:2]
    capsys.readouterr()
    assert main(["puzzles", "generate", "--games", str(tmp_path / "none.jsonl"), "--out",
                 str(tmp_path / "x.jsonl")]) == 2
    assert "none.jsonl: no such file" in capsys.readouterr().err
    assert main(["puzzles", "generate", "--games", str(games), "--out", str(tmp_path / "x.jsonl"),
                 "--empties", "9-3"]) == 2
    assert "--empties must be LOW-HIGH" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "p1", "board": "..."}\n')
    assert main_check(bad) == 1  # a malformed line is a bad puzzle, named like the others
    assert "bad.jsonl:1: missing kind" in capsys.readouterr().out
    assert main_check(tmp_path / "none.jsonl") == 2
    assert "none.jsonl: no such file" in capsys.readouterr().err


def test_attempt_follows_the_solution_and_catches_a_wrong_move(mined) -> None:
    from orderchaos.agents.solver import Solver
    from orderchaos.learn.puzzles import AttemptError, attempt_step, start_rating

    _, out = mined
    solver = Solver()
    later_losses = 0
    for puzzle in load_puzzles(out):
        assert start_rating(puzzle, solver) == puzzle.rating  # what select --rerate gives
        line = [parse_move(m) for m in puzzle.solution]
        played: list[int] = []
        for i in range(0, len(line), 2):
            played.append(line[i])
            step = attempt_step(puzzle, played, solver)
            assert step.kept
            if step.solved:
                break
            assert step.reply == line[i + 1]  # the reply is the solution's defence
            played.append(step.reply)
        assert step.solved, puzzle.id
        if puzzle.kind == CHAOS_SURVIVES:  # it ends where no five is possible or survival stops being forced
            end = parse_board(puzzle.board)
            for action in [*played, *([step.reply] if step.reply is not None else [])]:
                end = end.apply(action)
            assert end.decided or len(_winning_moves(end)) > 1
            if len(played) > 1:  # before that, Chaos had one move each time
                before = parse_board(puzzle.board)
                for action in played[:-1]:
                    before = before.apply(action)
                assert len(_winning_moves(before)) == 1
        with pytest.raises(AttemptError, match="solved at move"):
            attempt_step(puzzle, [*played, 0, 1], solver)
        state = parse_board(puzzle.board)
        wrong = next(a for a in state.legal_actions() if a != line[0])
        step = attempt_step(puzzle, [wrong], solver)
        assert not step.kept and step.over and step.best == line[0] and step.line[0] == line[0]
        if len(line) >= 3:
            after = state.apply(line[0])
            other = next(a for a in after.legal_actions() if a != line[1] and a >> 1 != line[2] >> 1)
            with pytest.raises(AttemptError, match="is not the reply"):
                attempt_step(puzzle, [line[0], other, line[2]], solver)
        if puzzle.kind == ORDER_WINS and len(line) >= 3:  # a later move that throws the win away
            mid = state.apply(line[0]).apply(line[1])
            losing = next((a for a in mid.legal_actions() if solver.solve(mid.apply(a)).winner != "order"), None)
            if losing is not None:
                step = attempt_step(puzzle, [line[0], line[1], losing], solver)
                assert not step.kept and step.line[0] == step.best
                assert solver.solve(mid.apply(step.best)).winner == "order"  # the page shows a move that wins
                later_losses += 1
    assert later_losses  # the mined puzzles hold such a case


def test_select_holds_the_easy_kinds_to_their_share_and_spreads_over_ratings() -> None:
    from orderchaos.learn.puzzles import easy_kind, select_puzzles

    def fake(i: int, kind: str, plies: int, themes: list[str], rating: float) -> Puzzle:
        return Puzzle(f"p{i:04d}", "." * 36, kind, ["a1 X"], plies, themes, rating)

    pool = [fake(i, CHAOS_SURVIVES, 12, ["only block"], 1100.0) for i in range(400)]
    pool += [fake(1000 + i, ORDER_WINS, 1, [], 850.0) for i in range(400)]
    pool += [fake(2000 + i, ORDER_WINS, 5, ["open four"], 1000.0 + 5 * i) for i in range(200)]
    pool += pool[:5]  # repeats are dropped
    chosen = select_puzzles(pool, 200, seed=1)
    assert len(chosen) == 200 and len({p.id for p in chosen}) == 200
    kinds = [easy_kind(p) for p in chosen]
    assert 0 < kinds.count("only block") <= 30 and 0 < kinds.count("one move") <= 20  # 15% and 10%
    assert kinds.count("") >= 150  # the rest are the hard ones
    bands = {int(p.rating // 200) for p in chosen}
    assert bands == {4, 5, 6, 7, 8, 9}  # every band of the hard ones is represented
    assert select_puzzles(pool, 200, seed=1) == chosen and select_puzzles(pool, 200, seed=2) != chosen


def _generate_interrupted(games: Path, out: Path, monkeypatch) -> tuple[list[str], dict[str, int]]:
    """``puzzles generate`` into ``out``, stopped by Ctrl-C at its 12th proof; the command and
    the count of proofs asked (proving goes on as usual once the count is set past 12)."""
    import orderchaos.learn.puzzles as puzzles_module
    from orderchaos.cli.main import main

    real = puzzles_module.prove_puzzle
    calls = {"n": 0}

    def interrupted(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 12:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    argv = ["puzzles", "generate", "--games", str(games), "--out", str(out), "--empties", EMPTIES]
    monkeypatch.setattr(puzzles_module, "prove_puzzle", interrupted)
    assert main(argv) == 130  # Ctrl-C
    return argv, calls


def test_an_interrupted_generate_resumes_to_the_same_file(mined, tmp_path, monkeypatch, capsys) -> None:
    from orderchaos.cli.main import main

    games, whole = mined
    out = tmp_path / "resumed.jsonl"
    argv, calls = _generate_interrupted(games, out, monkeypatch)
    assert not out.exists() and Path(f"{out}.progress").exists()
    first_calls = calls["n"]
    capsys.readouterr()
    assert main(argv) == 0
    assert "resuming after" in capsys.readouterr().err
    assert out.read_text() == whole.read_text()
    assert not Path(f"{out}.partial").exists() and not Path(f"{out}.progress").exists()
    total = calls["n"] - first_calls
    calls["n"] = 10**6  # no more interruptions
    assert main(["puzzles", "generate", "--games", str(games), "--out", str(tmp_path / "plain.jsonl"),
                 "--empties", EMPTIES]) == 0
    assert calls["n"] - 10**6 > total  # the resumed run proved fewer positions than a fresh one


def test_generate_resumes_after_games_that_gave_no_puzzle(mined, tmp_path, monkeypatch, capsys) -> None:
    from orderchaos.cli.main import main

    games, _ = mined
    out = tmp_path / "resumed.jsonl"
    argv, calls = _generate_interrupted(games, out, monkeypatch)
    progress = Path(f"{out}.progress")
    saved = json.loads(progress.read_text())
    assert saved["games"] > 0
    # as if those games had given no puzzle: nothing kept, but the games are done
    progress.write_text(json.dumps({**saved, "lines": 0}))
    Path(f"{out}.partial").write_text("")
    calls["n"] = 10**6
    capsys.readouterr()
    assert main(argv) == 0
    assert f"resuming after {saved['games']} games (0 puzzles)" in capsys.readouterr().err


def test_export_writes_the_contract(tmp_path) -> None:
    from orderchaos.cli.main import main

    target = tmp_path / "export.jsonl"
    assert main(["puzzles", "export", str(target)]) == 0
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert len(rows) == len(load_puzzles(SHIPPED_PUZZLES)) >= 1000
    for row in rows:
        assert tuple(row) == EXPORT_KEYS
        assert len(row["board"]) == 36 and row["kind"] in (ORDER_WINS, CHAOS_SURVIVES)


def test_shipped_sample_is_proven() -> None:
    """A seeded sample of the shipped set proven again from scratch, duplicates over the whole file."""
    assert check_puzzles(SHIPPED_PUZZLES, sample=12, seed=0) == 12


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_shipped_set_is_proven() -> None:
    assert check_puzzles(SHIPPED_PUZZLES) == len(load_puzzles(SHIPPED_PUZZLES))


def test_chaos_forced_to_complete_a_five_still_answers() -> None:
    """The last empty cell makes a five with either symbol: every Chaos move loses at once,
    and the defence, the forced length and Order's line still name one (they once raised
    StopIteration, or ValueError for a length counted in Order's moves only)."""
    from orderchaos.agents.solver import Solver
    from orderchaos.learn.puzzles import _order_line, _Prover, best_defence

    forced = parse_board(".XXXXO/OXOOXX/OOXOOO/OXXOOX/OXXXOO/XOOXXX")
    assert forced.to_play == CHAOS and not forced.has_five
    prover = _Prover(Solver(), 100_000)
    defence = best_defence(prover, forced)
    assert defence in forced.legal_actions() and forced.apply(defence).has_five
    before = parse_board(".XXXXO/OXOOXX/OOXOOO/OXXOOX/OXXXOO/XOOXX.")
    key = 2 * 35  # X in the last corner; Chaos must then fill the other corner
    assert prover.forced_plies(before, key) == 2  # Chaos's forced move is the second ply
    line = _order_line(prover, before, key, 2)
    assert line[0] == key and len(line) == 2 and before.apply(key).apply(line[1]).has_five
