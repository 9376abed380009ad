"""The like-for-like part of the search benchmark (bench/search.py): our mcts against
OpenSpiel's MCTSBot on python_order_chaos, in quick mode."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspiel", reason="the openspiel extra is not installed: pip install -e '.[dev]'")

from orderchaos.bench.search import MID_GAME, _spiel_state_at, play_openspiel_match  # noqa: E402
from orderchaos.envs.openspiel import state_of  # noqa: E402
from orderchaos.envs.rules import State  # noqa: E402


class Clocks:
    """Stand-ins for ``time.perf_counter`` (one second per reading) and ``time.thread_time``
    (its k-th reading is k squared). Each timed span reads each clock twice, so span j
    (from 1) lasts 1 wall second and 4j - 1 CPU seconds: every row gets its own CPU time,
    and a figure divided by the wrong span or the wrong clock comes out different."""

    def __init__(self) -> None:
        self.wall_readings = self.cpu_readings = 0

    def perf_counter(self) -> float:
        self.wall_readings += 1
        return float(self.wall_readings)

    def thread_time(self) -> float:
        self.cpu_readings += 1
        return float(self.cpu_readings**2)


def cpu_span(j: int) -> int:
    """The CPU seconds of the j-th timed span on :class:`Clocks`."""
    return 4 * j - 1


def test_quick_run_reports_the_simulations_done_over_their_time(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Quick mode, on stand-in clocks: the throughput rows are searches of 2000
    simulations (16 trees of 20 for the batched one) and the like-for-like rows of 200,
    each timed once in turn (spans 1 to 9); the seeded match is 4 games of 20 simulations
    per move, then one span per move. Every figure is work over its own span, and the
    ratios divide the right rows."""
    import types

    import orderchaos.bench.search as bench_search

    clocks = Clocks()
    monkeypatch.setattr(bench_search, "time", types.SimpleNamespace(perf_counter=clocks.perf_counter,
                                                                    thread_time=clocks.thread_time))
    figures = bench_search.run(quick=True)
    work = {
        "ours UCT+rollout, empty board": 2000,
        "ours UCT+rollout, mid-game (12 stones)": 2000,
        "OpenSpiel C++ MCTSBot mnk(6,6,5), empty": 2000,
        "OpenSpiel C++ MCTSBot mnk(6,6,5), 12 stones": 2000,
        "ours PUCT batched, 16 trees, free evaluator": 16 * 20,
    }
    assert figures["rows"] == {
        name: {"sims_per_cpu_s": sims / cpu_span(j), "sims_per_wall_s": float(sims)}
        for j, (name, sims) in enumerate(work.items(), start=1)
    }
    like = figures["like_for_like"]
    names = ["ours mcts, empty board", "OpenSpiel Python MCTSBot, empty board",
             "ours mcts, 12 stones", "OpenSpiel Python MCTSBot, 12 stones"]
    assert like["rows"] == {
        name: {"sims_per_cpu_s": 200 / cpu_span(j), "sims_per_wall_s": 200.0}
        for j, name in enumerate(names, start=6)
    }
    match = like["match"]
    lengths = [len(history) for history in match["histories"]]
    assert (match["games"], match["sims"], lengths) == (4, 20, [25, 36, 29, 25])
    assert (match["ours_wins_as_order"], match["ours_wins_as_chaos"], match["ours_score"]) == (2, 1, 0.75)
    spans: dict[str, list[int]] = {"ours": [], "openspiel": []}
    j = 10
    for game, length in enumerate(lengths):
        for ply in range(length):  # ours is Order (even plies) in even games
            spans["ours" if ply % 2 == game % 2 else "openspiel"].append(cpu_span(j))
            j += 1
    assert match["cpu_s_per_move"] == {side: sum(s) / len(s) for side, s in spans.items()}
    assert (clocks.cpu_readings, clocks.wall_readings) == (2 * (j - 1), 2 * 9)
    lines = capsys.readouterr().out.splitlines()
    assert lines[:8] == [
        "MCTS throughput (2000 simulations per search, median of 1, one core)",
        "search                                            sims/CPU-s  sims/wall-s  vs OpenSpiel",
        "ours UCT+rollout, empty board                            667        2,000          3.7x",
        "ours UCT+rollout, mid-game (12 stones)                   286        2,000          1.6x",
        "OpenSpiel C++ MCTSBot mnk(6,6,5), empty                  182        2,000          1.0x",
        "OpenSpiel C++ MCTSBot mnk(6,6,5), 12 stones              133        2,000          0.7x",
        "ours PUCT batched, 16 trees, free evaluator               17          320             -",
        "(OpenSpiel plays mnk, a different game: a throughput reference, not a like-for-like match)",
    ]
    assert lines[9:16] == [
        "Like for like on python_order_chaos (UCT c=1.4, one random rollout, solver backups, "
        "200 simulations per search, median of 1)",
        "search                                            sims/CPU-s  sims/wall-s  ours / theirs",
        "ours mcts, empty board                                     9          200             1x",
        "OpenSpiel Python MCTSBot, empty board                      7          200               ",
        "ours mcts, 12 stones                                       6          200             1x",
        "OpenSpiel Python MCTSBot, 12 stones                        6          200               ",
        "match, 4 games at 20 simulations, ours as Order in even games (seeds 0..3):",
    ]
    assert lines[16] == "  ours mcts won 2/2 as Order and 1/2 as Chaos: score 0.75 (Wilson 95% CI 0.30-0.95)"


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
