"""``orderchaos bench search`` (MCTS part): simulations per second with random rollouts,
side by side with OpenSpiel's C++ ``MCTSBot`` on ``mnk(m=6,n=6,k=5)`` when installed.

mnk is a different (easier) game, so that OpenSpiel row is only a throughput reference:
both searches are UCT with one random playout per leaf and solver backups, on one core.
Figures are per CPU-second of the measuring thread (robust when the machine is shared) and
per wall-second; each is the median over repeats.

The like-for-like part plays *our* game registered in OpenSpiel (``python_order_chaos``,
:mod:`orderchaos.envs.openspiel`): OpenSpiel's MCTSBot against our ``mcts`` at the same
simulations, the same UCT constant, one random rollout per leaf and solver backups on both
sides, first the throughput and then a seeded match with both seats. OpenSpiel's C++ MCTSBot
crashes on Python-implemented games (open-spiel 2.0.2, its own ``python_tic_tac_toe`` too),
so OpenSpiel's Python MCTSBot plays there.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence

import numpy as np

from orderchaos.agents.mcts import MCTS, UCT_C, RolloutEvaluator, uniform_legal_priors
from orderchaos.arena.matches import wilson_interval
from orderchaos.envs.rules import CELLS, State, parse_board

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


def _spiel_state_at(game: object, board: State) -> object:
    """A ``python_order_chaos`` state at ``board`` (no five on it): its stones placed in cell
    order, which reaches the same position with the same side to move."""
    state = game.new_initial_state()  # type: ignore[attr-defined]
    for c in range(CELLS):
        if board.cell(c) != ".":
            state.apply_action(2 * c + "XO".index(board.cell(c)))
    return state


def _openspiel_mcts_bot(game: object, sims: int, seed: int) -> object:
    """OpenSpiel's Python MCTSBot as our ``mcts`` is built: UCT with ``UCT_C``, one random
    rollout per leaf, solver backups, seeded."""
    from open_spiel.python.algorithms import mcts as spiel_mcts

    evaluator = spiel_mcts.RandomRolloutEvaluator(1, np.random.RandomState(seed))
    return spiel_mcts.MCTSBot(
        game, UCT_C, sims, evaluator, solve=True, random_state=np.random.RandomState(seed)
    )


def measure_openspiel_on_our_game(state: State, sims: int, repeats: int) -> dict[str, float] | None:
    """OpenSpiel's Python MCTSBot on ``python_order_chaos`` from ``state``: a fresh tree of
    ``sims`` simulations per repeat; None when open_spiel is not installed."""
    try:
        import pyspiel

        import orderchaos.envs.openspiel  # noqa: F401 - registers python_order_chaos
    except ImportError:
        return None
    game = pyspiel.load_game("python_order_chaos")
    root = _spiel_state_at(game, state)
    bot = _openspiel_mcts_bot(game, sims, seed=0)
    return _timed(lambda: bot.mcts_search(root).explore_count, repeats)


def play_openspiel_match(sims: int, games: int, seed: int = 0) -> dict | None:
    """``games`` games on ``python_order_chaos`` through OpenSpiel's ``evaluate_bots``: our
    ``mcts:sims=N`` (as an :class:`~orderchaos.agents.openspiel_bot.AgentBot`) against
    OpenSpiel's MCTSBot at the same ``sims``; ours is Order in the even games, Chaos in the
    odd ones; game ``i`` seeds both players with ``seed + i``. Returns wins by seat, each
    side's CPU seconds per move and the games' moves; None when open_spiel is not installed."""
    try:
        import pyspiel
        from open_spiel.python.algorithms.evaluate_bots import evaluate_bots

        from orderchaos.agents.openspiel_bot import AgentBot
    except ImportError:
        return None
    game = pyspiel.load_game("python_order_chaos")
    wins = {"order": 0, "chaos": 0}  # our wins in each seat
    cpu = {"ours": 0.0, "openspiel": 0.0}
    moves = {"ours": 0, "openspiel": 0}
    histories = []
    for i in range(games):
        ours_seat = i % 2
        bots = [_Timed(_openspiel_mcts_bot(game, sims, seed + i), "openspiel", cpu, moves)]
        bots.insert(ours_seat, _Timed(AgentBot(f"mcts:sims={sims}", seed=seed + i), "ours", cpu, moves))
        state = game.new_initial_state()
        returns = evaluate_bots(state, bots, np.random.RandomState(seed + i))
        histories.append(state.history())
        if returns[ours_seat] > 0:
            wins["order" if ours_seat == 0 else "chaos"] += 1
    total = wins["order"] + wins["chaos"]
    return {
        "sims": sims,
        "games": games,
        "ours_wins_as_order": wins["order"],
        "ours_wins_as_chaos": wins["chaos"],
        "ours_score": total / games,
        "ours_score_ci95": list(wilson_interval(total, games)),
        "cpu_s_per_move": {side: cpu[side] / max(moves[side], 1) for side in cpu},
        "histories": histories,
    }


class _Timed:
    """A bot that adds the CPU time of each of its inner bot's moves to ``cpu[side]``.

    A plain object, not a ``pyspiel.Bot``: ``evaluate_bots`` only calls ``restart_at``,
    ``step`` and ``inform_action``.
    """

    def __init__(self, bot: object, side: str, cpu: dict[str, float], moves: dict[str, int]) -> None:
        self.bot, self.side, self.cpu, self.moves = bot, side, cpu, moves

    def restart_at(self, state: object) -> None:
        """Pass on to the inner bot."""
        self.bot.restart_at(state)  # type: ignore[attr-defined]

    def inform_action(self, state: object, player: int, action: int) -> None:
        """Pass on to the inner bot."""
        self.bot.inform_action(state, player, action)  # type: ignore[attr-defined]

    def step(self, state: object) -> int:
        """The inner bot's move, timed."""
        start = time.thread_time()
        action = self.bot.step(state)  # type: ignore[attr-defined]
        self.cpu[self.side] += time.thread_time() - start
        self.moves[self.side] += 1
        return action


