"""Bad input to every command that writes or counts: unwritable outputs refused before any
work in one line (exit 2), finished work kept when writing fails at the end, bounded numbers,
unreadable configs and bad agent specs in configs refused before training starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orderchaos.cli.main import main

NOWHERE = "/proc/orderchaos-nowhere"  # /proc refuses new entries, even to root
SMOKE = str(Path(__file__).resolve().parents[2] / "configs" / "smoke.yaml")


def one_line_error(capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    """The captured stderr: one line holding every needle, and nothing on stdout."""
    captured = capsys.readouterr()
    assert captured.out == ""
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
        ("mistakes.opponents=[heuristic, bogus]", "mistakes.opponents[1]: unknown agent 'bogus'"),
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


def test_unreadable_configs_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    binary = tmp_path / "c.yaml"
    binary.write_bytes(b"\xff\xfe\x00bin")
    assert main(["train", str(binary)]) == 2
    one_line_error(capsys, "is not UTF-8 text")
    assert main(["train", str(tmp_path)]) == 2
    one_line_error(capsys, "is a directory")


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


@pytest.mark.parametrize("bomb", ["deep", "digits"])
def test_a_proof_book_side_file_beyond_bounds_is_refused(
    bomb: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from orderchaos.arena.proof_meta import meta_path

    book = tmp_path / "b.ocb"
    _json_bombs(tmp_path)[bomb].rename(meta_path(book))
    assert main(["prove", "--book", str(book), "--minutes", "0.01"]) == 2
    one_line_error(capsys, "side file", "b.ocb")
