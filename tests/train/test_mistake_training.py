"""Alphazero training with mistakes: rounds collect them, batches draw their share, a
resume keeps them, and the fine-tune config runs from the shipped weights."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from orderchaos.agents.policy_files import latest_checkpoint, load_checkpoint
from orderchaos.agents.registry import make
from orderchaos.arena.mistakes import collect_mistakes, mistake_rows
from orderchaos.envs.rules import CHAOS, ORDER
from orderchaos.train.alphazero import AlphaZeroTrainer, MistakeSettings
from orderchaos.train.config import load_config
from orderchaos.train.factory import make_trainer

from helpers import REPO, SMOKE

# The hunt of a smoke run: against random play, with a small solver budget, its rows
# joining the batches at once (the recipe's settings take seconds per lost game).
SMALL_HUNT = MistakeSettings(opponents=("random",), node_limit=20000, candidates=3, fraction=0.25, min_rows=1)


@pytest.fixture
def small_hunt(monkeypatch) -> None:
    monkeypatch.setattr(AlphaZeroTrainer, "mistake_settings", SMALL_HUNT)


def mistake_config(tmp_path: Path, *extra: str):
    return load_config(SMOKE, ["mistakes.games=6", "mistakes.interval=1", "mistakes.rollouts=1", *extra])


def test_training_rounds_collect_mistakes_and_a_resume_keeps_them(tmp_path: Path, small_hunt) -> None:
    config = mistake_config(tmp_path)
    trainer = make_trainer(config, tmp_path / "run")
    try:
        trainer.fit()
        kept = {role: len(buf) for role, buf in trainer.mistakes.items()}
        rows = {role: buf.policies[: len(buf)].copy() for role, buf in trainer.mistakes.items()}
    finally:
        trainer.close()
    assert sum(kept.values()) > 0
    _, _, state = load_checkpoint(latest_checkpoint(tmp_path / "run"))
    assert {r: len(s["values"]) for r, s in state["extra"]["mistakes"].items()} == kept
    again = make_trainer(config, tmp_path / "run", resume=True)
    try:
        for role, buf in again.mistakes.items():
            assert len(buf) == kept[role] and np.array_equal(buf.policies[: len(buf)], rows[role])
    finally:
        again.close()


def test_batches_draw_the_configured_share_from_mistakes(tmp_path: Path, small_hunt) -> None:
    config = mistake_config(tmp_path, "optim.batch_size=32", "selfplay.warmup_games=0")
    trainer = make_trainer(config, tmp_path / "run")
    try:
        trainer.generate()
        trainer.flush()
        hunt = collect_mistakes(make("random", seed=0), ORDER, ["random"], 10, 3, openings=2, node_limit=20000)
        trainer.mistakes[ORDER].add(*mistake_rows(hunt.mistakes))
        drawn: list[int] = []
        sample = trainer.mistakes[ORDER].sample
        trainer.mistakes[ORDER].sample = lambda n, *a, **k: (drawn.append(n), sample(n, *a, **k))[1]
        metrics = trainer.train_role(ORDER, 3)
    finally:
        trainer.close()
    assert drawn == [8, 8, 8] and np.isfinite(metrics["order/losses/policy"])


def test_the_finetune_config_trains_from_the_shipped_weights_with_mistakes(tmp_path: Path, monkeypatch) -> None:
    config = load_config(
        REPO / "configs" / "alphazero_finetune.yaml",
        [
            "run.iterations=1",
            "run.progress=false",
            "run.time_limit_minutes=0",
            "selfplay.games=2",
            "selfplay.imitation_games=1",
            "selfplay.solver_node_limit=2000",
            "selfplay.solver_process=false",
            "mcts.simulations=4",
            "optim.updates_per_iteration=1",
            "replay.min_positions=1",
            "mistakes.games=2",
            "eval.enabled=false",
        ],
    )
    monkeypatch.setattr(AlphaZeroTrainer, "mistake_settings", MistakeSettings(node_limit=2000))
    trainer = make_trainer(config, tmp_path / "run")
    try:
        metrics = trainer.train_iteration()
    finally:
        trainer.close()
    # the config hunts both roles, Chaos with play-outs
    assert {f"{role}/mistakes/{key}" for role in (ORDER, CHAOS) for key in ("found", "practical", "kept")} <= set(metrics)
    assert metrics["chaos/mistakes/kept"] == metrics["chaos/mistakes/found"] >= metrics["chaos/mistakes/practical"]
    assert np.isfinite(metrics["order/losses/policy"])


def labelled_file(tmp_path: Path) -> tuple[Path, list, list]:
    """The first 12 positions of the shipped 27-30 set in a file: (path, all, Chaos to move)."""
    from orderchaos.arena.positions import SHIPPED_SETS, load_positions, save_positions

    shipped = load_positions(SHIPPED_SETS["27_30"])[:12]
    path = tmp_path / "train.jsonl"
    save_positions(path, shipped)
    return path, shipped, [p for p in shipped if p.state.to_play == CHAOS]


def test_labelled_positions_files_join_the_mistake_positions_of_the_side_to_move(tmp_path: Path) -> None:
    """``mistakes.positions``: each file's positions join the buffer of the side to move
    with a uniform policy over the winning moves and value +1, and a resume keeps the
    buffers as saved instead of adding them twice."""
    path, shipped, chaos = labelled_file(tmp_path)
    order = [p for p in shipped if p.state.to_play == ORDER]
    assert 0 < len(chaos) < len(shipped)
    config = load_config(SMOKE, [f"mistakes.positions=[{path}]", "run.iterations=1"])
    trainer = make_trainer(config, tmp_path / "run")
    try:
        for role, positions in ((ORDER, order), (CHAOS, chaos)):
            buf = trainer.mistakes[role]
            assert len(buf) == len(positions)
            for row, position in enumerate(positions):
                expected = np.zeros(72, np.float32)
                expected[position.good_actions] = 1 / len(position.good_actions)
                assert np.array_equal(buf.policies[row], expected)
                assert buf.values[row] == 1.0
        trainer.fit()
    finally:
        trainer.close()
    again = make_trainer(config, tmp_path / "run", resume=True)
    try:
        assert len(again.mistakes[CHAOS]) == len(chaos) and len(again.mistakes[ORDER]) == len(order)
    finally:
        again.close()


def test_a_bad_positions_file_is_refused_before_the_run_starts(tmp_path: Path) -> None:
    import subprocess
    import sys

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"board": "XX", "good_actions": [1]}\n')
    out = subprocess.run(
        [sys.executable, "-m", "orderchaos", "train", str(SMOKE), f"mistakes.positions=[{bad}]",
         "--run-dir", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr == f"error: mistakes.positions: {bad}:1: malformed board: a board string " \
        "needs 36 cells of 'X', 'O' or '.', found 2 (whitespace and '/' are ignored)\n"
    assert not (tmp_path / "run").exists()


def test_more_labelled_positions_than_the_buffer_holds_are_refused(tmp_path: Path, monkeypatch) -> None:
    path, shipped, _ = labelled_file(tmp_path)
    counts = {role: sum(p.state.to_play == role for p in shipped) for role in (ORDER, CHAOS)}
    role = max(counts, key=counts.get)  # the side whose buffer overflows first
    most = counts[role]
    config = load_config(SMOKE, [f"mistakes.positions=[{path}]"])
    monkeypatch.setattr(AlphaZeroTrainer, "mistake_settings", MistakeSettings(capacity=most - 1))
    with pytest.raises(ValueError, match=f"mistakes.positions: {most} positions with {role} to move "
                       f"do not fit the {most - 1} mistake positions a side keeps; give at most {most - 1}"):
        make_trainer(config, tmp_path / "run")
    monkeypatch.setattr(AlphaZeroTrainer, "mistake_settings", MistakeSettings(capacity=most))
    trainer = make_trainer(config, tmp_path / "run")
    try:
        assert {r: len(buf) for r, buf in trainer.mistakes.items()} == counts
    finally:
        trainer.close()
