"""orderchaos tournament: the table and the files."""

from __future__ import annotations

from orderchaos.cli.main import main


def test_tournament_command_prints_table_and_writes_files(tmp_path, capsys) -> None:
    out = tmp_path / "t"
    assert main(["tournament", "random", "heuristic", "--games", "3", "--out", str(out),
                 "--anchor", "random"]) == 0
    text = capsys.readouterr().out
    assert "| entrant | Order Elo (95% CI) |" in text and "Order win rate" in text
    assert (out / "heatmap.png").exists() and (out / "ratings.csv").exists()
    assert "random's mean rating 0" in (out / "tournament.md").read_text()
    assert main(["tournament", "random", "nope", "--games", "2"]) == 2
    assert "unknown agent 'nope'" in capsys.readouterr().err


def test_tournament_with_two_workers_gives_the_same_pairings(tmp_path, capsys) -> None:
    tables = []
    for workers in ("1", "2"):
        out = tmp_path / f"w{workers}"
        assert main(["tournament", "random", "heuristic", "mcts:sims=20", "--games", "2", "--seed", "4",
                     "--out", str(out), "--workers", workers]) == 0
        capsys.readouterr()
        tables.append((out / "pairings.csv").read_text())
    assert tables[0] == tables[1] and len(tables[0].splitlines()) == 1 + 9
