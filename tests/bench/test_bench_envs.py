"""The env benchmark (bench/envs.py): each runner reports the steps it really played over the
time it really took, and the table shows the best run of each row and the ratios of the right
rows. The clock is a stand-in, so every figure is exact and no test depends on speed."""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import orderchaos.bench.envs as bench_envs

PEERS = ("pettingzoo tictactoe_v3.raw_env", "pettingzoo connect_four_v3.raw_env", "openspiel mnk(m=6,n=6,k=5)")


class SteppingClock:
    """A stand-in for ``time.perf_counter`` that moves ``step`` seconds per reading."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def perf_counter(self) -> float:
        self.now += self.step
        return self.now


def use_clock(monkeypatch: pytest.MonkeyPatch, step: float) -> None:
    """Give the benchmark a fresh :class:`SteppingClock` of ``step`` seconds per reading."""
    monkeypatch.setattr(bench_envs, "time", types.SimpleNamespace(perf_counter=SteppingClock(step).perf_counter))


class CountingEnv:
    """Wraps an env and counts its ``step`` and ``reset`` calls."""

    def __init__(self, env: Any) -> None:
        self.env, self.steps, self.resets = env, 0, 0

    def step(self, action: int) -> Any:
        self.steps += 1
        return self.env.step(action)

    def reset(self, *args: Any, **kwargs: Any) -> Any:
        self.resets += 1
        return self.env.reset(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)


def counted(make_env: Callable[[], Any]) -> tuple[Callable[[], CountingEnv], list[CountingEnv]]:
    """A factory of counting envs, and the list of the envs it made."""
    made: list[CountingEnv] = []

    def make() -> CountingEnv:
        made.append(CountingEnv(make_env()))
        return made[-1]

    return make, made


def test_runners_report_the_steps_they_played_per_second_of_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a clock that moves 1/4 s per reading and 1 s to run, the scalar runners check
    the clock every 256 steps, pass the end at their fifth check (1280 steps) and read it
    once more: 1280 steps in 1.5 s, and the env saw exactly those 1280 steps (the AEC
    runner's restarts of finished games are not steps). The vector runners check after
    every call of n games: 5 calls of 8 games in 1.5 s. A runner that miscounted steps, or
    divided by the time asked for instead of the time taken, reports another figure."""
    from orderchaos.envs.aec import raw_aec_env
    from orderchaos.envs.order_chaos import OrderChaosEnv

    make_gym, gym_envs = counted(OrderChaosEnv)
    make_aec, aec_envs = counted(raw_aec_env)
    for runner, made in ((bench_envs.gym_runner(make_gym), gym_envs), (bench_envs.aec_runner(make_aec), aec_envs)):
        use_clock(monkeypatch, 0.25)
        assert runner(1.0) == 1280 / 1.5
        (env,) = made
        assert env.steps == 1280
        assert 1280 // 36 < env.resets <= 1280 // 9 + 1  # finished games restarted: 9 to 36 moves each
    for runner in (bench_envs.vector_runner(8), bench_envs.vector_runner(8, "torch"), bench_envs.plain_numpy_runner(8)):
        use_clock(monkeypatch, 0.25)
        assert runner(1.0) == 5 * 8 / 1.5


