"""``orderchaos bench env``: steps per second of the envs and of peers, in one harness.

Every figure is random legal play measured the same way: the harness reads the action
mask (or legal-action list) the env offers, picks a legal action with pre-drawn random
numbers, steps, and restarts finished games. Scalar envs and peers count one step per
move; vector envs count ``N`` steps per ``step`` call (including the NEXT_STEP restart
steps). Each configuration is measured ``repeats`` times, interleaved with the others,
and the best run is kept, since the machine may be shared.

Peers, when installed: PettingZoo's ``tictactoe_v3.raw_env`` and
``connect_four_v3.raw_env`` (needs pygame), OpenSpiel's ``mnk(m=6,n=6,k=5)``; and a
plain numpy bitboard step (:class:`PlainNumpyBitboards`) that builds no observations.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from orderchaos.envs.batch import CELL_WINDOW_MASKS
from orderchaos.envs.rules import CELLS

SINGLE_GOAL = 3.0  # single env / PettingZoo tictactoe
VECTOR_GOAL = 1.0  # vector env at N=4096 / plain numpy bitboard step
VECTOR_SIZES = (1, 4, 16, 64, 256, 1024, 4096, 16384)
TORCH_SIZES = (256, 4096, 16384)
_RANDOM = np.random.default_rng(12345).random(1 << 16).tolist()
_RANDOM_MASK = (1 << 16) - 1

Runner = Callable[[float], float]
"""Runs for about the given seconds and returns steps per second."""


def _pick(legal: Any, i: int) -> int:
    """A legal action from a non-empty index array or list, with pre-drawn randomness."""
    return int(legal[int(_RANDOM[i & _RANDOM_MASK] * len(legal))])


def gym_runner(make_env: Callable[[], Any]) -> Runner:
    """Random legal play in a Gymnasium env whose observation carries ``action_mask``."""

    def run(seconds: float) -> float:
        env = make_env()
        obs, _ = env.reset(seed=0)
        steps, start = 0, time.perf_counter()
        end = start + seconds
        while True:
            obs, _, terminated, truncated, _ = env.step(_pick(obs["action_mask"].nonzero()[0], steps))
            steps += 1
            if terminated or truncated:
                obs, _ = env.reset()
            if not steps & 255 and time.perf_counter() > end:
                return steps / (time.perf_counter() - start)

    return run


def aec_runner(make_env: Callable[[], Any]) -> Runner:
    """Random legal play in a PettingZoo AEC env (observation and mask via ``last()``)."""

    def run(seconds: float) -> float:
        env = make_env()
        env.reset(seed=0)
        steps, start = 0, time.perf_counter()
        end = start + seconds
        while True:
            obs, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                env.reset()
                continue
            env.step(_pick(obs["action_mask"].nonzero()[0], steps))
            steps += 1
            if not steps & 255 and time.perf_counter() > end:
                return steps / (time.perf_counter() - start)

    return run


def openspiel_runner(game_string: str) -> Runner:
    """Random legal play in an OpenSpiel game, reading the observation tensor each move."""
    import pyspiel

    game = pyspiel.load_game(game_string)

    def run(seconds: float) -> float:
        state = game.new_initial_state()
        steps, start = 0, time.perf_counter()
        end = start + seconds
        while True:
            state.observation_tensor()
            state.apply_action(_pick(state.legal_actions(), steps))
            steps += 1
            if state.is_terminal():
                state = game.new_initial_state()
            if not steps & 255 and time.perf_counter() > end:
                return steps / (time.perf_counter() - start)

    return run


class PlainNumpyBitboards:
    """The peer for the vector env: N games as numpy int64 bitboards, stepped with the
    batch engine's per-cell window-mask table ``(36, 8)`` (padded with an impossible mask), finished
    games restarted in the same step, and no observations, masks or info built."""

    def __init__(self, n: int) -> None:
        self.window_table = CELL_WINDOW_MASKS[:CELLS]
        self.cell_bit = np.array([1 << c for c in range(CELLS)], dtype=np.int64)
        self.x = np.zeros(n, dtype=np.int64)
        self.o = np.zeros(n, dtype=np.int64)
        self.num_stones = np.zeros(n, dtype=np.int64)

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Play one action per game; rewards for the movers and terminations."""
        cell, symbol = actions >> 1, actions & 1
        bit = self.cell_bit[cell]
        x_bit = bit & (symbol - 1)
        self.x |= x_bit
        self.o |= bit ^ x_bit
        mine = np.where(symbol == 1, self.o, self.x)
        masks = self.window_table[cell]
        five = ((mine[:, None] & masks) == masks).any(1)
        self.num_stones += 1
        done = five | (self.num_stones == CELLS)
        mover_is_order = (self.num_stones & 1) == 1
        reward = np.where(done, np.where(five == mover_is_order, 1.0, -1.0), 0.0)
        if done.any():
            self.x[done] = 0
            self.o[done] = 0
            self.num_stones[done] = 0
        return reward, done


