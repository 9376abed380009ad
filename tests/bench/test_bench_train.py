"""The self-play recipe rows of the training benchmark (bench/train.py)."""

from __future__ import annotations

import pytest

from orderchaos.bench.train import recipe_throughput


def test_recipe_with_the_shipped_networks_plays_whole_games() -> None:
    from orderchaos.train.config import load_config
    from helpers import REPO

    row = recipe_throughput("alphazero_selfplay.yaml", 4, networks="pretrained")
    assert row["networks"] == "pretrained" and row["games"] == 4
    # a five needs at least nine stones; solver-ended games stop at 20 empty cells or fewer
    assert row["mean_length"] >= 9
    assert row["games_per_sec"] == pytest.approx(4 / row["seconds"])  # the games over their time
    # evaluations: a whole number over the 4 games, at least one and at most a full search
    # (simulations + the root) per move
    evaluations = row["evals_per_game"] * 4
    simulations = load_config(REPO / "configs" / "alphazero_selfplay.yaml").mcts.simulations
    assert evaluations == int(evaluations) >= 1
    assert row["evals_per_game"] <= row["mean_length"] * (simulations + 1)
    assert row["solver_ended"] * 4 == int(row["solver_ended"] * 4)  # a share of the 4 games


def test_recipe_overrides_change_the_search() -> None:
    plain = recipe_throughput("alphazero_selfplay.yaml", 8, networks="pretrained")
    fewer = recipe_throughput(
        "alphazero_selfplay.yaml", 8, networks="pretrained",
        overrides=("mcts.simulations=4",),
    )
    assert fewer["config"] == "alphazero_selfplay.yaml mcts.simulations=4"
    # a Gumbel search of 4 simulations evaluates fewer positions per move than one of 16
    assert fewer["evals_per_game"] < plain["evals_per_game"]


def test_the_cache_and_prefetch_rows_play_the_same_games_for_fewer_evaluations() -> None:
    from orderchaos.bench.train import RECIPES

    rows = {overrides: (name, compiled) for name, overrides, compiled in RECIPES if name == "alphazero_selfplay.yaml"}
    both = ("mcts.prefetch=true", "mcts.evaluation_cache=true")
    assert {("mcts.evaluation_cache=true",), ("mcts.prefetch=true",), both} <= set(rows)
    name, compiled = rows[both]
    assert compiled
    plain = recipe_throughput(name, 16, networks="pretrained")
    faster = recipe_throughput(name, 16, networks="pretrained", overrides=both)
    # the same games (exactly so with a fake network: tests/train/test_selfplay.py); a real
    # one may round a position's outputs differently in a batch of another size
    assert faster["mean_length"] == pytest.approx(plain["mean_length"], abs=0.5)
    assert faster["evals_per_game"] < 0.95 * plain["evals_per_game"]


def test_the_fast_recipe_row_evaluates_in_bfloat16() -> None:
    from orderchaos.bench.train import RECIPES

    assert ("alphazero_selfplay_fast.yaml", (), True) in RECIPES
    fast = recipe_throughput("alphazero_selfplay_fast.yaml", 8, networks="pretrained")
    shipped = recipe_throughput("alphazero_selfplay.yaml", 8, networks="pretrained")
    assert (fast["precision"], shipped["precision"]) == ("bfloat16", "float32")
    assert fast["mean_length"] >= 9 and 0 < fast["evals_per_game"] < shipped["evals_per_game"]


def test_recipe_refuses_unknown_networks() -> None:
    with pytest.raises(ValueError, match="'fresh' or 'pretrained'"):
        recipe_throughput("alphazero_selfplay.yaml", 1, networks="trained")


def test_recipe_takes_networks_from_a_policy_directory(tmp_path) -> None:
    from orderchaos.agents.policy_files import pretrained_dir

    shipped = recipe_throughput("alphazero_selfplay.yaml", 4, networks="pretrained")
    from_dir = recipe_throughput("alphazero_selfplay.yaml", 4, networks=str(pretrained_dir()))
    for key in ("evals_per_game", "mean_length", "solver_ended"):
        assert from_dir[key] == shipped[key]
    with pytest.raises(ValueError, match="policy or run directory"):
        recipe_throughput("alphazero_selfplay.yaml", 1, networks=str(tmp_path / "missing"))


def test_recipe_refuses_networks_of_another_shape() -> None:
    from orderchaos.agents.policy_files import pretrained_dir

    with pytest.raises(ValueError, match="'channels': 16"):
        recipe_throughput(
            "alphazero_selfplay.yaml", 1, networks=str(pretrained_dir()), overrides=("network.channels=16",)
        )


def test_compiled_and_module_forward_play_the_same_games() -> None:
    compiled = recipe_throughput("alphazero_selfplay.yaml", 6, networks="pretrained")
    module = recipe_throughput("alphazero_selfplay.yaml", 6, networks="pretrained", compiled=False)
    assert compiled["compiled"] and not module["compiled"]
    for key in ("evals_per_game", "mean_length", "solver_ended"):
        assert compiled[key] == module[key]


def test_the_small_recipe_rows_play_with_trained_networks_of_its_own_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    """The row's evaluations per game are the positions its network evaluated during the
    games (counted here, batch by batch), without the two of the warm-up before them."""
    import orderchaos.bench.train as bench_train
    from orderchaos.agents.network_agent import NetworkEvaluator
    from orderchaos.agents.policy_files import load_policy_dir
    from orderchaos.bench.train import RECIPES, trained_networks

    batches: list[int] = []

    class CountingEvaluator(NetworkEvaluator):
        def evaluate_arrays(self, planes, masks, roles):  # type: ignore[no-untyped-def]
            batches.append(planes.shape[0])
            return super().evaluate_arrays(planes, masks, roles)

    monkeypatch.setattr(bench_train, "NetworkEvaluator", CountingEvaluator)

    small = "alphazero_selfplay_small.yaml"
    assert [o for n, o, _ in RECIPES if n == small] == [(), ("mcts.prefetch=true", "mcts.evaluation_cache=true")]
    assert trained_networks("alphazero_selfplay.yaml") == "pretrained"
    nets, meta = load_policy_dir(trained_networks(small))
    assert nets["chaos"].architecture()["channels"] == 16 and meta["network"]["channels"] == 16
    row = recipe_throughput(small, 4, networks=trained_networks(small))
    assert batches[0] == 2 and row["evals_per_game"] * 4 == sum(batches[1:]) > 0
    assert row["mean_length"] >= 9  # a five needs nine stones


def test_rates_are_the_items_of_the_timed_calls_over_their_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a clock of 1/4 s per reading, asked for at least 0.9 s: one untimed warm-up call,
    then four timed calls, the fourth reading 1 s after the start. A rate that counted the
    warm-up, or divided by the time asked for, comes out different."""
    import types

    import orderchaos.bench.train as bench_train

    readings = iter(0.25 * k for k in range(1, 100))
    monkeypatch.setattr(bench_train, "time", types.SimpleNamespace(perf_counter=lambda: next(readings)))
    calls: list[int] = []
    assert bench_train._rate(lambda: calls.append(1), 8, 0.9) == 4 * 8 / 1.0
    assert len(calls) == 5
