"""Policy files (agents/policy_files.py): saving, loading, refusals, and policy
directories as agent specs sharing one evaluator."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors import safe_open

from orderchaos.agents.network import PolicyValueNet
from orderchaos.agents.network_agent import (
    load_evaluator,
    run_dir_agent,
    shared_evaluator,
)
from orderchaos.agents import policy_files
from orderchaos.agents.policy_files import (
    CheckpointError,
    export_policy,
    find_policy_dir,
    latest_checkpoint,
    load_checkpoint,
    load_policy_dir,
    pretrained_dir,
    save_checkpoint,
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
    with pytest.raises(CheckpointError) as raised:
        load_policy_dir(tmp_path)
    assert str(raised.value) == (f"policy in {str(tmp_path)!r} was trained on observation encoding version "
                                 f"{OBS_VERSION + 1}, but this code uses version {OBS_VERSION}; it cannot be loaded")
    meta["obs_version"] = OBS_VERSION
    meta["network"]["channels"] = 16
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="do not fit"):
        load_policy_dir(tmp_path)
    (tmp_path / "chaos.safetensors").unlink()
    with pytest.raises(CheckpointError):
        load_policy_dir(tmp_path)
    with pytest.raises(CheckpointError) as raised:
        find_policy_dir(tmp_path / "nowhere")
    assert str(raised.value) == (f"{str(tmp_path / 'nowhere')!r} holds no policy: expected meta.json + "
                                 "order/chaos.safetensors there, or a run directory with checkpoints/latest")


def test_the_written_files_name_their_format(tmp_path: Path) -> None:
    save_policy_dir(tmp_path, tiny_nets())
    assert json.loads((tmp_path / "meta.json").read_text())["format"] == "orderchaos-policy"
    with safe_open(tmp_path / "order.safetensors", "pt") as weights:
        assert weights.metadata() == {"format": "orderchaos-policy", "channels": "8", "blocks": "1",
                                      "value_hidden": "16"}


def test_saving_needs_both_roles(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as raised:
        save_policy_dir(tmp_path, {"order": tiny_nets()["order"]})
    assert str(raised.value) == "save_policy_dir needs networks for ('order', 'chaos'), missing ['chaos']"
    assert os.listdir(tmp_path) == []


def test_export_copies_the_latest_checkpoints_policy_without_the_trainer_state(tmp_path: Path) -> None:
    nets = tiny_nets(seed=2)
    save_checkpoint(tmp_path / "run", 3, nets, {"note": "x"}, trainer_state={"iteration": 3})
    dest = export_policy(tmp_path / "run", tmp_path / "exported")
    assert dest == tmp_path / "exported"
    assert sorted(os.listdir(dest)) == ["chaos.safetensors", "meta.json", "order.safetensors"]
    loaded, meta = load_policy_dir(dest)
    assert meta["step"] == 3 and meta["note"] == "x"
    assert sorted(meta["files"]) == ["chaos.safetensors", "order.safetensors"]
    for key, value in nets["chaos"].state_dict().items():
        assert torch.equal(value, loaded["chaos"].state_dict()[key]), key


def test_the_pretrained_policy_lives_in_the_package() -> None:
    assert pretrained_dir().parts[-3:] == ("agents", "data", "pretrained")
    assert (pretrained_dir() / "meta.json").is_file()


def test_pruning_keeps_the_latest_checkpoint_and_removes_what_a_crashed_save_left(tmp_path: Path) -> None:
    run = tmp_path / "run"
    for step in (1, 2, 3):
        save_checkpoint(run, step, tiny_nets(), {})
    root = run / "checkpoints"
    assert sorted(os.listdir(root)) == ["latest", "step_0000002", "step_0000003"]
    # A save killed midway leaves its temp directory, or the old copy of a step it re-saved.
    tempfile.mkdtemp(dir=root, prefix=".step_0000004.")
    tempfile.mkdtemp(dir=root, prefix=".stale.step_0000002.")
    os.symlink("step_0000003", root / ".latest.99999.tmp")
    save_checkpoint(run, 1, tiny_nets(), {})  # a resumed run saving an older step again
    assert sorted(os.listdir(root)) == ["latest", "step_0000001", "step_0000002", "step_0000003"]
    assert latest_checkpoint(run) == root / "step_0000001"


def test_a_checkpoint_is_assembled_in_a_hidden_directory_named_after_its_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assembled: list[str] = []
    real = policy_files.save_policy_dir

    def save(path: Path, *args: object) -> None:
        assembled.append(path.name)
        real(path, *args)

    monkeypatch.setattr(policy_files, "save_policy_dir", save)
    save_checkpoint(tmp_path, 7, tiny_nets(), {})
    assert len(assembled) == 1 and assembled[0].startswith(".step_0000007.")
    assert sorted(os.listdir(tmp_path / "checkpoints")) == ["latest", "step_0000007"]


def test_an_unreadable_trainer_state_without_checksums_is_refused_naming_it(tmp_path: Path) -> None:
    checkpoint = save_checkpoint(tmp_path, 1, tiny_nets(), {}, trainer_state={"iteration": 1})
    meta = json.loads((checkpoint / "meta.json").read_text())
    del meta["files"]  # as in checkpoints written before checksums existed
    (checkpoint / "meta.json").write_text(json.dumps(meta))
    (checkpoint / "trainer_state.pt").write_bytes(b"not a pickle")
    with pytest.raises(CheckpointError) as raised:
        load_checkpoint(checkpoint)
    assert str(raised.value).startswith(f"{checkpoint / 'trainer_state.pt'} is damaged: ")


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
