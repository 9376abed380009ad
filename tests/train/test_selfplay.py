"""AlphaZero game generation and training rows: self-play logs, lockstep heuristic games,
value targets, solver-target policies and on-policy games."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from orderchaos.agents.network import PolicyValueNet
from orderchaos.agents.registry import make
from orderchaos.envs.encoding import action_mask, action_masks, encode_states
from orderchaos.envs.rules import ACTIONS, State

from helpers import endgames, mover_wins, winning_moves


@pytest.mark.parametrize("target_temperature", [1.0, 0.0])
def test_selfplay_logs_only_network_moves_with_legal_policies(target_temperature: float) -> None:
    from orderchaos.train.selfplay import play_selfplay_games

    torch.manual_seed(0)
    nets = {role: PolicyValueNet(4, 0, 8) for role in ("order", "chaos")}
    from orderchaos.agents.network_agent import NetworkEvaluator

    logs = play_selfplay_games(
        NetworkEvaluator(nets), 3, simulations=4, c_puct=1.5, dirichlet_alpha=0.3,
        dirichlet_fraction=0.25, temperature=1.0, temperature_moves=4,
        rng=np.random.default_rng(0), opponents={0: (0, make("heuristic", seed=1))},
        target_temperature=target_temperature,
    )
    for log in logs:  # the logged positions are one game's, in order, before its end
        for before, after in zip(log.states, log.states[1:]):
            assert before.x & ~after.x == 0 and before.o & ~after.o == 0
            assert after.num_stones > before.num_stones
        assert not log.states[-1].is_terminal and log.states[-1].num_stones < log.length <= 36
    assert logs[0].states and all(s.to_play == "chaos" for s in logs[0].states)
    assert any(s.to_play == "order" for s in logs[1].states)
    for log in logs:
        assert len(log.states) == len(log.policies) == len(log.planes) == len(log.masks)
        # the batch engine's planes and masks for each logged position are the encoding's
        np.testing.assert_array_equal(np.stack(log.planes), encode_states(log.states))
        np.testing.assert_array_equal(np.stack(log.masks), action_masks(log.states))
        for state, policy in zip(log.states, log.policies):
            assert np.all(policy[action_mask(state) == 0] == 0)
            assert policy.sum() == pytest.approx(1.0, abs=1e-5) or policy.sum() == 0.0
            if target_temperature == 0 and policy.sum() > 0:  # one-hot, or uniform over proven wins
                support = policy[policy > 0]
                assert np.allclose(support, support[0])


@pytest.mark.parametrize("openings", [0, 3])
def test_lockstep_heuristic_games_replay_under_the_scalar_rules(openings: int) -> None:
    from orderchaos.train.selfplay import play_heuristic_games

    logs = play_heuristic_games(6, openings, np.random.default_rng(5))
    for log in logs:
        np.testing.assert_array_equal(np.stack(log.planes), encode_states(log.states))
        np.testing.assert_array_equal(np.stack(log.masks), action_masks(log.states))
        assert log.states[0].num_stones == openings
        # each logged move (the one-hot policy) leads to the next logged position, and the
        # last one ends the game as the batch engine reported
        moves = [int(np.argmax(p)) for p in log.policies]
        assert all(p.sum() == 1.0 for p in log.policies)
        for state, move, following in zip(log.states, moves, log.states[1:]):
            assert state.apply(move) == following
        final = log.states[-1].apply(moves[-1])
        assert final.is_terminal and final.winner == log.winner and final.num_stones == log.length


def test_value_and_solver_targets() -> None:
    from orderchaos.train.selfplay import SelfPlayGame, value_targets
    from orderchaos.train.solver_targets import solver_targets

    start = State()
    log = SelfPlayGame(states=[start, start.apply(0)], policies=[], winner="chaos")
    assert value_targets(log).tolist() == [-1.0, 1.0]
    positions = endgames(6, empties=4, seed=3)
    exact = solver_targets(positions, node_limit=100_000, moves=True)
    for i, state in enumerate(positions):
        wins = mover_wins(state)
        assert exact.values[i] == (1.0 if wins else -1.0)
        if wins:
            winning = winning_moves(state)
            assert sorted(exact.winning_moves[i]) == winning
        else:
            assert i not in exact.winning_moves


@pytest.mark.parametrize("weights", ["uniform", "search"])
def test_solver_policy_keeps_only_proven_winning_moves(weights: str) -> None:
    from orderchaos.train.alphazero import TrainingRows
    from orderchaos.train.solver_targets import SolverTargets

    policies = np.zeros((3, ACTIONS), np.float32)
    policies[0, [4, 6, 9]] = [0.5, 0.3, 0.2]  # the game's target puts 0.3 and 0.2 on wins
    policies[1, 11] = 1.0  # a one-hot on a move that does not win
    policies[2, 4] = 1.0  # untouched: the solver found no win there
    rows = TrainingRows([State()] * 3, np.zeros((3, 3, 6, 6), np.int8), np.ones((3, ACTIONS), np.int8),
                        policies, np.zeros(3, np.float32))
    exact = SolverTargets(values={0: 1.0, 1: 1.0, 2: -1.0}, winning_moves={0: [6, 9], 1: [2, 3]})
    rows.apply([0, 1, 2], exact, weights)
    assert rows.values.tolist() == [1.0, 1.0, -1.0]
    expected_0 = [0.6, 0.4] if weights == "search" else [0.5, 0.5]
    assert rows.policies[0, [6, 9]] == pytest.approx(expected_0)
    assert rows.policies[1, [2, 3]] == pytest.approx([0.5, 0.5])  # nothing to weight by
    assert rows.policies[:2].sum(1) == pytest.approx([1.0, 1.0])
    assert rows.policies[2, 4] == 1.0 and rows.policies[2].sum() == 1.0


def test_on_policy_games_play_the_networks_own_favourite_after_the_temperature_plies() -> None:
    from orderchaos.agents.network_agent import NetworkEvaluator
    from orderchaos.train.selfplay import play_selfplay_games

    torch.manual_seed(1)
    evaluator = NetworkEvaluator({role: PolicyValueNet(4, 0, 8) for role in ("order", "chaos")})
    heuristic_chaos = {g: (1, make("heuristic", seed=g)) for g in range(2)}
    logs = play_selfplay_games(
        evaluator, 2, simulations=8, c_puct=1.5, dirichlet_alpha=0.3, dirichlet_fraction=0.25,
        temperature=1.0, temperature_moves=2, rng=np.random.default_rng(0),
        opponents=heuristic_chaos, on_policy=[0],
    )

    def follows_favourite(log) -> list[bool]:
        # the network's move from each logged Order position stands in the next one
        out = []
        for state, following in zip(log.states, log.states[1:]):
            if state.num_stones >= 2:
                move = int(np.argmax(evaluator.evaluate([state])[0][0]))
                placed = state.apply(move)
                out.append((placed.x & ~following.x) == 0 and (placed.o & ~following.o) == 0)
        return out

    assert follows_favourite(logs[0]) and all(follows_favourite(logs[0]))
    assert not all(follows_favourite(logs[1]))  # searched moves (with noise) differ somewhere


def test_graded_outcomes_prefer_short_order_wins_and_keep_the_sign() -> None:
    from orderchaos.train.selfplay import SelfPlayGame, graded_order_value, value_targets

    assert graded_order_value("order", 9, 0.5) == 1.0
    assert graded_order_value("order", 36, 0.5) == pytest.approx(0.5)
    assert graded_order_value("chaos", 36, 0.5) == -1.0
    lengths = range(9, 37)
    values = [graded_order_value("order", n, 0.9) for n in lengths]
    assert all(a > b for a, b in zip(values, values[1:])) and min(values) > 0
    start = State()
    log = SelfPlayGame(states=[start, start.apply(0)], policies=[], winner="order", length=18)
    assert value_targets(log, 0.0).tolist() == [1.0, -1.0]
    assert value_targets(log, 0.9).tolist() == pytest.approx([0.7, -0.7])


@pytest.mark.parametrize("gumbel", [0, 8])
def test_solver_ended_games_stop_at_a_proven_position(gumbel: int) -> None:
    from orderchaos.agents.network_agent import NetworkEvaluator
    from orderchaos.agents.solver import solve
    from orderchaos.train.selfplay import play_selfplay_games, solver_ender

    torch.manual_seed(2)
    evaluator = NetworkEvaluator({role: PolicyValueNet(4, 0, 8) for role in ("order", "chaos")})
    logs = play_selfplay_games(
        evaluator, 6, simulations=6, c_puct=1.5, dirichlet_alpha=0.3, dirichlet_fraction=0.25,
        temperature=1.0, temperature_moves=4, rng=np.random.default_rng(3),
        gumbel_considered=gumbel, end=solver_ender(18, 50_000),
    )
    ended = [log for log in logs if log.solver_ended]
    assert ended  # random networks rarely make a five before 18 stones
    for log in logs:
        last = log.states[-1]
        if log.solver_ended:
            # the game stopped at the first logged position with at most 18 empties, whose
            # proven winner is the game's; that position is a value-only row
            assert last.num_empty <= 18 and log.length == last.num_stones
            assert all(s.num_empty > 18 for s in log.states[:-1])
            assert solve(last, node_limit=200_000).winner == log.winner
            assert log.policies[-1].sum() == 0.0
        else:
            assert last.num_stones < log.length and log.winner in ("order", "chaos")
        for policy in log.policies[:-1]:
            assert policy.sum() == pytest.approx(1.0, abs=1e-5) or policy.sum() == 0.0


def test_only_the_listed_games_may_end_early() -> None:
    """``end_games``: an ender that would stop every game at 30 empty cells stops only the
    listed ones; the others are played out to a five or a full board."""
    from orderchaos.agents.network_agent import NetworkEvaluator
    from orderchaos.train.selfplay import play_selfplay_games

    asked: list[int] = []

    def always_order(states: list[State]) -> list[str | None]:
        asked.append(len(states))
        return ["order" if s.num_empty <= 30 else None for s in states]

    torch.manual_seed(2)
    evaluator = NetworkEvaluator({role: PolicyValueNet(4, 0, 8) for role in ("order", "chaos")})
    logs = play_selfplay_games(
        evaluator, 6, simulations=4, c_puct=1.5, dirichlet_alpha=0.3, dirichlet_fraction=0.25,
        temperature=1.0, temperature_moves=4, rng=np.random.default_rng(3),
        end=always_order, end_games=[1, 4],
    )
    assert [log.solver_ended for log in logs] == [False, True, False, False, True, False]
    assert all(logs[g].states[-1].num_empty == 30 and logs[g].length == 6 for g in (1, 4))
    for g in (0, 2, 3, 5):
        assert logs[g].length > 6 and logs[g].states[-1].num_empty < 30
    assert max(asked) <= 2  # the ender never saw the other games' positions


@pytest.mark.parametrize(("gumbel", "cache", "prefetch"), [(0, True, False), (16, True, False), (16, False, True), (16, True, True)])
def test_the_evaluation_cache_and_prefetch_play_the_same_games_with_fewer_evaluations(
    gumbel: int, cache: bool, prefetch: bool
) -> None:
    """``evaluation_cache`` and ``prefetch``: the same games, moves and targets (a fake
    network whose answers do not depend on the batch). The cache sends each board to the
    network once; prefetch sends each search's first round in one batch."""
    from orderchaos.train.selfplay import play_selfplay_games

    from helpers import HashEvaluator

    def play(cache: bool, prefetch: bool) -> tuple[list, HashEvaluator]:
        network = HashEvaluator()
        logs = play_selfplay_games(
            network, 6, simulations=16, c_puct=1.5, dirichlet_alpha=0.3, dirichlet_fraction=0.25,
            temperature=1.0, temperature_moves=4, rng=np.random.default_rng(3),
            opponents={0: (1, make("heuristic", seed=1))}, gumbel_considered=gumbel,
            evaluation_cache=cache, prefetch=prefetch,
        )
        return logs, network

    cached_logs, cached = play(cache, prefetch)
    plain_logs, plain = play(False, False)
    assert [(log.winner, log.length, [s.to_string() for s in log.states]) for log in cached_logs] == [
        (log.winner, log.length, [s.to_string() for s in log.states]) for log in plain_logs
    ]
    for cached_log, plain_log in zip(cached_logs, plain_logs):
        np.testing.assert_array_equal(np.array(cached_log.policies), np.array(plain_log.policies))
    assert cached.evaluated < (0.95 if cache else 1.0) * plain.evaluated
    if prefetch:
        assert len(cached.batch_sizes) < 0.5 * len(plain.batch_sizes)
