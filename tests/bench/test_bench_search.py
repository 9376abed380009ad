"""The like-for-like part of the search benchmark (bench/search.py): our mcts against
OpenSpiel's MCTSBot on python_order_chaos, in quick mode."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspiel", reason="the openspiel extra is not installed: pip install -e '.[dev]'")

from orderchaos.bench.search import MID_GAME, _spiel_state_at, like_for_like, play_openspiel_match  # noqa: E402
from orderchaos.envs.openspiel import state_of  # noqa: E402
from orderchaos.envs.rules import State  # noqa: E402


def test_like_for_like_quick_smoke(capsys: pytest.CaptureFixture[str]) -> None:
    figures = like_for_like(quick=True)
    out = capsys.readouterr().out
    assert "Like for like on python_order_chaos" in out and "ours mcts won" in out
    assert all(row is not None and row["sims_per_cpu_s"] > 0 for row in figures["rows"].values())
    match = figures["match"]
    assert match["games"] == 4 and match["sims"] == 20
    assert 0 <= match["ours_wins_as_order"] <= 2 and 0 <= match["ours_wins_as_chaos"] <= 2
    assert match["ours_score"] == (match["ours_wins_as_order"] + match["ours_wins_as_chaos"]) / 4
    assert all(seconds > 0 for seconds in match["cpu_s_per_move"].values())


def test_the_match_is_seeded_and_its_games_are_legal() -> None:
    """The same seed plays the same games; another seed plays others. Every game follows
    our rules to the end, and the win counts are those games' results."""
    first = play_openspiel_match(sims=10, games=4, seed=5)
    assert play_openspiel_match(sims=10, games=4, seed=5)["histories"] == first["histories"]
    assert play_openspiel_match(sims=10, games=4, seed=6)["histories"] != first["histories"]
    ours_wins = []
    for i, history in enumerate(first["histories"]):
        state = State()
        for action in history:
            state = state.apply(action)
        assert state.is_terminal
        ours_wins.append(state.winner == ("order" if i % 2 == 0 else "chaos"))
    assert first["ours_wins_as_order"] == sum(ours_wins[0::2])
    assert first["ours_wins_as_chaos"] == sum(ours_wins[1::2])


def test_openspiel_starts_from_the_mid_game_position() -> None:
    import pyspiel

    game = pyspiel.load_game("python_order_chaos")
    state = _spiel_state_at(game, MID_GAME)
    assert state_of(state) == MID_GAME and state.current_player() == MID_GAME.to_play_index == 0