def like_for_like(quick: bool) -> dict:
    """Ours against OpenSpiel's MCTSBot on our game registered in OpenSpiel: throughput at
    the same simulations, then a seeded match with both seats; prints two small tables."""
    sims, repeats = (200, 1) if quick else (2_000, 3)
    match_sims, games = (20, 4) if quick else (200, 100)
    rows = {
        "ours mcts, empty board": measure_ours(State(), sims, repeats),
        "OpenSpiel Python MCTSBot, empty board": measure_openspiel_on_our_game(State(), sims, repeats),
        "ours mcts, 12 stones": measure_ours(MID_GAME, sims, repeats),
        "OpenSpiel Python MCTSBot, 12 stones": measure_openspiel_on_our_game(MID_GAME, sims, repeats),
    }
    print(f"\nLike for like on python_order_chaos (UCT c={UCT_C}, one random rollout, solver backups, "
          f"{sims} simulations per search, median of {repeats})")
    print(f"{'search':<48} {'sims/CPU-s':>11} {'sims/wall-s':>12} {'ours / theirs':>14}")
    for name, figures in rows.items():
        if figures is None:
            print(f"{name:<48} {'(open_spiel not installed)':>38}")
            continue
        peer = rows[name.replace("ours mcts", "OpenSpiel Python MCTSBot")]
        ratio = ""
        if name.startswith("ours") and peer is not None:
            ratio = f"{figures['sims_per_cpu_s'] / peer['sims_per_cpu_s']:.0f}x"
        cpu, wall = figures["sims_per_cpu_s"], figures["sims_per_wall_s"]
        print(f"{name:<48} {cpu:>11,.0f} {wall:>12,.0f} {ratio:>14}")
    match = play_openspiel_match(match_sims, games)
    if match is not None:
        low, high = match["ours_score_ci95"]
        per_move = match["cpu_s_per_move"]
        print(f"match, {games} games at {match_sims} simulations, "
              f"ours as Order in even games (seeds 0..{games - 1}):")
        print(f"  ours mcts won {match['ours_wins_as_order']}/{(games + 1) // 2} as Order and "
              f"{match['ours_wins_as_chaos']}/{games // 2} as Chaos: score {match['ours_score']:.2f} "
              f"(Wilson 95% CI {low:.2f}-{high:.2f})")
        print(f"  CPU seconds per move: ours {per_move['ours']:.4f}, OpenSpiel {per_move['openspiel']:.4f}")
    return {"simulations": sims, "repeats": repeats, "rows": rows, "match": match}


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
    return {"simulations": sims, "repeats": repeats, "rows": rows, "like_for_like": like_for_like(quick)}
