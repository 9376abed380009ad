"""The solver pool (orderchaos.agents.solver_pool): the same results from every kind of worker,
results in order, one long-lived solver per worker, failures as one-line SolverPoolErrors, and
no worker process left behind."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
import warnings

import pytest

from orderchaos.agents.solver_pool import SolverPool, SolverPoolError
from orderchaos.arena.mistakes import mistake_job
from orderchaos.proof.prove import solve_task
from orderchaos.envs.rules import State

from helpers import game_actions, random_board, random_game

ENDLESS = (0, 0, 0, 10**15)
"""A prover task (key, x, o, budget) that runs for hours: the empty board, unbounded."""
OVERLAPPING = (0, 1, 1, 100)
"""A prover task whose board has X and O on one cell: the job raises."""


def run_inline(fn, arguments: list[tuple], tt_bits: int) -> list:
    """The results of the jobs run by one inline worker."""
    with SolverPool("inline", tt_bits=tt_bits) as pool:
        return pool.map(fn, arguments)


def tasks() -> list[tuple[int, int, int, int]]:
    """Prover tasks on random boards, each solved or left open within a small budget."""
    boards = [random_board(seed, 14 + seed % 5) for seed in range(8)]
    return [(k, s.x, s.o, 20_000) for k, s in enumerate(boards)]


def lost_games() -> list[tuple[list[int], str]]:
    """(actions, loser) of random games (a full board without a five counts as Order's loss)."""
    games = [random_game(seed) for seed in range(12)]
    return [(game_actions(g), "chaos" if g[-1].winner == "order" else "order") for g in games]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/status") as fh:  # a zombie is as good as gone
        return "zombie" not in fh.read()


def test_inline_and_worker_processes_give_the_same_results_in_order() -> None:
    """One inline worker and one worker process run the same jobs in the same order with one
    warm table each: identical results, node counts included; walks of lost games (which
    clear their solver) agree between one inline worker and three processes."""
    work = [(t,) for t in tasks()]
    walks = [(actions, role, 20_000, 20) for actions, role in lost_games()]
    with SolverPool("inline", tt_bits=16) as inline:
        one = [r[:5] for r in inline.map(solve_task, work)]  # (key, budget, winner, move, nodes)
        mistakes = inline.map(mistake_job, walks)
    with SolverPool("processes", 1, tt_bits=16) as pool:
        assert [r[:5] for r in pool.map(solve_task, work)] == one
    with SolverPool("processes", 3, tt_bits=16) as pool:
        assert pool.map(mistake_job, walks) == mistakes
        slow, quick = (1, State().x, State().o, 300_000), (2, State().x, State().o, 10)
        assert [r[0] for r in pool.map(solve_task, [(slow,), (quick,)])] == [1, 2]  # the quick one finishes first
    assert [r[0] for r in one] == list(range(len(work)))
    assert any(r[2] is not None for r in one) and any(m is not None for m in mistakes)


@pytest.mark.parametrize("kind", ["inline", "processes"])
def test_a_worker_keeps_its_solver_from_one_job_to_the_next(kind: str) -> None:
    """The same leaf twice: the second solve finds the first one's proofs in the table."""
    task = next(t for t in tasks() if run_inline(solve_task, [(t,)], 16)[0][2] is not None)
    with SolverPool(kind, 1, tt_bits=16) as pool:
        first, second = pool.map(solve_task, [(task,), (task,)])
    assert first[2] == second[2] and second[4] < first[4]


@pytest.mark.parametrize("kind", ["inline", "processes"])
def test_a_job_that_raises_is_one_line_and_the_pool_goes_on(kind: str) -> None:
    (good,) = tasks()[:1]
    with SolverPool(kind, 2 if kind == "processes" else 1, tt_bits=14) as pool:
        with pytest.raises(SolverPoolError) as caught:
            pool.map(solve_task, [(good,), (OVERLAPPING,), (good,)])
        message = str(caught.value)
        assert message.startswith("solver job solve_task failed: BoardStringError: ")
        assert "a cell holds both X and O" in message and "\n" not in message
        assert pool.pending == 0
        assert pool.map(solve_task, [(good,)])[0][:3] == run_inline(solve_task, [(good,)], 14)[0][:3]


def test_wait_hands_out_single_jobs_as_they_finish_and_leaves_batches_alone() -> None:
    """The prover's use: submit, then wait for whichever job is done; a batch's jobs are
    collected by the batch only, and each result is handed out once."""
    work = tasks()[:3]
    with SolverPool("inline", tt_bits=14) as pool:
        batch = pool.map_async(solve_task, [(t,) for t in work[:2]])
        single = pool.submit(solve_task, work[2])
        ticket, result = pool.wait(timeout=60)
        assert ticket == single and result[0] == work[2][0]
        assert pool.wait(timeout=60) is None  # only the batch's jobs are out
        assert [r[0] for r in batch.wait()] == [0, 1]
        with pytest.raises(KeyError):
            pool.result(single)


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc")
def test_a_dead_worker_fails_the_jobs_out_and_new_workers_take_the_next() -> None:
    with SolverPool("processes", 2, tt_bits=14) as pool:
        endless = [pool.submit(solve_task, ENDLESS) for _ in range(3)]
        first = pool.worker_pids()
        os.kill(first[0], signal.SIGKILL)
        for ticket in endless:
            with pytest.raises(SolverPoolError, match=r"^a solver worker process died \(exit code -9\)$"):
                pool.result(ticket)
        assert not any(_alive(pid) for pid in first)  # the other worker was stopped with it
        assert pool.map(solve_task, [(t,) for t in tasks()[:2]])[1][0] == 1
        assert set(pool.worker_pids()).isdisjoint(first)


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc")
def test_closing_leaves_no_worker_process_even_mid_job_or_on_an_error() -> None:
    pool = SolverPool("processes", 2, tt_bits=14)
    pool.submit(solve_task, ENDLESS)
    pids = pool.worker_pids()
    assert all(_alive(pid) for pid in pids)
    pool.close()
    assert not any(_alive(pid) for pid in pids)
    assert not {p.pid for p in multiprocessing.active_children()} & set(pids)

    with pytest.raises(ZeroDivisionError):
        with SolverPool("processes", 2, tt_bits=14) as pool:
            pool.submit(solve_task, ENDLESS)
            pids = pool.worker_pids()
            1 / 0
    assert not any(_alive(pid) for pid in pids)


ORPHAN_SCRIPT = """
import time
from orderchaos.agents.solver_pool import SolverPool
from orderchaos.proof.prove import solve_task
if __name__ == "__main__":
    pool = SolverPool("processes", 1, tt_bits=14)
    pool.map(solve_task, [((0, 0, 0, 10),)])
    print(*pool.worker_pids(), flush=True)
    time.sleep(600)
"""


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc")
def test_an_idle_worker_exits_when_its_parent_is_killed(tmp_path) -> None:
    """(A worker busy with a job notices after the job: the compiled solver holds the GIL.)"""
    script = tmp_path / "orphan.py"
    script.write_text(ORPHAN_SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
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


def test_bad_settings_are_refused() -> None:
    for kwargs, message in [
        ({"kind": "threads"}, "kind must be one of inline, processes, ray"),
        ({"kind": "processes", "workers": 0}, "workers must be at least 1"),
        ({"kind": "inline", "workers": 2}, "an inline pool has one worker"),
        ({"kind": "processes", "ray_address": "auto"}, "ray kind only"),
    ]:
        with pytest.raises(ValueError, match=message):
            SolverPool(**kwargs)


def test_ray_actors_match_inline_and_resubmit_a_dead_actor_s_job_once(in_process_ray) -> None:
    """On an in-process Ray instance (2 CPUs): one actor gives the inline results; an actor
    killed mid-job is restarted and its job resubmitted with a warning, giving the same
    result; a job whose second try dies too fails with SolverPoolError; a job that raises
    fails with its first line; the pool leaves the process's Ray connection open."""
    work = [(t,) for t in tasks()]
    with SolverPool("ray", 1, tt_bits=16) as pool:
        assert [r[:5] for r in pool.map(solve_task, work)] == [r[:5] for r in run_inline(solve_task, work, 16)]
        with pytest.raises(SolverPoolError, match="^solver job solve_task failed: BoardStringError: "):
            pool.map(solve_task, [(OVERLAPPING,)])

    slow = (1, State().x, State().o, 1_000_000)  # about 2 s of solving, left open
    reference = run_inline(solve_task, [(slow,)], 16)[0][:5]
    with SolverPool("ray", 2, tt_bits=16) as pool:
        pids = pool.worker_pids()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ticket = pool.submit(solve_task, slow)  # to actor 0
            os.kill(pids[0], signal.SIGKILL)
            assert pool.result(ticket)[:5] == reference  # solved again by actor 1
        messages = [str(w.message) for w in caught]
        assert any("solver actor 0 died" in m and "resubmitted" in m for m in messages), messages

        restarted = pool.worker_pids()[0]
        assert restarted != pids[0]
        with warnings.catch_warnings(record=True), pytest.raises(SolverPoolError, match="second try"):
            warnings.simplefilter("always")
            pool.submit(solve_task, ENDLESS)  # to actor 1, then resubmitted to the restarted actor 0
            os.kill(pids[1], signal.SIGKILL)
            killed = False
            while pool.wait(timeout=1.0) is None:
                if pool.resubmitted == 2 and not killed:
                    os.kill(restarted, signal.SIGKILL)
                    killed = True
    assert in_process_ray.is_initialized()
