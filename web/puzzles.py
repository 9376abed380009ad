"""The Puzzles tab's HTTP routes: the next puzzle near a player's rating, the daily puzzle,
and each move of an attempt judged by the solver, with Glicko-2 ratings in the game store.

A player is an anonymous id the browser makes and keeps (:data:`PLAYER_ID`); nothing else
identifies them. Only a player's first attempt at a puzzle is rated: solving it is a win
against the puzzle, a losing move a loss (:func:`orderchaos.arena.glicko2.rate_attempt`).
The attempt itself is stateless on the server: the page sends the moves played so far and
:func:`orderchaos.learn.puzzles.attempt_step` checks them all again.

Routes (JSON in and out; every error is ``{"error": text, "code": code}`` with status 400,
404 or 503, or 429 past the per-address limit on moves (:class:`.quotas.SearchRequests`, with
``args``), never a traceback):

- ``GET /puzzles/next?player=ID[&skip=PUZZLE]``: a puzzle the player has not attempted whose
  rating is among the nearest to theirs (a random one of the :data:`NEAREST` nearest).
- ``GET /puzzles/daily?player=ID``: the puzzle of the day (UTC), the same for everyone.
- ``GET /puzzles/player?player=ID``: the player's rating.
- ``POST /puzzles/move`` ``{"player", "puzzle", "moves": [action, ...]}``: the verdict on the
  last move, the reply, and once the attempt ends the rating change.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import random
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from orderchaos.arena.glicko2 import Rating, rate_attempt
from orderchaos.learn.puzzles import AttemptError, Puzzle, Unproven, attempt_step, load_puzzles, served_rating
from orderchaos.web import players
from orderchaos.web.errors import WebError
from orderchaos.web.services import Services
from orderchaos.envs.rules import action_name

PLAYER_ID = players.PLAYER_ID
NEAREST = 12
"""The next puzzle is one of this many unattempted puzzles nearest the player's rating."""
MOVE_TIME = 20.0
"""Seconds the solver may take to judge one move."""
MAX_MOVES = 36
MOVE_PATH = "/puzzles/move"
"""The route that sets the solver to work (limited per client address, :mod:`.quotas`)."""


def _error(message: str, code: str, status: int = 400) -> JSONResponse:
    return JSONResponse({"error": message, "code": code}, status_code=status)


