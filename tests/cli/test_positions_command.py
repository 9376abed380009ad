"""orderchaos positions: scoring, making a set, and refusals."""

from __future__ import annotations

import json
import re

from orderchaos.arena.positions import (
    SHIPPED_SETS,
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
    out = capsys.readouterr().out
    assert "Order to move" in out and "1.000 (1/1)" in out
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


def test_positions_command_makes_a_set_for_one_side_apart_from_another(tmp_path, capsys) -> None:
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    argv = ["positions", "--make", "3", "--empties", "5-7", "--seed", "2", "--side", "chaos"]
    assert main([*argv, "--out", str(first)]) == 0
    assert main([*argv, "--out", str(second), "--exclude", str(first)]) == 0
    report = capsys.readouterr().out
    assert "excluded 3" in report.splitlines()[-2]
    made = load_positions(first) + load_positions(second)
    assert all(p.state.to_play == "chaos" for p in made) and len({p.board for p in made}) == 6
    assert main([*argv, "--out", str(tmp_path / "x.jsonl"), "--exclude", str(tmp_path / "none.jsonl")]) == 2
    assert "none.jsonl: no such file" in capsys.readouterr().err


def test_positions_command_scores_every_stage(capsys) -> None:
    """By default: one row per shipped set (stage of the game), split by side to move."""
    assert main(["positions", "--agent", "random", "--limit", "6", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out["sets"]) == list(SHIPPED_SETS) == ["12_18", "19_22", "23_26", "27_30"]
    for name, result in out["sets"].items():
        assert result["file"] == str(SHIPPED_SETS[name])
        assert result["positions"] == 6
        sides = result["by_side"]
        assert set(sides) == {"order", "chaos"}
        assert sides["order"]["positions"] + sides["chaos"]["positions"] == 6
        assert sides["order"]["correct"] + sides["chaos"]["correct"] == result["correct"]
    assert out["positions"] == 24 and out["limit"] == 6
    assert out["correct"] == sum(r["correct"] for r in out["sets"].values())
    assert main(["positions", "--agent", "heuristic", "--limit", "4"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert "Order to move" in table[1] and "Chaos to move" in table[1] and "overall" in table[1]
    rows = {line.split()[0]: line.split() for line in table[2:] if line.strip()[:1].isdigit() or "all" in line}
    assert set(rows) >= {"12-18", "19-22", "23-26", "27-30", "all"}
    assert rows["19-22"][1] == "4" and rows["all"][1] == "16"
    assert re.fullmatch(r"\d\.\d{3}", rows["27-30"][-2]) and re.fullmatch(r"\(\d+/4\)", rows["27-30"][-1])


def test_positions_file_gives_the_same_row_as_the_table(tmp_path, capsys) -> None:
    assert main(["positions", "--agent", "random", "--limit", "10", "--seed", "3", "--json"]) == 0
    table = json.loads(capsys.readouterr().out)["sets"]
    argv = ["positions", "--agent", "random", "--limit", "10", "--seed", "3", "--json",
            "--file", str(SHIPPED_SETS["27_30"]), "--file", str(SHIPPED_SETS["19_22"])]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out["sets"]) == ["27_30", "19_22"]
    for name in ("27_30", "19_22"):
        assert out["sets"][name] == table[name]


def test_positions_command_refuses_bad_sets_in_one_line(tmp_path, capsys) -> None:
    missing = tmp_path / "nowhere.jsonl"
    assert main(["positions", "--agent", "random", "--file", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nowhere.jsonl: no such file" in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text(SHIPPED_SETS["19_22"].read_text().splitlines()[0] + "\n{not json\n")
    argv = ["positions", "--agent", "random", "--file", str(SHIPPED_SETS["12_18"]), "--file", str(bad)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad.jsonl:2: bad JSON" in err and "Traceback" not in err
    assert main(["positions", "--agent", "random", "--limit", "-1"]) == 2
    assert "--limit" in capsys.readouterr().err
