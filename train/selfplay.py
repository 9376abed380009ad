"""Self-play game generation: games played in lockstep by batched search, each network move
logged with its search policy as target.

:func:`play_selfplay_games` plays a batch of games with PUCT (or Gumbel) search for every
network move; :func:`play_heuristic_games` the heuristic against itself (imitation and
warm-up); :func:`play_training_games` one iteration's batch as a config says. The learner
(:mod:`orderchaos.train.alphazero`) turns the logs into training rows; the Ray backend's
actors call :func:`play_training_games` too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from orderchaos.agents.base import Agent, Evaluator
from orderchaos.agents.evaluation_cache import CachedEvaluator
from orderchaos.agents.network_agent import NetworkEvaluator, sample_from
from orderchaos.arena.matches import random_quiet_action
from orderchaos.envs.batch import BatchGame
from orderchaos.envs.rules import ACTIONS, AGENTS, State
from orderchaos.train.config_schema import (
    C_PUCT,
    DIRICHLET_ALPHA,
    DIRICHLET_FRACTION,
    GUMBEL_CONSIDERED,
    SELFPLAY_TEMPERATURE,
    WARMUP_OPENINGS,
)

if TYPE_CHECKING:
    from orderchaos.agents.solver import Solver


@dataclass
class SelfPlayGame:
    """The logged positions of one game (those a learner moved in), with their policy
    targets and the engine's observation planes and action masks."""

    states: list[State] = field(default_factory=list)
    policies: list[np.ndarray] = field(default_factory=list)
    planes: list[np.ndarray] = field(default_factory=list)
    masks: list[np.ndarray] = field(default_factory=list)
    winner: str | None = None
    length: int = 0
    solver_ended: bool = False


def graded_order_value(winner: str | None, length: int, length_weight: float) -> float:
    """A game's outcome from Order's view, graded by its length: a Chaos win is -1; an
    Order win at ``length`` stones is ``1 - length_weight * (length - 9) / 27`` (1 for the
    fastest possible five, ``1 - length_weight`` for a five on the last cell). So Order
    learns to prefer quick wins and Chaos, in games lost in theory, long ones (compare
    KataGo's score utility); ``length_weight < 1`` keeps every Order win above every loss."""
    if winner != "order":
        return -1.0
    return 1.0 - length_weight * min(max(length - 9, 0), 27) / 27


def value_targets(log: SelfPlayGame, length_weight: float = 0.0) -> np.ndarray:
    """The final outcome from the view of the player to move in each logged position
    (graded by the game's length when ``length_weight > 0``: :func:`graded_order_value`)."""
    order_value = graded_order_value(log.winner, log.length, length_weight)
    return np.array([order_value if s.to_play == "order" else -order_value for s in log.states], np.float32)


MoveChooser = Callable[[int, np.ndarray, list[State]], tuple[list[int], list["np.ndarray | None"]]]
"""``choose(ply, games, states)``: given the indices and positions of the unfinished games,
one action per game and, per game, the policy target to log for that position (None: the
position is not logged)."""


GameEnder = Callable[[list[State]], list["str | None"]]
"""``end(states)``: for each position of an unfinished game, the winner if the game is to
end there (decided without playing on), else None."""


