"""The Puzzles tab's HTTP routes through Starlette's TestClient: a solved and a failed attempt
move the rating both ways, only a first attempt is rated, ratings survive a new server on the
same store, the next puzzle skips attempted ones, the daily puzzle, and refusals."""

from __future__ import annotations

import datetime
import random
from pathlib import Path

import pytest

pytest.importorskip("starlette.testclient", reason="Starlette's TestClient needs httpx: pip install -e '.[dev]'")

from starlette.testclient import TestClient  # noqa: E402

from orderchaos.arena.glicko2 import puzzle_start_rating  # noqa: E402
from orderchaos.learn.puzzles import forced_blocks, load_puzzles, parse_move  # noqa: E402
from orderchaos.web.app import create_app  # noqa: E402
from orderchaos.web.puzzles import PuzzleRoom  # noqa: E402
from orderchaos.web.services import Services  # noqa: E402
from orderchaos.web.store import GameStore  # noqa: E402
from orderchaos.envs.rules import parse_board  # noqa: E402

PLAYER = "test-player-0123456789"
SOLUTIONS = {p.id: p for p in load_puzzles()}


def _client(db: Path | str) -> TestClient:
    return TestClient(create_app(db=str(db)), base_url="http://127.0.0.1")


def _post(client: TestClient, puzzle: str, moves: list[int], player: str = PLAYER):
    return client.post("/puzzles/move", json={"player": player, "puzzle": puzzle, "moves": moves})


def _solve(client: TestClient, puzzle_id: str) -> dict:
    """Play the puzzle's solution, taking the server's replies; the final answer."""
    line = [parse_move(m) for m in SOLUTIONS[puzzle_id].solution]
    moves: list[int] = []
    for i in range(0, len(line), 2):
        moves.append(line[i])
        answer = _post(client, puzzle_id, moves).json()
        assert answer["kept"], answer
        if answer["over"]:
            return answer
        assert answer["reply"] == line[i + 1]
        moves.append(answer["reply"])
    raise AssertionError("the solution ended before the puzzle did")


def test_solve_and_fail_move_the_rating_both_ways_and_persist(store_url: str) -> None:
    db = store_url
    with _client(db) as client:
        assert client.get("/puzzles/player", params={"player": PLAYER}).json() == {"rating": 1500, "deviation": 350}
        first = client.get("/puzzles/next", params={"player": PLAYER}).json()
        assert "solution" not in first and first["player"]["rating"] == 1500 and not first["attempted"]
        assert first["kind"] in ("order_wins", "chaos_survives") and len(first["board"]) == 36
        solved = _solve(client, first["id"])
        assert solved["solved"] and solved["rating"]["rated"] and solved["rating"]["change"] > 0
        assert solved["solution"] == SOLUTIONS[first["id"]].solution
        up = solved["rating"]["after"]

        again = _solve(client, first["id"])  # a second attempt is not rated
        assert again["solved"] and not again["rating"]["rated"] and again["rating"]["change"] == 0

        second = client.get("/puzzles/next", params={"player": PLAYER}).json()
        assert second["id"] != first["id"] and second["player"]["rating"] == up
        puzzle = SOLUTIONS[second["id"]]
        key = parse_move(puzzle.solution[0])
        wrong = next(a for a in parse_board(puzzle.board).legal_actions() if a != key)
        failed = _post(client, second["id"], [wrong]).json()
        assert not failed["kept"] and failed["over"] and not failed["solved"]
        assert failed["best"] == puzzle.solution[0] and failed["line"][0] == puzzle.solution[0]
        assert failed["rating"]["rated"] and failed["rating"]["change"] < 0
        down = failed["rating"]["after"]
        assert down < up

    with _client(db) as client:  # a new server on the same store
        assert client.get("/puzzles/player", params={"player": PLAYER}).json()["rating"] == down
        seen = {first["id"], second["id"]}
        for _ in range(5):
            assert client.get("/puzzles/next", params={"player": PLAYER}).json()["id"] not in seen
        other = client.get("/puzzles/player", params={"player": "someone-else-0123456789"}).json()
        assert other["rating"] == 1500


