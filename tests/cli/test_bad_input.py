"""Bad input to every command that writes or counts: unwritable outputs refused before any
work in one line (exit 2), finished work kept when writing fails at the end, bounded numbers,
unreadable configs and bad agent specs in configs refused before training starts."""

from __future__ import annotations

import errno
import json
import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from orderchaos.cli.main import main

NOWHERE = "/proc/orderchaos-nowhere"  # /proc refuses new entries, even to root
SMOKE = str(Path(__file__).resolve().parents[2] / "configs" / "smoke.yaml")


def one_line_error(capsys: pytest.CaptureFixture[str], *needles: str, after_output: bool = False) -> str:
    """The captured stderr: one line holding every needle, and nothing on stdout (unless
    ``after_output``: the command had printed its progress before it failed)."""
    captured = capsys.readouterr()
    assert after_output or captured.out == ""
    err = captured.err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err
    return err


@pytest.fixture
def afile(tmp_path: Path) -> Path:
    path = tmp_path / "afile"
    path.write_text("a file, not a folder")
    return path


def output_cases(tmp: Path, afile: Path) -> list[tuple[list[str], str]]:
    """(argv, what the error names) for every writing command and every kind of bad path."""
    match = ["eval", "--order", "random", "--chaos", "random", "--games", "20"]
    return [
        ([*match, "--save-games", f"{NOWHERE}/g.jsonl"], NOWHERE),
        ([*match, "--save-games", str(tmp)], "is a directory"),
        ([*match, "--save-games", f"{afile}/g.jsonl"], "afile is a file"),
        (["prove", "--book", f"{NOWHERE}/b.ocb", "--minutes", "0.05"], NOWHERE),
        (["prove", "--book", str(tmp), "--minutes", "0.05"], "is a directory"),
        (["tournament", "random", "heuristic", "--games", "2", "--out", f"{NOWHERE}/t"], NOWHERE),
        (["tournament", "random", "heuristic", "--games", "2", "--out", str(afile)], "not a directory"),
        (["export", "no-such-run", "--dest", f"{NOWHERE}/p"], NOWHERE),
        (["export", "no-such-run", "--dest", f"{afile}/p"], "afile is a file"),
        (["train", SMOKE, "--run-dir", NOWHERE], NOWHERE),
        (["train", SMOKE, "--run-dir", f"{afile}/sub"], "afile is a file"),
        (["demo", "--minutes", "0.01", "--run-dir", f"{afile}/sub"], "afile is a file"),
        (["positions", "--make", "2", "--out", f"{NOWHERE}/p.jsonl"], NOWHERE),
        (["bench", "env", "--quick", "--json", f"{NOWHERE}/b.json"], NOWHERE),
    ]


