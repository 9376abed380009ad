"""Checkpoints: seeded reproducibility, init_from, resume (also after SIGKILL) and pruning."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from orderchaos.agents.network import PolicyValueNet
from orderchaos.agents.policy_files import (
    find_policy_dir,
    latest_checkpoint,
    load_checkpoint,
    save_checkpoint,
)
from orderchaos.cli.main import main
from orderchaos.train.config import load_config
from orderchaos.train.factory import make_trainer

from helpers import REPO, SMOKE, run_weights, train_smoke


def run_cli(*argv: str) -> int:
    return main(["train", *argv])


@pytest.mark.parametrize("algorithm", ["alphazero", "ppo"])
def test_seeded_runs_are_reproducible(tmp_path: Path, algorithm: str) -> None:
    a = train_smoke(tmp_path / "a", f"algorithm={algorithm}")
    b = train_smoke(tmp_path / "b", f"algorithm={algorithm}")
    c = train_smoke(tmp_path / "c", f"algorithm={algorithm}", "seed=7")
    for role in a:
        for key in a[role]:
            assert torch.equal(a[role][key], b[role][key]), (role, key)
    assert any(not torch.equal(a["order"][k], c["order"][k]) for k in a["order"])


def test_a_run_evaluates_at_its_end_unless_evaluation_is_switched_off(tmp_path: Path) -> None:
    on = make_trainer(load_config(SMOKE, ["run.iterations=1"]), tmp_path / "on").fit()
    off = make_trainer(load_config(SMOKE, ["run.iterations=1", "eval.enabled=false"]), tmp_path / "off").fit()
    assert "eval/order_vs_random_winrate" in on and "eval/accuracy_all" in on
    assert off == {}


def test_self_play_runs_the_networks_compiled(tmp_path: Path) -> None:
    trainer = make_trainer(load_config(SMOKE, ["eval.enabled=false"]), tmp_path / "compiled")
    try:
        assert trainer.evaluator.compiled
    finally:
        trainer.close()


def test_init_from_starts_both_networks_from_a_policy_and_refuses_a_mismatch(tmp_path: Path, capsys) -> None:
    source = train_smoke(tmp_path / "source")
    config = load_config(SMOKE, ["eval.enabled=false", f"network.init_from={tmp_path / 'source'}"])
    trainer = make_trainer(config, tmp_path / "child")
    for role in source:
        for key, value in trainer.nets[role].state_dict().items():
            assert torch.equal(value.cpu(), source[role][key]), (role, key)
    fresh = make_trainer(load_config(SMOKE, ["eval.enabled=false"]), tmp_path / "fresh")
    assert any(not torch.equal(v.cpu(), source["order"][k]) for k, v in fresh.nets["order"].state_dict().items())
    # A deeper network keeps the policy's weights and adds blocks that start as the identity.
    deeper = load_config(SMOKE, ["eval.enabled=false", f"network.init_from={tmp_path / 'source'}", "network.blocks=3"])
    trainer = make_trainer(deeper, tmp_path / "deeper")
    for role in source:
        weights = trainer.nets[role].state_dict()
        assert all(torch.equal(weights[key].cpu(), value) for key, value in source[role].items()), role
        assert len(trainer.nets[role].trunk) == 3 and not trainer.nets[role].trunk[2].bn2.weight.any()
    # A policy of another shape (or a deeper one), or no policy at all, is refused naming the key.
    for i, shape in enumerate(("network.channels=4", "network.blocks=0")):
        args = ("run.iterations=1", "eval.enabled=false", f"network.init_from={tmp_path / 'source'}", shape)
        assert run_cli(SMOKE, *args, "--run-dir", str(tmp_path / f"bad{i}")) == 2
        assert "network.init_from" in capsys.readouterr().err
    args = ("run.iterations=1", "eval.enabled=false", f"network.init_from={tmp_path / 'nowhere'}")
    assert run_cli(SMOKE, *args, "--run-dir", str(tmp_path / "bad2")) == 2
    assert "network.init_from" in capsys.readouterr().err
    assert not any((tmp_path / f"bad{i}").exists() for i in range(3))  # nothing written


def test_resume_continues_from_the_checkpoint(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    straight = make_trainer(load_config(SMOKE, ["eval.enabled=false", "run.iterations=2"]), run_dir)
    straight.fit()  # two iterations
    first = run_weights(run_dir)
    config = load_config(SMOKE, ["eval.enabled=false", "run.iterations=3"])
    trainer = make_trainer(config, run_dir, resume=True)
    assert trainer.iteration == 2 and trainer.games_played == 2 * config.selfplay.games
    for role in ("order", "chaos"):  # the replay buffers come back as they were
        assert len(trainer.replay[role]) == len(straight.replay[role]) > 0
        n = len(straight.replay[role])
        for field in ("planes", "masks", "policies", "values"):
            assert np.array_equal(getattr(trainer.replay[role], field)[:n], getattr(straight.replay[role], field)[:n])
    for role in first:
        for key, value in trainer.nets[role].state_dict().items():
            assert torch.equal(value.cpu(), first[role][key])
    trainer.fit()
    assert json.loads((find_policy_dir(run_dir) / "meta.json").read_text())["step"] == 3


# Solvers keep their tables from call to call, and a node-limited proof depends on them:
# the solver of the training process (games ended at a proof, solver targets solved there)
# and that of the one solver worker process (solver targets with selfplay.solver_process).
LOCAL_SOLVER = ["eval.enabled=false", "selfplay.solver_process=false", "selfplay.solver_end_depth=20",
                "selfplay.solver_end_fraction=0.5", "selfplay.solver_depth=24"]
WORKER_SOLVER = ["eval.enabled=false", "selfplay.solver_process=true", "selfplay.solver_depth=24"]


@pytest.mark.parametrize("overrides, table", [(LOCAL_SOLVER, "solver"), (WORKER_SOLVER, "solver_workers")],
                         ids=["local", "worker"])
def test_a_resumed_run_keeps_the_solver_tables_and_follows_the_unstopped_run(
    tmp_path: Path, overrides: list[str], table: str
) -> None:
    """Three iterations in one go, and two plus a resumed third, end with the same weights and
    the same solver tables: the checkpoint holds them, so the resumed run starts from the
    tables the run had when it stopped, not from empty ones."""
    make_trainer(load_config(SMOKE, [*overrides, "run.iterations=3"]), tmp_path / "straight").fit()
    make_trainer(load_config(SMOKE, [*overrides, "run.iterations=2"]), tmp_path / "halves").fit()
    resumed = make_trainer(load_config(SMOKE, [*overrides, "run.iterations=3"]), tmp_path / "halves", resume=True)
    resumed.fit()
    straight = load_checkpoint(latest_checkpoint(tmp_path / "straight"))[2]["extra"]
    halves = load_checkpoint(latest_checkpoint(tmp_path / "halves"))[2]["extra"]
    assert len(straight[table]["v"]) > 0
    for name in ("solver", "solver_workers"):
        assert (straight[name] is None) == (halves[name] is None), name
        for key, value in (straight[name] or {}).items():
            assert np.array_equal(value, halves[name][key]), (name, key)
    a, b = run_weights(tmp_path / "straight"), run_weights(tmp_path / "halves")
    for role in a:
        for key in a[role]:
            assert torch.equal(a[role][key], b[role][key]), (role, key)


def test_a_checkpoint_without_solver_tables_resumes_with_empty_ones_and_a_warning(tmp_path: Path, monkeypatch) -> None:
    """A checkpoint written before the solver tables were saved still loads; the run warns
    that it goes on with empty tables where it uses a solver, and says nothing where not."""
    from orderchaos.train.alphazero import AlphaZeroTrainer

    saved_state = AlphaZeroTrainer.extra_state
    monkeypatch.setattr(AlphaZeroTrainer, "extra_state",
                        lambda self: {k: v for k, v in saved_state(self).items() if k not in ("solver", "solver_workers")})
    make_trainer(load_config(SMOKE, [*LOCAL_SOLVER, "run.iterations=1"]), tmp_path / "old").fit()
    no_solver = ["eval.enabled=false", "selfplay.solver_depth=0"]
    make_trainer(load_config(SMOKE, [*no_solver, "run.iterations=1"]), tmp_path / "plain").fit()
    monkeypatch.undo()
    with pytest.warns(UserWarning, match="no solver tables") as caught:
        resumed = make_trainer(load_config(SMOKE, [*LOCAL_SOLVER, "run.iterations=2"]), tmp_path / "old", resume=True)
    assert len(caught) == 1 and resumed.iteration == 1 and resumed.local_solver.tt_entries == 0
    resumed.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make_trainer(load_config(SMOKE, [*no_solver, "run.iterations=2"]), tmp_path / "plain", resume=True)


def test_a_solver_table_of_another_size_resumes_with_empty_tables_and_a_warning(tmp_path: Path, monkeypatch) -> None:
    """The tables are a cache: one that does not fit (a checkpoint from a build with another
    table size) is dropped with a warning, not a run that can no longer resume."""
    from orderchaos.agents.solver import Solver
    from orderchaos.train.alphazero import AlphaZeroTrainer

    saved_state = AlphaZeroTrainer.extra_state
    monkeypatch.setattr(AlphaZeroTrainer, "extra_state",
                        lambda self: {**saved_state(self), "solver": Solver(tt_bits=12).table_state()})
    make_trainer(load_config(SMOKE, [*LOCAL_SOLVER, "run.iterations=1"]), tmp_path / "run").fit()
    monkeypatch.undo()
    with pytest.warns(UserWarning, match="cannot be loaded") as caught:
        resumed = make_trainer(load_config(SMOKE, [*LOCAL_SOLVER, "run.iterations=2"]), tmp_path / "run", resume=True)
    assert len(caught) == 1 and resumed.iteration == 1 and resumed.local_solver.tt_entries == 0
    resumed.fit()
    resumed.close()


def test_resume_after_sigkill_loses_at_most_one_interval(tmp_path: Path) -> None:
    """Kill a run just after its second checkpoint (two are kept then, so resuming from
    the older one would lose more than an interval); the last iteration it completed is
    read from its per-iteration evaluation lines. The resumed run must start from a
    checkpoint at most one interval behind it."""
    interval = 2
    run_dir = tmp_path / "killed"
    cmd = [sys.executable, "-m", "orderchaos", "train", SMOKE, "run.iterations=200",
           f"run.checkpoint_interval={interval}", "eval.interval=1",
           "--run-dir", str(run_dir)]
    # PYTHONPATH keeps what the caller set (a planted-bug sitecustomize, for instance).
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
           "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    completed, lines = 0, []
    # An iteration's evaluation line comes before its checkpoint, so once the iteration after
    # 2 * interval is evaluated, the checkpoints at interval and 2 * interval exist.
    kill_after = 2 * interval + 1
    try:
        deadline = time.monotonic() + 120
        while completed < kill_after and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if found := re.match(r"eval @ (\d+):", line):
                completed = int(found.group(1))  # iteration `completed` is done
        assert proc.poll() is None, "the run ended before it could be killed:\n" + "".join(lines)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert completed == kill_after, "".join(lines)
    resumed = subprocess.run(
        [sys.executable, "-m", "orderchaos", "train", "--resume", str(run_dir), f"run.iterations={completed + 1}",
         "eval.enabled=false"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    start = int(re.search(r"from iteration (\d+)", resumed.stdout + resumed.stderr).group(1))
    # At most one interval lost: the newest checkpoint at or before the kill (one more
    # iteration may have finished between reading its line and the kill).
    assert start % interval == 0 and completed - interval < start <= completed + 1, (start, completed)
    assert json.loads((find_policy_dir(run_dir) / "meta.json").read_text())["step"] == completed + 1


def test_checkpoints_are_pruned_and_latest_points_to_the_newest(tmp_path: Path) -> None:
    nets = {role: PolicyValueNet(4, 0, 4) for role in ("order", "chaos")}
    for step in (1, 2, 3, 4):
        save_checkpoint(tmp_path, step, nets, {"algorithm": "test"}, {"iteration": step}, keep=2)
    root = tmp_path / "checkpoints"
    assert sorted(p.name for p in root.glob("step_*")) == ["step_0000003", "step_0000004"]
    assert (root / "latest").resolve().name == "step_0000004"
    (root / ".step_0000005.torn").mkdir()  # a crashed save's temp dir is never picked up
    (root / ".step_0000005.torn" / "meta.json").write_text("{")
    _, meta, state = load_checkpoint(latest_checkpoint(tmp_path))
    assert meta["step"] == 4 and state == {"iteration": 4}
    (root / "latest").unlink()  # without the link, the newest complete step is used
    assert latest_checkpoint(tmp_path).name == "step_0000004"
