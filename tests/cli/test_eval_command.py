"""orderchaos eval and replay: JSON reproducibility, saved games replayed, bad specs."""

from __future__ import annotations

import json

from orderchaos.arena.game_files import load_games
from orderchaos.cli.main import main


def test_eval_command_json_is_reproducible(capsys) -> None:
    argv = ["eval", "--order", "heuristic", "--chaos", "random", "--games", "5",
            "--seed", "3", "--openings", "2", "--json"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    assert main(argv) == 0
    second = json.loads(capsys.readouterr().out)
    for key in ("games", "order_wins", "chaos_wins", "order_win_rate", "ci95", "mean_length"):
        assert first[key] == second[key]
    assert first["games"] == 5 and len(first["ci95"]) == 2


def test_eval_save_games_then_replay(tmp_path, capsys) -> None:
    path = tmp_path / "g.jsonl"
    argv = ["eval", "--order", "heuristic", "--chaos", "random", "--games", "3",
            "--save-games", str(path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "order win rate" in out and "Wilson 95% CI" in out
    assert len(path.read_text().splitlines()) == 3
    assert main(["replay", str(path), "--game", "1"]) == 0
    shown = capsys.readouterr().out
    record = load_games(path)[1].record
    assert shown.startswith("game 1: heuristic (order) vs random (chaos)")
    assert shown.count("ply ") == record.length
    assert "game over: " in shown and "(last move" in shown
    assert main(["replay", str(path), "--list"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3
    assert main(["replay", str(path), "--game", "9"]) == 2
    assert "no game 9" in capsys.readouterr().err


def test_eval_command_reports_bad_specs(capsys) -> None:
    assert main(["eval", "--order", "nope", "--chaos", "random", "--games", "2"]) == 2
    err = capsys.readouterr().err
    assert "unknown agent 'nope'" in err and "accepted" in err


def test_eval_with_two_workers_gives_the_same_games(tmp_path, capsys) -> None:
    argv = ["eval", "--order", "heuristic", "--chaos", "mcts:sims=20", "--games", "6", "--seed", "5",
            "--openings", "2", "--json"]
    results, games = [], []
    for workers in ("1", "2"):
        path = tmp_path / f"w{workers}.jsonl"
        assert main([*argv, "--workers", workers, "--save-games", str(path)]) == 0
        results.append(json.loads(capsys.readouterr().out))
        games.append([(g.record.actions, g.record.winner) for g in load_games(path)])
    assert games[0] == games[1] and len(games[0]) == 6
    for key in ("games", "order_wins", "chaos_wins", "ci95", "mean_length"):
        assert results[0][key] == results[1][key]