@pytest.mark.parametrize("case", range(14))
def test_unwritable_outputs_are_refused_before_the_work(
    case: int, tmp_path: Path, afile: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv, needle = output_cases(tmp_path, afile)[case]
    assert main(argv) == 2
    one_line_error(capsys, needle)


def test_eval_keeps_the_games_when_the_file_fails_at_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import orderchaos.arena.matches as matches

    target = tmp_path / "g.jsonl"
    real = matches.play_match

    def play_then_block(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        result = real(*args, **kwargs)
        target.mkdir()  # the path turns into a folder while the match was played
        return result

    monkeypatch.setattr(matches, "play_match", play_then_block)
    code = main(["eval", "--order", "random", "--chaos", "random", "--games", "4", "--json",
                 "--save-games", str(target)])
    captured = capsys.readouterr()
    assert code == 1
    assert json.loads(captured.out)["games"] == 4  # the results are printed first
    (kept,) = tmp_path.glob("g.jsonl.unsaved-*")
    assert len(kept.read_text().splitlines()) == 4
    assert f"saved to {kept}" in captured.err and len(captured.err.splitlines()) == 1


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["eval", "--order", "random", "--chaos", "random", "--games", "99999999999999999999"],
         "--games: must be an integer from 1 to 10,000,000"),
        (["eval", "--order", "random", "--chaos", "random", "--workers", "0"], "--workers"),
        (["eval", "--order", "random", "--chaos", "random", "--openings", "31"], "--openings"),
        (["tournament", "random", "heuristic", "--games", "0"], "--games"),
        (["solve", "." * 36, "--time-limit", "inf"], "--time-limit: must be a number greater than 0"),
        (["solve", "." * 36, "--time-limit", "1e400"], "--time-limit"),
        (["solve", "." * 36, "--time-limit", "nan"], "--time-limit"),
        (["demo", "--minutes", "0"], "--minutes"),
        (["demo", "--minutes", "-1"], "--minutes"),
        (["demo", "--games", "0"], "--games"),
        (["prove", "--book", "b.ocb", "--minutes", "-1"], "--minutes"),
        (["prove", "--book", "b.ocb", "--workers", "100000"], "--workers"),
        (["prove", "--book", "b.ocb", "--tt-bits", "40"], "--tt-bits"),
        (["mistakes", "--agent", "random", "--node-limit", "0"], "--node-limit"),
        (["positions", "--make", "0", "--out", "p.jsonl"], "--make"),
        (["play", "--hint-time", "inf"], "--hint-time"),
        (["eval", "--order", "mcts:sims=99999999999999999999", "--chaos", "random"], "from 1 to 1,000,000"),
        (["eval", "--order", "mcts:sims=1000000000000", "--chaos", "random"], "from 1 to 1,000,000"),
        (["eval", "--order", "mcts:time=inf", "--chaos", "random"], "from 0.001 to 86,400"),
    ],
)
def test_numbers_out_of_bounds_are_refused_in_one_line(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    one_line_error(capsys, needle)


@pytest.mark.parametrize(
    "override, needle",
    [
        ("eval.opponents=bogus", "eval.opponents[0]: unknown agent 'bogus'"),
        ("eval.opponents=[heuristic, bogus]", "eval.opponents[1]: unknown agent 'bogus'"),
        ("eval.opponents=[mcts:sims=lots]", "eval.opponents[0]"),
    ],
)
def test_agent_specs_in_a_config_are_checked_before_training(
    override: str, needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    assert main(["train", SMOKE, override, "--run-dir", str(run_dir)]) == 2
    one_line_error(capsys, needle)
    assert not run_dir.exists()


def test_a_retired_config_key_is_refused_before_training(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = tmp_path / "run"
    assert main(["train", SMOKE, "mistakes.opponents=[random]", "--run-dir", str(run_dir)]) == 2
    one_line_error(capsys, "config key 'mistakes.opponents' was removed: it is fixed at ['heuristic'], got ['random']")
    assert not run_dir.exists()


def test_unreadable_configs_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    binary = tmp_path / "c.yaml"
    binary.write_bytes(b"\xff\xfe\x00bin")
    assert main(["train", str(binary)]) == 2
    one_line_error(capsys, "is not UTF-8 text")
    assert main(["train", str(tmp_path)]) == 2
    one_line_error(capsys, "is a directory")


@pytest.mark.parametrize(
    "text, needle",
    [
        ("key: [unclosed\n  - x: {\n", "is not valid YAML: line 2, column 6: expected ',' or ']'"),
        ("a: b: c\n", "is not valid YAML: line 1, column 5: mapping values are not allowed here"),
        ('{"algorithm": "alphazero", "seed": [1, 2\n', "is not valid YAML: line 2, column 1"),
        ("", "holds no keys"),
        ("# only a comment\n", "holds no keys"),
        ("{}\n", "holds no keys"),
    ],
)
def test_a_config_that_is_not_yaml_or_holds_nothing_is_one_line_before_any_run(
    text: str, needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(text)
    run_dir = tmp_path / "run"
    assert main(["train", str(config), "--run-dir", str(run_dir)]) == 2
    one_line_error(capsys, needle)
    assert not run_dir.exists()


@pytest.mark.parametrize(
    "override, needle",
    [
        ("selfplay.games=10000000000", "config key 'selfplay.games' must be <= 1000000"),
        ("mcts.simulations=1000000000", "config key 'mcts.simulations' must be <= 1000000"),
        ("run.actors=100000", "config key 'run.actors' must be <= 1024"),
        ("run.time_limit_minutes=1e400", "run.time_limit_minutes"),
        ("run.time_limit_minutes=inf", "run.time_limit_minutes"),
        ("replay.capacity=1000000000000", "config key 'replay.capacity' must be <= 100000000"),
    ],
)
def test_huge_counts_in_a_config_are_refused(override: str, needle: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", SMOKE, override, "--run-dir", str(tmp_path / "run")]) == 2
    one_line_error(capsys, needle)


def _json_bombs(tmp: Path) -> dict[str, Path]:
    """Files that are JSON (or one JSON line) beyond any bound this project's files hold."""
    bombs = {
        "deep": "[" * 200_000 + "]" * 200_000,
        "digits": "1" + "0" * 5000,
        "infinite": '{"x": 1e999}',
    }
    for name, text in bombs.items():
        (tmp / f"{name}.jsonl").write_text(text + "\n")
    return {name: tmp / f"{name}.jsonl" for name in bombs}


@pytest.mark.parametrize("bomb, needle", [("deep", "nested too deeply"), ("digits", "5,001 digits"),
                                          ("infinite", "too large")])
@pytest.mark.parametrize("command", [["prove", "--check"], ["replay"], ["positions", "--agent", "random", "--file"]])
def test_json_beyond_bounds_is_refused_in_one_line(
    command: list[str], bomb: str, needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _json_bombs(tmp_path)[bomb]
    assert main([*command, str(path)]) == 2
    one_line_error(capsys, str(path), needle)


@pytest.mark.parametrize("command", [["prove", "--check"], ["replay"], ["positions", "--agent", "random", "--file"]])
def test_an_endless_or_too_large_input_file_is_refused_at_the_read_limit(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import orderchaos.files as files

    monkeypatch.setattr(files, "MAX_INPUT_BYTES", 1000)  # the same check as at 256 MiB, without the memory
    huge = tmp_path / "huge.jsonl"
    huge.write_text('{"board": "' + "." * 36 + '", "good_actions": [0]}\n' * 100)
    for path in ("/dev/zero", str(huge)):
        assert main([*command, path]) == 2
        one_line_error(capsys, path, "larger than 1,000 bytes")


@pytest.mark.parametrize("bomb", ["deep", "digits"])
def test_a_proof_book_side_file_beyond_bounds_is_refused(
    bomb: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from orderchaos.proof.proof_meta import meta_path

    book = tmp_path / "b.ocb"
    _json_bombs(tmp_path)[bomb].rename(meta_path(book))
    assert main(["prove", "--book", str(book), "--minutes", "0.01"]) == 2
    one_line_error(capsys, "side file", "b.ocb")


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """``fill(where)``: from then on, flushing any file whose path holds ``where`` ("" for
    every file) fails with ENOSPC, as on a full disk (every project file is written through
    the atomic writer, which flushes before it renames)."""
    real_fsync = os.fsync

    def fill(where: str = "") -> None:
        def fsync(fd: int) -> None:
            target = os.readlink(f"/proc/self/fd/{fd}")
            if where in target and os.path.isfile(target):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), target)
            real_fsync(fd)

        monkeypatch.setattr(os, "fsync", fsync)

    return fill


def test_train_on_a_full_disk_is_one_line_and_names_the_resume_only_with_a_checkpoint(
    tmp_path: Path, full_disk: Callable[[str], None], capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    full_disk("step_0000002")  # the first checkpoint is written, the second is not
    assert main(["train", SMOKE, "--run-dir", str(run_dir)]) == 1
    one_line_error(capsys, "No space left on device", f"orderchaos train --resume {run_dir}", after_output=True)
    full_disk("checkpoints")  # the config is written, the first checkpoint is not
    assert main(["train", SMOKE, "--run-dir", str(tmp_path / "none")]) == 1
    err = one_line_error(capsys, "No space left on device", "no checkpoint was written yet", after_output=True)
    assert "--resume" not in err and "checkpoint is kept" not in err
    full_disk("")
    assert main(["train", SMOKE, "--run-dir", str(tmp_path / "other")]) == 1
    one_line_error(capsys, "cannot write the run in", "No space left on device")


def test_demo_on_a_full_disk_is_one_line(
    tmp_path: Path, full_disk: Callable[[str], None], capsys: pytest.CaptureFixture[str]
) -> None:
    full_disk("")
    assert main(["demo", "--minutes", "0.01", "--run-dir", str(tmp_path / "run")]) == 1
    one_line_error(capsys, "orderchaos demo: cannot write the run in", "No space left on device",
                   after_output=True)


def test_prove_on_a_full_disk_fails_and_says_the_work_is_not_saved(
    tmp_path: Path, full_disk: Callable[[str], None], capsys: pytest.CaptureFixture[str]
) -> None:
    book = tmp_path / "b.ocb"
    full_disk("")
    assert main(["prove", "....................................", "--book", str(book), "--minutes", "0.01",
                 "--json"]) == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        f"orderchaos prove: cannot write the proof book {book}: No space left on device; "
        f"this run's work is not saved"]
    assert list(tmp_path.iterdir()) == []


def test_positions_on_a_full_disk_fail_and_leave_no_partial_file(
    tmp_path: Path, full_disk: Callable[[str], None], capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "p.jsonl"
    full_disk("")
    assert main(["positions", "--make", "2", "--out", str(out), "--node-limit", "20000"]) == 1
    one_line_error(capsys, f"cannot write positions file {out}: No space left on device; nothing was saved")
    assert list(tmp_path.iterdir()) == []


def _store_with_a_finished_game(path: Path) -> None:
    from orderchaos.arena.matches import play_match
    from orderchaos.web.store import GameStore

    record = play_match("random", "random", 1, keep_games=True).records[0]
    store = GameStore(path)
    store.create("g1", {"order": "random", "chaos": "random"}, {"order": None, "chaos": None},
                 {"order": None, "chaos": None}, None)
    for ply, action in enumerate(record.actions):
        store.add_move("g1", ply, action, record.winner if ply == record.length - 1 else None)
    store.close()


def test_serve_export_games_refuses_a_folder_under_a_file_and_fails_cleanly_on_a_full_disk(
    tmp_path: Path, afile: Path, full_disk: Callable[[str], None], capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "games.sqlite3"
    _store_with_a_finished_game(db)
    assert main(["serve", "--db", str(db), "--export-games", str(afile / "out")]) == 2
    one_line_error(capsys, "afile is a file")
    out = tmp_path / "out"
    full_disk("out")
    assert main(["serve", "--db", str(db), "--export-games", str(out)]) == 1
    one_line_error(capsys, f"cannot write the games into {out}: No space left on device")
    assert list(out.iterdir()) == []  # no empty or partial file


@pytest.mark.parametrize("option", ["--hint-time", "--move-time"])
@pytest.mark.parametrize("value", ["nan", "inf", "0", "-1"])
def test_serve_times_must_be_finite_positive_seconds(
    option: str, value: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    uvicorn = pytest.importorskip("uvicorn")
    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: pytest.fail(f"the server started with {option} {value}"))
    assert main(["serve", option, value, "--db", ":memory:"]) == 2
    one_line_error(capsys, f"{option}: must be a number greater than 0")


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["prove", "XXXX", "--status"], "a board string needs 36 cells"),
        (["prove", "XXXX", "--verify"], "a board string needs 36 cells"),
        (["prove", "X" + "." * 35, "--status"], "--status reports on the whole book from the empty board"),
    ],
)
def test_prove_checks_the_board_in_every_mode(argv: list[str], needle: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    one_line_error(capsys, needle)


@pytest.mark.parametrize("text", ["", "\n\n  \n"])
def test_replay_of_a_file_without_games_says_so(text: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "g.jsonl"
    empty.write_text(text)
    assert main(["replay", str(empty)]) == 2
    one_line_error(capsys, f"{empty} holds no games")


def test_a_reader_that_left_loses_the_output_but_not_the_files(tmp_path: Path) -> None:
    """``orderchaos tournament ... | head -1``: the pipe is closed before the command writes,
    which stops neither the command nor the files it saves, and prints no traceback."""
    import subprocess
    import sys

    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone before the first line
    out = tmp_path / "t"
    argv = [sys.executable, "-m", "orderchaos", "tournament", "random", "heuristic", "--games", "2",
            "--out", str(out)]
    done = subprocess.run(argv, timeout=120, stdout=write_end, stderr=subprocess.PIPE)
    os.close(write_end)
    assert done.returncode == 0 and done.stderr == b"", done.stderr.decode()
    assert sorted(p.name for p in out.iterdir()) == [
        "heatmap.png", "pairings.csv", "ratings.csv", "ratings.png", "tournament.json", "tournament.md"]


@pytest.fixture
def signal_during_game(monkeypatch: pytest.MonkeyPatch) -> Callable[[int, int], None]:
    """``send(signum, n)``: the signal comes to this process while its n-th game is played."""
    import orderchaos.arena.matches as matches

    def send(signum: int, n: int) -> None:
        real, played = matches._play_task, []

        def play_then_signal(task):  # noqa: ANN001, ANN202
            played.append(task)
            if len(played) == n:
                os.kill(os.getpid(), signum)
            return real(task)

        monkeypatch.setattr(matches, "_play_task", play_then_signal)

    return send


@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stopped_match_prints_and_saves_the_games_it_finished(
    signum: int, status: int, tmp_path: Path, signal_during_game: Callable[[int, int], None],
    capsys: pytest.CaptureFixture[str],
) -> None:
    signal_during_game(signum, 4)
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    saved = tmp_path / "g.jsonl"
    code = main(["eval", "--order", "random", "--chaos", "random", "--games", "50", "--json",
                 "--save-games", str(saved)])
    captured = capsys.readouterr()
    assert code == status
    printed = json.loads(captured.out)
    assert printed["games"] == 3 and printed["stopped"] is True
    assert len(saved.read_text().splitlines()) == 3
    assert captured.err.strip().splitlines() == [
        f"orderchaos eval: stopped by {signal.Signals(signum).name} after 3 of 50 games"]
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers  # put back


@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stopped_tournament_prints_and_writes_the_games_it_finished(
    signum: int, status: int, tmp_path: Path, signal_during_game: Callable[[int, int], None],
    capsys: pytest.CaptureFixture[str],
) -> None:
    signal_during_game(signum, 5)
    out = tmp_path / "t"
    code = main(["tournament", "random", "heuristic", "--games", "3", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == status
    assert "\n4 games in" in captured.out and "| - |" in captured.out  # a pairing never reached
    assert captured.err.strip().splitlines() == [
        f"orderchaos tournament: stopped by {signal.Signals(signum).name} after 4 of 12 games"]
    saved = json.loads((out / "tournament.json").read_text())
    assert saved["stopped"] is True and saved["games_played"] == [[3, 1], [0, 0]]
    assert sum(row["games"] for row in saved["pairings"]) == 4
    assert (out / "heatmap.png").stat().st_size > 0 and (out / "ratings.csv").exists()


def test_an_output_path_whose_reader_left_ends_quietly_with_status_1() -> None:
    """``orderchaos puzzles export /dev/stdout | head -1``: the file named is the pipe, closed
    before the command writes; no BrokenPipeError reaches the terminal."""
    import subprocess
    import sys

    read_end, write_end = os.pipe()
    os.close(read_end)
    argv = [sys.executable, "-m", "orderchaos", "puzzles", "export", "/dev/stdout"]
    done = subprocess.run(argv, timeout=120, stdout=write_end, stderr=subprocess.PIPE)
    os.close(write_end)
    assert done.returncode == 1 and done.stderr == b"", done.stderr.decode()


def test_puzzles_export_to_a_full_disk_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["puzzles", "export", "/dev/full"]) == 1
    one_line_error(capsys, "orderchaos puzzles export: cannot write /dev/full: No space left on device")


@pytest.fixture
def full_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder where every puzzle file written fails as on a full disk (ENOSPC)."""
    import orderchaos.learn.puzzles as puzzles_module

    full, real = tmp_path / "full", puzzles_module.save_puzzles
    full.mkdir()

    def save_puzzles(path, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        if Path(path).parent == full:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(puzzles_module, "save_puzzles", save_puzzles)
    return full


def test_puzzles_select_prints_the_set_then_keeps_it_elsewhere_when_the_disk_is_full(
    full_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    from orderchaos.learn.puzzles import SHIPPED_PUZZLES, load_puzzles

    out = full_folder / "set.jsonl"
    assert main(["puzzles", "select", str(SHIPPED_PUZZLES), "--count", "30", "--out", str(out)]) == 1
    err = one_line_error(capsys, f"cannot write puzzle file {out} (No space left on device); saved to ",
                         after_output=True)
    kept = Path(err.split("saved to ")[1].split(" instead")[0])
    try:
        assert len(load_puzzles(kept)) == 30 and not out.exists()
    finally:
        shutil.rmtree(kept.parent)


def test_puzzles_select_refuses_to_write_over_its_own_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from orderchaos.learn.puzzles import SHIPPED_PUZZLES

    pool = tmp_path / "pool.jsonl"
    pool.write_bytes(Path(SHIPPED_PUZZLES).read_bytes())
    assert main(["puzzles", "select", str(pool), "--count", "10", "--out", str(pool)]) == 2
    one_line_error(capsys, f"--out {pool} is also an input file")
    assert pool.read_bytes() == Path(SHIPPED_PUZZLES).read_bytes()


def test_puzzles_generate_on_a_full_disk_prints_the_mined_puzzles(
    tmp_path: Path, full_disk: Callable[[str], None], capsys: pytest.CaptureFixture[str]
) -> None:
    from orderchaos.learn.puzzles import Puzzle

    games, out = tmp_path / "g.jsonl", tmp_path / "p.jsonl"
    assert main(["eval", "--order", "random", "--chaos", "random", "--games", "4", "--seed", "1",
                 "--save-games", str(games)]) == 0
    capsys.readouterr()
    full_disk("")  # every checkpoint and every place for the puzzles fails
    assert main(["puzzles", "generate", "--games", str(games), "--out", str(out), "--empties", "1-4"]) == 1
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines() == [
        f"orderchaos puzzles generate: cannot write puzzle file {out}: No space left on device; "
        "the 3 puzzles are printed on stdout as JSON lines"]
    printed = [Puzzle(**json.loads(line)) for line in captured.out.splitlines() if line.startswith("{")]
    assert len(printed) == 3 and not out.exists()


@pytest.mark.parametrize("text", ["", "\n\n  \n"])
def test_puzzles_check_of_a_file_without_puzzles_is_bad_input(text: str, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "p.jsonl"
    empty.write_text(text)
    assert main(["puzzles", "check", str(empty)]) == 2
    one_line_error(capsys, f"{empty} holds no puzzles")