def play_lockstep(
    n_games: int, choose: MoveChooser, end: GameEnder | None = None, end_games: Collection[int] | None = None
) -> list[SelfPlayGame]:
    """Play ``n_games`` games from the empty board in one :class:`envs.BatchGame` until
    every game has ended; ``choose`` picks the moves of the unfinished games at each ply.

    The batch engine steps the games, detects their ends and winners, and supplies the
    observation planes and masks of the logged positions. With ``end``, a game whose
    position ``end`` decides stops there with that winner (``solver_ended``); the position
    is logged with an all-zero policy target (a value-only row, which the solver targets
    of :meth:`AlphaZeroTrainer.store` complete where they reach). ``end_games`` (default:
    all) lists the games ``end`` may stop; the others are played to the end.
    """
    endable = np.ones(n_games, bool)
    if end_games is not None:
        endable[:] = False
        endable[list(end_games)] = True
    game = BatchGame(n_games)
    logs = [SelfPlayGame() for _ in range(n_games)]
    actions = np.zeros(n_games, np.int64)
    stopped = np.zeros(n_games, bool)
    ply = 0
    while True:
        playing = ~game.terminated & ~stopped
        rows = np.flatnonzero(playing)
        if rows.size == 0:
            break
        states = game.states(rows)
        planes, masks = game.observations(), game.action_masks()
        if end is not None:
            asked = [i for i, g in enumerate(rows) if endable[g]]
            decided: list[str | None] = [None] * len(rows)
            if asked:
                for i, winner in zip(asked, end([states[i] for i in asked])):
                    decided[i] = winner
            for g, state, winner in zip(rows, states, decided):
                if winner is not None:
                    log = logs[g]
                    log.states.append(state)
                    log.policies.append(np.zeros(ACTIONS, np.float32))
                    log.planes.append(planes[g])
                    log.masks.append(masks[g])
                    log.winner, log.length, log.solver_ended = winner, state.num_stones, True
                    stopped[g] = True
            keep = [i for i, winner in enumerate(decided) if winner is None]
            if len(keep) < len(rows):
                rows, states = rows[keep], [states[i] for i in keep]
                playing[np.flatnonzero(stopped)] = False
                if rows.size == 0:
                    break
        moves, targets = choose(ply, rows, states)
        for g, state, target in zip(rows, states, targets):
            if target is not None:
                log = logs[g]
                log.states.append(state)
                log.policies.append(target)
                log.planes.append(planes[g])
                log.masks.append(masks[g])
        actions[rows] = moves
        game.step(actions, active=playing)
        ply += 1
    for log, winner, stones in zip(logs, game.winner, game.num_stones):
        if not log.solver_ended:
            log.winner, log.length = AGENTS[int(winner)], int(stones)
    return logs


def solver_ender(depth: int, node_limit: int, solver: "Solver | None" = None) -> GameEnder:
    """A :data:`GameEnder` that ends a game once it has at most ``depth`` empty cells and
    the exact solver proves its winner within ``node_limit`` nodes (tried again each ply
    until it does), so that self-play spends the network's evaluations on the opening and
    middle game and the rest is labelled exactly. ``solver`` (default: the module-wide one)
    keeps its table from call to call, so what it proves within the budget depends on what
    it solved before."""
    from orderchaos.agents.solver import default_solver

    solve = (solver or default_solver()).solve

    def end(states: list[State]) -> list[str | None]:
        return [
            solve(s, node_limit=node_limit).winner if s.num_empty <= depth else None for s in states
        ]

    return end


