"""Training end to end: smoke runs of both algorithms through the CLI, checkpoints, resume
after SIGKILL, reproducibility, and the replay buffer / PPO helpers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.torch import load_file

from orderchaos.agents.network import PolicyValueNet
from orderchaos.agents.registry import make
from orderchaos.envs.encoding import OBS_VERSION, action_mask, action_masks, encode_states
from orderchaos.envs.rules import ACTIONS, State
from orderchaos.bench.train import random_positions
from orderchaos.agents.policy_files import find_policy_dir, latest_checkpoint, load_checkpoint, save_checkpoint
from orderchaos.cli.main import main
from orderchaos.train.config import load_config
from orderchaos.train.ppo import gae, sample_rows
from orderchaos.train.replay_buffer import ReplayBuffer
from orderchaos.train.factory import make_trainer

torch.set_num_threads(1)  # the test machine is shared; more threads only contend

REPO = Path(__file__).resolve().parent.parent
SMOKE = str(REPO / "configs" / "smoke.yaml")


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


def play_one_game(agent_spec: str) -> str:
    agent = make(agent_spec)
    state = State()
    while not state.is_terminal:
        state = state.apply(agent.act(state))
    return state.winner


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
                "eval/order_vs_random_winrate", "eval/chaos_vs_random_winrate"):
        assert tag in tags, tag
    assert "hyperparameters" in str(events.Tags())
    assert play_one_game(str(run_dir)) in ("order", "chaos")
    assert play_one_game(f"{run_dir}:sims=4,seed=1") in ("order", "chaos")


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


def _weights(run_dir: Path) -> dict[str, dict[str, torch.Tensor]]:
    latest = find_policy_dir(run_dir)
    return {role: load_file(str(latest / f"{role}.safetensors")) for role in ("order", "chaos")}


def _train(run_dir: Path, *overrides: str) -> dict[str, dict[str, torch.Tensor]]:
    config = load_config(SMOKE, ["eval.enabled=false", "run.iterations=2", *overrides])
    make_trainer(config, run_dir).fit()
    return _weights(run_dir)


@pytest.mark.parametrize("algorithm", ["alphazero", "ppo"])
def test_seeded_runs_are_reproducible(tmp_path: Path, algorithm: str) -> None:
    a = _train(tmp_path / "a", f"algorithm={algorithm}")
    b = _train(tmp_path / "b", f"algorithm={algorithm}")
    c = _train(tmp_path / "c", f"algorithm={algorithm}", "seed=7")
    for role in a:
        for key in a[role]:
            assert torch.equal(a[role][key], b[role][key]), (role, key)
    assert any(not torch.equal(a["order"][k], c["order"][k]) for k in a["order"])


def test_init_from_starts_both_networks_from_a_policy_and_refuses_a_mismatch(tmp_path: Path, capsys) -> None:
    source = _train(tmp_path / "source")
    config = load_config(SMOKE, ["eval.enabled=false", f"network.init_from={tmp_path / 'source'}"])
    trainer = make_trainer(config, tmp_path / "child")
    for role in source:
        for key, value in trainer.nets[role].state_dict().items():
            assert torch.equal(value.cpu(), source[role][key]), (role, key)
    fresh = make_trainer(load_config(SMOKE, ["eval.enabled=false"]), tmp_path / "fresh")
    assert any(not torch.equal(v.cpu(), source["order"][k]) for k, v in fresh.nets["order"].state_dict().items())
    # A policy of another shape, or no policy at all, is refused naming the key.
    args = ("run.iterations=1", "eval.enabled=false", f"network.init_from={tmp_path / 'source'}", "network.channels=4")
    assert run_cli(SMOKE, *args, "--run-dir", str(tmp_path / "bad")) == 2
    assert "network.init_from" in capsys.readouterr().err
    args = ("run.iterations=1", "eval.enabled=false", f"network.init_from={tmp_path / 'nowhere'}")
    assert run_cli(SMOKE, *args, "--run-dir", str(tmp_path / "bad2")) == 2
    assert "network.init_from" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists() and not (tmp_path / "bad2").exists()  # nothing written


def test_resume_continues_from_the_checkpoint(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    first = _train(run_dir)  # two iterations
    config = load_config(SMOKE, ["eval.enabled=false", "run.iterations=3"])
    trainer = make_trainer(config, run_dir, resume=True)
    assert trainer.iteration == 2 and trainer.games_played == 2 * config.selfplay.games
    assert len(trainer.replay["order"]) > 0
    for role in first:
        for key, value in trainer.nets[role].state_dict().items():
            assert torch.equal(value.cpu(), first[role][key])
    trainer.fit()
    assert json.loads((find_policy_dir(run_dir) / "meta.json").read_text())["step"] == 3


def test_resume_after_sigkill_loses_at_most_one_interval(tmp_path: Path) -> None:
    run_dir = tmp_path / "killed"
    cmd = [sys.executable, "-m", "orderchaos", "train", SMOKE, "run.iterations=200", "eval.enabled=false",
           "--run-dir", str(run_dir)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and latest_checkpoint(run_dir) is None:
            time.sleep(0.1)
        time.sleep(0.5)
        assert proc.poll() is None, "the run ended before it could be killed"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    checkpoint = latest_checkpoint(run_dir)
    assert checkpoint is not None
    _, meta, state = load_checkpoint(checkpoint)
    step = meta["step"]
    assert step >= 1 and state is not None and state["iteration"] == step
    resumed = subprocess.run(
        [sys.executable, "-m", "orderchaos", "train", "--resume", str(run_dir), f"run.iterations={step + 2}"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"from iteration {step}" in resumed.stdout + resumed.stderr
    assert json.loads((find_policy_dir(run_dir) / "meta.json").read_text())["step"] == step + 2


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


def _random_rows(n: int, seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    states = random_positions(n, seed)
    masks = np.stack([action_mask(s) for s in states])
    policies = rng.random((n, ACTIONS)).astype(np.float32) * masks
    policies /= policies.sum(1, keepdims=True)
    return encode_states(states), masks, policies, rng.choice([-1.0, 1.0], n).astype(np.float32)


@settings(max_examples=15, deadline=None)
@given(capacity=st.integers(1, 40), batches=st.lists(st.integers(1, 25), min_size=1, max_size=4), seed=st.integers(0, 99))
def test_replay_keeps_the_newest_rows_and_augments_consistently(capacity: int, batches: list[int], seed: int) -> None:
    buffer = ReplayBuffer(capacity)
    added = []
    for i, n in enumerate(batches):
        rows = _random_rows(n, seed + i)
        buffer.add(*rows)
        added.extend(zip(*rows))
    assert len(buffer) == min(capacity, len(added))
    newest = {a[0].tobytes() for a in added[-len(buffer):]}
    assert {p.tobytes() for p in buffer.planes[: len(buffer)]} == newest
    planes, masks, policies, values = buffer.sample(16, np.random.default_rng(seed), augment=True)
    empty = 1 - planes[:, 0] - planes[:, 1]  # an augmented image keeps the mask on its empty cells
    assert np.array_equal(masks, np.repeat(empty.reshape(16, -1), 2, axis=1))
    assert np.all(policies[masks == 0] == 0)
    assert np.allclose(policies.sum(1), 1.0, atol=1e-5)
    restored = ReplayBuffer(capacity)
    restored.load_state_dict(buffer.state_dict())
    again = restored.sample(16, np.random.default_rng(seed), augment=True)
    assert all(np.array_equal(x, y) for x, y in zip(again, (planes, masks, policies, values)))


def test_gae_with_terminal_reward_only() -> None:
    values = np.array([0.5, -0.2, 0.1], np.float32)
    rewards = np.array([0.0, 0.0, 1.0], np.float32)
    adv = gae(rewards, values, gamma=1.0, lam=1.0)
    assert np.allclose(adv + values, 1.0)  # lambda=1, gamma=1: returns are the final reward
    adv0 = gae(rewards, values, gamma=1.0, lam=0.0)
    assert np.allclose(adv0, [values[1] - values[0], values[2] - values[1], 1.0 - values[2]])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=2, max_size=10), st.integers(0, 1000))
def test_sample_rows_never_picks_zero_probability(weights: list[float], seed: int) -> None:
    probs = np.array([weights, weights[::-1]], dtype=np.float64)
    probs[:, 0] = 0.0
    probs[:, -1] += 1e-3
    picks = sample_rows(np.repeat(probs, 50, axis=0), np.random.default_rng(seed))
    rows = np.repeat(probs, 50, axis=0)
    assert np.all(rows[np.arange(len(picks)), picks] > 0)


def test_export_copies_the_latest_policy(tmp_path: Path) -> None:
    from orderchaos.cli.main import main as cli_main

    def export_main(argv: list[str]) -> int:
        return cli_main(["export", *argv])

    weights = _train(tmp_path / "run")
    dest = tmp_path / "pretrained"
    assert export_main([str(tmp_path / "run"), "--dest", str(dest)]) == 0
    assert sorted(p.name for p in dest.iterdir()) == ["chaos.safetensors", "meta.json", "order.safetensors"]
    exported = load_file(str(dest / "order.safetensors"))
    assert all(torch.equal(exported[k], weights["order"][k]) for k in exported)
    assert play_one_game(str(dest)) in ("order", "chaos")
    assert export_main([str(tmp_path / "nothing-here"), "--dest", str(dest)]) == 2


@pytest.mark.parametrize("target_temperature", [1.0, 0.0])
def test_selfplay_logs_only_network_moves_with_legal_policies(target_temperature: float) -> None:
    from orderchaos.train.alphazero import play_selfplay_games

    torch.manual_seed(0)
    nets = {role: PolicyValueNet(4, 0, 8) for role in ("order", "chaos")}
    from orderchaos.agents.network_agent import NetworkEvaluator

    logs = play_selfplay_games(
        NetworkEvaluator(nets), 3, simulations=4, c_puct=1.5, dirichlet_alpha=0.3,
        dirichlet_fraction=0.25, temperature=1.0, temperature_moves=4,
        rng=np.random.default_rng(0), opponents={0: (0, make("heuristic", seed=1))},
        target_temperature=target_temperature,
    )
    assert all(log.winner in ("order", "chaos") for log in logs)
    assert logs[0].states and all(s.to_play == "chaos" for s in logs[0].states)
    assert any(s.to_play == "order" for s in logs[1].states)
    for log in logs:
        assert len(log.states) == len(log.policies) == len(log.planes) == len(log.masks)
        # the batch engine's planes and masks for each logged position are the encoding's
        np.testing.assert_array_equal(np.stack(log.planes), encode_states(log.states))
        np.testing.assert_array_equal(np.stack(log.masks), action_masks(log.states))
        for state, policy in zip(log.states, log.policies):
            assert np.all(policy[action_mask(state) == 0] == 0)
            assert policy.sum() == pytest.approx(1.0, abs=1e-5) or policy.sum() == 0.0
            if target_temperature == 0 and policy.sum() > 0:  # one-hot, or uniform over proven wins
                support = policy[policy > 0]
                assert np.allclose(support, support[0])


@pytest.mark.parametrize("openings", [0, 3])
def test_lockstep_heuristic_games_replay_under_the_scalar_rules(openings: int) -> None:
    from orderchaos.train.alphazero import play_heuristic_games

    logs = play_heuristic_games(6, openings, np.random.default_rng(5))
    for log in logs:
        np.testing.assert_array_equal(np.stack(log.planes), encode_states(log.states))
        np.testing.assert_array_equal(np.stack(log.masks), action_masks(log.states))
        assert log.states[0].num_stones == openings
        # each logged move (the one-hot policy) leads to the next logged position, and the
        # last one ends the game as the batch engine reported
        moves = [int(np.argmax(p)) for p in log.policies]
        assert all(p.sum() == 1.0 for p in log.policies)
        for state, move, following in zip(log.states, moves, log.states[1:]):
            assert state.apply(move) == following
        final = log.states[-1].apply(moves[-1])
        assert final.is_terminal and final.winner == log.winner and final.num_stones == log.length


def _endgames(n: int, empties: int, seed: int) -> list[State]:
    """Non-terminal positions with ``empties`` empty cells, from random play."""
    rng = np.random.default_rng(seed)
    out: list[State] = []
    while len(out) < n:
        state = State()
        while state.num_empty > empties:
            nxt = state.apply(int(rng.choice(state.legal_actions())))
            if nxt.is_terminal:
                break
            state = nxt
        if state.num_empty == empties and not state.is_terminal:
            out.append(state)
    return out


def _mover_wins(state: State) -> bool:
    """Brute-force minimax: does the player to move win with best play?"""
    if state.is_terminal:
        return False  # the previous mover's result stands: it just won
    return any(not _mover_wins_after(state.apply(a), state.to_play) for a in state.legal_actions())


def _mover_wins_after(child: State, mover: str) -> bool:
    if child.is_terminal:
        return child.winner != mover
    return _mover_wins(child)


def test_value_and_solver_targets() -> None:
    from orderchaos.train.alphazero import SelfPlayGame, value_targets
    from orderchaos.train.solver_targets import solver_targets

    start = State()
    log = SelfPlayGame(states=[start, start.apply(0)], policies=[], winner="chaos")
    assert value_targets(log).tolist() == [-1.0, 1.0]
    positions = _endgames(6, empties=4, seed=3)
    exact = solver_targets(positions, node_limit=100_000, moves=True)
    for i, state in enumerate(positions):
        wins = _mover_wins(state)
        assert exact.values[i] == (1.0 if wins else -1.0)
        if wins:
            winning = [a for a in state.legal_actions() if not _mover_wins_after(state.apply(a), state.to_play)]
            assert sorted(exact.winning_moves[i]) == winning
        else:
            assert i not in exact.winning_moves


def test_solver_worker_matches_in_process_targets_and_survives_a_dead_worker() -> None:
    from orderchaos.train.solver_targets import SolverWorker, solver_targets

    late = _endgames(4, empties=5, seed=4)
    worker = SolverWorker()
    try:
        assert worker.targets(late, 20_000, True) == solver_targets(late, 20_000, True)
        os.kill(next(iter(worker._pool._processes)), signal.SIGKILL)  # a crashed solver
        with pytest.warns(UserWarning, match="solver worker died"):
            assert worker.targets(late, 20_000, True).values == {}
        assert worker.failures == 1
        assert worker.targets(late, 20_000, True) == solver_targets(late, 20_000, True)
    finally:
        worker.close()


def test_solver_workers_deal_out_a_batch_and_merge_it_in_order() -> None:
    from orderchaos.train.solver_targets import SolverWorker, solver_targets

    positions = _endgames(4, empties=5, seed=6) + _endgames(3, empties=7, seed=7)
    expected = solver_targets(positions, 20_000, True)
    assert len(expected.values) == len(positions)
    worker = SolverWorker(workers=3)
    try:
        assert worker.targets(positions, 20_000, True) == expected
        assert worker.targets(positions[:2], 20_000, True) == solver_targets(positions[:2], 20_000, True)
    finally:
        worker.close()
    with pytest.raises(ValueError, match="workers"):
        SolverWorker(workers=0)


WORKER_SCRIPT = """
import sys, time
from orderchaos.envs.rules import State
from orderchaos.train.solver_targets import SolverWorker
worker = SolverWorker()
worker.targets([State().apply(0)], node_limit=10, moves=False)
print(*worker._pool._processes, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/status") as fh:  # a zombie is as good as gone
        return "zombie" not in fh.read()


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc")
def test_solver_worker_exits_when_its_trainer_is_killed() -> None:
    proc = subprocess.Popen([sys.executable, "-c", WORKER_SCRIPT], stdout=subprocess.PIPE, text=True)
    try:
        worker_pid = int(proc.stdout.readline().split()[0])
        assert _alive(worker_pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 15
        while _alive(worker_pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(worker_pid), "the solver worker outlived its killed parent"
    finally:
        proc.kill()
        proc.wait()


def test_solver_targets_from_the_worker_join_the_replay_when_flushed(tmp_path: Path) -> None:
    from orderchaos.agents.solver import solve
    from orderchaos.train.alphazero import play_heuristic_games

    depth = 20
    config = load_config(SMOKE, ["eval.enabled=false", f"selfplay.solver_depth={depth}", "selfplay.solver_process=true"])
    trainer = make_trainer(config, tmp_path / "run")
    try:
        logs = play_heuristic_games(3, 0, np.random.default_rng(2))
        stats = trainer.store(logs)
        late = [s for log in logs for s in log.states if s.num_empty <= depth]
        assert stats["charts/solver_positions"] == len(late) > 0
        assert len(trainer.replay["order"]) == len(trainer.replay["chaos"]) == 0  # still solving
        limit = config.selfplay.solver_node_limit
        proven = [s for s in late if solve(s, node_limit=limit).winner is not None]
        assert trainer.flush()["charts/solver_values"] == len(proven) > 0
        for index, role in enumerate(("order", "chaos")):
            mine = [(log, s) for log in logs for s in log.states if s.to_play_index == index]
            buffer = trainer.replay[role]
            assert len(buffer) == len(mine)
            for row, (log, state) in enumerate(mine):
                exact = solve(state, node_limit=limit, moves=True) if state.num_empty <= depth else None
                if exact is not None and exact.winner is not None:
                    assert buffer.values[row] == (1.0 if exact.winner == state.to_play else -1.0)
                    if exact.winner == state.to_play:
                        assert set(np.flatnonzero(buffer.policies[row])) == set(exact.best_actions)
                else:
                    assert buffer.values[row] == (1.0 if log.winner == state.to_play else -1.0)
        assert trainer.flush() == {}
    finally:
        trainer.close()


@pytest.mark.parametrize("weights", ["uniform", "search"])
def test_solver_policy_keeps_only_proven_winning_moves(weights: str) -> None:
    from orderchaos.train.alphazero import TrainingRows
    from orderchaos.train.solver_targets import SolverTargets

    policies = np.zeros((3, ACTIONS), np.float32)
    policies[0, [4, 6, 9]] = [0.5, 0.3, 0.2]  # the game's target puts 0.3 and 0.2 on wins
    policies[1, 11] = 1.0  # a one-hot on a move that does not win
    policies[2, 4] = 1.0  # untouched: the solver found no win there
    rows = TrainingRows([State()] * 3, np.zeros((3, 3, 6, 6), np.int8), np.ones((3, ACTIONS), np.int8),
                        policies, np.zeros(3, np.float32))
    exact = SolverTargets(values={0: 1.0, 1: 1.0, 2: -1.0}, winning_moves={0: [6, 9], 1: [2, 3]})
    rows.apply([0, 1, 2], exact, weights)
    assert rows.values.tolist() == [1.0, 1.0, -1.0]
    expected_0 = [0.6, 0.4] if weights == "search" else [0.5, 0.5]
    assert rows.policies[0, [6, 9]] == pytest.approx(expected_0)
    assert rows.policies[1, [2, 3]] == pytest.approx([0.5, 0.5])  # nothing to weight by
    assert rows.policies[:2].sum(1) == pytest.approx([1.0, 1.0])
    assert rows.policies[2, 4] == 1.0 and rows.policies[2].sum() == 1.0


@pytest.mark.parametrize("practical_chaos", [False, True])
def test_practical_chaos_values_keep_the_outcome_only_where_chaos_is_proven_lost(practical_chaos: bool) -> None:
    from orderchaos.train.alphazero import TrainingRows
    from orderchaos.train.solver_targets import SolverTargets

    chaos_to_move = State().apply(0)
    states = [chaos_to_move, chaos_to_move, State(), State()]
    outcomes = np.array([0.5, -0.5, 0.5, 0.5], np.float32)  # game-outcome targets already there
    rows = TrainingRows(states, np.zeros((4, 3, 6, 6), np.int8), np.ones((4, ACTIONS), np.int8),
                        np.full((4, ACTIONS), 1 / ACTIONS, np.float32), outcomes.copy())
    exact = SolverTargets(values={0: -1.0, 1: 1.0, 2: -1.0, 3: 1.0})
    rows.apply([0, 1, 2, 3], exact, "uniform", practical_chaos)
    # Only the Chaos position proven lost keeps its outcome, and only when asked to.
    assert rows.values.tolist() == [0.5 if practical_chaos else -1.0, 1.0, -1.0, 1.0]


def test_solver_candidates_give_a_proven_win_when_listing_all_wins_is_too_dear() -> None:
    from orderchaos.agents.solver import solve
    from orderchaos.train.alphazero import play_heuristic_games
    from orderchaos.train.solver_targets import solver_targets

    logs = play_heuristic_games(8, 4, np.random.default_rng(3))
    positions = [s for log in logs for s in log.states if s.num_empty == 26]
    budget = 20_000  # enough to prove most of these won, too little to list every winning move
    listed = solver_targets(positions, budget, True)
    unlisted = [i for i, v in listed.values.items() if v == 1.0 and i not in listed.winning_moves]
    assert unlisted
    every = [s.legal_actions() for s in positions]  # candidates: every move, so a win is there
    with_candidates = solver_targets(positions, budget, True, every)
    assert with_candidates.values == listed.values
    found = [i for i in unlisted if i in with_candidates.winning_moves]
    assert found
    for i in found:
        (move,) = with_candidates.winning_moves[i]
        assert solve(positions[i].apply(move), node_limit=10**6).winner == positions[i].to_play
    for i, moves in listed.winning_moves.items():  # fully listed positions are left alone
        assert with_candidates.winning_moves[i] == moves


def test_fastest_plies_narrow_orders_winning_moves_to_the_quickest_forced_fives() -> None:
    from orderchaos.agents.solver import Solver
    from orderchaos.train.alphazero import play_heuristic_games
    from orderchaos.train.solver_targets import solver_targets

    logs = play_heuristic_games(8, 4, np.random.default_rng(5))
    positions = [s for log in logs for s in log.states if 12 <= s.num_empty <= 15]
    listed = solver_targets(positions, 200_000, True)
    fastest = solver_targets(positions, 200_000, True, fastest_plies=9)
    assert fastest.values == listed.values
    check = Solver(tt_bits=16)
    narrowed = 0
    for i, moves in listed.winning_moves.items():
        kept, state = fastest.winning_moves[i], positions[i]
        if state.to_play != "order":
            assert kept == moves  # Chaos targets are never narrowed
            continue
        assert kept and set(kept) <= set(moves)
        soonest = next(
            (d for d in range(1, 10) if any(check.order_wins_within(state.apply(a), d - 1) for a in moves)),
            None,
        )
        if soonest is None:
            assert kept == moves
            continue
        assert kept == [a for a in moves if check.order_wins_within(state.apply(a), soonest - 1)]
        narrowed += len(kept) < len(moves)
    assert narrowed > 0


def test_on_policy_games_play_the_networks_own_favourite_after_the_temperature_plies() -> None:
    from orderchaos.agents.network_agent import NetworkEvaluator
    from orderchaos.train.alphazero import play_selfplay_games

    torch.manual_seed(1)
    evaluator = NetworkEvaluator({role: PolicyValueNet(4, 0, 8) for role in ("order", "chaos")})
    heuristic_chaos = {g: (1, make("heuristic", seed=g)) for g in range(2)}
    logs = play_selfplay_games(
        evaluator, 2, simulations=8, c_puct=1.5, dirichlet_alpha=0.3, dirichlet_fraction=0.25,
        temperature=1.0, temperature_moves=2, rng=np.random.default_rng(0),
        opponents=heuristic_chaos, on_policy=[0],
    )

    def follows_favourite(log) -> list[bool]:
        # the network's move from each logged Order position stands in the next one
        out = []
        for state, following in zip(log.states, log.states[1:]):
            if state.num_stones >= 2:
                move = int(np.argmax(evaluator.evaluate([state])[0][0]))
                placed = state.apply(move)
                out.append((placed.x & ~following.x) == 0 and (placed.o & ~following.o) == 0)
        return out

    assert follows_favourite(logs[0]) and all(follows_favourite(logs[0]))
    assert not all(follows_favourite(logs[1]))  # searched moves (with noise) differ somewhere
