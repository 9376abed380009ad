"""Human play in the terminal: move parsing, a scripted session, and the real command."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orderchaos.arena.game_files import GameRecord
from orderchaos.arena.analysis import Hint, hint_sentence
from orderchaos.cli.terminal_game import (
    MoveInputError,
    format_replay,
    parse_move,
    play_session,
)
from orderchaos.envs.rules import State, cell_name

from helpers import REPO


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 35), st.sampled_from("XO"), st.booleans(), st.booleans(), st.booleans())
def test_parse_move_accepts_both_orders_and_any_case(
    cell: int, symbol: str, symbol_first: bool, upper: bool, spaced: bool
) -> None:
    name = cell_name(cell).upper() if upper else cell_name(cell)
    sym = symbol if upper else symbol.lower()
    parts = [sym, name] if symbol_first else [name, sym]
    text = " ".join(parts) if spaced else "".join(parts)
    assert parse_move(f"  {text} ", State()) == 2 * cell + "XO".index(symbol)


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "could not read"),
        ("hello world", "could not read"),
        ("g3 X", "bad cell 'g3'"),
        ("c7 O", "bad cell 'c7'"),
        ("c3 Z", "could not read"),
        ("c3", "could not read"),
        ("a1 X", "a1 already holds X"),
    ],
)
def test_parse_move_explains_bad_input(text: str, message: str) -> None:
    with pytest.raises(MoveInputError, match=message):
        parse_move(text, State().apply(0))


class _Scripted:
    """An opponent that plays a fixed list of actions, in order."""

    name = "scripted"

    def __init__(self, actions: list[int]) -> None:
        self.actions = list(actions)

    def act(self, state: State) -> int:
        return self.actions.pop(0)


def _session(script: str, agent, human: str = "order", **kwargs) -> tuple[str | None, str]:
    out = io.StringIO()
    winner = play_session(agent, human, stdin=io.StringIO(script), stdout=out, **kwargs)
    return winner, out.getvalue()


def test_human_wins_with_undo_and_bad_input_along_the_way() -> None:
    # Chaos (scripted) answers O on a6, b6, c6, d6, then d6 again after the undo, then f5
    agent = _Scripted([61, 63, 65, 67, 67, 59])
    script = "\n".join([
        "a1 x", "what?", "a1 X",   # bad input, then an occupied cell: both just re-prompt
        "B1 x", "x c1", "d1X",
        "undo",                     # takes back d1 X and Chaos's d6 O
        "e5 o",                     # a different move; Chaos replies d6 O again
        "d1 x",                     # Chaos replies f5 O
        "e1 x",                     # five X on row 1: the human wins
        "e2 x",                     # the game is over: refused
        "undo",                     # but the winning move can be taken back
        "quit",
    ]) + "\n"
    winner, text = _session(script, agent)
    assert winner is None  # quit after taking back the win
    assert agent.actions == []
    assert "could not read 'what?'" in text
    assert "a1 already holds X" in text
    assert "took back your move d1 X and the reply after it" in text
    assert text.count("scripted plays d6 O") == 2
    assert "game over: order wins -- you win!" in text
    assert "[X][X][X][X][X]" in text  # the winning line is marked
    assert "the game is over: type 'undo'" in text
    assert "took back your move e1 X" in text
    assert text.rstrip().endswith("bye")


def test_undo_at_the_start_and_eof_quits() -> None:
    winner, text = _session("undo\nhelp\n", _Scripted([]))
    assert winner is None
    assert "nothing to undo" in text
    assert "Commands:" in text and text.rstrip().endswith("bye")


def test_human_as_chaos_sees_the_agent_move_first() -> None:
    winner, text = _session("board\nquit\n", _Scripted([0]), human="chaos")
    assert winner is None
    assert "scripted plays a1 X" in text
    assert "chaos to move>" in text


def test_hint_uses_the_given_oracle_and_says_unknown() -> None:
    answers = iter([Hint(None, None), Hint("order", [8]), Hint("chaos", None)])
    _, text = _session("hint\nhint\nhint\nquit\n", _Scripted([]),
                       hint_fn=lambda state, t: next(answers), hint_time=0.5)
    assert "hint: unknown (the solver could not prove a result within 0.5 s)" in text
    assert "hint: you (order) can force a win; a winning move: e1 X" in text
    assert "hint: chaos wins with perfect play from here" in text


def test_hint_sentences_for_a_proven_win_and_a_proven_loss() -> None:
    assert hint_sentence(State(), Hint("order", [0]), 1.0) == "hint: you (order) can force a win; a winning move: a1 X"
    assert hint_sentence(State(), Hint("order", None), 1.0) == "hint: you (order) can force a win"
    assert hint_sentence(State().apply(0), Hint("order", None), 1.0) == (
        "hint: order wins with perfect play from here; every move loses")


def test_an_illegal_agent_move_stops_the_session_cleanly() -> None:
    winner, text = _session("a1 X\n", _Scripted([0]))
    assert winner is None
    assert "made an illegal move" in text


def test_bad_side_is_refused() -> None:
    with pytest.raises(ValueError, match="'order' or 'chaos'"):
        play_session(_Scripted([]), "both", stdin=io.StringIO(""), stdout=io.StringIO())


def test_format_replay_shows_every_ply() -> None:
    record = GameRecord([0, 61, 2, 63, 4, 65, 6, 67, 8], "order", 9, 2)
    text = format_replay(record)
    assert text.count("ply ") == 9
    assert "ply 1: order plays a1 X (opening)" in text
    assert "ply 3: order plays b1 X\n" in text
    assert "game over: order wins" in text


def _run_cli(args: list[str], stdin: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "orderchaos", *args], input=stdin, capture_output=True, text=True,
        cwd=REPO, timeout=120,
    )


def test_play_command_with_scripted_input() -> None:
    script = "help\nc3\nzz X\nc3 X\nc3 O\nhint\nundo\nundo\nX d4\n"  # EOF ends it
    proc = _run_cli(["play", "--vs", "random", "--seed", "1", "--hint-time", "0.2"], script)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "You play order against random" in out
    assert "Commands:" in out
    assert "could not read 'c3'" in out and "bad cell 'zz'" in out
    assert "c3 already holds X" in out
    # The solver's verdict on the position after c3 X and random's seeded reply: 34 empty
    # cells, beyond 0.2 s of search and outside the proof book, so "unknown" with the limit.
    hints = [line.split("> ", 1)[-1] for line in out.splitlines() if "hint" in line and "> " in line]
    assert hints == ["hint: unknown (the solver could not prove a result within 0.2 s)"], hints
    assert "took back your move c3 X" in out and "nothing to undo" in out
    # random (seed 1) answers c3 X with f3 O, and again after the undo and X on d4
    assert [line for line in out.splitlines() if "plays" in line] == ["random plays f3 O"] * 2
    assert out.rstrip().endswith("bye")
    assert "Traceback" not in proc.stderr


def test_play_command_as_chaos_and_bad_spec() -> None:
    proc = _run_cli(["play", "--as", "chaos", "--vs", "heuristic"], "quit\n")
    assert proc.returncode == 0 and "heuristic plays d4 X" in proc.stdout  # its seeded first move
    bad = _run_cli(["play", "--vs", "grandmaster"], "")
    assert bad.returncode == 2
    assert "unknown agent 'grandmaster'" in bad.stderr and "accepted" in bad.stderr