class PuzzleRoom:
    """The puzzle set and the store's ratings behind the routes; moves are judged by the
    services' solver."""

    def __init__(self, services: Services, puzzles: list[Puzzle] | None = None,
                 rng: random.Random | None = None, today: Callable[[], datetime.date] | None = None) -> None:
        self.services = services
        self.store = services.store
        shipped = puzzles if puzzles is not None else load_puzzles()
        self.puzzles = [dataclasses.replace(p, rating=served_rating(p)) for p in shipped]
        self.by_id = {p.id: p for p in self.puzzles}
        self.rng = rng or random.Random()
        self.today = today or (lambda: datetime.datetime.now(datetime.timezone.utc).date())
        daily = [p for p in self.puzzles if "only block" not in p.themes and p.plies > 1]
        self.daily_pool = sorted(daily or self.puzzles, key=lambda p: p.id)

    # -- ratings ---------------------------------------------------------------------------
    def player_rating(self, player: str) -> Rating:
        """The player's rating (a newcomer's before any rated attempt)."""
        return self.store.puzzle_player(player) or Rating()

    def puzzle_rating(self, puzzle: Puzzle) -> Rating:
        """The puzzle's rating: the store's once attempted, else its start rating."""
        from orderchaos.arena.glicko2 import PUZZLE_START_DEVIATION

        return self.store.puzzle_rating(puzzle.id) or Rating(puzzle.rating, PUZZLE_START_DEVIATION)

    def next_puzzle(self, player: str, skip: str | None = None) -> Puzzle:
        """One of the :data:`NEAREST` unattempted puzzles nearest the player's rating."""
        done = self.store.attempted_puzzles(player)
        if skip:
            done.add(skip)
        target = self.player_rating(player).r
        rated = self.store.puzzle_ratings()
        fresh = [p for p in self.puzzles if p.id not in done] or [p for p in self.puzzles if p.id != skip]
        fresh.sort(key=lambda p: (abs(rated.get(p.id, p.rating) - target), p.id))
        return self.rng.choice(fresh[:NEAREST])

    def daily_puzzle(self) -> Puzzle:
        """Today's puzzle (UTC): the same for everyone, a new one each day."""
        digest = hashlib.sha256(self.today().isoformat().encode()).digest()
        return self.daily_pool[int.from_bytes(digest[:8], "big") % len(self.daily_pool)]

    def describe(self, puzzle: Puzzle, player: str, daily: bool = False) -> dict[str, Any]:
        """What the page needs to show a puzzle (nothing of its solution)."""
        attempt = self.store.puzzle_attempt(player, puzzle.id)
        return {
            "id": puzzle.id, "board": puzzle.board, "kind": puzzle.kind, "plies": puzzle.plies,
            "themes": puzzle.themes, "rating": round(self.puzzle_rating(puzzle).r), "daily": daily,
            "attempted": attempt is not None, "player": self.player_view(player),
        }

    def player_view(self, player: str) -> dict[str, Any]:
        """The player's rating as the page shows it."""
        rating = self.player_rating(player)
        return {"rating": round(rating.r), "deviation": round(rating.rd)}

    # -- judging moves ---------------------------------------------------------------------
    def judge(self, puzzle: Puzzle, moves: list[int]) -> Any:
        """:func:`attempt_step` with the services' solver (held for the whole judgement)."""
        with self.services.solver() as solver:
            try:
                return attempt_step(puzzle, moves, solver)
            except AttemptError as exc:
                raise WebError(str(exc), "bad_attempt") from None
            except Unproven:
                raise WebError("the solver could not judge this move in time", "timeout") from None

    def rate(self, player: str, puzzle: Puzzle, solved: bool) -> dict[str, Any]:
        """Rate a finished attempt if it is the player's first at this puzzle."""
        before = self.player_rating(player)
        player_after, puzzle_after = rate_attempt(before, self.puzzle_rating(puzzle), solved)
        rated = self.store.record_puzzle_attempt(player, puzzle.id, solved, before, player_after, puzzle_after)
        after = player_after if rated else before
        return {"rated": rated, "before": round(before.r), "after": round(after.r),
                "change": round(after.r) - round(before.r), "deviation": round(after.rd)}

    # -- routes ----------------------------------------------------------------------------
    def routes(self) -> list[Route]:
        """The Starlette routes of the tab."""
        return [
            Route("/puzzles/next", self._next, methods=["GET"]),
            Route("/puzzles/daily", self._daily, methods=["GET"]),
            Route("/puzzles/player", self._player, methods=["GET"]),
            Route(MOVE_PATH, self._move, methods=["POST"]),
        ]

    async def _next(self, request: Request) -> Response:
        player = request.query_params.get("player", "")
        if not PLAYER_ID.fullmatch(player):
            return _bad_player()
        puzzle = self.next_puzzle(player, request.query_params.get("skip"))
        return _json(self.describe(puzzle, player))

    async def _daily(self, request: Request) -> Response:
        player = request.query_params.get("player", "")
        if not PLAYER_ID.fullmatch(player):
            return _bad_player()
        return _json(self.describe(self.daily_puzzle(), player, daily=True))

    async def _player(self, request: Request) -> Response:
        player = request.query_params.get("player", "")
        if not PLAYER_ID.fullmatch(player):
            return _bad_player()
        return _json(self.player_view(player))

    async def _move(self, request: Request) -> Response:
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            # a form on another site cannot send this type without the browser asking first
            return _error("send the move as application/json", "bad_message", 415)
        body = await request.body()
        if len(body) > 4096:
            return _error("a puzzle move is a small JSON object", "too_big")
        try:
            msg = json.loads(body)
        except ValueError:
            return _error('expected JSON: {"player", "puzzle", "moves": [action, ...]}', "bad_message")
        if not isinstance(msg, dict):
            return _error('expected a JSON object: {"player", "puzzle", "moves": [action, ...]}', "bad_message")
        player, puzzle_id, moves = msg.get("player"), msg.get("puzzle"), msg.get("moves")
        if not isinstance(player, str) or not PLAYER_ID.fullmatch(player):
            return _bad_player()
        puzzle = self.by_id.get(puzzle_id) if isinstance(puzzle_id, str) else None
        if puzzle is None:
            return _error("no puzzle with this id", "no_puzzle", 404)
        if (not isinstance(moves, list) or not 1 <= len(moves) <= MAX_MOVES
                or not all(type(m) is int for m in moves)):
            return _error(f"'moves' must be a list of 1 to {MAX_MOVES} actions (integers 0..71)", "bad_message")
        try:
            step = await self.services.run(self.judge, puzzle, moves, timeout=MOVE_TIME, what="a puzzle move")
        except WebError as exc:
            return _error(str(exc), exc.code, 400 if exc.code == "bad_attempt" else 503)
        answer: dict[str, Any] = {"kept": step.kept, "solved": step.solved, "over": step.over,
                                  "reply": step.reply}
        if not step.kept:
            answer["best"] = action_name(step.best)
            answer["line"] = [action_name(a) for a in step.line]
        if step.over:
            answer["solution"] = puzzle.solution
            answer["rating"] = self.rate(player, puzzle, step.solved)
        return _json(answer)


def _bad_player() -> JSONResponse:
    return _error("'player' must be 16 to 64 letters, digits, '-' or '_' (the id the page keeps)", "bad_player")


def _json(payload: dict[str, Any]) -> JSONResponse:
    return JSONResponse(payload, headers={"Cache-Control": "no-store"})

