"""orderchaos solve: text, JSON and malformed boards."""

from __future__ import annotations

import json

import pytest

from orderchaos.cli.main import main

SMALL = "XXOOXX OOXXOO XXOOXX OOXXOO XXOOXX OOXX.."  # Order to move, decided: Chaos wins


def test_cli_text_and_moves(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", SMALL, "--moves"]) == 0
    out = capsys.readouterr().out.strip()
    assert "winner: chaos" in out and "order to move" in out and "e6 X, e6 O, f6 X, f6 O" in out


def test_cli_json_and_five(capsys: pytest.CaptureFixture[str]) -> None:
    five = "XXXXX. OOOO.. ...... ...... ...... ......"
    assert main(["solve", "--json", "--moves", SMALL, five]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    assert lines[0]["winner"] == "chaos" and lines[0]["to_move"] == "order"
    assert lines[0]["best_actions"] == [68, 69, 70, 71]
    assert set(lines[0]) == {"board", "to_move", "winner", "nodes", "seconds", "source", "best_actions"}
    assert lines[0]["source"] == "solver"
    assert lines[1]["winner"] == "order" and lines[1]["best_actions"] == []


def test_cli_malformed_board(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["solve", "--json", "XXZ" + "." * 33, "." * 35, SMALL])
    captured = capsys.readouterr()
    assert status == 2
    assert "bad character 'Z' at position 2" in captured.err and "found 35" in captured.err
    assert len(captured.out.strip().splitlines()) == 1  # the good board is still solved


def test_json_output_stays_json_when_interrupted(monkeypatch, capsys) -> None:
    import orderchaos.cli.commands.solve as solve_command

    def interrupted(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202 - Ctrl-C during the search
        raise KeyboardInterrupt

    monkeypatch.setattr(solve_command, "solve_in_chunks", interrupted)
    board = "X" + "." * 35
    assert main(["solve", board, "--json", "--moves", "--no-progress"]) == 130
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line) for line in lines] == [
        {"board": board, "to_move": "chaos", "winner": None, "source": "solver", "interrupted": True}
    ]