def play_selfplay_games(
    evaluator: NetworkEvaluator,
    n_games: int,
    *,
    simulations: int,
    c_puct: float,
    dirichlet_alpha: float,
    dirichlet_fraction: float,
    temperature: float,
    temperature_moves: int,
    rng: np.random.Generator,
    opponents: dict[int, tuple[int, Agent]] | None = None,
    target_temperature: float = 1.0,
    on_policy: Collection[int] = (),
    gumbel_considered: int = 0,
    end: GameEnder | None = None,
    end_games: Collection[int] | None = None,
    evaluation_cache: bool = False,
    prefetch: bool = False,
) -> list[SelfPlayGame]:
    """Play ``n_games`` games in lockstep (:func:`play_lockstep`) with batched PUCT search
    for every network move: one search wave evaluates the leaves of all trees at once.

    ``opponents`` maps a game index to ``(seat, agent)``: in that game the agent plays seat
    0 (Order) or 1 (Chaos) and only the network's positions are logged. Logged policies are
    the search's ``policy(target_temperature)``.

    In the games listed in ``on_policy``, after the ``temperature_moves`` plies the network
    plays its own most probable move (as it plays alone, without search) while its positions
    are still labelled with the search's targets, so that training sees the positions the
    network alone reaches and is corrected there (DAgger-style).

    With ``gumbel_considered > 0`` the search is :class:`orderchaos.agents.gumbel.GumbelSearch`
    over that many sampled root moves: every move is the search's Gumbel-sampled choice
    (the Gumbel noise is the exploration; no Dirichlet noise, no temperature) and the
    logged policy is its completed-Q improved policy. ``end`` stops games early, those in
    ``end_games`` only when given (:func:`play_lockstep`, e.g. :func:`solver_ender`).

    With ``evaluation_cache``, every evaluation of these games goes through one
    :class:`orderchaos.agents.evaluation_cache.CachedEvaluator`, so each board is evaluated
    once; ``evaluator.positions_evaluated`` counts only what reached the network. With
    ``prefetch`` (Gumbel only) each search evaluates the root children of its first round of
    sequential halving in one batch (:class:`orderchaos.agents.gumbel.GumbelSearch`).
    """
    from orderchaos.agents.gumbel import GumbelSearch
    from orderchaos.agents.mcts import MCTS, SearchResult

    asked: Evaluator = evaluator
    if evaluation_cache:
        asked = CachedEvaluator(evaluator, version=getattr(evaluator, "weights_version", None))

    opponents = opponents or {}
    on_policy = set(int(g) for g in on_policy)
    opponent_seat = np.full(n_games, -1)
    for g, (seat, _) in opponents.items():
        opponent_seat[g] = seat
    search: MCTS | GumbelSearch
    if gumbel_considered:
        search = GumbelSearch(
            asked, simulations=simulations, max_considered=gumbel_considered, c=c_puct,
            seed=int(rng.integers(2**31)), prefetch=prefetch,
        )
        temperature_moves = 0
    else:
        search = MCTS(
            asked,
            simulations=simulations,
            c=c_puct,
            use_priors=True,
            dirichlet_alpha=dirichlet_alpha if dirichlet_alpha > 0 else None,
            dirichlet_fraction=dirichlet_fraction,
            seed=int(rng.integers(2**31)),
        )

    def choose(ply: int, games: np.ndarray, states: list[State]) -> tuple[list[int], list[np.ndarray | None]]:
        moves = [0] * len(states)
        targets: list[np.ndarray | None] = [None] * len(states)
        by_network = [i for i, s in enumerate(states) if opponent_seat[games[i]] != s.to_play_index]
        results: dict[int, SearchResult] = {}
        if by_network:
            found = search.search_batch([states[i] for i in by_network], simulations=simulations, add_noise=True)
            results.update(zip(by_network, found))
        temp = temperature if ply < temperature_moves else 0.0
        lost = set()
        for i in by_network:
            result = results[i]
            if result.proven == "loss":
                lost.add(i)
            # visit distribution; for a proven win, uniform over the proven winning moves; a
            # proven loss stops the search early, so its few visits carry no policy signal and
            # the row trains the value only (an all-zero policy target adds no policy loss)
            targets[i] = (
                np.zeros(ACTIONS, np.float32)
                if result.proven == "loss"
                else np.asarray(result.policy(target_temperature), dtype=np.float32)
            )
            if temp == 0 or result.proven is not None:  # (Gumbel: temp is always 0)
                moves[i] = int(result.best_action)
            else:
                moves[i] = sample_from(np.asarray(result.policy(1.0), dtype=np.float64), temp, rng)
        # Every move loses against best play: take the network's favourite, which resists
        # fallible opponents better than an arbitrary (maybe suicidal) move. In on-policy
        # games, after the temperature plies, the network plays its own favourite too.
        greedy = [i for i in by_network if i in lost or (temp == 0 and games[i] in on_policy)]
        if greedy:
            priors, _ = asked.evaluate([states[i] for i in greedy])
            for i, prior in zip(greedy, priors):
                moves[i] = int(np.argmax(prior))
        for i, state in enumerate(states):
            if opponent_seat[games[i]] == state.to_play_index:
                moves[i] = opponents[int(games[i])][1].act(state)
        return moves, targets

    return play_lockstep(n_games, choose, end, end_games)