class _LegalActionSource:
    """Cheap random legal actions for N games: per game, a random order of the cells
    and random symbols, read at the game's stone count (so the cell is always empty)."""

    def __init__(self, n: int, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        order = np.argsort(rng.random((n, CELLS)), axis=1)
        # Column 36 serves finished games (full boards) whose action is ignored.
        cells = np.concatenate([order, np.zeros((n, 1), dtype=np.int64)], axis=1)
        symbols = rng.integers(0, 2, (n, CELLS + 1))
        self.table = (2 * cells + symbols).reshape(-1)  # flat, read with one 1-D gather
        self.row_base = np.arange(n) * (CELLS + 1)

    def actions(self, num_stones: np.ndarray) -> np.ndarray:
        """Legal actions for games with these stone counts."""
        return self.table[self.row_base + num_stones]


def plain_numpy_runner(n: int) -> Runner:
    """The plain numpy bitboard peer at ``n`` games."""

    def run(seconds: float) -> float:
        game = PlainNumpyBitboards(n)
        source = _LegalActionSource(n)
        calls, start = 0, time.perf_counter()
        end = start + seconds
        while True:
            game.step(source.actions(game.num_stones))
            calls += 1
            if time.perf_counter() > end:
                return calls * n / (time.perf_counter() - start)

    return run


def vector_runner(n: int, backend: str = "numpy") -> Runner:
    """The native vector env at ``n`` games (observations, masks and info built)."""
    from orderchaos.envs.vector import OrderChaosVectorEnv

    def run(seconds: float) -> float:
        env = OrderChaosVectorEnv(n, backend=backend)
        source = _LegalActionSource(n)
        env.reset(seed=0)
        xp = env.game.xp
        calls, start = 0, time.perf_counter()
        end = start + seconds
        while True:
            actions = source.actions(xp.to_numpy(env.game.num_stones))
            env.step(xp.asarray(actions))
            calls += 1
            if time.perf_counter() > end:
                return calls * n / (time.perf_counter() - start)

    return run


def _peers() -> tuple[dict[str, Runner], list[str]]:
    """Peer runners that can be built here, and notes on those that cannot."""
    runners: dict[str, Runner] = {}
    notes: list[str] = []
    try:
        from pettingzoo.classic import connect_four_v3, tictactoe_v3

        runners["pettingzoo tictactoe_v3.raw_env"] = aec_runner(tictactoe_v3.raw_env)
        runners["pettingzoo connect_four_v3.raw_env"] = aec_runner(connect_four_v3.raw_env)
    except ImportError as exc:
        notes.append(f"PettingZoo classic peers skipped: {exc}")
    try:
        runners["openspiel mnk(m=6,n=6,k=5)"] = openspiel_runner("mnk(m=6,n=6,k=5)")
    except ImportError as exc:
        notes.append(f"OpenSpiel peer skipped: {exc}")
    return runners, notes


def run(quick: bool = False) -> dict[str, Any]:
    """Measure everything, print a table with the ratios to the goals, return figures.

    ``quick`` uses tiny time slices and fewer sizes (a smoke test of a few seconds).
    """
    import warnings

    from orderchaos.envs.aec import raw_aec_env
    from orderchaos.envs.order_chaos import OrderChaosEnv

    seconds = 0.03 if quick else 1.0
    repeats = 1 if quick else 3
    vector_sizes = (1, 64, 4096) if quick else VECTOR_SIZES
    torch_sizes = (64,) if quick else TORCH_SIZES
    runners: dict[str, Runner] = {
        "single env (OrderChaosEnv)": gym_runner(OrderChaosEnv),
        "AEC env (raw)": aec_runner(raw_aec_env),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # PettingZoo's old-API notice
        peers, notes = _peers()
    runners.update(peers)
    for n in vector_sizes:
        runners[f"vector env numpy N={n}"] = vector_runner(n)
    runners["plain numpy bitboards N=4096 (no obs)"] = plain_numpy_runner(4096)
    if importlib.util.find_spec("torch") is not None:
        for n in torch_sizes:
            runners[f"vector env torch-cpu N={n}"] = vector_runner(n, "torch")
    else:
        notes.append("torch backend skipped: torch is not installed")

    best: dict[str, float] = dict.fromkeys(runners, 0.0)
    for _ in range(repeats):
        for name, runner in runners.items():
            best[name] = max(best[name], runner(seconds))

    ratios: dict[str, float] = {}
    ttt = best.get("pettingzoo tictactoe_v3.raw_env")
    if ttt:
        ratios["single env / tictactoe (goal >= 3)"] = best["single env (OrderChaosEnv)"] / ttt
    vector_4096 = best.get("vector env numpy N=4096")
    if vector_4096:
        ratios["vector N=4096 / plain numpy (goal >= 1)"] = (
            vector_4096 / best["plain numpy bitboards N=4096 (no obs)"]
        )
    _print_table(best, ratios, notes, seconds, repeats)
    return {"steps_per_sec": best, "ratios": ratios, "notes": notes, "seconds": seconds, "repeats": repeats}


def _print_table(
    best: dict[str, float], ratios: dict[str, float], notes: list[str], seconds: float, repeats: int
) -> None:
    print(f"bench env: random legal play, best of {repeats} x {seconds:g} s per row")
    width = max(len(name) for name in best)
    for name, rate in best.items():
        print(f"  {name:<{width}}  {rate:>14,.0f} steps/s")
    for name, value in ratios.items():
        goal = SINGLE_GOAL if "tictactoe" in name else VECTOR_GOAL
        verdict = "met" if value >= goal else "NOT met"
        print(f"  ratio {name}: {value:.2f} ({verdict})")
    for note in notes:
        print(f"  note: {note}")
