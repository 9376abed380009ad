"""Smoke runs of the CLI commands not covered elsewhere: help, demo, bench search/train."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orderchaos.cli.main import COMMANDS, main


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for name in COMMANDS:
        assert name in out


def test_unknown_command_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fly"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice" in err and len(err.splitlines()) == 1


def test_demo_trains_then_evaluates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = tmp_path / "demo"
    code = main(["demo", "--minutes", "0.02", "--games", "2", "--warmup-games", "8",
                 "--run-dir", str(run_dir)])
    assert code == 0
    out = capsys.readouterr().out
    assert "trained Order vs heuristic Chaos" in out and "heuristic Order vs trained Chaos" in out
    assert (run_dir / "config.yaml").is_file()
    assert any((run_dir / "checkpoints").iterdir())


def test_demo_refuses_bad_sizes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--minutes", "0"]) == 2
    assert "--minutes: must be a number greater than 0" in capsys.readouterr().err


@pytest.mark.parametrize("target", ["search", "train"])
def test_bench_quick_writes_figures(target: str, tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    assert main(["bench", target, "--quick", "--json", str(out)]) == 0
    figures = json.loads(out.read_text())
    expected = {"search": ["orderchaos.bench.search:run", "orderchaos.bench.solver:run"],
                "train": ["orderchaos.bench.train:run"]}[target]
    assert list(figures) == expected and all(isinstance(v, dict) and v for v in figures.values())
    if target == "search":
        search = figures["orderchaos.bench.search:run"]
        assert (search["simulations"], search["repeats"]) == (2000, 1)  # quick mode
        assert search["like_for_like"]["match"]["games"] == 4
    if target == "train":
        (train,) = figures.values()
        assert [(row["net"], row["batch"]) for row in train["network"]] == [("32x4", 1), ("32x4", 64), ("32x4", 256)]
        fast = [row for row in train["recipes"] if row["config"] == "alphazero_selfplay_fast.yaml"]
        assert [row["precision"] for row in fast] == ["bfloat16", "bfloat16"]  # fresh and trained
