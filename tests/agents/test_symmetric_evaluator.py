"""Symmetry averaging: the averaged network is exactly equivariant, its priors stay on the
legal moves, and the agents and specs take ``sym``."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from orderchaos.agents.network import PolicyValueNet
from orderchaos.agents.network_agent import NetworkEvaluator, NeuralAgent
from orderchaos.agents.registry import SpecError, make
from orderchaos.agents.symmetric_evaluator import SymmetricEvaluator
from orderchaos.envs.rules import State
from orderchaos.envs.symmetry import ACTION_PERM, transform_state

from helpers import HashEvaluator, positions

torch.manual_seed(3)
NETS = {role: PolicyValueNet(8, 1, 16, window_features=True).eval() for role in ("order", "chaos")}


@settings(max_examples=40, deadline=None)
@given(positions(terminal=False), st.integers(0, 15))
def test_averaging_over_all_sixteen_images_makes_the_network_equivariant(state: State, g: int) -> None:
    averaged = SymmetricEvaluator(NetworkEvaluator(NETS, compiled=False), 16)
    priors, values = averaged.evaluate([state, transform_state(state, g)])
    # the image's prior on the image of a move is the position's prior on the move
    np.testing.assert_allclose(priors[1][ACTION_PERM[g]], priors[0], atol=2e-6)
    assert values[1] == pytest.approx(values[0], abs=2e-6)
    legal = np.zeros(72, bool)
    legal[state.legal_actions()] = True
    assert priors[0].sum() == pytest.approx(1.0, abs=1e-5) and not priors[0][~legal].any()


def test_the_plain_network_is_not_equivariant_so_the_check_above_can_fail() -> None:
    network = NetworkEvaluator(NETS, compiled=False)
    state = State().apply(14).apply(3)
    priors, _ = network.evaluate([state, transform_state(state, 1)])
    assert not np.allclose(priors[1][ACTION_PERM[1]], priors[0], atol=1e-4)


def test_eight_board_images_average_without_swapping_colours() -> None:
    inner = HashEvaluator()
    state = State().apply(14).apply(21)
    priors, values = SymmetricEvaluator(inner, 8).evaluate([state])
    images = [transform_state(state, g) for g in range(8)]
    image_priors, image_values = HashEvaluator().evaluate(images)
    # Expected from what the moves mean, not from the permutation table the code gathers
    # with: the image of move a is the move b with image(state + a) == image(state) + b.
    expected = np.zeros(72)
    for a in state.legal_actions():
        for g, image in enumerate(images):
            after = transform_state(state.apply(a), g)
            (b,) = [b for b in image.legal_actions() if image.apply(b) == after]
            expected[a] += image_priors[g][b] / 8
    legal = state.legal_actions()
    np.testing.assert_allclose(priors[0][legal], expected[legal], atol=1e-6)
    assert values[0] == pytest.approx(float(np.mean(image_values)), abs=1e-6)
    assert inner.batch_sizes == [8]  # one batch of the images
    one = HashEvaluator()
    assert np.array_equal(SymmetricEvaluator(one, 1).evaluate([state])[0], HashEvaluator().evaluate([state])[0])


@pytest.mark.parametrize("bad", [0, 2, 4, 32, True, 8.0])
def test_only_one_eight_or_sixteen_images(bad: object) -> None:
    with pytest.raises(ValueError, match="sym must be 1"):
        SymmetricEvaluator(HashEvaluator(), bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="sym must be 1"):
        NeuralAgent(HashEvaluator(), sym=bad)  # type: ignore[arg-type]


def test_the_spec_takes_sym_and_refuses_other_counts() -> None:
    agent = make("pretrained:sym=16", seed=0)
    assert isinstance(agent.evaluator, SymmetricEvaluator) and agent.evaluator.symmetries == 16
    assert agent.act(State()) in State().legal_actions()
    with pytest.raises(ValueError, match="sym must be 1"):
        make("pretrained:sym=4")
    with pytest.raises(SpecError, match="must be from 1 to 16"):
        make("pretrained:sym=32")


def test_a_search_player_with_sym_evaluates_every_image_of_its_leaves() -> None:
    inner = HashEvaluator()
    agent = NeuralAgent(inner, sims=20, sym=8, seed=0, cache=0)
    agent.act(State().apply(14))
    assert inner.evaluated and all(size % 8 == 0 for size in inner.batch_sizes)
