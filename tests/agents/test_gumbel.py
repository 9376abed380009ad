"""Gumbel root search: the sequential-halving schedule, proofs at the root, the completed-Q
improved policy, and reproducibility."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orderchaos.agents.gumbel import GumbelSearch, considered_visit_sequence
from orderchaos.agents.mcts import uniform_legal_priors
from orderchaos.envs.rules import ACTIONS, State

from helpers import LONE_FOUR, WIN_IN_ONE, HashEvaluator, positions


class FlatEvaluator:
    """Uniform priors; value 0 everywhere except where ``cell`` holds an X: there Order is
    told it is winning (so X on ``cell`` is Order's best move, and nothing else matters)."""

    def __init__(self, cell: int | None = None) -> None:
        self.cell = cell
        self.calls = 0

    def evaluate(self, states):
        self.calls += 1
        values = np.zeros(len(states), np.float32)
        if self.cell is not None:
            marked = np.array([bool(s.x >> self.cell & 1) for s in states], bool)
            order_to_move = np.array([s.to_play == "order" for s in states], bool)
            values[marked] = np.where(order_to_move[marked], 1.0, -1.0)
        return uniform_legal_priors(states), values


@given(st.integers(1, 72), st.integers(0, 400))
@settings(max_examples=200, deadline=None)
def test_schedule_is_sequential_halving(considered: int, simulations: int) -> None:
    sequence = considered_visit_sequence(considered, simulations)
    assert len(sequence) == simulations
    counts = np.bincount(sequence) if sequence else np.zeros(0, int)
    # k visits are scheduled at most `considered` times, and never more often than k-1 ones
    assert all(c <= considered for c in counts)
    assert all(a >= b for a, b in zip(counts, counts[1:]))
    # the first `considered` simulations visit every considered move once
    assert sequence[: min(considered, simulations)] == [0] * min(considered, simulations)


def test_schedule_halves_the_candidates() -> None:
    # 4 moves, 16 simulations: two phases; the second spends its share on 2 moves
    assert considered_visit_sequence(4, 16) == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]


def test_win_in_one_is_proven_at_the_root() -> None:
    result = GumbelSearch(FlatEvaluator(), simulations=16, seed=0).search(WIN_IN_ONE, add_noise=True)
    assert result.proven == "win"
    assert result.best_action == 8
    assert result.policy()[8] > 0 and result.policy().sum() == pytest.approx(1.0)


def test_the_only_saving_move_is_found() -> None:
    # Chaos must put O on e1; every other move lets Order complete the five
    result = GumbelSearch(FlatEvaluator(), simulations=72, max_considered=72, seed=0).search(LONE_FOUR)
    assert result.best_action == 9
    assert np.argmax(result.improved_policy) == 9


def test_improved_policy_moves_mass_to_the_better_move() -> None:
    # with flat priors, the completed Q values alone single out X on cell 14
    search = GumbelSearch(FlatEvaluator(cell=14), simulations=80, max_considered=72, seed=3)
    result = search.search(State())
    assert int(np.argmax(result.improved_policy)) == 28
    assert result.improved_policy[28] > 2 / ACTIONS
    assert result.best_action == 28


@given(positions(terminal=False), st.integers(1, 24), st.integers(1, 16))
@settings(max_examples=40, deadline=None)
def test_results_are_legal_distributions(state: State, simulations: int, considered: int) -> None:
    result = GumbelSearch(FlatEvaluator(), simulations=simulations, max_considered=considered, seed=1).search(
        state, add_noise=True
    )
    legal = np.zeros(ACTIONS, bool)
    legal[state.legal_actions()] = True
    for policy in (result.improved_policy, result.policy(1.0), result.policy(0.5)):
        assert policy.sum() == pytest.approx(1.0, abs=1e-5)
        assert np.all(policy[~legal] == 0)
    assert legal[result.best_action]
    assert result.simulations <= simulations
    if result.proven is None:
        assert result.simulations == simulations


def test_same_seed_same_search_and_one_evaluation_per_wave() -> None:
    states = [State(), State().apply(28), State().apply(28).apply(15)]

    def run(seed: int):
        evaluator = FlatEvaluator(cell=7)
        results = GumbelSearch(evaluator, simulations=12, max_considered=8, seed=seed).search_batch(
            states, add_noise=True
        )
        return [(r.best_action, r.visits.tolist()) for r in results], evaluator.calls

    first, calls = run(5)
    assert run(5)[0] == first
    assert calls == 12  # the root expansion and 11 waves, each one batch for all trees
    assert any(run(seed)[0] != first for seed in range(6, 12))  # the Gumbel draws matter


@given(st.lists(positions(terminal=False), min_size=1, max_size=4), st.integers(1, 24), st.integers(1, 16), st.booleans())
@settings(max_examples=40, deadline=None)
def test_prefetch_gives_the_same_search_in_fewer_batches(
    states: list[State], simulations: int, considered: int, noise: bool
) -> None:
    """Prefetching the first round's root children changes which batches the network sees,
    not the search: the same results, from no more positions than the waves would ask."""

    def run(prefetch: bool):
        network = HashEvaluator()
        results = GumbelSearch(
            network, simulations=simulations, max_considered=considered, seed=3, prefetch=prefetch
        ).search_batch(states, add_noise=noise)
        return results, network

    plain, plain_network = run(False)
    fetched, fetched_network = run(True)
    for a, b in zip(plain, fetched):
        assert a.best_action == b.best_action and a.proven == b.proven
        assert a.visits.tolist() == b.visits.tolist() and a.simulations == b.simulations
        np.testing.assert_array_equal(a.improved_policy, b.improved_policy)
    assert fetched_network.evaluated <= plain_network.evaluated + sum(s.num_empty * 2 for s in states)
    assert len(fetched_network.batch_sizes) <= len(plain_network.batch_sizes)


def test_prefetch_puts_the_first_round_in_one_batch() -> None:
    network = HashEvaluator()
    states = [State(), State().apply(28).apply(15)]  # no position is in both trees
    GumbelSearch(network, simulations=16, max_considered=16, seed=0, prefetch=True).search_batch(states, add_noise=True)
    # the roots' batch, then the 15 first visits of both trees together; the waves find
    # every leaf evaluated
    assert network.batch_sizes == [2, 30]
    plain = HashEvaluator()
    GumbelSearch(plain, simulations=16, max_considered=16, seed=0).search_batch(states, add_noise=True)
    assert plain.batch_sizes == [2] * 16


def test_prefetch_is_off_with_a_proving_evaluator() -> None:
    class Proving(HashEvaluator):
        def evaluate_with_proofs(self, states):  # type: ignore[no-untyped-def]
            priors, values = self.evaluate(states)
            return priors, values, np.zeros(len(states), np.int8)

    assert not GumbelSearch(Proving(), prefetch=True).prefetch
    assert GumbelSearch(HashEvaluator(), prefetch=True).prefetch


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="simulations"):
        GumbelSearch(FlatEvaluator(), simulations=0)
    with pytest.raises(ValueError, match="max_considered"):
        GumbelSearch(FlatEvaluator(), max_considered=0)
    with pytest.raises(TypeError, match="evaluate"):
        GumbelSearch(object())
    with pytest.raises(ValueError, match="terminal"):
        GumbelSearch(FlatEvaluator()).search(State(0b11111, 0))
