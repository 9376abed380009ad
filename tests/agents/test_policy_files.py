"""Policy files (agents/policy_files.py): saving, loading, refusals, and policy
directories as agent specs sharing one evaluator."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from orderchaos.agents.network import PolicyValueNet
from orderchaos.agents.network_agent import (
    load_evaluator,
    run_dir_agent,
    shared_evaluator,
)
from orderchaos.agents.policy_files import (
    CheckpointError,
    find_policy_dir,
    load_policy_dir,
    save_policy_dir,
)
from orderchaos.agents.registry import make
from orderchaos.envs.encoding import OBS_VERSION, encode_states
from orderchaos.envs.rules import ACTIONS, State
from orderchaos.files import atomic_write_bytes

from helpers import tiny_nets


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
