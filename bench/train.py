"""``orderchaos bench train``: network evaluation throughput and self-play speed.

Prints positions per second of :class:`~orderchaos.agents.network_agent.NetworkEvaluator` (encoding, masking,
both role networks, softmax -- the whole leaf-evaluation path) next to the bare network
forward pass at a few batch sizes and network sizes, then self-play games per second with
batched PUCT search. Ratios compare each figure with its peer measured in the same run.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from orderchaos.agents.network import PolicyValueNet
from orderchaos.agents.network_agent import NetworkEvaluator
from orderchaos.envs.encoding import encode_states
from orderchaos.envs.rules import AGENTS, State


def random_positions(n: int, seed: int = 0) -> list[State]:
    """``n`` non-terminal positions reached by uniformly random play (4..24 stones)."""
    rng = np.random.default_rng(seed)
    out: list[State] = []
    while len(out) < n:
        state = State()
        for _ in range(int(rng.integers(4, 25))):
            nxt = state.apply(int(rng.choice(state.legal_actions())))
            if nxt.is_terminal:
                break
            state = nxt
        out.append(state)
    return out


def _rate(fn: Any, items: int, min_seconds: float) -> float:
    fn()  # warm-up
    count, start = 0, time.perf_counter()
    while True:
        fn()
        count += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return count * items / elapsed


def network_throughput(
    channels: int, blocks: int, batch_sizes: list[int], min_seconds: float = 0.5
) -> list[dict[str, float]]:
    """Positions/s of the bare forward pass and of the full evaluator, per batch size."""
    torch.manual_seed(0)
    nets = {role: PolicyValueNet(channels, blocks).eval() for role in AGENTS}
    evaluator = NetworkEvaluator(nets)
    rows = []
    for batch in batch_sizes:
        states = random_positions(batch, seed=batch)
        planes = torch.from_numpy(encode_states(states))

        def forward() -> None:
            with torch.inference_mode():
                nets["order"](planes)

        rows.append(
            {
                "net": f"{channels}x{blocks}",
                "batch": batch,
                "forward_pos_per_sec": _rate(forward, batch, min_seconds),
                "evaluator_pos_per_sec": _rate(lambda: evaluator.evaluate(states), batch, min_seconds),
            }
        )
    return rows


def selfplay_throughput(
    games: int, simulations: int, channels: int, blocks: int, seed: int = 0
) -> dict[str, float]:
    """Games/s and moves/s of one batch of self-play games with batched PUCT search."""
    from orderchaos.train.alphazero import play_selfplay_games

    torch.manual_seed(seed)
    nets = {role: PolicyValueNet(channels, blocks).eval() for role in AGENTS}
    evaluator = NetworkEvaluator(nets)
    start = time.perf_counter()
    logs = play_selfplay_games(
        evaluator, games, simulations=simulations, c_puct=1.5, dirichlet_alpha=0.3,
        dirichlet_fraction=0.25, temperature=1.0, temperature_moves=8,
        rng=np.random.default_rng(seed),
    )
    seconds = time.perf_counter() - start
    moves = sum(log.length for log in logs)
    return {
        "games": games,
        "simulations": simulations,
        "net": f"{channels}x{blocks}",
        "seconds": seconds,
        "games_per_sec": games / seconds,
        "moves_per_sec": moves / seconds,
        "leaf_evals_per_sec": evaluator.positions_evaluated / seconds,
    }


def run(quick: bool = False, threads: int = 1) -> dict[str, Any]:
    """Measure and print; returns the figures. ``quick`` uses tiny budgets (seconds).

    ``threads`` torch CPU threads (default 1, as the training configs use: on a shared
    machine more intra-op threads mostly spin against other processes).
    """
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return _measure(quick)
    finally:
        torch.set_num_threads(previous)


def _measure(quick: bool) -> dict[str, Any]:
    batch_sizes = [1, 64, 256] if quick else [1, 16, 64, 256, 1024]
    nets = [(32, 4)] if quick else [(32, 4), (64, 6)]
    min_seconds = 0.1 if quick else 1.0
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads, fp32")
    print(f"{'net':>6} {'batch':>6} {'forward pos/s':>14} {'evaluator pos/s':>16} {'eval/forward':>12}")
    net_rows = []
    for channels, blocks in nets:
        for row in network_throughput(channels, blocks, batch_sizes, min_seconds):
            net_rows.append(row)
            ratio = row["evaluator_pos_per_sec"] / row["forward_pos_per_sec"]
            print(
                f"{row['net']:>6} {row['batch']:>6} {row['forward_pos_per_sec']:>14,.0f} "
                f"{row['evaluator_pos_per_sec']:>16,.0f} {ratio:>12.2f}"
            )
    plays = [(8, 8, 8, 1)] if quick else [(64, 32, 32, 4), (64, 64, 32, 4)]
    print(f"\n{'games':>6} {'sims':>5} {'net':>6} {'games/s':>8} {'moves/s':>8} {'leaf evals/s':>12}")
    play_rows = []
    for games, sims, channels, blocks in plays:
        row = selfplay_throughput(games, sims, channels, blocks)
        play_rows.append(row)
        print(
            f"{games:>6} {sims:>5} {row['net']:>6} {row['games_per_sec']:>8.2f} "
            f"{row['moves_per_sec']:>8.1f} {row['leaf_evals_per_sec']:>12,.0f}"
        )
    return {"network": net_rows, "selfplay": play_rows}
