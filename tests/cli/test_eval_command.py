"""orderchaos eval and replay: JSON reproducibility, saved games replayed, bad specs."""

from __future__ import annotations

import json

import pytest

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


def _read_terminal(terminal: int, seconds: float, until: bytes = rb"\| [1-9][0-9]*/2000 ") -> bytes:
    """What a command wrote to ``terminal`` (a pty's master side) until it matches ``until``
    (by default, the progress bar counting a finished game) or the terminal closes; fail
    after ``seconds`` without either."""
    import os
    import re
    import select
    import time

    shown, deadline = b"", time.monotonic() + seconds
    while not re.search(until, shown):
        ready, _, _ = select.select([terminal], [], [], max(0.0, deadline - time.monotonic()))
        assert ready, f"nothing matched {until!r} in {seconds:.0f} s: {shown[-300:]!r}"
        try:
            shown += os.read(terminal, 4096)
        except OSError:  # the command has ended and closed it
            break
    return shown


@pytest.mark.parametrize("group", [False, True], ids=["parent", "process-group"])
def test_a_match_on_two_workers_stopped_by_ctrl_c_prints_and_saves_its_finished_games_and_ends(
    group: bool, tmp_path
) -> None:
    """SIGINT after the first finished game (the progress bar on a terminal counts it): the
    games finished are printed and saved and the command ends at once, as with one worker,
    also when the whole process group gets it (as Ctrl-C sends it to the workers too).
    Games of most of a second each: chunks of 64 of them would keep the readiness wait and
    the exit past their limits."""
    import fcntl
    import os
    import pty
    import re
    import signal
    import struct
    import subprocess
    import sys
    import termios

    saved = tmp_path / "g.jsonl"
    terminal, progress_end = pty.openpty()
    fcntl.ioctl(progress_end, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # tqdm needs a width
    argv = [sys.executable, "-m", "orderchaos", "eval", "--order", "mcts:sims=5000", "--chaos", "mcts:sims=5000",
            "--games", "2000", "--workers", "2", "--save-games", str(saved)]
    match = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=progress_end, start_new_session=True)
    os.close(progress_end)
    try:
        _read_terminal(terminal, 120)
        if group:
            os.killpg(match.pid, signal.SIGINT)
        else:
            match.send_signal(signal.SIGINT)
        out, _ = match.communicate(timeout=15)  # a bound that only a wait for unfinished chunks passes
        told = _read_terminal(terminal, 15, until=b"games\r?\n").decode(errors="replace")
    finally:
        if match.poll() is None:
            os.killpg(match.pid, signal.SIGKILL)
            match.communicate()
        os.close(terminal)
    games = int(re.search(r"games: (\d+)", out.decode()).group(1))
    assert match.returncode == 130 and 1 <= games < 2000
    assert f"orderchaos eval: stopped by SIGINT after {games} of 2000 games" in told and "Traceback" not in told
    assert len(load_games(saved)) == games
