"""The env benchmark (bench/envs.py) in quick mode."""

from __future__ import annotations

import pytest


def test_benchmark_quick_smoke(capsys: pytest.CaptureFixture[str]) -> None:
    from orderchaos.bench.envs import run

    figures = run(quick=True)
    out = capsys.readouterr().out
    assert "single env" in out and "plain numpy" in out
    rates = figures["steps_per_sec"]
    assert rates["single env (OrderChaosEnv)"] > 0 and rates["vector env numpy N=4096"] > 0


class SteppingClock:
    """A stand-in for ``time.perf_counter`` that moves ``step`` seconds per reading."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def perf_counter(self) -> float:
        self.now += self.step
        return self.now


def test_runners_report_the_steps_they_played_per_second_of_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a clock that moves 1/4 s per reading and 1 s to run, the single-env runner
    checks the clock every 256 steps, passes the end at its fifth check (1280 steps) and
    reads it once more: 1280 steps in 1.5 s. The vector runner checks after every call of
    n games: 5 calls of 8 games in 1.5 s. A runner that miscounted steps, or divided by
    the time asked for instead of the time taken, reports another figure."""
    import types

    import orderchaos.bench.envs as bench_envs
    from orderchaos.envs import OrderChaosEnv

    monkeypatch.setattr(bench_envs, "time", types.SimpleNamespace(perf_counter=SteppingClock(0.25).perf_counter))
    assert bench_envs.gym_runner(OrderChaosEnv)(1.0) == 1280 / 1.5
    monkeypatch.setattr(bench_envs, "time", types.SimpleNamespace(perf_counter=SteppingClock(0.25).perf_counter))
    assert bench_envs.vector_runner(8)(1.0) == 5 * 8 / 1.5