def test_refusals_name_what_is_wrong(tmp_path: Path) -> None:
    with _client(tmp_path / "games.sqlite3") as client:
        bad = client.get("/puzzles/next", params={"player": "short"})
        assert bad.status_code == 400 and bad.json()["code"] == "bad_player"
        puzzle = next(iter(SOLUTIONS.values()))
        assert _post(client, "p-none", [0]).status_code == 404
        for moves in ([], ["a1 X"], [True], list(range(40))):
            answer = _post(client, puzzle.id, moves)
            assert answer.status_code == 400 and answer.json()["code"] == "bad_message", moves
        occupied = 2 * puzzle.board.index("X")
        answer = _post(client, puzzle.id, [occupied])
        assert answer.status_code == 400 and answer.json()["code"] == "bad_attempt"
        assert "already holds X" in answer.json()["error"]
        form = client.post("/puzzles/move", content=b"player=x", headers={"content-type": "text/plain"})
        assert form.status_code == 415
        assert client.post("/puzzles/move", content=b"{", headers={"content-type": "application/json"}
                           ).json()["code"] == "bad_message"


def test_next_is_near_the_rating_and_the_daily_puzzle_changes_daily() -> None:
    puzzles = load_puzzles()
    day = {"today": datetime.date(2026, 12, 5)}
    room = PuzzleRoom(Services(store=GameStore(":memory:")), puzzles, random.Random(3), lambda: day["today"])
    picks = [room.next_puzzle(PLAYER) for _ in range(20)]
    nearest = sorted(abs(p.rating - 1500) for p in room.puzzles)[11]
    assert all(abs(p.rating - 1500) <= nearest for p in picks)
    daily = room.daily_puzzle()
    assert room.daily_puzzle() == daily and "only block" not in daily.themes
    days = set()
    for offset in range(10):
        day["today"] = datetime.date(2026, 12, 5) + datetime.timedelta(days=offset)
        days.add(room.daily_puzzle().id)
    assert len(days) >= 8


def test_moves_are_judged_on_the_services_solver() -> None:
    """The room builds no solver of its own (each holds a table of tens of MB): its
    judgement fills the table of the one the hints and the lesson use."""
    services = Services(store=GameStore(":memory:"))
    room = PuzzleRoom(services, load_puzzles(), random.Random(0))
    puzzle = next(p for p in room.puzzles if p.kind == "order_wins" and p.plies > 1)
    with services.solver() as solver:
        assert solver.tt_entries == 0
    step = room.judge(puzzle, [parse_move(puzzle.solution[0])])
    assert step.kept and not step.over and step.reply == parse_move(puzzle.solution[1])
    with services.solver() as solver:
        assert solver.tt_entries > 0


def test_only_blocks_are_rated_by_their_forced_blocks_not_their_empty_cells() -> None:
    """Chaos's "only block" puzzles came with start ratings from their empty cells (1,050 to
    1,950 for the same one-move block); the room rates them by their run of forced blocks,
    and leaves every other puzzle's rating as shipped."""
    shipped = {p.id: p for p in load_puzzles()}
    room = PuzzleRoom(Services(store=GameStore(":memory:")), list(shipped.values()), random.Random(0))
    blocks = [p for p in room.puzzles if "only block" in p.themes]
    assert len(blocks) == 150
    for served in blocks:
        run = forced_blocks(served)
        assert run >= 1
        assert served.rating == puzzle_start_rating(2 * run - 1, 0).r
    one_move = [p for p in blocks if forced_blocks(p) == 1]
    assert one_move and {p.rating for p in one_move} == {puzzle_start_rating(1, 0).r}
    assert len({shipped[p.id].rating for p in one_move}) > 1  # as shipped they spread by empties
    assert room.describe(room.by_id["p0000016220806108540"], PLAYER)["rating"] < 1000  # shipped at 1,950
    others = [p for p in room.puzzles if "only block" not in p.themes]
    assert all(p.rating == shipped[p.id].rating for p in others)
