"""The evaluation cache: the wrapped evaluator's answers, each board evaluated once, emptied
when full or when the weights change; searches and self-play play the same moves with it."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from orderchaos.agents.evaluation_cache import CachedEvaluator
from orderchaos.agents.network import PolicyValueNet
from orderchaos.agents.network_agent import NetworkEvaluator, NeuralAgent
from orderchaos.envs.encoding import encode_states
from orderchaos.envs.rules import State

from helpers import HashEvaluator, play_random_to

POOL = [play_random_to(seed, empties) for seed, empties in zip(range(12), (34, 30, 26, 22, 18, 33) * 2)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, len(POOL) - 1), min_size=1, max_size=8), min_size=1, max_size=6))
def test_answers_are_the_inner_evaluators_and_each_board_is_evaluated_once(batches: list[list[int]]) -> None:
    inner = HashEvaluator()
    cache = CachedEvaluator(inner)
    reference = HashEvaluator()
    for batch in batches:
        states = [POOL[i] for i in batch]
        priors, values = cache.evaluate(states)
        expected_priors, expected_values = reference.evaluate(states)
        np.testing.assert_array_equal(priors, expected_priors)
        np.testing.assert_array_equal(values, expected_values)
    asked = [i for batch in batches for i in batch]
    assert inner.evaluated == len(set(asked)) == len(cache)
    assert cache.requested == len(asked) and cache.hits == len(asked) - len(set(asked))
    assert all(size >= 1 for size in inner.batch_sizes) and len(inner.batch_sizes) <= len(batches)


def test_a_batch_larger_than_the_capacity_is_answered_whole() -> None:
    inner = HashEvaluator()
    cache = CachedEvaluator(inner, capacity=3)
    priors, values = cache.evaluate(POOL[:6] + POOL[:2])
    expected_priors, expected_values = HashEvaluator().evaluate(POOL[:6] + POOL[:2])
    np.testing.assert_array_equal(priors, expected_priors)
    np.testing.assert_array_equal(values, expected_values)
    assert inner.evaluated == 6 and cache.hits == 2


def test_callers_cannot_change_the_cached_answers() -> None:
    cache = CachedEvaluator(HashEvaluator())
    priors, values = cache.evaluate(POOL[:2])
    priors[:] = 0.0
    values[:] = 5.0
    again, again_values = cache.evaluate(POOL[:2])
    expected_priors, expected_values = HashEvaluator().evaluate(POOL[:2])
    np.testing.assert_array_equal(again, expected_priors)
    np.testing.assert_array_equal(again_values, expected_values)


def test_a_full_cache_starts_afresh() -> None:
    inner = HashEvaluator()
    cache = CachedEvaluator(inner, capacity=3)
    cache.evaluate(POOL[:3])
    assert len(cache) == 3
    cache.evaluate(POOL[3:5])  # would pass the capacity: emptied first
    assert len(cache) == 2 and inner.evaluated == 5
    cache.evaluate(POOL[:1])
    assert inner.evaluated == 6  # POOL[0] was forgotten


@pytest.mark.parametrize("capacity", [0, -1, 2.5, True, "10"])
def test_capacity_must_be_a_positive_integer(capacity: object) -> None:
    with pytest.raises(ValueError, match="capacity must be a positive integer"):
        CachedEvaluator(HashEvaluator(), capacity=capacity)  # type: ignore[arg-type]


def test_new_weights_empty_the_cache() -> None:
    """After a training step the cache answers for the new networks, not the old ones."""
    torch.manual_seed(0)
    nets = {role: PolicyValueNet(8, 1, 16, window_features=True) for role in ("order", "chaos")}
    evaluator = NetworkEvaluator(nets)
    cache = CachedEvaluator(evaluator, version=evaluator.weights_version)
    states = [State(), State().apply(14), State().apply(14).apply(21)]
    before, _ = cache.evaluate(states)
    cache.evaluate(states)
    assert evaluator.positions_evaluated == 3 == cache.positions_evaluated
    optimiser = torch.optim.SGD(nets["order"].parameters(), lr=0.5)
    logits, values = nets["order"](torch.from_numpy(encode_states(states)))
    (logits.pow(2).mean() + values.sum()).backward()
    optimiser.step()
    after, _ = cache.evaluate(states)
    assert evaluator.positions_evaluated == 6
    np.testing.assert_allclose(after, NetworkEvaluator(nets).evaluate(states)[0], atol=1e-5)
    assert not np.allclose(after[[0, 2]], before[[0, 2]], atol=1e-4)  # Order's positions changed


def test_a_search_agent_plays_the_same_game_with_fewer_evaluations() -> None:
    def play(cache: int) -> tuple[list[int], int]:
        network = HashEvaluator()
        agent = NeuralAgent(network, sims=60, seed=4, cache=cache)
        state, moves = play_random_to(7, 32), []
        while not state.is_terminal:
            moves.append(agent.act(state))
            state = state.apply(moves[-1])
        return moves, network.evaluated

    cached_moves, cached_evaluations = play(200_000)
    plain_moves, plain_evaluations = play(0)
    assert cached_moves == plain_moves
    # each search starts where an earlier one has looked, so much of its tree is known
    assert cached_evaluations < 0.8 * plain_evaluations