def test_the_openspiel_runner_counts_its_moves(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pyspiel", reason="the openspiel extra is not installed: pip install -e '.[dev]'")
    use_clock(monkeypatch, 0.25)
    assert bench_envs.openspiel_runner("mnk(m=6,n=6,k=5)")(1.0) == 1280 / 1.5


def test_the_plain_numpy_peer_plays_by_the_rules() -> None:
    """Two games side by side. Game 0: X on a1..d1 and O on a2..d2, then X on e1 is
    Order's five (+1 to the mover) and the game starts again. Game 1: X on a6..d6 and O
    on a5..d5, X on a4, then O on e5 is a five made by Chaos (-1 to the mover)."""
    game = bench_envs.PlainNumpyBitboards(2)
    plies = [(0, 30), (6, 24), (1, 31), (7, 25), (2, 32), (8, 26), (3, 33), (9, 27)]
    for ply, (cell0, cell1) in enumerate(plies):
        symbol = ply % 2  # Order writes X, Chaos writes O
        reward, done = game.step(np.array([2 * cell0 + symbol, 2 * cell1 + symbol]))
        assert not done.any() and not reward.any()
    reward, done = game.step(np.array([2 * 4, 2 * 18]))
    assert done.tolist() == [True, False] and reward.tolist() == [1.0, 0.0]
    assert game.num_stones.tolist() == [0, 9] and game.x[0] == 0 and game.o[0] == 0
    reward, done = game.step(np.array([2 * 0, 2 * 28 + 1]))
    assert done.tolist() == [False, True] and reward.tolist() == [0.0, -1.0]
    assert game.num_stones.tolist() == [1, 0] and game.x[0] == 1


class ScriptedRunners:
    """Runners that report given rates, one per call in turn, and record the seconds they
    were given; stand-ins for the real runners when the table is under test."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    def runner(self, rates: list[float]) -> Callable[[float], float]:
        figures: Iterator[float] = iter(rates)

        def run(seconds: float) -> float:
            self.seconds.append(seconds)
            return next(figures)

        return run


def test_the_table_keeps_each_rows_best_run_and_divides_the_right_rows(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Full mode: three runs of 1 s per row, the best kept (not the last or the first),
    and the two ratios: our single env over PettingZoo's tictactoe, our vector env at
    N=4096 over the plain numpy peer at N=4096."""
    scripted = ScriptedRunners()
    sizes = {n: scripted.runner([n, 3 * n, 2 * n]) for n in bench_envs.VECTOR_SIZES}
    torch_sizes = {n: scripted.runner([n + 1, n + 1, n + 1]) for n in bench_envs.TORCH_SIZES}
    monkeypatch.setattr(bench_envs, "gym_runner", lambda make_env: scripted.runner([900.0, 600.0, 300.0]))
    monkeypatch.setattr(bench_envs, "aec_runner", lambda make_env: scripted.runner([50.0, 70.0, 60.0]))
    monkeypatch.setattr(bench_envs, "vector_runner",
                        lambda n, backend="numpy": sizes[n] if backend == "numpy" else torch_sizes[n])
    monkeypatch.setattr(bench_envs, "plain_numpy_runner", lambda n: scripted.runner([4096.0 * 4] * 3))
    peers = {"pettingzoo tictactoe_v3.raw_env": scripted.runner([200.0, 400.0, 100.0])}
    monkeypatch.setattr(bench_envs, "_peers", lambda: (peers, ["a peer skipped"]))
    figures = bench_envs.run()
    assert set(scripted.seconds) == {1.0} and len(scripted.seconds) == 3 * (4 + len(sizes) + len(torch_sizes))
    best = {
        "single env (OrderChaosEnv)": 900.0,
        "AEC env (raw)": 70.0,
        "pettingzoo tictactoe_v3.raw_env": 400.0,
        **{f"vector env numpy N={n}": 3.0 * n for n in bench_envs.VECTOR_SIZES},
        "plain numpy bitboards N=4096 (no obs)": 16384.0,
        **{f"vector env torch-cpu N={n}": n + 1.0 for n in bench_envs.TORCH_SIZES},
    }
    assert figures["steps_per_sec"] == best and list(figures["steps_per_sec"]) == list(best)
    assert figures["ratios"] == {"single env / tictactoe (goal >= 3)": 900 / 400,
                                 "vector N=4096 / plain numpy (goal >= 1)": 3 * 4096 / 16384}
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "bench env: random legal play, best of 3 x 1 s per row"
    assert lines[1:4] == [
        "  single env (OrderChaosEnv)                        900 steps/s",
        "  AEC env (raw)                                      70 steps/s",
        "  pettingzoo tictactoe_v3.raw_env                   400 steps/s",
    ]
    assert "  vector env numpy N=16384                       49,152 steps/s" in lines
    assert lines[-3:] == [
        "  ratio single env / tictactoe (goal >= 3): 2.25 (NOT met)",
        "  ratio vector N=4096 / plain numpy (goal >= 1): 0.75 (NOT met)",
        "  note: a peer skipped",
    ]
    assert len(lines) == 1 + len(best) + 3


def test_quick_mode_measures_its_rows_once_for_a_short_slice(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The real runners in quick mode, on a clock of 1/4 s per reading: each scalar row
    plays 256 steps in 0.5 s (one check of the clock past the 0.03 s asked for, then one
    more reading), each vector row one call of N games in 0.5 s."""
    use_clock(monkeypatch, 0.25)
    figures = bench_envs.run(quick=True)
    assert (figures["seconds"], figures["repeats"]) == (0.03, 1)
    rates = figures["steps_per_sec"]
    ours = {name: rate for name, rate in rates.items() if name not in PEERS}
    assert ours == {
        "single env (OrderChaosEnv)": 512.0,
        "AEC env (raw)": 512.0,
        "vector env numpy N=1": 2.0,
        "vector env numpy N=64": 128.0,
        "vector env numpy N=4096": 8192.0,
        "plain numpy bitboards N=4096 (no obs)": 8192.0,
        "vector env torch-cpu N=64": 128.0,
    }
    assert all(rates[name] == 512.0 for name in set(rates) - set(ours))
    assert figures["ratios"]["vector N=4096 / plain numpy (goal >= 1)"] == 1.0
    out = capsys.readouterr().out
    assert out.startswith("bench env: random legal play, best of 1 x 0.03 s per row\n")
    assert "  vector env numpy N=4096                         8,192 steps/s\n" in out
    assert "  ratio vector N=4096 / plain numpy (goal >= 1): 1.00 (met)\n" in out
