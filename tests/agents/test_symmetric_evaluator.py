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
from orderchaos.envs.symmetry import transform_state

from helpers import HashEvaluator, positions

torch.manual_seed(3)
NETS = {role: PolicyValueNet(8, 1, 16, window_features=True).eval() for role in ("order", "chaos")}


def image_moves(state: State, g: int) -> dict[int, int]:
    """For each legal move ``a`` of ``state``, the move ``b`` of its image under symmetry
    ``g`` that means the same: image(state + a) == image(state) + b. Built from what the
    moves do, not from the permutation table the evaluator gathers with."""
    image = transform_state(state, g)
    by_result = {image.apply(b): b for b in image.legal_actions()}
    return {a: by_result[transform_state(state.apply(a), g)] for a in state.legal_actions()}


def test_image_moves_of_a_hand_worked_example() -> None:
    """X on b1 with the board turned a quarter (g=1) or mirrored, and the colours swapped."""
    state = State().apply(2 * 1)  # X on b1
    images = {g: transform_state(state, g) for g in range(16)}
    mirrored = next(g for g in range(8) if images[g].cell(4) == "X")  # b1 -> e1: left-right mirror
    assert image_moves(state, mirrored)[2 * 0 + 1] == 2 * 5 + 1  # O on a1 is O on f1 there
    swapped = mirrored + 8
    assert images[swapped].cell(4) == "O"  # the same mirror with X and O swapped
    assert image_moves(state, swapped)[2 * 0 + 1] == 2 * 5  # O on a1 is X on f1 there


@settings(max_examples=40, deadline=None)
@given(positions(terminal=False), st.integers(0, 15))
def test_averaging_over_all_sixteen_images_makes_the_network_equivariant(state: State, g: int) -> None:
    averaged = SymmetricEvaluator(NetworkEvaluator(NETS, compiled=False), 16)
    priors, values = averaged.evaluate([state, transform_state(state, g)])
    # the image's prior on the image of a move is the position's prior on the move
    moves = image_moves(state, g)
    legal = list(moves)
    np.testing.assert_allclose(priors[1][[moves[a] for a in legal]], priors[0][legal], atol=2e-6)
    assert values[1] == pytest.approx(values[0], abs=2e-6)
    mask = np.zeros(72, bool)
    mask[legal] = True
    assert priors[0].sum() == pytest.approx(1.0, abs=1e-5) and not priors[0][~mask].any()
    image_mask = np.zeros(72, bool)
    image_mask[list(moves.values())] = True
    assert not priors[1][~image_mask].any()


def test_the_plain_network_is_not_equivariant_so_the_check_above_can_fail() -> None:
    network = NetworkEvaluator(NETS, compiled=False)
    state = State().apply(14).apply(3)
    priors, _ = network.evaluate([state, transform_state(state, 1)])
    moves = image_moves(state, 1)
    legal = list(moves)
    assert not np.allclose(priors[1][[moves[a] for a in legal]], priors[0][legal], atol=1e-4)


@pytest.mark.parametrize("symmetries", [8, 16])
def test_the_images_average_with_moves_mapped_back(symmetries: int) -> None:
    """Eight board images, or sixteen with X and O swapped as well: each image's prior on
    the image of a move counts for the move, and the values are the images' mean."""
    inner = HashEvaluator()
    state = State().apply(14).apply(21)
    priors, values = SymmetricEvaluator(inner, symmetries).evaluate([state])
    images = [transform_state(state, g) for g in range(symmetries)]
    image_priors, image_values = HashEvaluator().evaluate(images)
    expected = np.zeros(72)
    for g in range(symmetries):
        for a, b in image_moves(state, g).items():
            expected[a] += image_priors[g][b] / symmetries
    np.testing.assert_allclose(priors[0], expected, atol=1e-6)
    assert values[0] == pytest.approx(float(np.mean(image_values)), abs=1e-6)
    assert inner.batch_sizes == [symmetries]  # one batch of the images
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
