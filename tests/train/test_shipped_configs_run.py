"""Every config in configs/ trains for one iteration: the config's own algorithm, search,
self-play options and schedule, with only the amount of work cut down (two games, tiny
networks unless the config starts from existing weights, CPU, no Ray)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from orderchaos.agents.policy_files import latest_checkpoint, load_checkpoint
from orderchaos.train.alphazero import AlphaZeroTrainer, MistakeSettings
from orderchaos.train.config import load_config
from orderchaos.train.factory import make_trainer

from helpers import REPO

CONFIGS = sorted((REPO / "configs").glob("*.yaml"))

TINY_WORK = [
    "device=cpu", "run.iterations=1", "run.progress=false", "run.backend=local", "run.evaluation_budget=0",
    "selfplay.games=2", "selfplay.warmup_games=2", "selfplay.warmup_updates=1", "selfplay.imitation_games=1",
    "selfplay.solver_process=false", "selfplay.solver_node_limit=2000", "mcts.simulations=4",
    "optim.batch_size=16", "optim.updates_per_iteration=1", "replay.min_positions=1", "eval.enabled=false",
    "mistakes.games=1", "ppo.games=2", "ppo.minibatch=16", "ppo.epochs=1",
]
"""What each config keeps of its own: everything but the size of the work."""


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_every_shipped_config_trains_an_iteration(path: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(AlphaZeroTrainer, "mistake_settings", MistakeSettings(node_limit=2000))
    shipped = load_config(path)
    narrow = [] if shipped.network.init_from else ["network.channels=8", "network.blocks=1"]
    config = load_config(path, [*TINY_WORK, *narrow])
    assert config.algorithm == shipped.algorithm
    assert config.mcts == dataclasses.replace(shipped.mcts, simulations=4)
    trainer = make_trainer(config, tmp_path / "run")
    try:
        trainer.fit()
    finally:
        trainer.close()
    _, meta, state = load_checkpoint(latest_checkpoint(tmp_path / "run"))
    assert meta["step"] == 1 and state["iteration"] == 1
