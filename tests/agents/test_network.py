"""The policy-value network, the two-network evaluator and the network player."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from orderchaos.agents.base import Evaluator
from orderchaos.agents import network as network_module
from orderchaos.agents.network import (
    InferenceForward,
    PolicyValueNet,
    WindowFeatures,
    deepened,
    masked_softmax,
    trace_for_inference,
)
from orderchaos.agents.network_agent import (
    NetworkEvaluator,
    NeuralAgent,
    sample_from,
)
from orderchaos.envs.encoding import action_mask, encode_states
from orderchaos.envs.rules import ACTIONS, CELLS, WINDOW_CELLS, State
from orderchaos.envs.symmetry import NUM_SYMMETRIES, transform_planes, transform_state

from helpers import positions, random_game, tiny_nets


def test_deepened_network_plays_as_its_source_until_trained() -> None:
    torch.manual_seed(3)
    source = PolicyValueNet(8, 2, 16, window_features=True)
    for module in source.modules():  # batch norms that are not the identity, as after training
        if isinstance(module, torch.nn.BatchNorm2d):
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 2.0)
            module.weight.data.uniform_(0.5, 1.5)
            module.bias.data.uniform_(-0.3, 0.3)
    deeper = deepened(source, 5)
    assert deeper.blocks == 5 and deeper.architecture() == {**source.architecture(), "blocks": 5}
    states = [state for seed in range(4) for state in random_game(seed)]
    planes = torch.as_tensor(encode_states(states))
    for train_mode in (False, True):
        source.train(train_mode)
        deeper.train(train_mode)
        for got, want in zip(deeper(planes), source(planes)):
            assert torch.allclose(got, want, atol=1e-6)
    # The added blocks can learn: the gradient reaches their zeroed scale.
    logits, values = deeper(planes)
    (logits.square().mean() + values.sum()).backward()
    assert deeper.trunk[4].bn2.weight.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="fewer"):
        deepened(source, 1)


def test_forward_shapes_and_value_range() -> None:
    net = tiny_nets()["order"]
    logits, values = net(torch.zeros(5, 3, 6, 6))
    assert logits.shape == (5, ACTIONS) and values.shape == (5,)
    assert torch.all(values.abs() <= 1)


def test_policy_logit_layout_is_two_cell_plus_symbol() -> None:
    net = PolicyValueNet(4, 0, 8).eval()
    with torch.no_grad():
        net.policy_conv.weight.zero_()
        net.policy_conv.bias[:] = torch.tensor([0.0, 3.0])  # channel 1 = symbol O
    logits, _ = net(torch.zeros(1, 3, 6, 6))
    assert torch.allclose(logits[0, 1::2], torch.full((CELLS,), 3.0))
    assert torch.allclose(logits[0, 0::2], torch.zeros(CELLS))


@settings(max_examples=40, deadline=None)
@given(state=positions(terminal=False))
def test_masked_softmax_is_zero_on_illegal_actions(state: State) -> None:
    mask = torch.from_numpy(action_mask(state)).unsqueeze(0)
    logits = torch.randn(1, ACTIONS) * 10
    probs = masked_softmax(logits, mask)[0]
    assert torch.all(probs[mask[0] == 0] == 0)
    assert float(probs.sum()) == pytest.approx(1.0, abs=1e-5)


def test_masked_softmax_with_one_legal_action_and_with_none() -> None:
    mask = torch.zeros(2, ACTIONS, dtype=torch.int8)
    mask[0, 17] = 1
    probs = masked_softmax(torch.randn(2, ACTIONS), mask)
    assert probs[0, 17] == 1.0 and probs[0].sum() == 1.0
    assert torch.all(probs[1] == 0) and not torch.isnan(probs).any()


@settings(max_examples=12, deadline=None)
@given(states=st.lists(positions(terminal=False), min_size=1, max_size=6))
def test_evaluator_respects_masks_and_picks_the_net_of_the_mover(states: list[State]) -> None:
    nets = tiny_nets()
    evaluator = NetworkEvaluator(nets)
    assert isinstance(evaluator, Evaluator)
    priors, values = evaluator.evaluate(states)
    assert priors.shape == (len(states), ACTIONS) and priors.dtype == np.float32
    assert values.shape == (len(states),) and values.dtype == np.float32
    for state, p, v in zip(states, priors, values):
        assert np.all(p[action_mask(state) == 0] == 0)
        assert p.sum() == pytest.approx(1.0, abs=1e-5)
        net = nets[state.to_play]
        with torch.no_grad():
            _, expected = net(torch.from_numpy(encode_states([state])))
        assert v == pytest.approx(float(expected[0]), abs=1e-5)


@pytest.mark.parametrize("precision, logit_tolerance, value_tolerance", [("float32", 1e-4, 1e-5), ("bfloat16", 0.05, 0.05)])
@settings(max_examples=8, deadline=None)
@given(states=st.lists(positions(terminal=False), min_size=2, max_size=40), seed=st.integers(0, 2**16))
def test_compiled_forward_matches_the_module_to_its_precision(
    precision: str, logit_tolerance: float, value_tolerance: float, states: list[State], seed: int
) -> None:
    torch.manual_seed(seed)
    net = PolicyValueNet(8, 2, 16, window_features=True).eval()
    planes = torch.from_numpy(encode_states(states))
    forward = InferenceForward(net, precision)
    with torch.inference_mode():
        for batch in (planes, planes[:1]):  # a batch and a single position take different modules
            logits, values = net(batch)
            compiled_logits, compiled_values = forward(batch)
            assert compiled_logits.dtype == compiled_values.dtype == torch.float32
            scale = max(1.0, float(logits.abs().max()))
            assert torch.allclose(compiled_logits, logits, atol=logit_tolerance * scale)
            assert torch.allclose(compiled_values, values, atol=value_tolerance)
        # bfloat16 really ran in bfloat16: further from the module than float32 rounding
        gap = float((forward(planes)[0] - net(planes)[0]).abs().max())
        assert (gap > 1e-4) == (precision == "bfloat16")
    assert forward.compilations == 1


def test_compiled_evaluator_follows_training_steps() -> None:
    nets = {role: PolicyValueNet(8, 1, 16, window_features=True) for role in ("order", "chaos")}
    evaluator = NetworkEvaluator(nets)
    plain = NetworkEvaluator(nets, compiled=False)
    states = [State(), State().apply(14), State().apply(14).apply(21)]
    optimiser = torch.optim.SGD(nets["order"].parameters(), lr=0.5)
    before, _ = evaluator.evaluate(states[:1])
    for _ in range(2):  # a training step in train mode changes weights and batch-norm statistics
        nets["order"].train()
        logits, values = nets["order"](torch.from_numpy(encode_states(states)))
        (logits.pow(2).mean() + values.sum()).backward()
        optimiser.step()
        optimiser.zero_grad()
        priors, values = evaluator.evaluate(states)
        expected_priors, expected_values = plain.evaluate(states)
        np.testing.assert_allclose(priors, expected_priors, atol=1e-5)
        np.testing.assert_allclose(values, expected_values, atol=1e-5)
    assert not np.allclose(priors[:1], before, atol=1e-5)
    nets["chaos"].load_state_dict(PolicyValueNet(8, 1, 16, window_features=True).state_dict())
    np.testing.assert_allclose(evaluator.evaluate(states)[0], plain.evaluate(states)[0], atol=1e-5)
    assert evaluator.compiled and not plain.compiled
    assert evaluator._forward["order"].compilations == 3
    assert evaluator._forward["chaos"].compilations == 2  # first use, then new weights loaded


def test_bfloat16_evaluator_follows_training_steps_compiled_or_not() -> None:
    torch.manual_seed(5)
    nets = {role: PolicyValueNet(8, 1, 16, window_features=True) for role in ("order", "chaos")}
    exact = NetworkEvaluator(nets, compiled=False)
    low = {compiled: NetworkEvaluator(nets, compiled=compiled, precision="bfloat16") for compiled in (True, False)}
    states = [State(), State().apply(14), State().apply(14).apply(21), State().apply(0).apply(3).apply(9)]
    masks = np.stack([action_mask(s) for s in states]).astype(bool)
    optimiser = torch.optim.SGD(nets["order"].parameters(), lr=0.1)
    for step in range(2):
        expected_priors, expected_values = exact.evaluate(states)
        for evaluator in low.values():
            priors, values = evaluator.evaluate(states)
            assert np.all(priors[~masks] == 0) and np.allclose(priors.sum(axis=1), 1, atol=1e-5)
            np.testing.assert_allclose(priors, expected_priors, atol=1e-3)
            np.testing.assert_allclose(values, expected_values, atol=0.01)
        if step == 0:  # a training step changes the weights; the bfloat16 copy must follow
            nets["order"].train()
            logits, values = nets["order"](torch.from_numpy(encode_states(states)))
            (-logits[:, 0].mean() - values.mean()).backward()
            optimiser.step()
            optimiser.zero_grad()
            moved = exact.evaluate(states)
            assert np.abs(moved[0] - expected_priors).max() > 5e-3  # well beyond the tolerances
            assert np.abs(moved[1] - expected_values).max() > 0.1
    assert low[True]._forward["order"].compilations == 2
    with pytest.raises(ValueError, match="float32.*bfloat16"):
        NetworkEvaluator(nets, precision="half")


def test_compilation_falls_back_to_the_module_when_tracing_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise RuntimeError("tracing is not available")

    monkeypatch.setattr(network_module.torch.jit, "trace", refuse)
    net = PolicyValueNet(4, 0, 8).train()
    planes = torch.zeros(2, 3, 6, 6)
    assert trace_for_inference(net, planes) is None
    assert net.training  # its mode is restored
    net.eval()
    forward = InferenceForward(net)
    with torch.inference_mode():
        for batch in (planes, planes[:1]):
            assert all(torch.equal(a, b) for a, b in zip(forward(batch), net(batch)))


def test_neural_agent_greedy_and_sampling_play_legal_moves() -> None:
    evaluator = NetworkEvaluator(tiny_nets())
    state = State().apply(0).apply(3)
    greedy = NeuralAgent(evaluator, temp=0.0)
    priors = greedy.policy(state)
    assert greedy.act(state) == int(np.argmax(priors))
    sampler = NeuralAgent(evaluator, temp=1.0, seed=3)
    moves = {sampler.act(state) for _ in range(20)}
    assert moves <= set(state.legal_actions()) and len(moves) > 1


def test_neural_agent_is_reproducible_per_seed() -> None:
    evaluator = NetworkEvaluator(tiny_nets())
    state = State()
    a = NeuralAgent(evaluator, temp=1.0, seed=11)
    b = NeuralAgent(evaluator, temp=1.0, seed=11)
    assert [a.act(state) for _ in range(8)] == [b.act(state) for _ in range(8)]


def test_neural_agent_with_search_plays_legal_and_finds_a_win_in_one() -> None:
    # Order to move with XXXX. on the first row: X on cell 4 wins at once.
    state = State.from_string("XXXX.. OO.... ...... ...... ...... ......")
    assert state.to_play == "order"
    agent = NeuralAgent(NetworkEvaluator(tiny_nets()), sims=16, seed=0)
    assert agent.act(state) == 2 * 4
    policy = agent.policy(state)
    assert policy.shape == (ACTIONS,) and np.all(policy[action_mask(state) == 0] == 0)


def test_bad_agent_arguments_are_refused() -> None:
    evaluator = NetworkEvaluator(tiny_nets())
    with pytest.raises(ValueError, match="sims"):
        NeuralAgent(evaluator, sims=-1)
    with pytest.raises(ValueError, match="temp"):
        NeuralAgent(evaluator, temp=-0.5)
    with pytest.raises(ValueError, match="missing"):
        NetworkEvaluator({"order": tiny_nets()["order"]})
    with pytest.raises(ValueError, match="channels"):
        PolicyValueNet(0, 1)


def window_features_by_hand(state: State) -> np.ndarray:
    """The WindowFeatures planes counted cell by cell straight from WINDOW_CELLS."""
    out = np.zeros((9, CELLS))
    for cells in WINDOW_CELLS:
        xs = sum(state.x >> c & 1 for c in cells)
        os_ = sum(state.o >> c & 1 for c in cells)
        if xs == 0 and os_ == 0:
            feature = 8
        elif os_ == 0 and xs <= 4:
            feature = xs - 1
        elif xs == 0 and os_ <= 4:
            feature = 3 + os_
        else:
            continue  # dead (both symbols) or already a five
        for c in cells:
            out[feature, c] += 0.25
    return out.reshape(9, 6, 6)


@settings(max_examples=40, deadline=None)
@given(state=positions(terminal=False))
def test_window_features_match_a_direct_count(state: State) -> None:
    planes = torch.from_numpy(encode_states([state])).float()
    features = WindowFeatures()(planes)[0].numpy()
    assert np.allclose(features, window_features_by_hand(state))


@settings(max_examples=20, deadline=None)
@given(state=positions(terminal=False), g=st.integers(0, NUM_SYMMETRIES - 1))
def test_window_features_follow_the_symmetries(state: State, g: int) -> None:
    """Features of a board's image are the image of its features (an X/O swap also swaps
    the X and O feature groups), so symmetry augmentation stays consistent."""
    wf = WindowFeatures()
    here = wf(torch.from_numpy(encode_states([state])).float())[0].numpy()
    there = wf(torch.from_numpy(encode_states([transform_state(state, g)])).float())[0].numpy()
    moved = transform_planes(here, g % 8)  # board transform only, on all 9 planes
    if g >= 8:
        moved = moved[[4, 5, 6, 7, 0, 1, 2, 3, 8]]
    assert np.allclose(there, moved)


def test_sample_from_greedy_ties_and_temperature() -> None:
    rng = np.random.default_rng(0)
    p = np.zeros(ACTIONS)
    p[[4, 9]] = 0.5
    assert {sample_from(p, 0.0, rng) for _ in range(30)} == {4, 9}
    p[9] = 0.0
    p[4] = 1.0
    assert sample_from(p, 2.0, rng) == 4
