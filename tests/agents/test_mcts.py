"""MCTS: numba playouts against the scalar rules, tactics, MCTS-Solver against brute-force
minimax, batched search across trees, seeding and argument checks."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orderchaos.agents.mcts import (
    MCTS,
    MCTSAgent,
    RolloutEvaluator,
    SearchResult,
)
from orderchaos.agents.rollout import random_playout
from orderchaos.envs.rules import State, parse_board

from helpers import LONE_FOUR, WIN_IN_ONE, HashEvaluator, mover_wins, play_random_to


# -- the numba playout kernel against the scalar engine ---------------------------------


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 36))
def test_playouts_agree_with_the_rules_engine(seed: int, empties: int) -> None:
    start = play_random_to(seed, empties)
    winner, actions = random_playout(start, seed=seed)
    state = start
    for i, a in enumerate(actions):
        assert not state.is_terminal, "the kernel played on after the game ended"
        state = state.apply(a)
    assert state.is_terminal and state.winner == winner


def test_playout_outcomes_match_the_random_game_statistics() -> None:
    wins = sum(random_playout(State(), seed=s)[0] == "order" for s in range(400))
    assert 0.70 < wins / 400 < 0.90  # random vs random: Order wins about 80%


def test_rollout_evaluator_values_are_from_the_movers_view() -> None:
    evaluator = RolloutEvaluator(n_rollouts=8, seed=0)
    priors, values = evaluator.evaluate([WIN_IN_ONE, LONE_FOUR])
    assert priors.shape == (2, 72) and np.allclose(priors.sum(1), 1)
    assert priors[0][0] == 0 and priors[0][8] > 0  # cell 0 is occupied, cell 4 is empty
    # Random play usually completes the four: good for Order to move, bad for Chaos.
    assert values[0] > 0 and values[1] < 0
    with pytest.raises(ValueError, match="non-terminal"):
        evaluator.evaluate([parse_board("XXXXX." + "." * 30)])


# -- tactics -------------------------------------------------------------------------------


@pytest.mark.parametrize("use_priors", [False, True])
def test_mcts_takes_a_win_in_one_at_once(use_priors: bool) -> None:
    result = MCTS(RolloutEvaluator(), simulations=500, use_priors=use_priors, seed=1).search(WIN_IN_ONE)
    assert result.best_action == 8 and result.proven == "win" and result.value == 1.0
    assert result.simulations == 1  # proven by the root expansion
    assert result.policy(1.0)[8] == 1.0


def test_mcts_agent_blocks_a_lone_four() -> None:
    agent = MCTSAgent(sims=600, seed=2)
    assert agent.act(LONE_FOUR) == 9
    result = agent.search(LONE_FOUR)
    others = [a for a in LONE_FOUR.legal_actions() if a != 9]
    # Every other move lets Order complete the five: the solver proves them lost.
    assert all(result.action_proven[a] == -1 for a in others)


def test_puct_with_a_network_evaluator_also_blocks() -> None:
    result = MCTS(HashEvaluator(), simulations=400, seed=0).search(LONE_FOUR)
    assert result.best_action == 9


# -- MCTS-Solver ---------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 6), st.booleans())
def test_solver_proofs_match_brute_force_minimax(seed: int, empties: int, use_priors: bool) -> None:
    # UCT proves 6-empty positions within ~25k simulations; the Python fake network is
    # slower per simulation, so PUCT gets at most 5 empties.
    state = play_random_to(seed, min(empties, 5) if use_priors else empties)
    search = MCTS(HashEvaluator() if use_priors else RolloutEvaluator(), simulations=200_000, seed=seed)
    result = search.search(state)

    def wins_for_mover(action: int) -> bool:
        nxt = state.apply(action)
        return nxt.winner == state.to_play if nxt.is_terminal else not mover_wins(nxt)

    expected = "win" if mover_wins(state) else "loss"
    assert result.proven == expected
    assert result.value == (1.0 if expected == "win" else -1.0)
    if expected == "win":
        assert wins_for_mover(result.best_action)
    for a in state.legal_actions():
        if result.action_proven[a] != 0:
            assert wins_for_mover(a) == (result.action_proven[a] == 1)


# -- batched search -------------------------------------------------------------------------


def batch_positions() -> list[State]:
    return [State(), LONE_FOUR, play_random_to(3, 20), play_random_to(4, 9), WIN_IN_ONE]


def same(a: SearchResult, b: SearchResult) -> bool:
    return (
        np.array_equal(a.visits, b.visits)
        and np.array_equal(a.q, b.q)
        and a.best_action == b.best_action
        and a.proven == b.proven
        and a.simulations == b.simulations
    )


@pytest.mark.parametrize("noise", [False, True])
def test_batched_search_equals_one_by_one_and_evaluates_once_per_wave(noise: bool) -> None:
    positions = batch_positions()
    batched_eval = HashEvaluator()
    batched = MCTS(batched_eval, simulations=60, seed=11, dirichlet_alpha=0.3).search_batch(
        positions, add_noise=noise
    )
    single = MCTS(HashEvaluator(), simulations=60, seed=11, dirichlet_alpha=0.3)
    one_by_one = [single.search(p, add_noise=noise) for p in positions]
    assert all(same(a, b) for a, b in zip(batched, one_by_one))
    # One evaluate call per wave; every unfinished tree contributes one leaf to it.
    assert len(batched_eval.batch_sizes) == max(r.simulations for r in batched) == 60
    assert batched_eval.batch_sizes[0] == len(positions)
    assert batched[-1].simulations == 1 and batched_eval.batch_sizes[1] == len(positions) - 1


def test_batched_rollout_search_equals_one_by_one() -> None:
    positions = batch_positions()
    batched = MCTS(RolloutEvaluator(), simulations=300, seed=5).search_batch(positions)
    single = MCTS(RolloutEvaluator(), simulations=300, seed=5)
    assert all(same(a, single.search(p)) for a, p in zip(batched, positions))


def test_noise_changes_the_root_priors_only_when_asked() -> None:
    search = MCTS(HashEvaluator(), simulations=40, seed=0, dirichlet_alpha=0.3, dirichlet_fraction=0.5)
    plain = MCTS(HashEvaluator(), simulations=40, seed=0).search(State())
    assert same(plain, search.search(State(), add_noise=False))
    noisy = MCTS(HashEvaluator(), simulations=40, seed=0, dirichlet_alpha=0.3, dirichlet_fraction=0.5)
    assert not np.array_equal(noisy.search(State(), add_noise=True).visits, plain.visits)


# -- results, seeding, budgets, errors ---------------------------------------------------


def test_search_result_policy_and_visits() -> None:
    result = MCTSAgent(sims=400, seed=0).search(State())
    assert result.visits.sum() == 399  # the root expansion is the first simulation
    assert result.visits[result.best_action] == result.visits.max()
    p1, p0 = result.policy(1.0), result.policy(0)
    assert p1.sum() == pytest.approx(1.0) and np.allclose(p1, result.visits / result.visits.sum())
    assert p0[result.best_action] == 1.0
    sharp = result.policy(0.25)
    assert sharp.max() >= p1.max()
    # The root value is the mean of its backed-up results from the mover's view: the
    # children's visit-weighted q plus the root's own evaluation (one result in [-1, 1]).
    backed_up = float((result.visits * result.q).sum())
    assert abs(result.value * (result.visits.sum() + 1) - backed_up) <= 1.0 + 1e-3
    with pytest.raises(ValueError, match="temperature"):
        result.policy(-1)


def test_mcts_agent_is_reproducible_and_seeds_matter() -> None:
    state = play_random_to(8, 30)

    def moves(seed: int) -> list[int]:
        agent = MCTSAgent(sims=150, seed=seed)
        return [agent.act(state) for _ in range(3)]

    assert moves(4) == moves(4)
    assert any(moves(4) != moves(s) for s in range(5, 9))


class SteppingClock:
    """A stand-in for ``time.perf_counter`` that moves ``step`` seconds per reading, so that
    a time limit ends a search after a known number of readings, however fast the machine."""

    def __init__(self, step: float) -> None:
        self.now, self.step, self.readings = 0.0, step, 0

    def perf_counter(self) -> float:
        self.readings += 1
        self.now += self.step
        return self.now


@pytest.mark.parametrize("evaluator", ["rollout", "hash"])
def test_time_limit_stops_the_search_at_the_first_reading_past_it(monkeypatch, evaluator: str) -> None:
    """With a clock that moves 1/16 s per reading and a 5/16 s limit (both exact in binary),
    the search reads the clock at the start and then stops at the fifth check (the first at
    the deadline): a search that overran the limit, or ignored it, reads it more often."""
    import types

    import orderchaos.agents.mcts as mcts_module

    clock = SteppingClock(1 / 16)
    monkeypatch.setattr(mcts_module, "time", types.SimpleNamespace(perf_counter=clock.perf_counter))
    if evaluator == "rollout":
        search = MCTS(RolloutEvaluator(), simulations=None, time_limit=5 / 16, seed=0)
    else:
        search = MCTS(HashEvaluator(), simulations=None, time_limit=5 / 16, seed=0)
    result = search.search(State())
    assert clock.readings == 1 + 5, clock.readings
    assert not result.out_of_memory and result.proven is None
    # four checks before the deadline: the rollout loop runs one simulation and then three
    # chunks of _CHUNK, the wave loop one simulation per wave
    assert result.simulations == (1 + 3 * mcts_module._CHUNK if evaluator == "rollout" else 4)
    assert result.visits.sum() == result.simulations - 1


def test_node_limit_stops_the_search_and_says_so() -> None:
    result = MCTS(RolloutEvaluator(), simulations=5000, max_nodes=3000, seed=0).search(State())
    assert result.simulations < 5000 and result.out_of_memory


def test_bad_arguments_are_refused_with_clear_messages() -> None:
    with pytest.raises(ValueError, match="simulations"):
        MCTS(RolloutEvaluator(), simulations=0)
    with pytest.raises(ValueError, match="time_limit"):
        MCTS(RolloutEvaluator(), simulations=None, time_limit=None)
    with pytest.raises(ValueError, match="use_priors"):
        MCTS(RolloutEvaluator(), use_priors="alphazero")
    with pytest.raises(ValueError, match="dirichlet_fraction"):
        MCTS(RolloutEvaluator(), dirichlet_fraction=2.0)
    with pytest.raises(TypeError, match="evaluate"):
        MCTS(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dirichlet_alpha"):
        MCTS(RolloutEvaluator()).search(State(), add_noise=True)
    with pytest.raises(ValueError, match="terminal"):
        MCTS(RolloutEvaluator()).search(parse_board("XXXXX." + "." * 30))
    with pytest.raises(ValueError, match="sims"):
        MCTSAgent(sims=-3)

    class WrongShape:
        def evaluate(self, states: Sequence[State]) -> tuple[np.ndarray, np.ndarray]:
            return np.ones((len(states), 36)), np.zeros(len(states))

    with pytest.raises(ValueError, match="expected"):
        MCTS(WrongShape(), simulations=5).search(State())
