"""orderchaos positions: scoring, making a set, and refusals."""

from __future__ import annotations

import json


from orderchaos.arena.positions import (
    LabelledPosition,
    load_positions,
    save_positions,
)
from orderchaos.cli.main import main

# Order to move (4 X, 4 O); X on a1..d1 is a four, completed only by e1 X (action 8).
FOUR_BOARD = "XXXX.." + ".O...." + "...O.." + "O....." + "....O." + "......"


def test_positions_command(tmp_path, capsys) -> None:
    path = tmp_path / "p.jsonl"
    save_positions(path, [LabelledPosition(FOUR_BOARD, [8])])
    assert main(["positions", "--agent", "heuristic", "--file", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["positions"] == 1 and out["correct"] == 1 and out["accuracy"] == 1.0
    assert main(["positions", "--agent", "heuristic", "--file", str(path)]) == 0
    assert "order" in capsys.readouterr().out
    path.write_text('{"board": "XX", "good_actions": [1]}\n')
    assert main(["positions", "--agent", "random", "--file", str(path)]) == 2
    assert "p.jsonl:1: malformed board" in capsys.readouterr().err
    assert main(["positions", "--make", "3"]) == 2
    assert "--out" in capsys.readouterr().err


def test_positions_command_makes_a_set(tmp_path, capsys) -> None:
    out = tmp_path / "made.jsonl"
    argv = ["positions", "--make", "3", "--empties", "6-7", "--out", str(out), "--seed", "2"]
    assert main(argv) == 0
    assert "wrote 3 positions" in capsys.readouterr().out
    assert len(load_positions(out)) == 3