def play_heuristic_games(n_games: int, openings: int, rng: np.random.Generator) -> list[SelfPlayGame]:
    """``n_games`` games of the heuristic agent against itself, in lockstep, each after
    ``openings`` uniformly random plies that do not end the game. The heuristic's
    positions are logged with its move as a one-hot policy."""
    from orderchaos.agents.registry import make

    agents = [make("heuristic", seed=int(seed)) for seed in rng.integers(2**31, size=n_games)]

    def choose(ply: int, games: np.ndarray, states: list[State]) -> tuple[list[int], list[np.ndarray | None]]:
        moves: list[int] = []
        targets: list[np.ndarray | None] = []
        for g, state in zip(games, states):
            quiet = random_quiet_action(state, rng) if ply < openings else None
            if quiet is not None:
                moves.append(quiet)
                targets.append(None)
            else:
                action = agents[int(g)].act(state)
                target = np.zeros(ACTIONS, np.float32)
                target[action] = 1.0
                moves.append(action)
                targets.append(target)
        return moves, targets

    return play_lockstep(n_games, choose)


def heuristic_opponents(fraction: float, n_games: int, rng: np.random.Generator) -> dict[int, tuple[int, Agent]]:
    """The heuristic agent in one seat (alternating) of the first ``fraction`` of ``n_games``."""
    from orderchaos.agents.registry import make

    count = int(round(fraction * n_games))
    seed = int(rng.integers(2**31))
    return {g: (g % 2, make("heuristic", seed=seed + g)) for g in range(count)}


def play_training_games(
    evaluator: NetworkEvaluator,
    config: Any,
    n_games: int,
    n_imitation: int,
    rng: np.random.Generator,
    solver: "Solver | None" = None,
) -> tuple[list[SelfPlayGame], list[SelfPlayGame], float]:
    """One batch of an iteration's games as ``config`` (a TrainConfig) says: ``n_games``
    self-play games (:func:`play_selfplay_games`, some against the heuristic agent) and
    ``n_imitation`` heuristic imitation games. Returns the self-play logs, the imitation logs and the self-play seconds.
    ``solver`` ends games at a proof (``selfplay.solver_end_depth``; default: the
    module-wide solver). The local trainer plays an iteration with it, each Ray actor its share."""
    cfg = config
    started = time.perf_counter()
    opponents = heuristic_opponents(cfg.selfplay.heuristic_fraction, n_games, rng)
    logs = play_selfplay_games(
        evaluator,
        n_games,
        simulations=cfg.mcts.simulations,
        c_puct=C_PUCT,
        dirichlet_alpha=DIRICHLET_ALPHA,
        dirichlet_fraction=DIRICHLET_FRACTION,
        temperature=SELFPLAY_TEMPERATURE,
        temperature_moves=cfg.selfplay.temperature_moves,
        rng=rng,
        opponents=opponents,
        on_policy=range(int(round(cfg.selfplay.on_policy_fraction * len(opponents)))),
        gumbel_considered=GUMBEL_CONSIDERED if cfg.mcts.gumbel else 0,
        end=(
            solver_ender(cfg.selfplay.solver_end_depth, cfg.selfplay.solver_node_limit, solver)
            if cfg.selfplay.solver_end_depth
            else None
        ),
        end_games=range(int(round(cfg.selfplay.solver_end_fraction * n_games))),
        evaluation_cache=cfg.mcts.evaluation_cache,
        prefetch=cfg.mcts.prefetch,
    )
    play_seconds = time.perf_counter() - started
    imitation: list[SelfPlayGame] = []
    if n_imitation:
        imitation = play_heuristic_games(n_imitation, WARMUP_OPENINGS, rng)
    return logs, imitation, play_seconds
