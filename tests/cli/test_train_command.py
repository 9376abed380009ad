"""orderchaos train: smoke runs of both algorithms through the CLI, the run is an agent,
refusals of bad configs and of overwriting a run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from orderchaos.agents.network_agent import NeuralAgent, load_evaluator
from orderchaos.agents.registry import make
from orderchaos.cli.main import main
from orderchaos.envs.encoding import OBS_VERSION
from orderchaos.envs.rules import State

from helpers import SMOKE, self_play_moves


def run_cli(*argv: str) -> int:
    return main(["train", *argv])


def assert_run_dir(run_dir: Path, algorithm: str, step: int) -> None:
    assert (run_dir / "config.yaml").is_file()
    assert list(run_dir.glob("events.out.tfevents*"))
    latest = run_dir / "checkpoints" / "latest"
    for name in ("order.safetensors", "chaos.safetensors", "meta.json", "trainer_state.pt"):
        assert (latest / name).is_file(), name
    meta = json.loads((latest / "meta.json").read_text())
    assert meta["algorithm"] == algorithm and meta["step"] == step
    assert meta["obs_version"] == OBS_VERSION and "git_commit" in meta
    assert meta["config"]["algorithm"] == algorithm


@pytest.mark.parametrize("algorithm", ["alphazero", "ppo"])
def test_smoke_config_trains_end_to_end_and_the_run_is_an_agent(tmp_path: Path, algorithm: str, capsys) -> None:
    run_dir = tmp_path / algorithm
    assert run_cli(SMOKE, f"algorithm={algorithm}", "--run-dir", str(run_dir)) == 0
    assert_run_dir(run_dir, algorithm, step=3)
    out = capsys.readouterr().out
    assert "eval/order_vs_random_winrate" in out
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    for tag in ("order/losses/policy", "chaos/losses/value", "charts/games_per_sec", "charts/SPS",
                "eval/order_vs_random_winrate", "eval/chaos_vs_random_winrate",
                "eval/positions_accuracy", "eval/accuracy_all"):
        assert tag in tags, tag
    # Optimal-move accuracy per stage of the game (the smoke config: 10 positions per set),
    # overall and by side to move; the first 10 positions of every set hold both sides.
    for stage in ("12_18", "19_22", "23_26", "27_30"):
        for suffix in ("", "_order", "_chaos"):
            assert f"eval/accuracy_{stage}{suffix}" in tags, stage + suffix
    (first,) = events.Scalars("eval/positions_accuracy")
    assert first.value == events.Scalars("eval/accuracy_12_18")[0].value  # the 12-18 set, as before
    assert "hyperparameters" in str(events.Tags())
    # The run as an agent is its newest checkpoint (step 3 of the 2 kept), with the spec's
    # parameters: it plays as an agent loaded straight from that checkpoint's files.
    newest, older = (load_evaluator(run_dir / "checkpoints" / f"step_{s:07d}") for s in (3, 2))
    assert self_play_moves(str(run_dir)) == self_play_moves(NeuralAgent(newest))
    assert self_play_moves(f"{run_dir}:sims=4,seed=1") == self_play_moves(NeuralAgent(newest, sims=4, seed=1))
    states = [State(), State().apply(14)]
    assert np.array_equal(make(str(run_dir)).evaluator.evaluate(states)[0], newest.evaluate(states)[0])
    assert not np.array_equal(newest.evaluate(states)[0], older.evaluate(states)[0])


def test_cli_refuses_bad_config_naming_the_key(tmp_path: Path, capsys) -> None:
    assert run_cli(SMOKE, "optim.lrr=1", "--run-dir", str(tmp_path / "x")) == 2
    assert "optim.lrr" in capsys.readouterr().err
    assert run_cli(SMOKE, "mcts.simulations=-3", "--run-dir", str(tmp_path / "x")) == 2
    assert "mcts.simulations" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_cli_refuses_to_overwrite_a_run(tmp_path: Path, capsys) -> None:
    run_dir = tmp_path / "r"
    args = (SMOKE, "run.iterations=1", "eval.enabled=false", "--run-dir", str(run_dir))
    assert run_cli(*args) == 0
    assert run_cli(*args) == 2
    assert "--resume" in capsys.readouterr().err
