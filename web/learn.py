"""The Learn tab's two HTTP routes: the lesson's outline, and one learner's move.

- ``GET /api/learn``: :func:`orderchaos.learn.lesson.lesson_outline` (the steps, their
  boards, the ten pairs), as JSON.
- ``POST /api/learn/move`` with ``{"step": ID, "moves": [action, ...], "action": A,
  "seed": S}`` (``moves``: both sides' actions since the step's board; ``seed`` optional,
  0..2**31): :func:`orderchaos.learn.lesson.lesson_turn` as JSON, computed off the event
  loop under the server's search caps (:meth:`.services.Services.run`).

A request that cannot be carried out is answered with status 400 and the page's ``error``
message (``code`` ``lesson`` for a bad step, move list, move or seed; ``bad_message`` for a
body that is not a JSON object), or the caps' own errors (``busy``, ``timeout``); past the
per-address limit on such requests, status 429 (:class:`.quotas.SearchRequests`). The lesson
keeps no state on the server: the page sends the moves each time.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from orderchaos.web.errors import WebError
from orderchaos.web.services import Services

MOVE_PATH = "/api/learn/move"
"""The route that sets the solver to work (limited per client address, :mod:`.quotas`)."""
MAX_BODY_BYTES = 4096
"""Largest request body: a step, 36 moves and a seed fit many times over."""
TURN_TIMEOUT = 30.0
"""Seconds one turn (the strategy's verdict and Chaos's reply) may take: the first one in a
server started without warm-up also solves the centre game (5-10 s on a loaded machine)."""


def _error(exc: WebError) -> Response:
    return JSONResponse(exc.payload("learn"), status_code=400, headers={"Cache-Control": "no-store"})


def _turn(services: Services, body: dict[str, Any]) -> dict[str, Any]:
    from orderchaos.learn.lesson import lesson_turn

    seed = body.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**31:
        raise WebError("seed must be an integer in 0..2147483647", "lesson")
    try:
        return lesson_turn(body.get("step"), body.get("moves", []), body.get("action"), services.solve, seed)
    except ValueError as exc:  # IllegalActionError included: its text names the move
        raise WebError(f"lesson: {exc}", "lesson") from None


def learn_routes(services: Services) -> list[Route]:
    """The routes of the Learn tab, sharing ``services`` (its solver and its caps)."""
    from orderchaos.agents.strategy import centre_table
    from orderchaos.learn.lesson import lesson_outline

    outline = lesson_outline()
    warm = {"started": False}

    async def steps(request: Request) -> Response:
        if not warm["started"]:  # the learner reads the first step while the table is built
            warm["started"] = True
            threading.Thread(target=centre_table, name="orderchaos-web: centre game", daemon=True).start()
        return JSONResponse(outline, headers={"Cache-Control": "no-store"})

    async def move(request: Request) -> Response:
        raw = await request.body()
        try:
            if len(raw) > MAX_BODY_BYTES:
                raise WebError(f"a lesson move is at most {MAX_BODY_BYTES} bytes", "bad_message")
            try:
                body = json.loads(raw)
            except (ValueError, UnicodeDecodeError):
                body = None
            if not isinstance(body, dict):
                raise WebError("send a JSON object with step, moves and action", "bad_message")
            answer = await services.run(_turn, services, body, timeout=TURN_TIMEOUT, what="the lesson's move")
        except WebError as exc:
            return _error(exc)
        return JSONResponse(answer, headers={"Cache-Control": "no-store"})

    return [Route("/api/learn", steps), Route(MOVE_PATH, move, methods=["POST"])]
