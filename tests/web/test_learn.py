"""The Learn tab's HTTP routes through Starlette's TestClient: the outline, a learner's move
judged and answered, and every bad request refused with one error."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("starlette.testclient", reason="Starlette's TestClient needs httpx: pip install -e '.[dev]'")

from starlette.testclient import TestClient  # noqa: E402

from orderchaos.envs.rules import parse_action_name  # noqa: E402
from orderchaos.web.app import create_app  # noqa: E402
from orderchaos.web.services import Limits  # noqa: E402


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(create_app(None, Limits(hint_time=0.2))) as test_client:
        yield test_client


def test_the_outline_lists_the_steps_and_the_pairs(client: TestClient) -> None:
    answer = client.get("/api/learn")
    assert answer.status_code == 200 and answer.headers["cache-control"] == "no-store"
    outline = answer.json()
    assert [s["id"] for s in outline["steps"]] == ["six", "open_four", "pairs", "border", "central_four", "centre", "win"]
    assert outline["steps"][0]["board"][12:18] == ["X", "X", "X", "", "X", "X"]  # row 3 of "a six counts"
    assert {"letter": "A", "cells": ["a2", "f2"]} in outline["pairs"]
    assert "content-security-policy" in answer.headers


def test_a_move_is_judged_and_chaos_answers(client: TestClient) -> None:
    kept = client.post("/api/learn/move", json={"step": "win", "moves": [], "action": parse_action_name("c3 X")}).json()
    assert kept["verdict"]["mark"] == "keeps" and kept["played"] == "c3 X"
    assert kept["reply_name"] and len(kept["moves"]) == 2 and kept["board"].count("") == 34
    mistake = client.post("/api/learn/move", json={"step": "border", "moves": [], "action": parse_action_name("d5 X"),
                                                    "seed": 4}).json()
    assert mistake["verdict"]["mark"] == "leaves" and mistake["verdict"]["strategy_move"] == "e6 O"
    assert not mistake["done"]
    done = client.post("/api/learn/move", json={"step": "six", "moves": [], "action": parse_action_name("d3 X")}).json()
    assert done["done"] and done["winner"] == "order" and done["reply"] is None and done["line"] == "a3–f3"


@pytest.mark.parametrize(("body", "code", "words"), [
    (b"not json", "bad_message", "JSON object"),
    (b"[1, 2]", "bad_message", "JSON object"),
    (b'{"step": "nosuch", "action": 0}', "lesson", "no lesson step"),
    (b'{"step": "six", "action": 999}', "lesson", "outside 0..71"),
    (b'{"step": "six", "moves": "abc", "action": 0}', "lesson", "list of at most 36"),
    (b'{"step": "six", "action": 0, "seed": -1}', "lesson", "seed must be"),
    (b'{"step": "six", "action": 0, "pad": "' + b"x" * 5000 + b'"}', "bad_message", "at most 4096 bytes"),
])
def test_a_bad_request_gets_one_error_and_status_400(client: TestClient, body: bytes, code: str, words: str) -> None:
    answer = client.post("/api/learn/move", content=body)
    assert answer.status_code == 400
    error = answer.json()
    assert error["type"] == "error" and error["code"] == code and words in error["message"], error
    assert "Traceback" not in answer.text
