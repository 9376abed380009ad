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
