"""The policy-value network, the two-network evaluator, the network player and policy files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from orderchaos.agents.base import Evaluator
from orderchaos.agents.network import PolicyValueNet, WindowFeatures, masked_softmax
from orderchaos.agents.network_agent import (
    NetworkEvaluator,
    NeuralAgent,
    load_evaluator,
    run_dir_agent,
    sample_from,
    shared_evaluator,
)
from orderchaos.agents.policy_files import (
    CheckpointError,
    find_policy_dir,
    load_policy_dir,
    save_policy_dir,
)
from orderchaos.agents.registry import make
from orderchaos.files import atomic_write_bytes
from orderchaos.envs.encoding import OBS_VERSION, action_mask, encode_states
from orderchaos.envs.rules import ACTIONS, CELLS, WINDOW_CELLS, State
from orderchaos.envs.symmetry import NUM_SYMMETRIES, transform_planes, transform_state

torch.set_num_threads(1)  # the test machine is shared; more threads only contend


def tiny_nets(seed: int = 0) -> dict[str, PolicyValueNet]:
    torch.manual_seed(seed)
    return {role: PolicyValueNet(8, 1, 16).eval() for role in ("order", "chaos")}


@st.composite
def positions(draw: st.DrawFn, max_stones: int = 35) -> State:
    """A non-terminal position reached by legal play (possibly only one empty cell left)."""
    order = draw(st.permutations(range(CELLS)))
    symbols = draw(st.lists(st.integers(0, 1), min_size=CELLS, max_size=CELLS))
    count = draw(st.integers(0, max_stones))
    state = State()
    for cell, symbol in zip(order[:count], symbols):
        nxt = state.apply_unchecked(2 * cell + symbol)
        if nxt.is_terminal:
            break
        state = nxt
    return state


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
@given(state=positions())
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
@given(states=st.lists(positions(), min_size=1, max_size=6))
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
@given(state=positions())
def test_window_features_match_a_direct_count(state: State) -> None:
    planes = torch.from_numpy(encode_states([state])).float()
    features = WindowFeatures()(planes)[0].numpy()
    assert np.allclose(features, window_features_by_hand(state))


@settings(max_examples=20, deadline=None)
@given(state=positions(), g=st.integers(0, NUM_SYMMETRIES - 1))
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


def test_window_feature_net_round_trips_and_older_metadata_loads(tmp_path: Path) -> None:
    torch.manual_seed(3)
    nets = {role: PolicyValueNet(8, 1, 16, window_features=True).eval() for role in ("order", "chaos")}
    save_policy_dir(tmp_path, nets)
    loaded, meta = load_policy_dir(tmp_path)
    assert meta["network"] == {"channels": 8, "blocks": 1, "value_hidden": 16, "window_features": True}
    planes = torch.from_numpy(encode_states([State(), State().apply(14)])).float()
    with torch.no_grad():
        for role in nets:
            assert torch.allclose(nets[role](planes)[0], loaded[role](planes)[0])
    # A policy directory written before the option existed has no window_features key.
    save_policy_dir(tmp_path / "plain", tiny_nets())
    loaded, meta = load_policy_dir(tmp_path / "plain")
    assert "window_features" not in meta["network"] and loaded["order"].window_features is None
    with pytest.raises(ValueError, match="window_features"):
        PolicyValueNet(8, 1, 16, window_features=1)


def test_sample_from_greedy_ties_and_temperature() -> None:
    rng = np.random.default_rng(0)
    p = np.zeros(ACTIONS)
    p[[4, 9]] = 0.5
    assert {sample_from(p, 0.0, rng) for _ in range(30)} == {4, 9}
    p[9] = 0.0
    p[4] = 1.0
    assert sample_from(p, 2.0, rng) == 4


def test_policy_dir_round_trip(tmp_path: Path) -> None:
    nets = tiny_nets(seed=5)
    save_policy_dir(tmp_path, nets, {"step": 12, "note": "x"})
    loaded, meta = load_policy_dir(tmp_path)
    for role in nets:
        for key, value in nets[role].state_dict().items():
            assert torch.equal(value, loaded[role].state_dict()[key]), key
    assert meta["obs_version"] == OBS_VERSION and meta["step"] == 12
    assert meta["network"] == {"channels": 8, "blocks": 1, "value_hidden": 16}
    assert sorted(os.listdir(tmp_path)) == ["chaos.safetensors", "meta.json", "order.safetensors"]


def test_loading_refuses_other_obs_version_and_missing_files(tmp_path: Path) -> None:
    save_policy_dir(tmp_path, tiny_nets())
    meta = json.loads((tmp_path / "meta.json").read_text())
    meta["obs_version"] = OBS_VERSION + 1
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="observation encoding version"):
        load_policy_dir(tmp_path)
    meta["obs_version"] = OBS_VERSION
    meta["network"]["channels"] = 16
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="do not fit"):
        load_policy_dir(tmp_path)
    (tmp_path / "chaos.safetensors").unlink()
    with pytest.raises(CheckpointError):
        load_policy_dir(tmp_path)
    with pytest.raises(CheckpointError, match="holds no policy"):
        find_policy_dir(tmp_path / "nowhere")


def test_atomic_write_replaces_and_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "f.bin"
    atomic_write_bytes(target, b"one")
    atomic_write_bytes(target, b"two")
    assert target.read_bytes() == b"two" and os.listdir(tmp_path) == ["f.bin"]


def test_policy_dir_is_an_agent_spec(tmp_path: Path) -> None:
    save_policy_dir(tmp_path, tiny_nets())
    agent = make(str(tmp_path))
    assert agent.act(State()) in range(ACTIONS)
    searching = run_dir_agent(tmp_path, sims=4, temp=1.0, seed=1)
    assert searching.act(State()) in range(ACTIONS)


def test_spec_agents_share_one_evaluator_until_the_weights_change(tmp_path: Path) -> None:
    save_policy_dir(tmp_path, tiny_nets(seed=0))
    first, second = make(str(tmp_path), seed=1), make(str(tmp_path), seed=2)
    assert first.evaluator is second.evaluator is shared_evaluator(tmp_path)
    private = load_evaluator(tmp_path)
    assert private is not first.evaluator
    states = [State(), State().apply(7)]
    for got, want in zip(first.evaluator.evaluate(states), private.evaluate(states)):
        np.testing.assert_array_equal(got, want)
    # New weights in the same directory are loaded afresh, not served from the cache.
    save_policy_dir(tmp_path, tiny_nets(seed=5))
    reloaded = make(str(tmp_path), seed=1)
    assert reloaded.evaluator is not first.evaluator
    for got, want in zip(reloaded.evaluator.evaluate(states), load_evaluator(tmp_path).evaluate(states)):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(AssertionError):
        np.testing.assert_array_equal(reloaded.evaluator.evaluate(states)[0], private.evaluate(states)[0])
