"""The learning-rate schedule and the time limit behind the shipped configs/alphazero.yaml:
cosine over the run's progress (by iterations, or by time when the limit comes first), and a
run that stops at its time limit with a final checkpoint."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from orderchaos.agents.policy_files import latest_checkpoint, load_checkpoint
from orderchaos.train.config import load_config
from orderchaos.train.factory import make_trainer

from helpers import REPO

SHIPPED = REPO / "configs" / "alphazero.yaml"
# Only the size of the work changes; the schedule, iterations and time limit are the shipped ones.
SMALL = ["device=cpu", "run.progress=false", "network.channels=8", "network.blocks=1", "selfplay.games=2",
         "selfplay.warmup_games=2", "selfplay.warmup_updates=1", "selfplay.imitation_games=1",
         "selfplay.solver_process=false", "selfplay.solver_node_limit=2000", "mcts.simulations=4",
         "optim.updates_per_iteration=1", "optim.batch_size=16", "replay.min_positions=1", "eval.enabled=false"]


@pytest.fixture
def trainer(tmp_path: Path):
    config = load_config(SHIPPED, SMALL)
    assert config.optim.lr_schedule == "cosine" and config.run.time_limit_minutes > 0
    trainer = make_trainer(config, tmp_path / "run")
    yield trainer
    trainer.close()


def cosine(base: float, frac: float) -> float:
    return base * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * frac)))


def test_the_learning_rate_follows_a_cosine_by_iterations_or_by_time(trainer) -> None:
    config = trainer.config
    base, iterations, limit = config.optim.lr, config.run.iterations, config.run.time_limit_minutes * 60
    assert trainer.learning_rate() == pytest.approx(base)
    for iteration, elapsed, frac in [
        (iterations // 4, 0.0, 0.25),                    # iterations lead
        (iterations // 2, 0.0, 0.5),
        (iterations // 10, 0.75 * limit, 0.75),          # the clock leads
        (iterations, 0.1 * limit, 1.0),
        (iterations // 10, 2 * limit, 1.0),              # past the limit: the floor, 5% of base
    ]:
        trainer.iteration, trainer.elapsed = iteration, elapsed
        assert trainer.learning_rate() == pytest.approx(cosine(base, frac)), (iteration, elapsed)
    assert trainer.learning_rate() == pytest.approx(0.05 * base)
    trainer.iteration, trainer.elapsed = iterations // 2, 0.0
    lr = trainer.set_learning_rate()
    assert all(g["lr"] == lr for opt in trainer.optimizers.values() for g in opt.param_groups)


def test_a_run_stops_at_its_time_limit_with_a_final_checkpoint(trainer) -> None:
    limit = trainer.config.run.time_limit_minutes * 60
    trainer.elapsed = limit - 1e-3  # as if resumed just before the shipped limit
    trainer.fit()
    assert trainer.iteration == 1 < trainer.config.run.iterations  # one more, then the clock stopped it
    assert trainer.elapsed >= limit
    _, meta, state = load_checkpoint(latest_checkpoint(trainer.run_dir))
    assert meta["step"] == 1 and state["iteration"] == 1
    assert trainer.learning_rate() == pytest.approx(0.05 * trainer.config.optim.lr)


SELFPLAY = REPO / "configs" / "alphazero_selfplay.yaml"


def test_a_run_stops_at_its_evaluation_budget_and_resumes_with_the_count(tmp_path: Path) -> None:
    small = [o for o in SMALL if not o.startswith(("selfplay.warmup", "selfplay.imitation"))]
    config = load_config(SELFPLAY, [*small, "run.evaluation_budget=1000"])
    assert config.run.evaluation_budget and config.run.iterations > 1000
    trainer = make_trainer(config, tmp_path / "run")
    trainer.fit()
    assert trainer.network_evaluations >= 1000
    assert trainer.network_evaluations == trainer.evaluator.positions_evaluated  # counted once
    assert trainer.iteration < config.run.iterations
    # the learning rate followed the budget down to its floor
    assert trainer.learning_rate() == pytest.approx(0.05 * config.optim.lr)
    _, _, state = load_checkpoint(latest_checkpoint(trainer.run_dir))
    assert state["network_evaluations"] == trainer.network_evaluations
    # a resumed run with a larger budget goes on from the count it saved
    more = load_config(SELFPLAY, [*small, "run.evaluation_budget=1500"])
    resumed = make_trainer(more, tmp_path / "run", resume=True)
    assert resumed.progress() == pytest.approx(trainer.network_evaluations / 1500)
    resumed.fit()
    assert 1500 <= resumed.network_evaluations and resumed.iteration > trainer.iteration
