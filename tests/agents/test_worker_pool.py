"""The warm worker pool: jobs run on workers with their bench, a cancelled job stops (its
worker kept, or killed and replaced when it does not stop), and a worker that dies fails
only its own job and is replaced."""

from __future__ import annotations

import concurrent.futures
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import worker_jobs
from helpers import wait_for

from orderchaos.agents import cancel
from orderchaos.agents.worker_pool import WorkerDied, WorkerPool


def wait_for_file(path: Path, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


def test_jobs_run_with_the_warm_bench_and_failures_come_back() -> None:
    with WorkerPool("processes", 1, warm=worker_jobs.warm_number, warm_args=(100,)) as pool:
        assert pool.submit(worker_jobs.add, 1, 2).future.result(timeout=60) == 103
        with pytest.raises(ValueError, match="no such thing"):
            pool.submit(worker_jobs.fail).future.result(timeout=60)
        worker = pool.submit(worker_jobs.pid).future.result(timeout=60)
        assert worker != os.getpid() and pool.pids() == [worker] and pool.replaced == 0


def test_a_worker_killed_mid_job_fails_only_that_job_and_is_replaced(tmp_path: Path) -> None:
    with WorkerPool("processes", 2) as pool:
        started = tmp_path / "started"
        doomed = pool.submit(worker_jobs.spin, str(started))
        wait_for_file(started)
        victim = doomed_pid = None
        while victim is None:  # the other worker answers its pid; the spinning one is the victim
            other = pool.submit(worker_jobs.pid).future.result(timeout=60)
            victim = next((p for p in pool.pids() if p != other), None)
        doomed_pid = victim
        os.kill(doomed_pid, signal.SIGKILL)
        with pytest.raises(WorkerDied, match="died during the job"):
            doomed.future.result(timeout=60)
        assert pool.submit(worker_jobs.add, 2, 3).future.result(timeout=60) == 5
        deadline = time.monotonic() + 60
        while len(pool.pids()) < 2:  # a fresh worker takes the dead one's place
            assert time.monotonic() < deadline, "no worker replaced the dead one"
            time.sleep(0.05)
        assert pool.replaced == 1 and doomed_pid not in pool.pids()
        jobs = [pool.submit(worker_jobs.add, n, n) for n in range(6)]
        assert [job.future.result(timeout=60) for job in jobs] == [0, 2, 4, 6, 8, 10]


@pytest.mark.parametrize("job, grace, outcome, kept", [
    (worker_jobs.spin, 60, "cancelled", True),  # checks its stop flag: stops, its worker stays
    (worker_jobs.stubborn, 0.2, "killed", False),  # never looks: killed with its worker, replaced
])
def test_a_cancelled_job_stops_or_is_killed_with_its_worker(tmp_path: Path, job: Any, grace: float, outcome: str,
                                                           kept: bool) -> None:
    with WorkerPool("processes", 1, grace=grace) as pool:
        worker = pool.submit(worker_jobs.pid).future.result(timeout=60)
        started = tmp_path / "started"
        running = pool.submit(job, str(started))
        wait_for_file(started)
        pool.cancel(running)
        with pytest.raises(cancel.Cancelled, match=outcome):
            running.future.result(timeout=30)
        assert (pool.submit(worker_jobs.pid).future.result(timeout=60) == worker) is kept
        assert pool.replaced == (0 if kept else 1) and pool.running == 0 and pool.queued == 0


def test_a_job_cancelled_while_it_waits_never_runs(tmp_path: Path) -> None:
    with WorkerPool("processes", 1, grace=60) as pool:
        started = tmp_path / "started"
        first = pool.submit(worker_jobs.spin, str(started))
        wait_for_file(started)
        waiting = pool.submit(worker_jobs.add, 1, 1)
        assert pool.queued == 1
        pool.cancel(waiting)
        assert waiting.future.cancelled() and pool.queued == 0
        pool.cancel(first)
        with pytest.raises(cancel.Cancelled):
            first.future.result(timeout=30)
        assert pool.submit(worker_jobs.add, 2, 2).future.result(timeout=60) == 4
        with pytest.raises(concurrent.futures.CancelledError):
            waiting.future.result(timeout=0)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="kind must be one of"):
        WorkerPool("threads")
    with pytest.raises(ValueError, match="at least 1"):
        WorkerPool("processes", 0)
    with pytest.raises(ValueError, match="ray kind only"):
        WorkerPool("processes", 1, ray_address="127.0.0.1:1")


def test_ray_workers_run_jobs_stop_them_and_replace_a_dead_one(in_process_ray: Any, tmp_path: Path) -> None:
    """The same pool on Ray actors (a Ray instance on 127.0.0.1 in this process)."""
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(worker_jobs)  # the actors cannot import the tests folder
    try:
        with WorkerPool("ray", 1, warm=worker_jobs.warm_number, warm_args=(100,), grace=60) as pool:
            assert pool.submit(worker_jobs.add, 1, 2).future.result(timeout=120) == 103
            [actor] = pool.pids()
            started = tmp_path / "started"
            running = pool.submit(worker_jobs.spin, str(started))
            wait_for_file(started, seconds=120)
            pool.cancel(running)
            with pytest.raises(cancel.Cancelled, match="cancelled"):
                running.future.result(timeout=60)
            assert pool.submit(worker_jobs.pid).future.result(timeout=60) == actor and pool.replaced == 0
            started.unlink()
            doomed = pool.submit(worker_jobs.spin, str(started))
            wait_for_file(started, seconds=120)
            os.kill(actor, signal.SIGKILL)
            with pytest.raises(WorkerDied):
                doomed.future.result(timeout=120)
            assert pool.submit(worker_jobs.add, 2, 3).future.result(timeout=120) == 105
            assert pool.replaced == 1 and actor not in pool.pids()
    finally:
        cloudpickle.unregister_pickle_by_value(worker_jobs)


def test_a_worker_closes_its_pipe_once_however_often_it_is_closed() -> None:
    """The pool's close and the thread driving a worker may both close it: the second close
    must not touch the pipe again (from two threads at once that was a bad file descriptor)."""
    from orderchaos.agents.worker_pool import _ProcessWorker

    worker = _ProcessWorker(None, ())
    pipe, closes = worker.conn, []

    class CountingPipe:
        def close(self) -> None:
            closes.append(1)
            pipe.close()

    worker.conn = CountingPipe()  # type: ignore[assignment]
    worker.close()
    worker.close()
    assert closes == [1] and not worker.alive()


def test_closing_the_pool_while_its_workers_warm_ends_them_and_its_threads(tmp_path: Path) -> None:
    """What a server's SIGTERM during its warm-up relies on: close() does not wait for a
    warm-up that would never end."""
    pool = WorkerPool("processes", 2, warm=worker_jobs.warm_when, warm_args=(str(tmp_path / "never"),))
    pool.start()
    wait_for(lambda: len(pool.pids()) >= 2, "both workers spawned (neither warm)", seconds=60)
    workers = pool.pids()
    assert pool.ready == 0
    pool.close()
    assert not any(thread.is_alive() for thread in pool._threads)
    for pid in workers:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
