"""Pick the trainer for a config: the one place that knows every algorithm."""

from __future__ import annotations

from pathlib import Path

from orderchaos.train.alphazero import AlphaZeroTrainer
from orderchaos.train.config import TrainConfig
from orderchaos.train.ppo import PPOTrainer
from orderchaos.train.trainer import Trainer

TRAINERS: dict[str, type[Trainer]] = {"alphazero": AlphaZeroTrainer, "ppo": PPOTrainer}


def make_trainer(config: TrainConfig, run_dir: str | Path, resume: bool = False) -> Trainer:
    """The trainer of ``config.algorithm`` for ``run_dir``: a new run, or (``resume``) a
    continuation from the run's latest checkpoint."""
    cls = TRAINERS.get(config.algorithm)
    if cls is None:
        raise ValueError(f"unknown algorithm {config.algorithm!r}; accepted: {', '.join(TRAINERS)}")
    if config.run.backend == "ray":
        cls = _ray_trainer(config)
    return cls.resume(config, run_dir) if resume else cls.create(config, run_dir)


def _ray_trainer(config: TrainConfig) -> type[Trainer]:
    """The Ray backend's trainer (imported only here: ``ray`` is an optional extra)."""
    if config.algorithm != "alphazero":
        raise ValueError(f"run.backend=ray supports algorithm alphazero, not {config.algorithm!r}")
    try:
        from orderchaos.train.ray_backend import RayAlphaZeroTrainer
    except ImportError as exc:
        raise ValueError(
            f"run.backend=ray needs ray ({exc}); install it with pip install 'orderchaos[ray]'"
        ) from None
    return RayAlphaZeroTrainer
