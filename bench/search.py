"""``orderchaos bench search`` (MCTS part): simulations per second with random rollouts,
side by side with OpenSpiel's C++ ``MCTSBot`` on ``mnk(m=6,n=6,k=5)`` when installed.

mnk is a different (easier) game, so the OpenSpiel row is only a throughput reference:
both searches are UCT with one random playout per leaf and solver backups, on one core.
Figures are per CPU-second of the measuring thread (robust when the machine is shared) and
per wall-second; each is the median over repeats.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence

import numpy as np

from orderchaos.agents.mcts import MCTS, UCT_C, RolloutEvaluator, uniform_legal_priors
from orderchaos.envs.rules import State, parse_board

MID_GAME = parse_board("..X... OOOXO. ..X... O..XX. ...... ...X.X")
"""A 12-stone position (Order to move, no four on the board) from seeded random play."""
MNK_GAME = "mnk(m=6,n=6,k=5)"


class UniformEvaluator:
    """Uniform priors and zero values: measures the batched tree machinery alone."""

    def evaluate(self, states: Sequence[State]) -> tuple[np.ndarray, np.ndarray]:
        """Uniform priors over legal actions, value 0 for every state."""
        return uniform_legal_priors(states), np.zeros(len(states), dtype=np.float32)


def _timed(step: Callable[[], int], repeats: int) -> dict[str, float]:
    """Median simulations per CPU-second and per wall-second of ``step`` (returns sims)."""
    per_cpu, per_wall = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.thread_time()
        sims = step()
        cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
        per_cpu.append(sims / max(cpu, 1e-9))
        per_wall.append(sims / max(wall, 1e-9))
    return {"sims_per_cpu_s": statistics.median(per_cpu), "sims_per_wall_s": statistics.median(per_wall)}


def measure_ours(state: State, sims: int, repeats: int, seed: int = 0) -> dict[str, float]:
    """UCT + random rollouts from ``state``: a fresh tree of ``sims`` simulations per repeat."""
    search = MCTS(RolloutEvaluator(1), simulations=sims, c=UCT_C, use_priors=False, seed=seed)
    search.search(state, simulations=16)  # compile / load the numba kernels outside the timing
    return _timed(lambda: search.search(state).simulations, repeats)


def measure_batched(trees: int, sims: int, repeats: int) -> dict[str, float]:
    """PUCT over ``trees`` trees with a free evaluator: leaf evaluations per second."""
    search = MCTS(UniformEvaluator(), simulations=sims, c=1.25, seed=0)
    roots = [State()] * trees
    search.search_batch(roots[:2], simulations=4)
    return _timed(lambda: sum(r.simulations for r in search.search_batch(roots)), repeats)


def _mnk_mid_game(game: object, plies: int, seed: int) -> object:
    rng = np.random.default_rng(seed)
    while True:
        state = game.new_initial_state()  # type: ignore[attr-defined]
        for _ in range(plies):
            state.apply_action(int(rng.choice(state.legal_actions())))
            if state.is_terminal():
                break
        if not state.is_terminal():
            return state


def measure_openspiel(sims: int, repeats: int, mid_game: bool) -> dict[str, float] | None:
    """OpenSpiel's C++ MCTSBot (UCT, one random rollout, solver) on mnk; None if absent."""
    try:
        import pyspiel
    except ImportError:
        return None
    game = pyspiel.load_game(MNK_GAME)
    state = _mnk_mid_game(game, MID_GAME.num_stones, seed=12) if mid_game else game.new_initial_state()

    def step() -> int:
        bot = pyspiel.MCTSBot(game, pyspiel.RandomRolloutEvaluator(1, 0), UCT_C, sims, 2000, True, 0, False)
        bot.step(state)
        return sims

    return _timed(step, repeats)


def run(quick: bool = False) -> dict:
    """Measure, print a table with ratios to OpenSpiel, and return the figures."""
    sims = 2_000 if quick else 20_000
    repeats = 1 if quick else 3
    trees, tree_sims = (16, 20) if quick else (64, 100)
    rows: dict[str, dict[str, float] | None] = {
        "ours UCT+rollout, empty board": measure_ours(State(), sims, repeats),
        "ours UCT+rollout, mid-game (12 stones)": measure_ours(MID_GAME, sims, repeats),
        "OpenSpiel C++ MCTSBot mnk(6,6,5), empty": measure_openspiel(sims, repeats, mid_game=False),
        "OpenSpiel C++ MCTSBot mnk(6,6,5), 12 stones": measure_openspiel(sims, repeats, mid_game=True),
        f"ours PUCT batched, {trees} trees, free evaluator": measure_batched(trees, tree_sims, repeats),
    }
    reference = rows["OpenSpiel C++ MCTSBot mnk(6,6,5), empty"]
    print(f"MCTS throughput ({sims} simulations per search, median of {repeats}, one core)")
    print(f"{'search':<48} {'sims/CPU-s':>11} {'sims/wall-s':>12} {'vs OpenSpiel':>13}")
    for name, figures in rows.items():
        if figures is None:
            print(f"{name:<48} {'(open_spiel not installed)':>38}")
            continue
        comparable = reference is not None and "free evaluator" not in name  # no rollouts there
        ratio = f"{figures['sims_per_cpu_s'] / reference['sims_per_cpu_s']:.1f}x" if comparable else "-"
        print(f"{name:<48} {figures['sims_per_cpu_s']:>11,.0f} {figures['sims_per_wall_s']:>12,.0f} {ratio:>13}")
    print("(OpenSpiel plays mnk, a different game: a throughput reference, not a like-for-like match)")
    return {"simulations": sims, "repeats": repeats, "rows": rows}
