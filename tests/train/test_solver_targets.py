"""Solver targets and the solver worker process(es) (on orderchaos.agents.solver_pool)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import numpy as np
import pytest

from orderchaos.envs.rules import State
from orderchaos.train.config import load_config
from orderchaos.train.factory import make_trainer
from orderchaos.agents.solver_pool import SolverPool
from orderchaos.train.solver_targets import PendingTargets, SolverTargets, deal, merge, targets_job

from helpers import SMOKE, endgames


def test_solver_worker_matches_in_process_targets_and_survives_a_dead_worker() -> None:
    from orderchaos.train.solver_targets import SolverWorker, solver_targets

    late = endgames(4, empties=5, seed=4)
    worker = SolverWorker()
    try:
        assert worker.targets(late, 20_000, True) == solver_targets(late, 20_000, True)
        os.kill(worker.pool.worker_pids()[0], signal.SIGKILL)  # a crashed solver
        with pytest.warns(UserWarning, match="solver worker process died .* keeps its game-outcome targets"):
            assert worker.targets(late, 20_000, True).values == {}
        assert worker.failures == 1
        assert worker.targets(late, 20_000, True) == solver_targets(late, 20_000, True)
    finally:
        worker.close()


def test_solver_workers_deal_out_a_batch_and_merge_it_in_order() -> None:
    from orderchaos.train.solver_targets import SolverWorker, solver_targets

    positions = endgames(4, empties=5, seed=6) + endgames(3, empties=7, seed=7)
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


def test_solver_targets_from_the_worker_join_the_replay_when_flushed(tmp_path: Path) -> None:
    from orderchaos.agents.solver import solve
    from orderchaos.train.selfplay import play_heuristic_games

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


def test_solver_candidates_give_a_proven_win_when_listing_all_wins_is_too_dear() -> None:
    from orderchaos.agents.solver import solve
    from orderchaos.train.selfplay import play_heuristic_games
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


def test_shares_are_dealt_by_stride_and_merged_back_in_batch_order() -> None:
    """The striding and merging of every kind of worker: share k holds positions k, k + w,
    ...; each share's targets come back under their batch index; a share that fails (a
    dead worker, a failed Ray actor, a job that raised) loses the batch and says so once."""
    states = [State(x=1 << i) for i in range(7)]
    shares = deal(states, [[i] for i in range(7)], 3)
    assert [(k, [s.x.bit_length() - 1 for s in share], cands) for k, share, cands in shares] == [
        (0, [0, 3, 6], [[0], [3], [6]]), (1, [1, 4], [[1], [4]]), (2, [2, 5], [[2], [5]]),
    ]
    assert deal(states[:2], None, 3) == [(0, [states[0]], None), (1, [states[1]], None)]

    def answer(share: list[State]) -> SolverTargets:
        return SolverTargets(values={j: float(s.x.bit_length() - 1) for j, s in enumerate(share)})

    assert merge([answer(share) for _, share, _ in shares], 3).values == {i: float(i) for i in range(7)}

    failures: list[BaseException] = []
    with SolverPool(tt_bits=14) as pool:
        bad = State(1, 1)  # X and O on one cell: the solver refuses it
        batch = pool.map_async(targets_job, [([states[0]], 10, False, None), ([bad], 10, False, None)])
        assert PendingTargets(batch, 2, failures.append).result() == SolverTargets()
    assert len(failures) == 1 and "solver job targets_job failed" in str(failures[0])
